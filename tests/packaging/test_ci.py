"""The CI scripts: shellcheck-clean, a missing interpreter fails under CI=true (never a
silent skip), and the floors CI installs are every declared dependency's `>=` version."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import REPO, tool

SCRIPTS = [REPO / ".ci" / n for n in ("install", "run", "test", "package", "matrix")] + [
    REPO / "packaging" / "setup-venv", REPO / "packaging" / "scripts" / "postinstall.sh",
    REPO / "packaging" / "scripts" / "preremove.sh"]


def test_scripts_are_shellcheck_clean():
    done = subprocess.run([tool("shellcheck"), *map(str, SCRIPTS)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout


def test_missing_interpreter_fails_under_ci(tmp_path):
    env = {**os.environ, "CI": "true", "HOME": str(tmp_path), "TUNEWATCH_CI_PYTHONS": "3.9.18"}
    done = subprocess.run(["bash", str(REPO / ".ci" / "matrix")], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "under CI a missing interpreter fails" in done.stderr and "== suite" not in done.stdout
    env["CI"] = "false"
    env["TUNEWATCH_CI_FLOORS_PYTHON"] = "3.9.18"
    done = subprocess.run(["bash", str(REPO / ".ci" / "matrix")], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0 and done.stderr.count("skipped (a failure under CI=true)") == 2, done.stderr


def test_floors_pin_every_declared_dependency():
    if sys.version_info < (3, 11):  # .ci/floors reads pyproject.toml with tomllib
        python = next((p for p in ("/usr/bin/python3", "python3") if subprocess.run(
            [p, "-c", "import tomllib"], capture_output=True).returncode == 0), None)
    else:
        python = sys.executable
    assert python, "no Python >= 3.11 to run .ci/floors"
    done = subprocess.run([python, str(REPO / ".ci" / "floors")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    floors = dict(line.split("==") for line in done.stdout.split())
    assert floors["jsonschema"] == "4.18" and floors["bcrypt"] == "4.0" and floors["setuptools"] == "77.0.3"
    assert {"prometheus_client", "PyYAML", "shtab", "pytest", "pytest-timeout", "hypothesis", "ansible-core",
            "fusepy", "wheel"} <= set(floors)


def test_package_checks_pythons_and_tools_before_building(tmp_path):
    """.ci/package names every missing Python (and an unsupported one) at once and builds
    nothing: dist/ and build/package stay as they were. 3.8 is never supported, so this
    never gets as far as building, whatever this machine has."""
    dist = REPO / "dist"
    before = sorted((p.name, p.stat().st_mtime_ns) for p in dist.iterdir()) if dist.is_dir() else None
    env = {**os.environ, "HOME": str(tmp_path), "PATH": f"{tmp_path}:/usr/bin:/bin",
           "TUNEWATCH_PYTHONS": "3.8 3.9 3.10"}
    done = subprocess.run(["bash", str(REPO / ".ci" / "package")], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Python 3.8 is not one tunewatch supports" in done.stderr, done.stderr
    for py in ("3.9", "3.10"):
        if not os.access(f"/usr/bin/python{py}", os.X_OK):
            assert f"python{py} not found" in done.stderr, done.stderr
    assert "nothing built" in done.stderr and not done.stdout.strip(), done.stdout
    after = sorted((p.name, p.stat().st_mtime_ns) for p in dist.iterdir()) if dist.is_dir() else None
    assert after == before
