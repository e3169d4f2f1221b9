"""Outside a cluster, proxy variables and ~/.netrc are honoured when they concern the API
server, and not looked up on every request when they do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy_scheduler.operating import env_concerns

PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "all_proxy")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    netrc = tmp_path / "netrc"
    monkeypatch.setenv("NETRC", str(netrc))
    return netrc


@pytest.mark.parametrize(
    ("env", "netrc", "url", "concerns"),
    [
        pytest.param({}, "", "https://10.0.0.1:6443", False, id="nothing set"),
        pytest.param(
            {"https_proxy": "http://proxy:3128"},
            "",
            "https://api.example.com:6443",
            True,
            id="a proxy for the scheme",
        ),
        pytest.param(
            {"http_proxy": "http://proxy:3128"},
            "",
            "https://api.example.com:6443",
            False,
            id="a proxy for another scheme",
        ),
        pytest.param(
            {"https_proxy": "http://proxy:3128", "no_proxy": "api.example.com"},
            "",
            "https://api.example.com:6443",
            False,
            id="the host bypasses the proxy",
        ),
        pytest.param(
            {},
            "machine api.example.com login me password secret\n",
            "https://api.example.com:6443",
            True,
            id="netrc credentials for the host",
        ),
        pytest.param(
            {},
            "machine other.example.com login me password secret\n",
            "https://api.example.com:6443",
            False,
            id="netrc credentials for another host",
        ),
        pytest.param({}, "machine\n", "https://api.example.com", False, id="unreadable netrc"),
    ],
)
def test_the_environment_is_trusted_only_when_it_concerns_the_api_server(
    clean_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    netrc: str,
    url: str,
    concerns: bool,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if netrc:
        clean_env.write_text(netrc)
        clean_env.chmod(0o600)
    assert env_concerns(url) is concerns
