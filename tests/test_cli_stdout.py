"""The CLI writes a report to standard output itself (not through host.atomic, whose
tempfile import a scan to stdout does not need): the same bytes write_output would give."""

from __future__ import annotations

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
