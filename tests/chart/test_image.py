"""The container image, read from its Dockerfile, and the dependency versions it installs.

The image is not built here (no Docker daemon, no network): these checks are static.
What they hold: the base image is pinned by digest, the operator runs as uid 10001,
and pip installs the project with ``-c constraints.txt``, whose exact versions stay
within the ranges ``pyproject.toml`` declares (every runtime requirement bounded above
and pinned), so the two never drift apart.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import tomllib

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from chart.crdcheck import ROOT

#: The Python of the base image: the constraints are resolved for it.
IMAGE_PYTHON = "3.11"


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), " ".join(rest.split())))
    return out


def runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(text) for text in project["dependencies"]]


def constraints() -> dict[str, Version]:
    """constraints.txt as {canonical name: pinned version}; refuses anything but pins."""
    pins: dict[str, Version] = {}
    for number, raw in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        found = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", line)
        assert found, f"constraints.txt:{number}: not an exact pin: {raw!r}"
        name = canonicalize_name(found.group(1))
        assert name not in pins, f"constraints.txt:{number}: {name} pinned twice"
        pins[name] = Version(found.group(2))
    return pins


# -- the Dockerfile ---------------------------------------------------------------------


def test_dockerfile_runs_the_operator_as_a_non_root_user() -> None:
    instructions = dockerfile_instructions()
    users = [value for keyword, value in instructions if keyword == "USER"]
    assert users and users[-1].split(":")[0] == "10001"
    entrypoints = [value for keyword, value in instructions if keyword == "ENTRYPOINT"]
    assert [json.loads(value) for value in entrypoints] == [["policy-scheduler", "run"]]
    assert not [value for keyword, value in instructions if keyword == "CMD"]
    runs = " && ".join(value for keyword, value in instructions if keyword == "RUN")
    assert "useradd" in runs and "--uid 10001" in runs


def test_the_base_image_is_pinned_by_digest() -> None:
    """A tag moves; a digest is the same bytes on every build (refreshed on purpose)."""
    froms = [value for keyword, value in dockerfile_instructions() if keyword == "FROM"]
    assert len(froms) == 1
    assert re.fullmatch(rf"python:{re.escape(IMAGE_PYTHON)}-slim@sha256:[0-9a-f]{{64}}", froms[0])
    text = (ROOT / "Dockerfile").read_text()
    assert "docker buildx imagetools inspect python:3.11-slim" in text  # how to refresh it


def test_the_image_installs_the_pinned_versions() -> None:
    runs = [value for keyword, value in dockerfile_instructions() if keyword == "RUN"]
    installs = [run for run in runs if "pip install" in run]
    assert len(installs) == 1
    assert "pip install --no-cache-dir -c constraints.txt ." in installs[0]


def test_dockerignore_keeps_what_pip_needs() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    assert "*" in lines
    assert {"!pyproject.toml", "!constraints.txt", "!operator/"} <= set(lines)


def test_the_project_needs_the_image_python() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == f">={IMAGE_PYTHON}"


# -- pyproject's ranges and constraints.txt's pins --------------------------------------


@pytest.mark.parametrize("requirement", runtime_requirements(), ids=lambda r: r.name)
def test_every_runtime_requirement_has_an_upper_bound(requirement: Requirement) -> None:
    """A new major release must not reach an install of this version unseen."""
    upper = [s for s in requirement.specifier if s.operator in ("<", "<=", "==", "~=")]
    assert upper, f"{requirement}: no upper bound"


@pytest.mark.parametrize("requirement", runtime_requirements(), ids=lambda r: r.name)
def test_every_runtime_requirement_is_pinned_within_its_range(requirement: Requirement) -> None:
    pins = constraints()
    name = canonicalize_name(requirement.name)
    assert name in pins, f"{requirement.name} is not pinned in constraints.txt"
    assert requirement.specifier.contains(pins[name], prereleases=True), (
        f"constraints.txt pins {requirement.name}=={pins[name]}, outside {requirement}"
    )


@pytest.mark.parametrize("requirement", runtime_requirements(), ids=lambda r: r.name)
def test_every_runtime_range_starts_at_the_pinned_version(requirement: Requirement) -> None:
    """The lower bound is a version the tests pass with: the one CI's pinned run installs.

    (The upper end is what a fresh install resolves, which CI's second run tests.)
    """
    pins = constraints()
    lower = [s.version for s in requirement.specifier if s.operator == ">="]
    assert lower == [str(pins[canonicalize_name(requirement.name)])], (
        f"{requirement}: its lower bound must be the pinned version, "
        f"{pins[canonicalize_name(requirement.name)]}"
    )


def test_constraints_pin_dependencies_not_the_project_or_the_installer() -> None:
    pins = constraints()
    assert not {"policy-scheduler", "pip", "setuptools", "wheel"} & pins.keys()


def test_constraints_pin_the_dependencies_of_what_they_pin() -> None:
    """Transitive dependencies are pinned too (what ``pip freeze`` of a clean install
    lists). Checked through the metadata of the pinned releases installed here, as in CI,
    which installs with ``-c constraints.txt``; releases installed at another version
    cannot be read, and are skipped."""
    pins = constraints()
    environment = {**default_environment(), "python_version": IMAGE_PYTHON, "extra": ""}
    environment |= {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}
    checked, missing = 0, []
    for name, version in sorted(pins.items()):
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if Version(distribution.version) != version:
            continue
        checked += 1
        for text in distribution.requires or []:
            requirement = Requirement(text)
            if requirement.marker and not requirement.marker.evaluate(environment):
                continue
            if canonicalize_name(requirement.name) not in pins:
                missing.append(f"{name}=={version} needs {requirement}")
    if not checked:
        pytest.skip("no release of constraints.txt is installed at its pinned version")
    assert missing == []
