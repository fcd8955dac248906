"""The .rpm, installed with Debian's rpm into a temporary root (`rpm -i --root --nodeps
--noscripts`: Debian has no RHEL/SLES python3 packages to satisfy the dependency, and the
scriptlets would run chrooted into a root without a shell).

Checked: the dependency on a Python >= 3.9 in each distribution's name, the file list and
config files, the scriptlets (postinstall makes the venv, preremove drops it on erase only),
the units where systemd looks for them, the wheels (glibc <= 2.28), and that the entry point
runs once the postinstall's setup-venv has made the venv inside that root.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from .conftest import EXAMPLE, REPO, VERSION, artefact, clean_env, expand, min_glibc, tool

RPM_NAME = f"tunewatch-{VERSION}-1.x86_64.rpm"


def rpm(*args: str) -> str:
    done = subprocess.run([tool("rpm"), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    package = artefact(RPM_NAME)
    root = tmp_path_factory.mktemp("rpmroot")
    rpm("--root", str(root), "--initdb")
    rpm("-i", "--root", str(root), "--nodeps", "--noscripts", str(package))
    assert rpm("--root", str(root), "-qa").split() == [f"tunewatch-{VERSION}-1.x86_64"]
    return root


def test_requires_a_python_39_by_each_distribution_name():
    """Every Python setup-venv accepts (/usr/bin/python3.9 ... 3.13, or python3 >= 3.9), by
    RHEL's (python3.11) and SLES's (python311) names, in one rich dependency."""
    requires = rpm("-qp", "--requires", str(artefact(RPM_NAME)))
    [rich] = [line for line in requires.splitlines() if line.startswith("(python3 >= 3.9 or ")]
    names = set(rich.strip("()").split(" or ")[1:])
    assert names == {f"python3.{m}" for m in range(9, 14)} | {f"python3{m}" for m in range(9, 14)}, rich
    setup_venv = (REPO / "packaging" / "setup-venv").read_text()
    assert "for candidate in python3.13 python3.12 python3.11 python3.10 python3.9 python3; do" in setup_venv


def test_docs_are_doc_and_the_license_is_license():
    package = str(artefact(RPM_NAME))
    docs = set(rpm("-qpd", package).split())
    for doc in ("web-config.yml", "tunewatch-scrape.yml", "README.md", "install.md", "runbook.md"):
        assert f"/usr/share/doc/tunewatch/{doc}" in docs
    assert "/usr/share/man/man1/tunewatch-scan.1.gz" in docs
    assert rpm("-qpL", package).split() == ["/usr/share/licenses/tunewatch/LICENSE"]
    assert f"- {VERSION}-1" in rpm("-qp", "--changelog", package)


def test_file_list_config_and_units(root):
    files = set(rpm("--root", str(root), "-ql", "tunewatch").split())
    for unit in ("tunewatch.service", "tunewatch-textfile.service", "tunewatch-textfile.timer"):
        assert f"/usr/lib/systemd/system/{unit}" in files
        assert (root / "usr/lib/systemd/system" / unit).read_text() == (
            Path(__file__).resolve().parents[2] / "contrib" / "systemd" / unit).read_text()
    for doc in ("web-config.yml", "tunewatch-scrape.yml", "README.md", "install.md", "runbook.md"):
        assert f"/usr/share/doc/tunewatch/{doc}" in files
    assert {"/opt/tunewatch/libexec/setup-venv", "/opt/tunewatch/bin/tunewatch", "/usr/bin/tunewatch",
            "/usr/share/bash-completion/completions/tunewatch", "/usr/share/zsh/site-functions/_tunewatch",
            "/usr/share/man/man1/tunewatch.1.gz", "/usr/share/licenses/tunewatch/LICENSE"} <= files
    assert sorted(rpm("--root", str(root), "-qc", "tunewatch").split()) == ["/etc/tunewatch/serve.env",
                                                                         "/etc/tunewatch/textfile.env"]
    assert os.readlink(root / "usr/bin/tunewatch") == "../../opt/tunewatch/bin/tunewatch"
    assert os.readlink(root / "opt/tunewatch/bin/tunewatch") == "../venv/bin/tunewatch"
    assert not (root / "opt/tunewatch/venv").exists()  # made at install time, not shipped


def test_scriptlets(root):
    scripts = rpm("--root", str(root), "-q", "--scripts", "tunewatch")
    post = scripts.split("postinstall scriptlet", 1)[1].split("preuninstall scriptlet", 1)[0]
    preun = scripts.split("preuninstall scriptlet", 1)[1]
    assert "/opt/tunewatch/libexec/setup-venv" in post and "daemon-reload" in post
    # rpm passes 0 to %preun on erase, 1 on upgrade: the venv goes only on erase
    assert "remove|purge|0)" in preun and "rm -rf /opt/tunewatch/venv" in preun


def test_wheels_install_on_glibc_2_28_for_every_python(root):
    wheels = sorted((root / "opt/tunewatch/wheels").glob("*.whl"))
    names = [w.name for w in wheels]
    for version in ("39", "310", "311", "312", "313"):
        assert any(n.startswith("pyyaml-") and f"-cp{version}-" in n for n in names), (version, names)
    assert any(n.startswith("bcrypt-4.") for n in names) and not any(n.startswith("bcrypt-5") for n in names)
    for wheel in wheels:
        tags = expand("-".join(wheel.name[:-4].split("-")[-3:]))
        assert any(min_glibc(platform) <= (2, 28) for _, _, platform in tags), wheel.name


def test_entry_point_runs_after_setup_venv(root, tmp_path):
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.skip("no /usr/bin/python3 to make the venv with")
    done = subprocess.run([str(root / "opt/tunewatch/libexec/setup-venv")], capture_output=True, text=True,
                          timeout=300, env=clean_env())
    assert done.returncode == 0, done.stderr
    assert f"venv {root}/opt/tunewatch/venv on /usr/bin/python3" in done.stdout
    out = tmp_path / "r.json"
    scan = subprocess.run([str(root / "opt/tunewatch/venv/bin/tunewatch"), "scan", "--root", str(EXAMPLE),
                           "--profile", "azure-sap-hana", "--format", "json", "--output", str(out)],
                          capture_output=True, text=True, timeout=120, env=clean_env(), cwd=tmp_path)
    assert scan.returncode == 2, scan.stderr
    assert json.loads(out.read_text())["summary"]["fail"] == 6


def test_rpmlint_finds_only_what_packaging_readme_justifies():
    """rpmlint: no error but dir-or-file-in-opt and the ones packaging/README.md justifies (the
    package is unsigned and has no ELF file of its own), and no unjustified warning."""
    done = subprocess.run([tool("rpmlint"), str(artefact(RPM_NAME))], capture_output=True, text=True, timeout=300)
    tags = {}
    for line in done.stdout.splitlines():
        match = re.match(r"tunewatch\.x86_64: ([EW]): (\S+)", line)
        if match:
            tags.setdefault(match.group(2), match.group(1))
    justified = set(re.findall(r"^\| rpmlint \| `([a-z0-9%-]+)`", (REPO / "packaging" / "README.md").read_text(), re.M))
    errors = {t for t, level in tags.items() if level == "E"}
    assert errors <= {"dir-or-file-in-opt", "no-signature", "no-binary"}, done.stdout
    assert set(tags) - {"dir-or-file-in-opt"} <= justified, (sorted(tags), sorted(justified))
