"""Fixtures for the artefact tests: what `bash .ci/package` built into dist/, the supported
Python interpreters, and the tools the tests drive (dpkg, rpm, systemd-analyze, ansible).

The artefacts are built by `.ci/package` (`.ci/run` runs it before the suites), not by the
tests: building needs PyPI and Go and takes a minute. Without dist/ the tests skip with the
reason; under CI=true a missing artefact, interpreter or tool is a failure.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:  # make tests/support importable as `support`
    sys.path.insert(0, str(TESTS_DIR))

REPO = TESTS_DIR.parent
DIST = Path(os.environ.get("TUNEWATCH_DIST", REPO / "dist"))
EXAMPLE = REPO / "tests" / "snapshots" / "examples" / "azure-m-rebooted"
SUPPORTED = ("3.9", "3.10", "3.11", "3.12", "3.13")
VERSION = re.search(r'^__version__ = "([^"]+)"', (REPO / "exporter" / "tunewatch" / "__init__.py").read_text(),
                    re.M).group(1)


def missing(message: str) -> None:
    """Skip outside CI, fail under CI=true: CI must never pass by not testing."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def artefact(name: str) -> Path:
    path = DIST / name
    if not path.is_file():
        missing(f"{path} not built: run `bash .ci/package`")
    return path


def tool(name: str) -> str:
    found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.access(p, os.X_OK)),
                                       None)
    if not found:
        missing(f"{name} not installed (.ci/install installs it)")
    return found


def interpreter(version: str) -> str:
    """python3.X: pyenv's build (the CI machine's) or the distribution's."""
    candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    candidates += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    missing(f"no Python {version} (~/.pyenv/versions/{version}.* or /usr/bin/python{version})")
    return ""


def clean_env(**extra: str) -> dict:
    """The environment minus this checkout: an installed artefact must not import it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TUNEWATCH_CONTENT", "PYTHONHOME")}
    env.update(extra)
    return env


LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def expand(tag: str) -> list[tuple[str, str, str]]:
    """A wheel tag with compressed sets (PEP 425: 'cp39-cp39-manylinux_2_17_x86_64.manylinux2014_x86_64')."""
    python, abi, platform = tag.split("-")
    return [(p, a, pl) for p in python.split(".") for a in abi.split(".") for pl in platform.split(".")]


def min_glibc(platform: str) -> tuple[int, int]:
    if platform == "any":
        return (0, 0)
    match = re.fullmatch(r"manylinux_(\d+)_(\d+)_x86_64", platform)
    if match:
        return (int(match.group(1)), int(match.group(2)))
    legacy = re.fullmatch(r"(manylinux1|manylinux2010|manylinux2014)_x86_64", platform)
    assert legacy, f"not a Linux x86_64 wheel: {platform}"
    return LEGACY[legacy.group(1)]


@pytest.fixture
def need_root() -> None:
    if os.geteuid() != 0:
        missing("installing a package needs root")


def unit_settings(path: Path) -> dict[str, list[str]]:
    """The [Service]/[Unit]/[Timer] assignments of a unit file, each key's values in order."""
    settings: dict[str, list[str]] = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")) and "=" in line:
            key, value = line.split("=", 1)
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def unit_command(path: Path, overrides: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """ExecStart= of a unit as systemd runs it (systemd.service(5) "Command lines",
    systemd.exec(5) Environment=/EnvironmentFile=): the unit's Environment=, then its
    EnvironmentFile= (a leading "-": may be missing), then `overrides` (as a drop-in would);
    "${VAR}" is substituted inside a word, a lone "$VAR" word splits at whitespace."""
    settings = unit_settings(path)
    env: dict[str, str] = {}
    for value in settings.get("Environment", []):
        name, _, text = value.partition("=")
        env[name] = text.strip('"')
    for value in settings.get("EnvironmentFile", []):
        file = Path(value.lstrip("-"))
        if file.is_file():
            for line in file.read_text().splitlines():
                if line.strip() and not line.lstrip().startswith("#") and "=" in line:
                    name, _, text = line.partition("=")
                    env[name.strip()] = text.strip().strip('"')
    env.update(overrides)
    (command,) = settings["ExecStart"]
    argv: list[str] = []
    for word in command.split():
        lone = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if lone:
            argv += env.get(lone.group(1), "").split()
        else:
            argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), ""), word))
    return argv, env
