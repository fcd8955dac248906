"""Serve scans in child processes: a scan past --scan.timeout is killed (its pid gone, no
CPU burnt afterwards), ready only after a scan with results, the running-time gauge."""

from __future__ import annotations

import os
import time

import pytest

from support import scanresults as sr
from support.procs import LOOPBACK, http_get, http_request, wait_until

from .test_serve import metric


def good_result():
    return sr.result([sr.check("irqbalance-disabled", [sr.obj("irqbalance.service", "pass")])])


def gone(pid: int) -> bool:
    """The pid no longer exists, or is a zombie (dead, nothing left to run)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


@pytest.fixture
def exporter(child_exporter):
    return child_exporter


def test_a_scan_that_burns_cpu_past_the_timeout_is_killed(exporter):
    mode = {"hang": True}

    def scan():  # runs in the forked child: spins (like a 20,000-range cpulist) until killed
        while mode["hang"]:
            pass
        return good_result()

    handle = exporter(scan, interval=600.0, timeout=3.0, rescan_min_interval=0.01)
    url = handle.url + "/metrics"
    pid = wait_until(lambda: handle.scanner.running_pid, 10)
    # while it runs: the running-time gauge grows, not ready, scrapes answer at once
    text = wait_until(lambda: (t := http_get(url).text) and (metric(t, "tunewatch_scan_running_seconds") or 0) > 0.5
                      and t, 10)
    assert metric(text, "tunewatch_scan_in_progress") == 1
    assert http_get(handle.url + "/-/ready").status == 503
    ticks = cpu_ticks(pid)
    wait_until(lambda: metric(http_get(url).text, "tunewatch_scan_errors_total", reason="timeout") == 1, 15)
    wait_until(lambda: gone(pid), 5, message=f"scan child {pid} still alive after the timeout")
    assert ticks > 0  # it really was burning CPU
    # the killed child is reaped by the scan thread, which then clears the hung run: until
    # that thread takes the lock a scrape may still show the hung scan's age (3.009 once,
    # under load), so wait for it, bounded, rather than race it
    text = wait_until(lambda: (t := http_get(url).text) and metric(t, "tunewatch_scan_running_seconds") == 0
                      and t, 5, message="running-seconds gauge still counts after the killed child was reaped")
    assert metric(text, "tunewatch_scan_in_progress") == 0 and metric(text, "tunewatch_scan_success") == 0
    # a first scan that timed out leaves the exporter not ready, with no check series
    not_ready = http_get(handle.url + "/-/ready")
    assert not_ready.status == 503 and "did not finish within 3s" in not_ready.text
    assert "tunewatch_check_status" not in text
    assert http_get(handle.url + "/api/v1/report").status == 503
    # the killed scan is over, so the next one starts (no "stuck" skips) and succeeds
    mode["hang"] = False  # the next fork sees this
    assert http_request(handle.url + "/-/rescan", "POST", data=b"").status == 202
    wait_until(lambda: http_get(handle.url + "/-/ready").status == 200, 20)
    text = http_get(url).text
    assert metric(text, "tunewatch_check_status", check="irqbalance-disabled", status="pass") == 1
    assert metric(text, "tunewatch_scans_skipped_total") == 0
    assert handle.scanner.last_pid != pid and gone(handle.scanner.last_pid)


def test_a_scan_blocked_in_a_read_is_killed_and_the_last_result_kept(exporter, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    mode = {"block": False}

    def scan():
        if mode["block"]:
            with open(fifo) as f:  # a FIFO with no writer: open() blocks forever
                f.read()
        return good_result()

    handle = exporter(scan, interval=600.0, timeout=2.0, rescan_min_interval=0.01)
    wait_until(lambda: http_get(handle.url + "/-/ready").status == 200, 20)
    mode["block"] = True
    assert http_request(handle.url + "/-/rescan", "POST", data=b"").status == 202
    pid = wait_until(lambda: handle.scanner.running_pid, 10)
    url = handle.url + "/metrics"
    wait_until(lambda: metric(http_get(url).text, "tunewatch_scan_errors_total", reason="timeout") == 1, 15)
    wait_until(lambda: gone(pid), 5, message=f"scan child {pid} still alive after the timeout")
    text = http_get(url).text
    assert metric(text, "tunewatch_check_status", check="irqbalance-disabled", status="pass") == 1  # kept
    assert metric(text, "tunewatch_scan_success") == 0
    assert http_get(handle.url + "/-/ready").status == 200  # it has results, if stale


def test_scan_exception_in_the_child_is_reported(exporter):
    def scan():
        raise OSError("cannot read /proc/interrupts")

    handle = exporter(scan, interval=600.0, timeout=30.0)
    url = handle.url + "/metrics"
    wait_until(lambda: metric(http_get(url).text, "tunewatch_scan_errors_total", reason="exception") == 1, 20)
    assert "cannot read /proc/interrupts" in http_get(handle.url + "/-/ready").text


def test_stop_kills_a_running_scan(exporter):
    def scan():
        time.sleep(600)

    handle = exporter(scan, interval=600.0, timeout=600.0)
    pid = wait_until(lambda: handle.scanner.running_pid, 10)
    handle.stop()
    wait_until(lambda: gone(pid), 5, message=f"scan child {pid} outlived stop()")
