"""The README's first code block, run as a new user would: copied literally (taken from
README.md here, so that the two cannot drift) into a shell in a clean copy of this
repository (what git tracks, nothing built), with only the distribution's /usr/bin/python3
(PATH=/usr/bin:/bin, no pyenv) and a fresh HOME. It must make the venv, install tunewatch
from the copy and scan this host; the installed tunewatch then scans a shipped example with
the content it carries. Its second code block is the CI entry point.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import EXAMPLE, REPO, VERSION, clean_env, missing

SYSTEM_PYTHON = "/usr/bin/python3"


def code_blocks() -> list[str]:
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", (REPO / "README.md").read_text(), re.S)]


def clean_copy(target: Path) -> Path:
    """The files git would put in a fresh clone (tracked, plus new files not ignored, so that
    uncommitted work is what is tested): no build/, dist/, egg-info or venv of this checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    if listed.returncode != 0:
        missing(f"not a git checkout: {listed.stderr.strip()}")
    for name in filter(None, listed.stdout.split("\0")):
        source = REPO / name
        if not os.path.lexists(source):  # deleted in the work tree, not yet in the index
            continue
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), dest)
        else:
            shutil.copy2(source, dest)
    return target


def test_readme_blocks():
    first, second = code_blocks()[:2]
    assert second == "bash .ci/run"
    # one line, the host's python3, the clone's package, a scan of this host
    assert "\n" not in first and first.startswith("python3 -m venv ") and "pip install . " in first, first
    assert first.endswith("tunewatch scan"), first


def test_readme_first_block_installs_and_scans_this_host(tmp_path):
    if (REPO / "build" / "ci" / "venvs") in Path(sys.prefix).parents:
        # .ci/matrix's suites: the block runs on /usr/bin/python3 whatever the suite's
        # Python, and .ci/test's suite (the first) has run it already
        pytest.skip("the README block runs on /usr/bin/python3: once per CI run, in .ci/test's suite")
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        missing(f"no {SYSTEM_PYTHON}")
    if subprocess.run([SYSTEM_PYTHON, "-c", "import ensurepip, venv"], capture_output=True).returncode != 0:
        missing(f"{SYSTEM_PYTHON} cannot make a venv (apt install python3-venv, as the README says)")
    first = code_blocks()[0]
    home, src = tmp_path / "home", clean_copy(tmp_path / "tunewatch")
    home.mkdir()
    env = {k: v for k, v in clean_env(HOME=str(home), PATH="/usr/bin:/bin").items()
           if not k.startswith(("VIRTUAL_ENV", "PYENV", "CONDA", "PYTHON"))}
    done = subprocess.run(["bash", "-c", first], cwd=src, env=env, capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    # exit 0 or 2: the scan ran (2: something on this host fails); never 1 (usage, content)
    assert done.returncode in (0, 2), f"exit {done.returncode}\n{out[-4000:]}"
    assert re.search(r"^summary: \d+ fail, \d+ error", done.stdout, re.M), out[-4000:]
    venv = home / ".local" / "tunewatch"
    python = subprocess.run([str(venv / "bin" / "python"), "-c", "import sys; print(sys.base_prefix, sys.version_info >= (3, 9))"],
                            capture_output=True, text=True, timeout=60).stdout.split()
    assert python == ["/usr", "True"], python  # the distribution's python3, not pyenv's
    # installed, not read from the copy: the content travels in the venv
    report = tmp_path / "r.json"
    scan = subprocess.run([str(venv / "bin" / "tunewatch"), "scan", "--root", str(EXAMPLE), "--profile", "azure-sap-hana",
                           "--format", "json", "--output", str(report)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert scan.returncode == 2, scan.stderr
    data = json.loads(report.read_text())
    assert data["version"] == VERSION and data["summary"]["fail"] == 6
    paths = dict(line.split(None, 1) for line in subprocess.run(
        [str(venv / "bin" / "tunewatch"), "paths"], env=env, capture_output=True, text=True, timeout=60).stdout.splitlines())
    assert paths["checks"].startswith(str(venv)), paths
