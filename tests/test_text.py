"""`--format text` for a terminal: wrapped at the width (COLUMNS) at word boundaries with an
indent, one fix shown once with the objects it covers, --quiet and --brief, not-applicable
checks folded, the summary line last; `--root` that looks like no host."""

from __future__ import annotations

import copy
import os
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tunewatch.scan import engine
from tunewatch.content.catalog import Content
from tunewatch.results import Fix
from tunewatch.outputs.text import render_text

TESTS = Path(__file__).resolve().parent
EXAMPLE = str(TESTS / "snapshots" / "examples" / "azure-m-rebooted")
SAS = str(TESTS / "snapshots" / "examples" / "sas-anf")


def tunewatch(*args: str, columns: int = 100, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunewatch", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": str(columns), **(env or {})})


@pytest.fixture(scope="module")
def result():
    content = Content()
    return engine.scan(content, content.resolve("azure-sap-hana"), EXAMPLE)


def _words_of(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("columns", [60, 100, 140])
def test_lines_fit_the_terminal_and_words_stay_whole(columns):
    run = tunewatch("scan", "--root", EXAMPLE, "--profile", "azure-sap-hana", columns=columns)
    assert run.returncode == 2, run.stderr
    lines = run.stdout.splitlines()
    too_long = [line for line in lines[:-1] if len(line) > columns and " " in line.strip()]
    assert not too_long, too_long  # only a single unbreakable word may overflow; the summary stays one line
    wide = tunewatch("scan", "--root", EXAMPLE, "--profile", "azure-sap-hana", columns=10000).stdout
    # the same words in the same order: wrapping split no word (the header's root path aside)
    assert _words_of(run.stdout)[:-2] == _words_of(wide)[:-2]  # the summary's duration differs
    for line in lines:  # continuation lines are indented under their text
        if line and not line.startswith(("FAIL", "PASS", "ERROR", "WAIVED", "NOTAPPLICABLE", "tunewatch", "host",
                                         "summary")):
            assert line.startswith("    "), line
    assert lines[-1].startswith("summary: ")


def test_one_fix_is_shown_once_with_its_objects(result):
    """The IRQs of a NIC share one fix: one line names them by their placement data, and
    fixes that differ only in the NIC they name are one line too ("likewise for")."""
    text = render_text(result, width=100)
    flat = " ".join(text.split())
    affinity = next(r for r in result.results if r.check == "nic-irq-affinity")
    for nic in ("enP30832s1", "enP30833s2"):
        irqs = [o.irq.irq for o in affinity.objects if o.status == "fail" and o.irq.interface == nic]
        assert f"{len(irqs)} IRQs of {nic} ({min(irqs)}-{max(irqs)})" in flat, flat
    assert flat.count("set_irq_affinity_cpulist.sh 2-31 enP30832s1 (likewise for enP30833s2)") == 1, text
    assert "set_irq_affinity_cpulist.sh 2-31 enP30833s2" not in flat
    assert "... and" not in text.split("nic-irq-affinity")[1].split("\nFAIL")[0]  # nothing hidden


def test_each_fix_is_printed_once_and_the_example_fits_a_screen():
    """Without --verbose an object's line is its data (actual, or predicted and source),
    not its message, which repeats the fix printed after it: 8 checks at 100 columns fit in
    40 lines. --verbose still prints every message."""
    run = subprocess.run([sys.executable, "-m", "tunewatch", "scan", "--root", EXAMPLE, "--profile",
                          "azure-sap-hana", "--color", "never"], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "100"}, timeout=120)
    assert run.returncode == 2, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) <= 40, run.stdout
    flat = " ".join(run.stdout.split())
    for command in ("systemctl stop irqbalance", "systemctl disable --now irqbalance.service",
                    "ethtool -L enP30832s1 combined 16"):
        per_check = [block.count(command) for block in flat.split(" FAIL ")]
        assert max(per_check) == 1, (command, per_check)
    assert "after boot 32 (driver default (mlx5_core" in flat  # predicted and source, from the data
    assert "make it persistent for enP30832s1 itself" in flat  # a persistent fix keeps its how-to
    verbose = subprocess.run([sys.executable, "-m", "tunewatch", "scan", "--root", EXAMPLE, "--profile",
                              "azure-sap-hana", "--color", "never", "--verbose"], capture_output=True, text=True,
                             env={**os.environ, "COLUMNS": "100"}, timeout=120).stdout
    assert "irqbalance is running (pid 1163); stop it" in verbose


