"""Start-up shortcuts of the console script (docs/architecture.md#start-up-cost): a report
to standard output is written by the CLI itself (not through host.atomic, whose tempfile
import a scan to stdout does not need), with the bytes write_output would give; a one-shot
command runs without the cyclic garbage collector, serve and vSphere sessions with it."""

from __future__ import annotations

import gc
import io
import os
import subprocess
import sys
from pathlib import Path

from tunewatch.cli import main as cli

EXAMPLE = str(Path(__file__).resolve().parent / "snapshots" / "examples" / "azure-m-rebooted")


def test_undecodable_bytes_go_out_as_they_came_in(monkeypatch):
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")  # a C locale: neither UTF-8 nor surrogate-safe
    monkeypatch.setattr(sys, "stdout", out)
    out.write("before\n")  # text already written is flushed ahead of the report
    cli._write("host " + os.fsdecode(b"e\xff") + " \u00e9\n", None)
    assert raw.getvalue() == b"before\nhost e\xff \xc3\xa9\n"


def test_text_only_stream(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    cli._write("report\n", "")
    assert out.getvalue() == "report\n"


def test_scan_to_stdout_loads_no_atomic_writer():
    code = ("import sys; from tunewatch.cli.main import _main; rc = _main(sys.argv[1:]); "
            "sys.stdout.flush(); print('tunewatch.host.atomic' in sys.modules, file=sys.stderr); sys.exit(rc)")
    run = subprocess.run([sys.executable, "-c", code, "scan", "--root", EXAMPLE, "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stdout.startswith("{") and run.stderr.strip() == "False"


def collects(*argv: str) -> bool:
    return cli._collects_garbage(cli.build_parser(cli.command_of(list(argv))).parse_args(list(argv)))


def test_only_long_or_unbounded_commands_collect_garbage():
    assert not collects("scan", "--root", EXAMPLE, "--format", "json")
    assert not collects("checks")
    assert not collects("collect", "/tmp/snap")
    assert collects("serve")
    assert collects("scan", "--vsphere.config", "vc.yaml", "--vsphere.vm", "db*")
    assert collects("collect", "/tmp/snap", "--vsphere.config", "vc.yaml")


def test_console_script_turns_the_collector_back_on_for_serve(monkeypatch):
    monkeypatch.setattr(cli, "COMMANDS", dict(cli.COMMANDS, serve=lambda args: int(gc.isenabled()),
                                              checks=lambda args: int(gc.isenabled())))
    try:
        gc.disable()  # as main() leaves it for the console script
        assert cli._main(["serve"], console=True) == 1
        gc.disable()
        assert cli._main(["checks"], console=True) == 0
        assert cli._main(["checks"]) == 0  # main(argv) (tests, callers): the collector left as it is
    finally:
        gc.enable()


def test_console_script_scan_ends_with_the_collector_off():
    code = ("import gc, os, sys; from tunewatch.cli import main as cli; "
            "cli._exit_now = lambda code: print(gc.isenabled(), file=sys.stderr) or code; "
            "sys.argv[1:] = ['scan', '--root', sys.argv[1], '--format', 'json']; sys.exit(cli.main())")
    run = subprocess.run([sys.executable, "-c", code, EXAMPLE], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip() == "False" and run.stdout.startswith("{")
