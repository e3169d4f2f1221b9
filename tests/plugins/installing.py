"""Plugin packages in the test environment, installed as a user would: with pip.

The scheduler must find them the way it finds any plugin, by their entry points in the
group ``policy_scheduler.plugins``; nothing here registers a class by hand. The README's
test command installs the sample and the tests' plugins with the project;
:func:`require_installed` checks that it did (the plugin tests' conftest), and
:func:`ensure_installed` installs one that is missing, for a test about installing. A
package already installed is left as it is. Otherwise ``pip install -e PATH
--no-deps`` runs in this interpreter's environment, and this process is made to see it
at once: the editable install's ``.pth`` file (read by Python only at start-up) is
applied, the import system's caches are dropped, and the scheduler's cached list of
installed plugin names is read again.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import sysconfig
from importlib.metadata import entry_points
from pathlib import Path

from policy_scheduler import names

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "plugins" / "sample"
TEST_PLUGINS = Path(__file__).resolve().parent / "pkg"
#: Each package's distribution (as its editable install names its files) and the entry
#: point names it registers (what tells that it is installed).
PACKAGES: dict[Path, tuple[str, frozenset[str]]] = {
    SAMPLE: ("policy_scheduler_sample", frozenset({"Sample"})),
    TEST_PLUGINS: (
        "policy_scheduler_testplugins",
        frozenset(
            {
                "TestGate",
                "TestPreBind",
                "TestRaiser",
                "TestHungPostFilter",
                "TestBroken",
                "TestHungImport",
            }
            | {"ScriptA", "ScriptB", "ScriptC"}
        ),
    ),
}


def registered() -> set[str]:
    return {ep.name for ep in entry_points(group=names.PLUGIN_ENTRY_POINT_GROUP)}


def require_installed(*packages: Path) -> None:
    """Each package's plugins registered, as the README's test command installs them;
    else the test session stops with what to run (nothing is installed here)."""
    import pytest

    missing = [path for path in packages if not PACKAGES[path][1] <= registered()]
    if missing:
        paths = " ".join(f"-e {path.relative_to(ROOT)}" for path in missing)
        raise pytest.UsageError(
            f"the tests' plugin packages are not installed (or are older than their "
            f"entry points): run `.venv/bin/pip install -q {paths}`, as the README's test "
            "command does"
        )


def ensure_installed(*packages: Path) -> None:
    """Each package's plugins registered and importable in this process."""
    missing = [path for path in packages if not PACKAGES[path][1] <= registered()]
    for path in missing:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "-e", str(path)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pip install -e {path} failed:\n{done.stdout}\n{done.stderr}")
        _apply_pth_files(path)
    importlib.invalidate_caches()
    names.installed_plugin_names(max_age=0)
    assert all(PACKAGES[path][1] <= registered() for path in packages), registered()


def _apply_pth_files(path: Path) -> None:
    """What ``site`` does at start-up for the new install's ``.pth``: its paths on sys.path
    (a setuptools editable install of a src layout is a path), its import lines run."""
    distribution = PACKAGES[path][0]
    site_packages = Path(sysconfig.get_paths()["purelib"])
    for pth in site_packages.glob(f"__editable__*{distribution}-*.pth"):
        for line in pth.read_text().splitlines():
            if line.startswith(("import ", "import\t")):
                exec(line)  # as site.addpackage does
            elif line.strip() and not line.startswith("#") and line not in sys.path:
                sys.path.append(line.strip())
