"""cli/quickscan.py: a scan command line of the common shape gets, without argparse, the
namespace argparse gives it; every other command line goes to argparse
(docs/architecture.md#start-up-cost)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tunewatch.cli import main as cli
from tunewatch.cli.quickscan import VALUED, common_scan_args

EXAMPLE = str(Path(__file__).resolve().parent / "snapshots" / "examples" / "azure-m-rebooted")

COMMON = [
    ["scan"],
    ["scan", "--root", EXAMPLE, "--format", "json"],
    ["scan", "--format", "prometheus", "--output", "/var/lib/prometheus/node-exporter/tunewatch.prom"],
    ["scan", "--profile", "azure-sap-hana", "--root", "/tmp/snap", "--format", "text"],
    ["scan", "--content", "/etc/tunewatch/checks", "--tailoring", "t.yaml", "--waivers", "w.yaml"],
    ["scan", "--output", "", "--root", ""],  # empty values are values to argparse too
    ["scan", "--root", "scan", "--profile", "serve"],  # values that are command names
    ["scan", "--root", "/tmp/a b", "--output", "r -o.prom"],
]


def argparse_namespace(argv: list[str]) -> dict:
    return vars(cli.build_parser().parse_args(argv))


@pytest.mark.parametrize("argv", COMMON)
@pytest.mark.parametrize("runbook", [None, "https://wiki.example/runbook"])
def test_a_common_scan_line_gets_argparses_namespace(argv, runbook, monkeypatch):
    if runbook is None:
        monkeypatch.delenv("TUNEWATCH_RUNBOOK_URL", raising=False)
    else:
        monkeypatch.setenv("TUNEWATCH_RUNBOOK_URL", runbook)
    quick = common_scan_args(argv, cli.FORMATS)
    assert quick is not None
    assert vars(quick) == argparse_namespace(argv)


@pytest.mark.parametrize("argv", [
    [], ["--version"], ["-h"], ["scan", "-h"], ["collect", "/tmp/x"], ["scna"],
    ["scan", "--root"],  # a value missing: argparse's error
    ["scan", "--root=/tmp/x"], ["scan", "--roo", "/tmp/x"], ["scan", "-o", "r.prom"],
    ["scan", "--root", "-"], ["scan", "--root", "-x"], ["scan", "--root", "--root x"],  # argparse decides
    ["scan", "--root", "/a", "--root", "/b"],
    ["scan", "--format", "yaml"], ["scan", "--format", "JSON"],
    ["scan", "--verbose"], ["scan", "--format", "text", "--brief"], ["scan", "--exit-code", "--format", "json"],
    ["scan", "--timeout", "5s"], ["scan", "--rule", "sysctl"], ["scan", "--report", "json=r.json"],
    ["scan", "--", "--root"], ["scan", "/tmp/x", "--root"],
])
def test_every_other_command_line_goes_to_argparse(argv):
    assert common_scan_args(argv, cli.FORMATS) is None


def test_each_quick_option_is_a_plain_option_of_the_scan_parser():
    """A plain `--option VALUE`: stored as given (no type, no action), of no choices but
    --format's, which common_scan_args checks."""
    parser = cli.build_parser("scan")
    scan_parser = cli.innermost_parser(parser, parser.parse_args(["scan"]))
    actions = {opt: a for a in scan_parser._actions for opt in a.option_strings}
    for option, dest in VALUED.items():
        action = actions[option]
        assert (action.dest, action.nargs, action.type, action.const) == (dest, None, None, None), option
        assert type(action).__name__ == "_StoreAction", option
        assert action.choices == (cli.FORMATS if option == "--format" else None), option


def test_a_common_scan_imports_no_argparse_and_nothing_of_vsphere():
    code = ("import sys; from tunewatch.cli.main import _main; rc = _main(sys.argv[1:]); sys.stdout.flush(); "
            "print(sorted({'argparse', 'gettext', 'locale', 'tunewatch.vsphere.command'} & set(sys.modules)), "
            "file=sys.stderr); sys.exit(rc)")
    run = subprocess.run([sys.executable, "-c", code, "scan", "--root", EXAMPLE, "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stdout.startswith("{") and run.stderr.strip() == "[]"
