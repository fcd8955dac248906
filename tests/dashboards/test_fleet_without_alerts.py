"""The fleet dashboard's "not reporting" and "reverted" panels on a real Prometheus that loads
the recording rules only (no alerting rules, so no ALERTS series): they count a down
target, a stale scan, a check that reverted after a reboot and a runtime-only setting.

Exporters are in-process (tunewatch.serve.exporter.start_exporter with the real metrics renderer)
serving synthetic scans; one of them reboots while Prometheus watches (its next scan fails
nic-queue-count with a new boot time), one has a scan two hours old, one passes
nic-queue-count but fails nic-settings-persistent, and one target is a closed port.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from support import grafana  # noqa: E402

REPO = TESTS_DIR.parent
RECORDING = REPO / "rules" / "tunewatch-recording.rules.yml"
FLEET = grafana.Dashboard.load(REPO / "dashboards" / "tunewatch-fleet.json")


def _scans():
    from support import scanresults as sr
    state = {"rebooted": False, "boot": 1_714_000_000}

    def reverting():
        status = "fail" if state["rebooted"] else "pass"
        return sr.result([sr.check("nic-queue-count", [sr.obj("eth1", status, "<= 16", "32" if state["rebooted"] else "16")]),
                          sr.check("nic-settings-persistent", [sr.obj("eth1", "pass")])],
                         host_=sr.host("reverting", "azure", state["boot"]))

    stale = sr.result([sr.check("nic-queue-count", [sr.obj("eth1", "pass")])], host_=sr.host("stale"),
                      started_at=time.time() - 7200)
    runtime_only = sr.result([sr.check("nic-queue-count", [sr.obj("eth1", "pass")]),
                              sr.check("nic-settings-persistent", [sr.obj("eth1", "fail")])],
                             host_=sr.host("runtime-only"))
    return state, reverting, stale, runtime_only


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from support.prom import require_binary, start_prometheus, static_job
    from support.procs import LOOPBACK, free_port
    from tunewatch.outputs.prometheus import make_renderer, render
    from tunewatch.serve.exporter import start_exporter
    require_binary("prometheus")
    state, reverting, stale, runtime_only = _scans()
    handles = []
    try:
        handles.append(start_exporter(f"{LOOPBACK}:0", None, reverting, make_renderer(), 1.0, 30.0))
        # the stale host as a textfile host publishes it: its last scan time is the scan's own
        handles.append(start_exporter(f"{LOOPBACK}:0", None, lambda: stale,
                                      lambda _state: render(stale).encode(), 60.0, 30.0))
        handles.append(start_exporter(f"{LOOPBACK}:0", None, lambda: runtime_only, make_renderer(), 60.0, 30.0))
        names = dict(zip((f"{LOOPBACK}:{h.server.port}" for h in handles), ("reverting", "stale", "runtime-only")))
        down = f"{LOOPBACK}:{free_port()}"  # nothing listens: up == 0 for a tunewatch serve target
        with start_prometheus(tmp_path_factory.mktemp("prom"), [static_job("tunewatch", *names, down)],
                              rule_files=[RECORDING]) as prom:
            target = next(t for t, n in names.items() if n == "reverting")
            prom.wait_for_query(f'instance_check:tunewatch_check_pass:timestamp{{instance="{target}",'
                                'check="nic-queue-count"}', timeout=20)
            state["boot"], state["rebooted"] = int(time.time()) + 2, True  # boots after its last passing scrape
            prom.wait_for_query(f'tunewatch_check_status{{instance="{target}",check="nic-queue-count",'
                                'status="fail"} == 1', timeout=20)
            prom.wait_for_query(f'up{{instance="{down}"}} == 0', timeout=20)
            yield prom, names, down
    finally:
        for handle in handles:
            handle.stop()


def _panel(title: str):
    return [q for q in FLEET.queries() if q.title == title]


def _run(prom, query):
    variables = {"job": ".+", "instance": ".+", "profile": ".+", "datasource": "prometheus"}
    return grafana.run(prom, query, variables, FLEET.range_seconds)[1]


def test_no_alerting_rules_are_loaded(fleet):
    prom, _names, _down = fleet
    assert prom.query("ALERTS") == []


def test_hosts_not_reporting_counts_the_down_and_the_stale_host(fleet):
    prom, _names, _down = fleet
    [query] = _panel("Hosts not reporting")
    assert "ALERTS" not in query.expr
    [sample] = _run(prom, query)
    assert sample["value"][1] == "2"  # the closed port and the two-hour-old scan


def test_reverted_panels_list_the_reboot_and_the_runtime_only_setting(fleet):
    prom, names, _down = fleet
    by_name = {v: k for k, v in names.items()}
    [stat] = _panel("Settings reverted / at risk")
    [sample] = _run(prom, stat)
    assert sample["value"][1] == "2"
    [table] = _panel("Hosts whose settings reverted")
    assert "ALERTS" not in table.expr
    rows = {(r["metric"]["instance"], r["metric"]["check"], r["metric"]["reason"]) for r in _run(prom, table)}
    assert rows == {(by_name["reverting"], "nic-queue-count", "reverted after a reboot"),
                    (by_name["runtime-only"], "nic-queue-count", "not configured for boot")}
