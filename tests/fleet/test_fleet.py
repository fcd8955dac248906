"""A fleet on Prometheus' own distributed setup: agents that split the targets, remote-write
to a central server that evaluates the shipped rules.

* 21 real `tunewatch serve` processes on the example snapshots (tests/snapshots/examples) in
  their different states: tuned, rebooted (reverted), VMware at driver defaults, VMware
  tuned, SAS Grid on ANF, BIG-IP VE; each with its README profile, two with `auto`, and one
  host whose root is switched from azure-m-tuned to azure-m-rebooted booted "now"
  (tests/support/snapshots.SwitchableRoot).
* Two Prometheus servers in agent mode (`--enable-feature=agent`, Prometheus 2.x) with the
  same static target list; `hashmod` relabelling on `__address__` keeps half of the targets
  on each, and each remote-writes to the central server (external label `agent`).
* The central Prometheus (`--web.enable-remote-write-receiver`) scrapes nothing and loads
  rules/*.rules.yml; only their `for:` durations are shortened to 1s (as in
  tests/rules/test_alertmanager_e2e.py) so that the reversion alert fires within the test.

Checked on the central server: every target arrived exactly once (split, nothing lost or
doubled), every query of the fleet dashboard answers (Grafana's variable rules,
tests/support/grafana.py), and TuningRevertedAfterReboot fires for the switched host and no
other. Figures (series, samples and bytes remote-written) are printed (`pytest -s`) and
in docs/scaling.md.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import pytest
import yaml

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from support import grafana  # noqa: E402
from support.procs import LOOPBACK, http_get  # noqa: E402
from support.prom import remote_write_receiver_flag, require_binary, start_prometheus  # noqa: E402
from support.snapshots import (EXAMPLE_PROFILES, SwitchableRoot, example, set_boot_time, start_serves,  # noqa: E402
                               wait_for)

REPO = TESTS_DIR.parent
RULE_FILES = sorted((REPO / "rules").glob("*.rules.yml"))
FLEET_DASHBOARD = grafana.Dashboard.load(REPO / "dashboards" / "tunewatch-fleet.json")
AGENTS = 2
SWITCHED = "switched"
REVERTED = {"irqbalance-disabled", "nic-queue-count", "nic-irq-affinity"}  # runtime checks azure-m-rebooted fails


def fleet_specs(switched_root: Path) -> list[tuple[str, Path, str]]:
    specs = []
    for copy in range(3):
        for name, profile in EXAMPLE_PROFILES.items():
            specs.append((f"{name}-{copy}", example(name), profile))
    specs.append(("azure-m-tuned-auto", example("azure-m-tuned"), "auto"))
    specs.append(("sas-anf-auto", example("sas-anf"), "auto"))
    specs.append((SWITCHED, switched_root, "azure-sap-hana"))
    return specs


def fast_rules(directory: Path) -> list[Path]:
    """The shipped rule files with every `for:` at 1s; nothing else changes."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for path in RULE_FILES:
        doc = yaml.safe_load(path.read_text())
        for group in doc["groups"]:
            for rule in group["rules"]:
                if "for" in rule:
                    rule["for"] = "1s"
        (directory / path.name).write_text(yaml.safe_dump(doc, sort_keys=False))
        out.append(directory / path.name)
    return out


def agent_config(index: int, targets: list[str], central: str) -> dict:
    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "external_labels": {"agent": f"agent-{index}"}},
        "scrape_configs": [{
            "job_name": "tunewatch",
            "static_configs": [{"targets": targets}],
            # every agent has the same list; each keeps the targets whose hash is its index
            "relabel_configs": [
                {"source_labels": ["__address__"], "modulus": AGENTS, "target_label": "__tmp_hash",
                 "action": "hashmod"},
                {"source_labels": ["__tmp_hash"], "regex": str(index), "action": "keep"},
            ],
        }],
        "remote_write": [{"url": f"{central}/api/v1/write",
                          "queue_config": {"batch_send_deadline": "1s", "min_backoff": "100ms",
                                           "max_backoff": "1s"}}],
    }


def remote_write_totals(agent) -> dict[str, float]:
    """Samples and bytes an agent has remote-written (its own /metrics)."""
    totals = {"samples": 0.0, "bytes": 0.0}
    for line in http_get(f"{agent.url}/metrics").text.splitlines():
        for key, name in (("samples", "prometheus_remote_storage_samples_total"),
                          ("bytes", "prometheus_remote_storage_bytes_total")):
            if line.startswith(name + "{") or line.startswith(name + " "):
                totals[key] += float(line.rsplit(" ", 1)[1])
    return totals


