"""The zipapps: one file per supported Python, copied and run.

Each `tunewatch-V-py3.X.pyz` runs through its own shebang (`/usr/bin/env python3.X`) with
only that interpreter's directory and /usr/bin on PATH, from a directory outside the
checkout, with no PYTHONPATH: it scans an example snapshot with the content it carries.
Its compiled wheels are the ones RHEL 8's glibc 2.28 can load.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from .conftest import EXAMPLE, SUPPORTED, VERSION, artefact, clean_env, expand, interpreter, min_glibc


def run_pyz(pyz: Path, version: str, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    copy = tmp_path / pyz.name  # "copy the file, run it"
    if not copy.exists():
        shutil.copy2(pyz, copy)
    python = interpreter(version)
    env = clean_env(PATH=f"{os.path.dirname(python)}:/usr/bin:/bin", HOME=str(tmp_path),
                    SHIV_ROOT=str(tmp_path / "shiv"), **env)
    return subprocess.run([str(copy), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("version", SUPPORTED)
def test_zipapp_scans_an_example_with_its_python(version, tmp_path):
    pyz = artefact(f"tunewatch-{VERSION}-py{version}.pyz")
    assert pyz.read_bytes().startswith(f"#!/usr/bin/env python{version}\n".encode())
    out = tmp_path / "r.json"
    done = run_pyz(pyz, version, tmp_path, "scan", "--root", str(EXAMPLE), "--profile", "azure-sap-hana",
                   "--format", "json", "--output", str(out))
    assert done.returncode == 2, done.stdout + done.stderr  # the rebooted example fails: content was found
    report = json.loads(out.read_text())
    assert report["version"] == VERSION and report["summary"]["fail"] == 6 and len(report["results"]) == 8
    # the content comes from the zipapp (extracted under SHIV_ROOT), not from this checkout
    paths = dict(line.split(None, 1) for line in run_pyz(pyz, version, tmp_path, "paths").stdout.splitlines())
    assert paths["checks"].startswith(str(tmp_path / "shiv")), paths
    which = run_pyz(pyz, version, tmp_path, "--version")
    assert which.returncode == 0 and VERSION in which.stdout + which.stderr


@pytest.mark.parametrize("version", SUPPORTED)
def test_zipapp_imports_every_dependency_on_its_python(version, tmp_path):
    """The lazily imported ones too: bcrypt (basic auth) and pyVmomi (vSphere), whose 9.x
    refuses Python 3.9 at import (the 3.9 zipapp carries pyvmomi 8)."""
    pyz = artefact(f"tunewatch-{VERSION}-py{version}.pyz")
    script = tmp_path / "imports.py"
    script.write_text("import sys, bcrypt, jsonschema, prometheus_client, pyVmomi, referencing, shtab, yaml\n"
                      "import tunewatch.cli.main\n"
                      "print('%d.%d' % sys.version_info[:2], bcrypt.__version__)\n")
    done = run_pyz(pyz, version, tmp_path, str(script), SHIV_INTERPRETER="1")  # shiv: run a script inside
    assert done.returncode == 0, done.stderr[-2000:]
    python, bcrypt_version = done.stdout.split()
    assert python == version and bcrypt_version.startswith("4."), done.stdout


@pytest.mark.parametrize("version", SUPPORTED)
def test_zipapp_wheels_load_on_glibc_2_28(version):
    """bcrypt 5 ships only manylinux_2_34 wheels: the zipapp must carry bcrypt 4 (2.28 or older)."""
    pyz = artefact(f"tunewatch-{VERSION}-py{version}.pyz")
    with zipfile.ZipFile(pyz) as zf:
        names = zf.namelist()
        wheel_tags = {n.split("/")[-2]: zf.read(n).decode() for n in names if n.endswith(".dist-info/WHEEL")}
    dists = {re.sub(r"-[^-]+\.dist-info$", "", d).lower().replace("_", "-"): d for d in wheel_tags}
    assert {"tunewatch", "pyyaml", "bcrypt", "jsonschema", "referencing", "prometheus-client", "shtab"} <= set(dists)
    assert dists["bcrypt"].split("-")[1].startswith("4."), dists["bcrypt"]
    abi = "cp" + version.replace(".", "")
    for dist, text in wheel_tags.items():
        tags = [t for line in re.findall(r"^Tag: (\S+)$", text, re.M) for t in expand(line)]
        assert tags and all(abi_tag in ("none", "abi3", abi) for _, abi_tag, _ in tags), (dist, tags)
        # installable where one platform tag is: "any", or a manylinux of glibc <= 2.28
        assert any(min_glibc(platform) <= (2, 28) for _, _, platform in tags), (dist, tags)


@pytest.mark.parametrize("version", SUPPORTED)
def test_zipapp_under_another_python_names_the_one_it_needs(version, tmp_path):
    """`python3.Y tunewatch-V-py3.X.pyz` (another supported Python, and RHEL 8's 3.6 where
    pyenv has one): one short message naming python3.X and exit 1, cold cache or warm,
    nothing unpacked by the wrong Python, never a traceback."""
    pyz = artefact(f"tunewatch-{VERSION}-py{version}.pyz")
    other = SUPPORTED[(SUPPORTED.index(version) + 1) % len(SUPPORTED)]
    pythons = [interpreter(other)] + sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.6.*/bin/python3.6")))[:1]
    copy = tmp_path / pyz.name
    shutil.copy2(pyz, copy)
    shiv_root = tmp_path / "shiv"
    for warm in (False, True):
        if warm:  # unpacked once by the right Python: the guard still runs first
            assert run_pyz(pyz, version, tmp_path, "--version").returncode == 0
        for python in pythons:
            done = subprocess.run([python, str(copy), "scan"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                                  env=clean_env(HOME=str(tmp_path), SHIV_ROOT=str(shiv_root)))
            assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
            assert f"is built for Python {version}" in done.stderr and f"python{version}" in done.stderr, done.stderr
            assert len(done.stderr.strip().splitlines()) <= 3, done.stderr
            if not warm:
                assert not shiv_root.exists() or not any(shiv_root.iterdir()), list(shiv_root.iterdir())