def test_quiet_shows_only_fail_and_error_and_brief_one_line_per_check():
    full = tunewatch("scan", "--root", EXAMPLE, "--profile", "azure-sap-hana").stdout
    quiet = tunewatch("scan", "--root", EXAMPLE, "--profile", "azure-sap-hana", "--quiet").stdout
    assert "PASS" in full and "PASS" not in quiet and "FAIL" in quiet
    assert quiet.splitlines()[-1] == full.splitlines()[-1].rsplit(",", 1)[0] + "," + \
        quiet.splitlines()[-1].rsplit(",", 1)[1]  # same counts (the duration may differ)
    brief = tunewatch("scan", "--root", EXAMPLE, "--profile", "azure-sap-hana", "--brief", columns=300).stdout
    checks = [line for line in brief.splitlines() if re.match(r"^(FAIL|PASS|ERROR|WAIVED|NOTAPPLICABLE) ", line)]
    body = [line for line in brief.splitlines()[3:-2] if line]
    assert body == checks and len(checks) == 8  # one line per check, nothing else
    assert "nic-irq-affinity [high]" in brief and "of 64 objects)" in brief


def test_not_applicable_checks_fold_into_one_line():
    run = tunewatch("scan", "--root", SAS, columns=100)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    starts = [line for line in lines if line.startswith("NOTAPPLICABLE")]
    # how many checks auto selects and which apply comes from the content, not from here
    report = json.loads(tunewatch("scan", "--root", SAS, "--format", "json").stdout)
    n = sum(r["status"] == "notapplicable" for r in report["results"])
    assert n > 1 and len(starts) == 1 and f"{n} checks do not apply" in starts[0]
    verbose = tunewatch("scan", "--root", SAS, "--verbose", columns=100).stdout
    assert sum(line.startswith("NOTAPPLICABLE") for line in verbose.splitlines()) == n
    quiet = tunewatch("scan", "--root", SAS, "--quiet").stdout
    assert "NOTAPPLICABLE" not in quiet and quiet.splitlines()[-1].startswith("summary: 0 fail")


def test_a_root_that_looks_like_no_host_is_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    run = tunewatch("scan", "--root", str(empty))
    assert run.returncode == 1 and "looks like no host" in run.stderr and "--allow-partial-root" in run.stderr
    assert run.stdout == ""
    allowed = tunewatch("scan", "--root", str(empty), "--allow-partial-root")
    assert allowed.returncode in (0, 2) and allowed.stdout.splitlines()[-1].startswith("summary: ")
    remediate = tunewatch("remediate", "--root", str(empty))
    assert remediate.returncode == 1 and "looks like no host" in remediate.stderr
    partial = tmp_path / "partial"
    (partial / "etc").mkdir(parents=True)
    (partial / "etc/os-release").write_text('NAME="SLES"\n')
    warned = tunewatch("scan", "--root", str(partial))
    assert warned.returncode in (0, 2) and "warning: --root" in warned.stderr and "proc or sys" in warned.stderr


@pytest.mark.parametrize("example,shown", [("azure-m-pinned-oneshot", True), ("azure-m-pinned-udev", False)])
def test_readd_line_only_where_boot_and_readd_differ(example: str, shown: bool) -> None:
    content = Content()
    scan = engine.scan(content, content.resolve("azure-sap-hana"), str(TESTS / "snapshots" / "examples" / example))
    lines = [ln for ln in render_text(scan, width=200).splitlines() if "after a re-add of the device" in ln]
    assert len(lines) == (1 if shown else 0), lines
    if shown:
        assert "fail for enP30832s1, enP30833s2" in lines[0] and lines[0].split()[0] == "re-add"


def test_a_multi_line_change_is_shown_line_by_line_as_it_goes_in_the_file(result):
    """A tuned profile or a .mount section read as one line means something else: each of
    its lines is its own report line, escaped, under `fix: in FILE:`; the note follows."""
    r = copy.deepcopy(result)
    obj = next(o for c in r.results for o in c.objects if o.status == "fail")
    obj.fix = Fix(file="/etc/tuned/sap-hana-tunewatch/tuned.conf",
                  change="[main]\ninclude=sap-hana\n\n[vm]\ndrop=dirty_ratio\ndirty_bytes = 31457280\x1b[2J",
                  note="then tuned-adm profile sap-hana-tunewatch")
    out = render_text(r, verbose=True, width=100).splitlines()
    at = next(i for i, line in enumerate(out) if line.strip() == "fix: in /etc/tuned/sap-hana-tunewatch/tuned.conf:")
    assert [line.strip() for line in out[at + 1:at + 8]] == [
        "[main]", "include=sap-hana", "", "[vm]", "drop=dirty_ratio", "dirty_bytes = 31457280\\x1b[2J",
        "then tuned-adm profile sap-hana-tunewatch"]
    assert "\x1b" not in "\n".join(out)
