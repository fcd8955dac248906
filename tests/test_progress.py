"""Progress on a terminal, silence elsewhere: collect and serve's first scan run under a real
pseudo-terminal (pty) and under a pipe."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

EXAMPLE = str(Path(__file__).parent / "snapshots" / "examples" / "azure-m-rebooted")


def run_on_pty(argv: list[str], until: bytes, timeout: float = 60) -> bytes:
    """argv with stdout and stderr on a new pty; what it wrote until `until` shows or it exits."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal 120 wide
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and until not in seen:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the child closed its side
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        os.close(leader)
    return seen


def test_collect_shows_progress_on_a_terminal_and_nothing_in_a_pipe(tmp_path):
    on_tty = run_on_pty([sys.executable, "-m", "tunewatch", "collect", "--root", EXAMPLE, str(tmp_path / "a")],
                        until=b"scan it with")
    assert b"tunewatch collect: " in on_tty and b"files written (" in on_tty, on_tty[-500:]
    assert b"\r\x1b[K" in on_tty  # the status line is rewritten in place, then cleared
    piped = subprocess.run([sys.executable, "-m", "tunewatch", "collect", "--root", EXAMPLE, str(tmp_path / "b")],
                           capture_output=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert b"files written" not in piped.stderr + piped.stdout and b"\r" not in piped.stderr


def test_serves_first_scan_is_shown_on_a_terminal_only(tmp_path):
    argv = [sys.executable, "-m", "tunewatch", "serve", "--root", EXAMPLE, "--profile", "azure-sap-hana",
            "--web.listen-address", "127.0.0.1:0", "--no-scan.uevents"]
    on_tty = run_on_pty(argv, until=b"first scan running", timeout=60)
    assert b"tunewatch serve: first scan running" in on_tty, on_tty[-800:]
    log = tmp_path / "serve.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=f)
        try:
            time.sleep(4)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
    assert b"first scan running" not in log.read_bytes()
