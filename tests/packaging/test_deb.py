"""The .deb, installed for real with dpkg on this Debian machine, then purged.

Installed: the venv made by postinst on the distribution's python3 (no network: the wheels
ship in the package), `tunewatch scan` and `tunewatch serve` from /usr/bin and /opt, the
units where systemd looks for them (clean for `systemd-analyze verify`), the docs and config
snippets, and the textfile unit's own command line: it writes the textfile into an existing
directory and fails loudly (non-zero, the path in the message) when the directory is missing.
Purge removes everything, the install-time venv included. The package is installed only
when it is not installed already (nothing of the machine's is replaced).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from support.procs import LOOPBACK, free_port, http_get, managed, wait_until

from .conftest import EXAMPLE, REPO, VERSION, artefact, clean_env, missing, tool, unit_command

UNITS = ("tunewatch.service", "tunewatch-textfile.service", "tunewatch-textfile.timer")
DOCS = ("web-config.yml", "tunewatch-scrape.yml", "README.md", "install.md", "runbook.md", "LICENSE", "copyright",
        "changelog.Debian.gz")
MAN_PAGES = ("tunewatch", "tunewatch-scan", "tunewatch-collect", "tunewatch-serve", "tunewatch-checks",
             "tunewatch-profiles", "tunewatch-validate-content", "tunewatch-paths", "tunewatch-completion",
             "tunewatch-export", "tunewatch-remediate")


def run(*argv: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, **kwargs)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if os.geteuid() != 0:
        missing("dpkg -i needs root")
    deb = artefact(f"tunewatch_{VERSION}-1_amd64.deb")
    dpkg = tool("dpkg")
    status = run("dpkg-query", "-W", "-f", "${Status}", "tunewatch")
    if "installed" in status.stdout:
        missing("a tunewatch package is already installed here: not replacing it (dpkg --purge tunewatch)")
    done = run(dpkg, "-i", str(deb), env=clean_env())
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "tunewatch: venv /opt/tunewatch/venv on /usr/bin/python3" in done.stdout + done.stderr
        yield done
    finally:
        purged = run(dpkg, "--purge", "tunewatch")
        assert purged.returncode == 0, purged.stdout + purged.stderr
    for path in ("/opt/tunewatch", "/usr/bin/tunewatch", "/etc/tunewatch", "/usr/lib/systemd/system/tunewatch.service"):
        assert not os.path.lexists(path), f"{path} left after purge"
    assert os.path.isdir("/opt"), "purging tunewatch removed /opt"


def test_owns_opt_tunewatch_not_opt():
    """dpkg removes a directory its last owner leaves empty: /opt must never be tunewatch's."""
    listing = run("dpkg-deb", "-c", str(artefact(f"tunewatch_{VERSION}-1_amd64.deb"))).stdout
    names = {line.split()[5] for line in listing.splitlines()}
    assert "./opt/tunewatch/" in names and "./opt/" not in names, sorted(n for n in names if n.startswith("./opt/"))[:5]


def test_lintian_finds_only_the_opt_layout(tmp_path):
    """lintian: no error but dir-or-file-in-opt (the package lives in /opt/tunewatch by design),
    and only the warnings packaging/README.md justifies."""
    deb = artefact(f"tunewatch_{VERSION}-1_amd64.deb")
    done = run(tool("lintian"), "--tag-display-limit", "0", str(deb), timeout=600)
    tags = {}
    for line in done.stdout.splitlines():
        match = re.match(r"([EW]): tunewatch: (\S+)", line)
        if match:
            tags.setdefault(match.group(2), match.group(1))
    errors = {t for t, level in tags.items() if level == "E"}
    assert errors <= {"dir-or-file-in-opt"}, done.stdout
    justified = set(re.findall(r"^\| lintian \| `([a-z0-9-]+)`", (REPO / "packaging" / "README.md").read_text(), re.M))
    assert set(tags) - {"dir-or-file-in-opt"} <= justified, (sorted(tags), sorted(justified))


def test_changelog_version_is_the_package_version():
    text = (REPO / "packaging" / "changelog.yml").read_text()
    assert re.search(r"^- semver: (\S+)$", text, re.M).group(1) == f"{VERSION}-1"


