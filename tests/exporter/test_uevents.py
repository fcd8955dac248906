"""`serve` rescans within seconds of a NIC add, remove or rename (kernel uevents).

For real: `benchmarks/bench_readd.py` creates a network namespace, runs `tunewatch serve`
(this tree) inside it and adds and removes veth pairs there; the scan counter and the last
scan timestamp must move within the debounce window plus one scan, a burst of adds must
cause one scan, and `--no-scan.uevents` none.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tunewatch.serve import uevents

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks" / "bench_readd.py"


def test_parse_kernel_uevent():
    msg = (b"add@/devices/virtual/net/tw0\0ACTION=add\0DEVPATH=/devices/virtual/net/tw0\0SUBSYSTEM=net\0"
           b"INTERFACE=tw0\0IFINDEX=7\0SEQNUM=4711\0")
    props = uevents.parse_uevent(msg)
    assert props["SUBSYSTEM"] == "net" and props["INTERFACE"] == "tw0" and uevents.wanted(props)
    queue = msg.replace(b"SUBSYSTEM=net", b"SUBSYSTEM=queues")
    assert not uevents.wanted(uevents.parse_uevent(queue))  # per-queue kobjects: not a NIC event
    change = msg.replace(b"ACTION=add", b"ACTION=change")
    assert not uevents.wanted(uevents.parse_uevent(change))
    assert uevents.parse_uevent(b"libudev\0\xfe\xed\xca\xfe") is None  # udevd's re-broadcast, not read
    assert uevents.parse_uevent(b"garbage") is None


def test_socket_unavailable_is_logged_once_and_scans_keep_the_interval(monkeypatch, caplog):
    def refuse(*_a, **_k):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(socket, "socket", refuse)
    watcher = uevents.UeventWatcher(lambda: None)
    with caplog.at_level(logging.WARNING, logger="tunewatch.uevents"):
        assert watcher.start() is False
    assert [r.getMessage() for r in caplog.records] == ["kernel uevents unavailable: rescanning on the interval only"]
    watcher.stop()  # nothing started: a no-op


def _bench(*args: str) -> dict:
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("needs root and iproute2 to create a network namespace")
    done = subprocess.run([sys.executable, str(BENCH), "--json", *args], capture_output=True, text=True, timeout=300)
    if done.returncode == 2 or "Operation not permitted" in done.stderr:
        pytest.skip(f"cannot create a network namespace: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_veth_add_and_remove_in_a_namespace_rescan_within_the_debounce_window():
    report = _bench("--adds", "2", "--flood", "6", "--debounce", "1s", "--timeout", "20")
    raw = report["raw"]
    # each add and each remove: one scan that started after the debounce (1 s) and finished
    # within it plus one scan (a few seconds on 2 shared cores), never the 1 h interval
    for latency in raw["adds"] + raw["removes"]:
        assert 0.9 <= latency <= 8.0, raw
    assert raw["flood_scans"] == 1, raw  # 6 pairs (24+ uevents) back to back: one scan
    assert "Traceback" not in raw["serve_stderr"], raw["serve_stderr"]


def test_no_scan_uevents_keeps_the_interval():
    raw = _bench("--adds", "1", "--flood", "0", "--debounce", "1s", "--no-uevents")["raw"]
    assert raw["adds"] == [None] and raw["removes"] == [None], raw
