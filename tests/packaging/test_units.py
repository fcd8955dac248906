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


def test_serve_unit_is_hardened_and_writes_nothing():
    unit = UNITS / "tunewatch.service"
    score = exposure(unit)
    print(f"\nsystemd-analyze security tunewatch.service: {score}")
    assert score <= 3.0
    settings = unit_settings(unit)
    assert settings["ProtectSystem"] == ["strict"] and settings["DynamicUser"] == ["yes"]
    assert settings["CapabilityBoundingSet"] == ["CAP_DAC_READ_SEARCH"]
    assert settings["AmbientCapabilities"] == ["CAP_DAC_READ_SEARCH"]
    writable = {"ReadWritePaths", "StateDirectory", "CacheDirectory", "LogsDirectory", "RuntimeDirectory"}
    assert not writable & set(settings), writable & set(settings)
    # /proc/<pid> of irqbalance and /proc/interrupts must stay visible to the scanner
    assert "ProtectProc" not in settings and "ProcSubset" not in settings


def test_textfile_unit_never_skips_silently():
    settings = unit_settings(UNITS / "tunewatch-textfile.service")
    assert not [k for k in settings if k.startswith(("Condition", "Assert"))], settings.keys()
    # "-": a missing directory is reported by tunewatch (test_deb runs it), not by a namespace error
    assert settings["ReadWritePaths"] == ["-/var/lib/prometheus/node-exporter"]
    assert "--output ${TUNEWATCH_TEXTFILE_DIR}/tunewatch.prom" in settings["ExecStart"][0]
