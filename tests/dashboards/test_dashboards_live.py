"""Every dashboard query against a real Prometheus that scrapes real tunewatch exporters.

Layer 1: two in-process exporters (tunewatch.serve.exporter.start_exporter with the real metrics
renderer) serving synthetic scans from tests/support/scanresults: a big compliant Azure HANA
host and a VMware host with failing and runtime-only settings. A real Prometheus
(tests/support/prom.py) scrapes both every second and loads rules/*.rules.yml; then every
panel target and every variable query must return data.

Layer 2 (`cli_fleet`): real `tunewatch serve` subprocesses on the example snapshots
(tests/snapshots/examples, each with its README profile), bigip-ve-esxi published through
`tunewatch scan --format prometheus` + node_exporter's textfile collector instead, and one
more host whose root is switched, while served, from azure-m-tuned to azure-m-rebooted
booted "now" with a new mlx5 driver on enP30832s1 (tests/support/snapshots.SwitchableRoot).
Prometheus loads the unmodified rules/*.rules.yml. Then, with Grafana's variable rules
(tests/support/grafana.py):

* fleet dashboard: every panel target, variable and annotation returns data, with
  `instance`/`profile` set to All (their allValue) and to the explicit list of every value
  label_values() offers (Grafana's escaped `(a|b|...)` form);
* host dashboard: for each instance label_values() offers (profile All), every query
  returns data where the host has what the panel shows (HOST_SCOPE: NIC panels on hosts
  with NICs, VMXNET3 panels on the vmware-* hosts, NFS/sysctl panels on sas-anf, the
  reboot / driver-change annotations on the switched host), and never returns series of
  another instance;
* the variables offer exactly the fleet's instances and profiles.

The reboot and driver-change annotations are also checked in tests/rules/test_alertmanager_e2e.py,
next to the alerts those changes raise.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

REPO = TESTS_DIR.parent
DASHBOARDS = sorted((REPO / "dashboards").glob("*.json"))
RULE_FILES = sorted((REPO / "rules").glob("*.rules.yml"))

# Grafana variables -> values that select every target of this test Prometheus.
LIVE_VARS = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "2m", "${instance}": ".+",
             "${job}": ".+", "$job": ".+",
             "$instance": ".+", "${profile}": ".+", "$profile": ".+"}

# Panels that only have data in a given scenario, with the reason; everything else must return data.
SCENARIO_ONLY: dict[str, str] = {}


def substitute(expr: str) -> str:
    for var in sorted(LIVE_VARS, key=len, reverse=True):
        expr = expr.replace(var, LIVE_VARS[var])
    return expr


def label_values_to_promql(expr: str) -> str:
    m = re.fullmatch(r"\s*label_values\(\s*(.+?)\s*,\s*([a-zA-Z_]\w*)\s*\)\s*", expr)
    return f"group by ({m.group(2)}) ({m.group(1)})" if m else expr


def panel_queries() -> list[tuple[str, str]]:
    out = []
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        panels = [p for top in dashboard["panels"] for p in [top, *top.get("panels", [])]]
        for panel in panels:
            for target in panel.get("targets", []):
                out.append((f"{path.stem}/{panel['title']}/{target['refId']}", target["expr"]))
        for var in dashboard["templating"]["list"]:
            if var["type"] == "query":
                query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
                out.append((f"{path.stem}/${var['name']}", query))
    return out


def scans():
    """(compliant big Azure host, VMware host with failures and runtime-only settings)."""
    from support import scanresults as sr
    from tunewatch.results import NicInfo
    from tunewatch.results import Setting

    vmware = sr.result([
        sr.check("vmxnet3-rx-coalesce", [sr.obj("ens224", "pass", "25", "25", [Setting("coalesce.rx-usecs", 25, 25)])],
                 severity="medium", kind="nic_ethtool"),
        sr.check("vmxnet3-ring-size", [sr.obj("ens224", "fail", "rx 512, rx-mini 0, tx 512", "rx 1024, rx-mini 128, tx 512",
                                              [Setting("rings.rx", 1024, 512), Setting("rings.rx-mini", 128, 0),
                                               Setting("rings.tx", 512, 512)])], severity="medium", kind="nic_ethtool"),
        sr.check("nic-settings-persistent", [sr.obj("ens224", "fail", "persisted", "no boot-time configuration",
                                                    after_readd="fail")],
                 kind="nic_settings_persistent"),
        sr.check("sunrpc-slot-table", [sr.obj("sunrpc.tcp_slot_table_entries", "error", "128", "unreadable")],
                 severity="medium"),
        sr.check("accelerated-networking", [], kind="accelerated_networking"),
    ], profile="vmware-sap-hana",
        host_=sr.host("hanavm01", "vmware", 1_714_000_000),
        nics=[NicInfo("ens224", "vmxnet3", "1.7.0.0-k-NAPI", "", "0000:13:00.0")],
        numa_node_cpus={0: 16, 1: 16})
    return sr.big_host(), vmware


@pytest.fixture(scope="module")
def live_prometheus(tmp_path_factory):
    from support.prom import require_binary, start_prometheus, static_job
    from support.procs import LOOPBACK
    require_binary("prometheus")
    try:
        from tunewatch.outputs.prometheus import make_renderer
        from tunewatch.serve.exporter import start_exporter
    except ImportError as e:  # exporter still under construction
        pytest.skip(f"tunewatch exporter not importable yet: {e}")
    handles = []
    try:
        for scan in scans():
            # detail on: this layer checks every panel, the Detail rows included
            handles.append(start_exporter(f"{LOOPBACK}:0", None, lambda scan=scan: scan, make_renderer(detail=True),
                                          60.0, 30.0))
        targets = [f"{LOOPBACK}:{h.server.port}" for h in handles]
        with start_prometheus(tmp_path_factory.mktemp("prom"), [static_job("tunewatch", *targets)],
                              rule_files=RULE_FILES) as prom:
            prom.wait_for_targets_up("tunewatch", timeout=20)
            # recording rules and ALERTS need a few evaluations (1 s interval)
            prom.wait_for_query("instance:tunewatch_compliance:ratio", lambda r: len(r) == 2, timeout=20)
            for record in ("profile_check:tunewatch_compliance:ratio", "profile:tunewatch_compliance:ratio",
                           "check_severity:tunewatch_checks_failing:count", "instance:tunewatch_checks_failing:count"):
                prom.wait_for_query(record, timeout=20)  # each rule group runs on its own schedule
            prom.wait_for_query('ALERTS{alertname="TuningNotPersistent"}', timeout=20)
            yield prom
    finally:
        for handle in handles:
            handle.stop()


@pytest.mark.parametrize("where,expr", panel_queries(), ids=[w for w, _ in panel_queries()])
def test_query_returns_data(live_prometheus, where, expr):
    if where in SCENARIO_ONLY:
        pytest.skip(SCENARIO_ONLY[where])
    promql = label_values_to_promql(substitute(expr))
    result = live_prometheus.query(promql)
    assert result, f"{where}: no data for {promql!r}"


# --- layer 2: `tunewatch serve` on the example snapshots ----------------------------------

from support import grafana  # noqa: E402
from support.snapshots import EXAMPLE_PROFILES, SwitchableRoot, example, set_boot_time, set_nic_driver  # noqa: E402

SWITCHED = "switched"  # azure-m-tuned, then azure-m-rebooted booted now with a new mlx5 driver
NEW_MLX5 = {"version": "5.8-3.0.7", "firmware": "16.35.3006 (MSF0010110035)"}
SERVED = ["azure-m-tuned", "azure-m-rebooted", "vmware-vmxnet3-default", "vmware-vmxnet3-tuned", "sas-anf"]
TEXTFILE = "bigip-ve-esxi"  # through node_exporter's textfile collector (job "node")
FLEET = [*SERVED, TEXTFILE, SWITCHED]

NIC_HOSTS = {"azure-m-tuned", "azure-m-rebooted", "vmware-vmxnet3-default", "vmware-vmxnet3-tuned", "sas-anf",
             SWITCHED}  # bigip-ve-esxi: TMM owns the data NICs, Linux sees no NIC
VMXNET3_HOSTS = {"vmware-vmxnet3-default", "vmware-vmxnet3-tuned"}
# vmware-sap-hana (seed 001) selects no queue or IRQ placement check
QUEUE_IRQ_HOSTS = NIC_HOSTS - VMXNET3_HOSTS
NFS_HOSTS = {"sas-anf"}

# Host dashboard: the hosts on which a panel / annotation must return data (default: every
# host). Elsewhere it may be empty because the host has nothing of the kind.
# Served with --metrics.detail: the host dashboard's Detail rows have data only there. The
# other hosts export the default series and every non-detail panel must work for them.
DETAIL_HOSTS = {"vmware-vmxnet3-default", "vmware-vmxnet3-tuned", "sas-anf"}

HOST_SCOPE: dict[str, set[str]] = {
    "NIC drivers": NIC_HOSTS,
    # object counts are exported when non-zero: hosts with failing objects
    "Checks now/B": {"azure-m-rebooted", "vmware-vmxnet3-default", SWITCHED},
    "CPUs per NUMA node": NIC_HOSTS,  # by default the nodes that hold NIC data IRQs
    "Data IRQs per NUMA node": QUEUE_IRQ_HOSTS,
    "Lost on a re-add": NIC_HOSTS,  # the checks whose objects a device re-add touches: NIC checks only
    # Detail rows (--metrics.detail)
    "Objects": DETAIL_HOSTS,
    "Queues vs limit": QUEUE_IRQ_HOSTS & DETAIL_HOSTS,
    "IRQ-to-CPU placement": QUEUE_IRQ_HOSTS & DETAIL_HOSTS,
    "IRQ placement over time": QUEUE_IRQ_HOSTS & DETAIL_HOSTS,
    "Settings: observed vs expected": VMXNET3_HOSTS & DETAIL_HOSTS,
    "rx-usecs and rings over time": VMXNET3_HOSTS & DETAIL_HOSTS,
    "NFS objects": NFS_HOSTS & DETAIL_HOSTS,
    "NFS read-ahead": NFS_HOSTS & DETAIL_HOSTS,
    "sunrpc slot tables and nconnect": NFS_HOSTS & DETAIL_HOSTS,
    "Dirty page settings": NFS_HOSTS & DETAIL_HOSTS,
    "sysctl drift": NFS_HOSTS & DETAIL_HOSTS,
    # only a host whose boot time / NIC driver changed while Prometheus watched has one
    "annotation:Reboots": {SWITCHED},
    "annotation:NIC driver/firmware changes": {SWITCHED},
}
# Detail panels must be empty on a host without --metrics.detail (it really is opt-in).
DETAIL_PANELS = {title for title, scope in HOST_SCOPE.items() if scope and scope <= DETAIL_HOSTS}

# Queries allowed to return no data at all in this fleet, with the reason. Empty: the fleet
# covers every panel (the switched host provides the reboot, driver change and reversion
# alerts). Add an entry only with a reason that no snapshot can provide the data.
NO_DATA_ALLOWED: dict[str, str] = {}

FLEET_DASHBOARD = grafana.Dashboard.load(REPO / "dashboards" / "tunewatch-fleet.json")
HOST_DASHBOARD = grafana.Dashboard.load(REPO / "dashboards" / "tunewatch-host.json")


class CliFleet:
    def __init__(self, prom, instances: dict[str, str]) -> None:
        self.prom = prom
        self.instances = instances  # instance label -> fleet name

    def variables(self, dashboard: grafana.Dashboard, instance: str | list[str], profile: str | list[str]):
        variables = dashboard.variables()
        return {"job": grafana.interpolate_value(variables["job"], "$__all"),
                "instance": grafana.interpolate_value(variables["instance"], instance),
                "profile": grafana.interpolate_value(variables["profile"], profile),
                "datasource": "prometheus"}


@pytest.fixture(scope="module")
def cli_fleet(tmp_path_factory):
    import math
    import subprocess
    import time as _time

    from support.prom import require_binary, start_node_exporter, start_prometheus, static_job
    from support.snapshots import start_serves, wait_for
    require_binary("prometheus")
    require_binary("node_exporter")
    base = tmp_path_factory.mktemp("cli-fleet")
    for name in (*SERVED, TEXTFILE):
        example(name)

    switched = SwitchableRoot(base / "switched")
    switched.add("before", "azure-m-tuned")
    after = switched.add("after", "azure-m-rebooted")
    set_nic_driver(after, "enP30832s1", **NEW_MLX5)
    switched.switch("before")

    textfile_dir = base / "textfile"
    textfile_dir.mkdir()
    done = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "scan", "--root", str(example(TEXTFILE)),
                           "--profile", EXAMPLE_PROFILES[TEXTFILE], "--format", "prometheus",
                           "--output", str(textfile_dir / "tunewatch.prom")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 2), done.stderr

    specs = [(name, example(name), EXAMPLE_PROFILES[name]) for name in SERVED if name not in DETAIL_HOSTS]
    specs.append((SWITCHED, switched.link, "azure-sap-hana"))
    detail_specs = [(name, example(name), EXAMPLE_PROFILES[name]) for name in SERVED if name in DETAIL_HOSTS]
    # One scan at start-up is all a static snapshot needs; the switched host is rescanned on
    # request (POST /-/rescan) right after the switch, so no scan can straddle it.
    with start_serves(base / "serve", specs, interval="1h") as default_served, \
            start_serves(base / "serve-detail", detail_specs, interval="1h", extra_args=["--metrics.detail"]) as detailed, \
            start_node_exporter(base / "node", textfile_dir) as node:
        served = [*default_served, *detailed]
        by_name = {s.name: s for s in served}
        instances = {s.address: s.name for s in served}
        instances[node.address] = TEXTFILE
        jobs = [static_job("tunewatch", *(s.address for s in served)), static_job("node", node.address)]
        with start_prometheus(base / "prom", jobs, rule_files=RULE_FILES) as prom:
            def wait(expr, predicate=bool, timeout=20.0):
                return wait_for(lambda: predicate(prom.query(expr)), timeout, f"waiting for {expr}", prom,
                                served=served)
            prom.wait_for_targets_up(timeout=20)
            wait("tunewatch_host_info", lambda r: len(r) == len(FLEET))
            target = by_name[SWITCHED].address
            # a pass history of the switched host before the change
            wait(f'instance_check:tunewatch_check_pass:timestamp{{instance="{target}",check="nic-queue-count"}}')

            # the change: booted just now (after the last scrape of the tuned results), new driver
            btime = math.ceil(_time.time()) + 3
            set_boot_time(after, btime)
            switched.switch("after")
            by_name[SWITCHED].rescan()
            wait(f'tunewatch_boot_time_seconds{{instance="{target}"}} == {btime}')
            # the unmodified rules see both reversions (pending: `for` is minutes)
            for alert in ("TuningRevertedAfterReboot", "TuningRevertedAfterDriverUpdate"):
                wait(f'ALERTS{{alertname="{alert}",instance="{target}",check="nic-queue-count"}}')
            for record in ("instance:tunewatch_compliance:ratio", "instance:tunewatch_checks_failing:count"):
                wait(record, lambda r: len(r) == len(FLEET))
            for record in ("profile_check:tunewatch_compliance:ratio", "profile:tunewatch_compliance:ratio",
                           "check_severity:tunewatch_checks_failing:count", "check:tunewatch_compliance:ratio"):
                wait(record)
            yield CliFleet(prom, instances)


def _ids(queries):
    return [q.id for q in queries]


FLEET_QUERIES = FLEET_DASHBOARD.queries()
HOST_QUERIES = HOST_DASHBOARD.queries()


def test_cli_fleet_variables_offer_every_host_and_profile(cli_fleet):
    for dashboard in (FLEET_DASHBOARD, HOST_DASHBOARD):
        variables = {q.title: q for q in dashboard.queries() if q.kind == "variable"}
        _, jobs = grafana.run(cli_fleet.prom, variables["job"], {}, dashboard.range_seconds)
        assert sorted(r["value"] for r in jobs) == ["node", "tunewatch"], dashboard.name  # both routes
        _, instances = grafana.run(cli_fleet.prom, variables["instance"], {"job": ".+"}, dashboard.range_seconds)
        assert sorted(r["value"] for r in instances) == sorted(cli_fleet.instances), dashboard.name
        _, profiles = grafana.run(cli_fleet.prom, variables["profile"], {"job": ".+", "instance": ".+"},
                                  dashboard.range_seconds)
        assert sorted(r["value"] for r in profiles) == sorted(set(EXAMPLE_PROFILES.values())), dashboard.name


@pytest.mark.parametrize("query", FLEET_QUERIES, ids=[f"cli/{i}" for i in _ids(FLEET_QUERIES)])
def test_cli_fleet_dashboard_query_returns_data(cli_fleet, query):
    if query.id in NO_DATA_ALLOWED:
        pytest.skip(NO_DATA_ALLOWED[query.id])
    every_instance = sorted(cli_fleet.instances)
    every_profile = sorted(set(EXAMPLE_PROFILES.values()))
    for selection, instance, profile in (("All", "$__all", "$__all"),
                                         ("every value", every_instance, every_profile)):
        variables = cli_fleet.variables(FLEET_DASHBOARD, instance, profile)
        promql, result = grafana.run(cli_fleet.prom, query, variables, FLEET_DASHBOARD.range_seconds)
        assert result, f"{query.id} ({selection} selected): no data for {promql!r}"


@pytest.mark.parametrize("query", HOST_QUERIES, ids=[f"cli/{i}" for i in _ids(HOST_QUERIES)])
def test_cli_host_dashboard_query_per_host(cli_fleet, query):
    if query.id in NO_DATA_ALLOWED:
        pytest.skip(NO_DATA_ALLOWED[query.id])
    scope_key = f"annotation:{query.title}" if query.kind == "annotation" else query.title
    scope = HOST_SCOPE.get(f"{scope_key}/{query.ref}", HOST_SCOPE.get(scope_key, set(FLEET)))
    missing, leaked = [], []
    for instance, name in sorted(cli_fleet.instances.items(), key=lambda kv: kv[1]):
        variables = cli_fleet.variables(HOST_DASHBOARD, instance, "$__all")
        promql, result = grafana.run(cli_fleet.prom, query, variables, HOST_DASHBOARD.range_seconds)
        if name in scope and not result:
            missing.append(f"{name} ({instance}): {promql}")
        if query.title in DETAIL_PANELS and name not in DETAIL_HOSTS and result:
            leaked.append(f"{name}: detail series without --metrics.detail: {result[:1]}")
        if query.kind != "variable":
            leaked += [f"{name}: {r['metric']}" for r in result
                       if r["metric"].get("instance", instance) != instance]
    assert not missing, f"{query.id}: no data on\n" + "\n".join(missing)
    assert not leaked, f"{query.id}: series of other instances\n" + "\n".join(leaked)