def test_files_scripts_and_units(installed):
    files = set(run("dpkg", "-L", "tunewatch").stdout.split())
    for unit in UNITS:
        assert f"/usr/lib/systemd/system/{unit}" in files
    for doc in DOCS:
        assert f"/usr/share/doc/tunewatch/{doc}" in files
    assert {"/etc/tunewatch/serve.env", "/etc/tunewatch/textfile.env"} <= files
    for page in MAN_PAGES:
        assert f"/usr/share/man/man1/{page}.1.gz" in files
    assert {"/usr/share/bash-completion/completions/tunewatch", "/usr/share/zsh/vendor-completions/_tunewatch"} <= files
    assert "/opt" not in files and "/opt/tunewatch" in files
    # man renders every page without a warning; completion is what the installed CLI prints
    for page in MAN_PAGES:
        shown = run("man", "--warnings", "-l", "-Tutf8", f"/usr/share/man/man1/{page}.1.gz", env={**clean_env(), "MANWIDTH": "80"})
        assert shown.returncode == 0 and not shown.stderr.strip(), (page, shown.stderr)
    scan_page = gzip.decompress(Path("/usr/share/man/man1/tunewatch-scan.1.gz").read_bytes()).decode()
    assert "\\-\\-profile" in scan_page and ".SH OPTIONS" in scan_page
    for shell, path in (("bash", "/usr/share/bash-completion/completions/tunewatch"),
                        ("zsh", "/usr/share/zsh/vendor-completions/_tunewatch")):
        printed = run("/usr/bin/tunewatch", "completion", shell, env=clean_env()).stdout
        assert Path(path).read_text() == printed, shell
    conffiles = Path("/var/lib/dpkg/info/tunewatch.conffiles").read_text().split()
    assert sorted(conffiles) == ["/etc/tunewatch/serve.env", "/etc/tunewatch/textfile.env"]
    assert os.path.realpath("/usr/bin/tunewatch") == "/opt/tunewatch/venv/bin/tunewatch"
    python = Path("/opt/tunewatch/venv/bin/python")
    version = run(str(python), "-c", "import sys; print(sys.version_info >= (3, 9), sys.base_prefix)").stdout.split()
    assert version == ["True", "/usr"], version  # the distribution's python3, not pyenv's
    verify = run(tool("systemd-analyze"), "verify", *(f"/usr/lib/systemd/system/{u}" for u in UNITS))
    assert verify.returncode == 0 and not verify.stderr.strip(), verify.stderr


def test_scan_from_the_package(installed, tmp_path):
    out = tmp_path / "r.json"
    done = run("tunewatch", "scan", "--root", str(EXAMPLE), "--profile", "azure-sap-hana", "--format", "json",
               "--output", str(out), cwd=tmp_path, env=clean_env(PATH="/usr/bin:/bin"))
    assert done.returncode == 2, done.stderr
    report = json.loads(out.read_text())
    assert report["version"] == VERSION and report["summary"]["fail"] == 6
    paths = dict(line.split(None, 1) for line in run("/usr/bin/tunewatch", "paths", env=clean_env()).stdout.splitlines())
    assert paths["checks"].startswith("/opt/tunewatch/venv/lib/python3"), paths


def test_serve_from_the_package(installed, tmp_path):
    port = free_port()
    argv = ["/opt/tunewatch/bin/tunewatch", "serve", "--root", str(EXAMPLE), "--profile", "azure-sap-hana",
            "--web.listen-address", f"{LOOPBACK}:{port}"]
    url = f"http://{LOOPBACK}:{port}/metrics"
    with managed(argv, tmp_path, "serve", env=clean_env()) as serve:
        serve.wait_http(url, timeout=60)
        # the first scan runs in the background after start-up
        body = wait_until(lambda: (lambda text: text if "tunewatch_check_status{" in text else None)(
            http_get(url, timeout=5).body.decode()), 60, 0.5, lambda: f"no results\n{serve.describe()}")
    assert 'tunewatch_build_info{' in body and f'version="{VERSION}"' in body
    assert 'tunewatch_check_status{' in body and 'check="irqbalance-disabled"' in body


def test_textfile_unit_writes_the_file_or_fails_loudly(installed, tmp_path):
    unit = Path("/usr/lib/systemd/system/tunewatch-textfile.service")
    args = {"TUNEWATCH_ARGS": f"--root {EXAMPLE} --profile azure-sap-hana"}
    textfile_dir = tmp_path / "node-exporter"
    textfile_dir.mkdir()
    argv, env = unit_command(unit, {**args, "TUNEWATCH_TEXTFILE_DIR": str(textfile_dir)})
    assert argv[:2] == ["/usr/bin/env", "tunewatch"] and env["PATH"].startswith("/opt/tunewatch/bin:")
    done = run(*argv, env=env, cwd="/")
    assert done.returncode == 0, done.stderr  # verdicts are in the metrics, not the exit code
    text = (textfile_dir / "tunewatch.prom").read_text()
    assert "tunewatch_build_info{" in text and "tunewatch_last_scan_timestamp_seconds" in text
    # a missing textfile directory: non-zero, and the journal (stderr) names the path
    gone = tmp_path / "missing"
    argv, env = unit_command(unit, {**args, "TUNEWATCH_TEXTFILE_DIR": str(gone)})
    done = run(*argv, env=env, cwd="/")
    assert done.returncode != 0 and str(gone) in done.stderr, (done.returncode, done.stderr)
    assert not gone.exists()