def test_fleet_through_agents_to_central(tmp_path):
    require_binary("prometheus")
    started = time.monotonic()
    switched = SwitchableRoot(tmp_path / "switched")
    switched.add("before", "azure-m-tuned")
    after = switched.add("after", "azure-m-rebooted")
    switched.switch("before")
    specs = fleet_specs(switched.link)
    assert len(specs) >= 20

    with start_prometheus(tmp_path / "central", rule_files=fast_rules(tmp_path / "rules"),
                          extra_args=[remote_write_receiver_flag()]) as central, \
            start_serves(tmp_path / "serve", specs, interval="1h") as served:
        targets = [s.address for s in served]
        by_name = {s.name: s for s in served}
        with start_prometheus(tmp_path / "agent-0", config=agent_config(0, targets, central.url), agent=True) as a0, \
                start_prometheus(tmp_path / "agent-1", config=agent_config(1, targets, central.url), agent=True) as a1:
            def wait(expr, predicate=bool, timeout=60.0):
                return wait_for(lambda: predicate(central.query(expr)), timeout, f"central: waiting for {expr}",
                                central, served=served)

            # every target reaches the central server, through exactly one agent
            wait('count by (instance) (up{job="tunewatch"} == 1)', lambda r: len(r) == len(targets))
            rows = central.query('count by (instance) (count by (instance, agent) (up{job="tunewatch"}))')
            assert {r["metric"]["instance"] for r in rows} == set(targets)
            assert all(r["value"][1] == "1" for r in rows), rows  # one agent per target
            per_agent = {r["metric"]["agent"]: int(r["value"][1])
                         for r in central.query('count by (agent) (up{job="tunewatch"})')}
            assert set(per_agent) == {"agent-0", "agent-1"} and sum(per_agent.values()) == len(targets), per_agent
            assert min(per_agent.values()) >= 3, f"hashmod left an agent almost idle: {per_agent}"
            wait("tunewatch_host_info", lambda r: len(r) == len(targets))

            # a pass history of the switched host, then its reboot undoes the tuning
            target = by_name[SWITCHED].address
            for check in REVERTED:
                wait(f'instance_check:tunewatch_check_pass:timestamp{{instance="{target}",check="{check}"}}')
            btime = math.ceil(time.time()) + 3
            set_boot_time(after, btime)
            switched.switch("after")
            by_name[SWITCHED].rescan()
            wait(f'tunewatch_boot_time_seconds{{instance="{target}"}} == {btime}')
            alerts = 'ALERTS{alertname="TuningRevertedAfterReboot",alertstate="firing"}'
            wait(alerts, lambda r: {x["metric"]["check"] for x in r} >= REVERTED)
            time.sleep(2)  # a few more evaluations: nothing else may join
            firing = central.query(alerts)
            assert {x["metric"]["instance"] for x in firing} == {target}, firing  # the right instance only
            assert {x["metric"]["check"] for x in firing} == REVERTED
            assert {x["metric"]["severity"] for x in firing} <= {"critical", "warning"}
            # the azure-m-rebooted copies fail the same checks but never passed: no reversion
            for name in ("azure-m-rebooted-0", "azure-m-rebooted-1", "azure-m-rebooted-2"):
                assert central.query(f'tunewatch_check_status{{instance="{by_name[name].address}",'
                                     f'check="nic-queue-count",status="fail"}} == 1')

            # the fleet dashboard answers on the central server
            wait("instance:tunewatch_compliance:ratio", lambda r: len(r) == len(targets))
            variables = FLEET_DASHBOARD.variables()
            values = {name: grafana.interpolate_value(variables[name], "$__all") for name in ("job", "instance",
                                                                                             "profile")}
            values["datasource"] = "prometheus"
            empty = []
            for query in FLEET_DASHBOARD.queries():
                promql, result = grafana.run(central, query, values, FLEET_DASHBOARD.range_seconds)
                if not result and query.kind != "annotation":
                    empty.append(f"{query.id}: {promql}")
            assert not empty, "fleet dashboard queries without data on the central server:\n" + "\n".join(empty)
            hosts = central.query('count(tunewatch_host_compliant{job=~".+", instance=~".+", profile=~".+"})')
            assert int(hosts[0]["value"][1]) == len(targets)
            reverted = central.query('max by (instance, check) (ALERTS{alertname=~"TuningRevertedAfter.+"})')
            assert {r["metric"]["instance"] for r in reverted} == {target}

            # figures
            tunewatch_series = int(central.query('count({__name__=~"tunewatch_.+", job="tunewatch"})')[0]["value"][1])
            written = [remote_write_totals(a) for a in (a0, a1)]
            # what the agents sent: tunewatch_* plus the 5 series Prometheus makes per target
            others = {r["metric"]["__name__"]: int(r["value"][1]) for r in
                      central.query('count by (__name__) ({agent=~"agent-.+", __name__!~"tunewatch_.+"})')}
            series = tunewatch_series + sum(n for name, n in others.items() if name == "up" or name.startswith("scrape_"))
            print(f"\nfleet: {len(targets)} serve targets, split {per_agent} by hashmod; central holds "
                  f"{series} remote-written series ({tunewatch_series} tunewatch_*, "
                  f"{tunewatch_series / len(targets):.1f} per host, default metrics); agents remote-wrote "
                  f"{sum(w['samples'] for w in written):.0f} samples in {sum(w['bytes'] for w in written):.0f} "
                  f"bytes; reversion alert firing for {target} on {sorted(REVERTED)}; "
                  f"{time.monotonic() - started:.0f} s")
