"""The systemd units as systemd judges them: `systemd-analyze verify` clean wherever
tunewatch is installed (the units name no tunewatch path), `systemd-analyze security`
exposure <= 3.0 for the serve unit, which writes nothing and keeps only CAP_DAC_READ_SEARCH
(root-only NetworkManager keyfiles), and a textfile unit that cannot skip itself silently.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import REPO, tool, unit_settings

UNITS = REPO / "contrib" / "systemd"
ALL = ("tunewatch.service", "tunewatch-textfile.service", "tunewatch-textfile.timer")


def exposure(unit: Path) -> float:
    done = subprocess.run([tool("systemd-analyze"), "security", "--offline=yes", "--no-pager", str(unit)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", done.stdout)
    assert match, done.stdout[-2000:]
    return float(match.group(1))


def test_verify_clean_without_tunewatch_on_the_default_path(tmp_path):
    for name in ALL:
        shutil.copy(UNITS / name, tmp_path / name)
    done = subprocess.run([tool("systemd-analyze"), "verify", *(str(tmp_path / n) for n in ALL)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


@pytest.mark.parametrize("name", ["tunewatch.service", "tunewatch-textfile.service"])
def test_no_tunewatch_path_is_hard_coded(name):
    settings = unit_settings(UNITS / name)
    (command,) = settings["ExecStart"]
    assert command.startswith("/usr/bin/env tunewatch "), command
    path = next(v.split("=", 1)[1] for v in settings["Environment"] if v.startswith("PATH="))
    assert path.split(":")[:2] == ["/opt/tunewatch/bin", "/usr/local/bin"], path


def test_serve_unit_is_hardened_and_writes_only_its_cache():
    unit = UNITS / "tunewatch.service"
    score = exposure(unit)
    print(f"\nsystemd-analyze security tunewatch.service: {score}")
    assert score <= 3.0
    settings = unit_settings(unit)
    assert settings["ProtectSystem"] == ["strict"] and settings["DynamicUser"] == ["yes"]
    assert settings["CapabilityBoundingSet"] == ["CAP_DAC_READ_SEARCH"]
    assert settings["AmbientCapabilities"] == ["CAP_DAC_READ_SEARCH"]
    writable = {"ReadWritePaths", "StateDirectory", "LogsDirectory", "RuntimeDirectory"}
    assert not writable & set(settings), writable & set(settings)
    # the one writable place: the validated-content cache, $XDG_CACHE_HOME/tunewatch, kept
    # across restarts in the CacheDirectory= systemd makes for the dynamic user
    assert settings["CacheDirectory"] == ["tunewatch"] and "XDG_CACHE_HOME=/var/cache" in settings["Environment"]
    # /proc/<pid> of irqbalance and /proc/interrupts must stay visible to the scanner
    assert "ProtectProc" not in settings and "ProcSubset" not in settings


def test_textfile_unit_never_skips_silently():
    settings = unit_settings(UNITS / "tunewatch-textfile.service")
    assert not [k for k in settings if k.startswith(("Condition", "Assert"))], settings.keys()
    # "-": a missing directory is reported by tunewatch (test_deb runs it), not by a namespace error
    assert settings["ReadWritePaths"] == ["-/var/lib/prometheus/node-exporter"]
    # its cache apart from the serve unit's dynamic user's
    assert settings["CacheDirectory"] == ["tunewatch-textfile"]
    assert "XDG_CACHE_HOME=/var/cache/tunewatch-textfile" in settings["Environment"]
    assert "--output ${TUNEWATCH_TEXTFILE_DIR}/tunewatch.prom" in settings["ExecStart"][0]


@pytest.fixture
def world_dir():
    """A directory an unprivileged uid can reach (pytest's tmp_path lies under a 0700 one)."""
    import tempfile
    path = Path(tempfile.mkdtemp(prefix="tunewatch-caps-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_serve_capabilities_read_root_only_keyfiles_and_nothing_less(world_dir):
    """The serve unit's user is not root: with exactly the unit's capabilities
    (AmbientCapabilities=, CapabilityBoundingSet=) an unprivileged uid reads a snapshot whose
    NetworkManager keyfiles are root-only (0600, directory 0700) and gets root's verdicts;
    without them the unreadable keyfiles are `error`, never `pass`."""
    import json
    import os
    import subprocess
    import sys

    from .conftest import VERSION, artefact, clean_env, missing

    if os.geteuid() != 0:
        missing("switching to an unprivileged uid with capabilities needs root")
    setpriv = tool("setpriv")
    python = "/usr/bin/python3"  # world-executable, unlike a pyenv build under /root
    if not os.access(python, os.X_OK):
        missing("no /usr/bin/python3")
    version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    pyz = artefact(f"tunewatch-{VERSION}-py{version}.pyz")
    settings = unit_settings(UNITS / "tunewatch.service")
    caps = settings["AmbientCapabilities"][0].split()
    assert caps == settings["CapabilityBoundingSet"][0].split()
    tmp_path = world_dir
    snap = tmp_path / "snap"
    shutil.copytree(REPO / "tests" / "snapshots" / "examples" / "rhel9-vmware-nm-keyfile", snap, symlinks=True)
    keyfiles = snap / "etc" / "NetworkManager" / "system-connections"
    for keyfile in keyfiles.iterdir():
        os.chown(keyfile, 0, 0)
        keyfile.chmod(0o600)
    keyfiles.chmod(0o700)
    shutil.copy(pyz, tmp_path / pyz.name)
    (tmp_path / pyz.name).chmod(0o755)
    shiv = tmp_path / "shiv"
    shiv.mkdir()
    os.chown(shiv, 65534, 65534)

    def scan(*capability_args: str) -> dict:
        argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *capability_args,
                python, str(tmp_path / pyz.name), "scan", "--root", str(snap), "--profile", "vmware-sap-hana",
                "--format", "json"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=tmp_path,
                              env=clean_env(PATH="/usr/bin:/bin", HOME=str(tmp_path), SHIV_ROOT=str(shiv)))
        assert done.returncode in (0, 2) and done.stdout.startswith("{"), (done.returncode, done.stderr[-2000:])
        return json.loads(done.stdout)["summary"]

    names = ",".join("+" + c.lower().replace("cap_", "") for c in caps)
    as_root = json.loads(subprocess.run([sys.executable, "-m", "tunewatch", "scan", "--root", str(snap), "--profile",
                                         "vmware-sap-hana", "--format", "json"], capture_output=True, text=True,
                                        timeout=180).stdout)["summary"]
    with_caps = scan(f"--inh-caps={names}", f"--ambient-caps={names}", f"--bounding-set=-all,{names}")
    without = scan("--bounding-set=-all")
    assert with_caps == as_root and as_root["error"] == 0, (with_caps, as_root)
    assert without["error"] >= 1 and without["pass"] < as_root["pass"], without
