"""render(), the serve renderer and write_textfile: exposition shape, values, promtool."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from prometheus_client.parser import text_string_to_metric_families

from support import scanresults as sr
from support.prom import check_metrics, find_binary
from tunewatch.outputs import prometheus as prom
from tunewatch.serve.scanloop import ScanState

REPO = Path(__file__).resolve().parents[2]
STATUSES = ("pass", "fail", "error", "notapplicable", "waived")
needs_promtool = pytest.mark.skipif(find_binary("promtool") is None, reason="promtool not installed")


def samples(text: str) -> dict[str, list]:
    """metric family name -> samples (parsed by prometheus_client's own parser)."""
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def series(text: str, name: str, **labels: str) -> list:
    return [s for s in samples(text).get(name, []) if all(s.labels.get(k) == v for k, v in labels.items())]


def value(text: str, name: str, **labels: str) -> float:
    found = series(text, name, **labels)
    assert len(found) == 1, f"{name}{labels}: {found}"
    return found[0].value


def small_result(**kwargs):
    return sr.result([
        sr.check("nic-queue-count", [
            sr.obj("eth1", "fail", "<= 16", "32", [sr.Setting("channels.combined", 32, None),
                                                   sr.Setting("channels.limit", None, 16)]),
            sr.obj("eth2", "pass", "<= 16", "8", [sr.Setting("channels.combined", 8, None),
                                                  sr.Setting("channels.limit", None, 16)])], kind="nic_channels"),
        sr.check("irqbalance-disabled", [sr.obj("irqbalance.service", "pass", "disabled", "disabled")],
                 severity="medium", kind="service_disabled"),
        sr.check("vmxnet3-ring-size", [sr.obj("-", "notapplicable", "", "", [])], severity="low", kind="nic_ethtool"),
        sr.check("sysctl-vm-dirty-bytes", [sr.obj("vm.dirty_bytes", "waived", "629145600", "0",
                                                  [sr.Setting("vm.dirty_bytes", 0, 629145600)])]),
        sr.check("nfs-nconnect", [sr.obj("/hana/data", "error", "nconnect=4", "unreadable")], kind="nfs_nconnect"),
        sr.check("nic-irq-affinity", [sr.irq_obj("eth1", 40, [0], cpu_node=CPU_NODE),
                                      sr.irq_obj("eth1", 41, [1], cpu_node=CPU_NODE),
                                      sr.irq_obj("eth1", 42, [3, 4], status="fail", cpu_node=CPU_NODE),
                                      sr.irq_obj("eth1", 43, [0, 1], cpu_node=CPU_NODE)], kind="irq_affinity"),
    ], nics=[sr.NicInfo("eth1", "mlx5_core", "5.14", "16.30.1004", "0000:00:02.0")],
        numa_node_cpus={0: 4, 1: 4}, cpu_node=CPU_NODE, **kwargs)


CPU_NODE = {c: c // 4 for c in range(8)}


DEFAULT_FAMILIES = ("tunewatch_check_status", "tunewatch_check_objects", "tunewatch_host_compliant",
                    "tunewatch_host_info", "tunewatch_boot_time_seconds", "tunewatch_numa_node_cpus",
                    "tunewatch_nic_info", "tunewatch_nic_data_irqs", "tunewatch_scan_success",
                    "tunewatch_scan_duration_seconds", "tunewatch_last_scan_timestamp_seconds", "tunewatch_build_info",
                    "tunewatch_content_info", "tunewatch_checks_selected")
DETAIL_FAMILIES = ("tunewatch_object_status", "tunewatch_setting_observed", "tunewatch_setting_expected",
                   "tunewatch_irq_affinity_cpus", "tunewatch_irq_affinity_first_cpu")


def test_exposition_parses_and_has_help_and_type():
    text = prom.render(small_result())
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in DETAIL_FAMILIES:
        assert name not in text, f"{name} is detail: opt-in only"
    text = prom.render(small_result(), detail=True)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in DEFAULT_FAMILIES + DETAIL_FAMILIES:
        assert name in families, name
        assert families[name].type == "gauge"
        assert families[name].documentation
        assert f"# TYPE {name} gauge" in text and f"# HELP {name} " in text
    # textfile output has no serve-only series (and no counters at all)
    for name in ("tunewatch_scans_total", "tunewatch_scan_errors_total", "tunewatch_scan_in_progress",
                 "tunewatch_scans_skipped_total"):
        assert name not in text


@pytest.mark.parametrize("detail", [False, True])
def test_check_status_is_a_state_set(detail):
    text = prom.render(small_result(), detail=detail)
    expected = {"nic-queue-count": ("fail", "high"), "irqbalance-disabled": ("pass", "medium"),
                "vmxnet3-ring-size": ("notapplicable", "low"), "sysctl-vm-dirty-bytes": ("waived", "high"),
                "nfs-nconnect": ("error", "high"), "nic-irq-affinity": ("fail", "high")}
    for check, (current, severity) in expected.items():
        rows = series(text, "tunewatch_check_status", check=check)
        # a check that applies: state set over pass/fail/error/waived; one that does not: one series
        states = ["notapplicable"] if current == "notapplicable" else ["error", "fail", "pass", "waived"]
        assert sorted(r.labels["status"] for r in rows) == states
        for r in rows:
            assert set(r.labels) == {"check", "check_severity", "profile", "status"}
            assert r.labels["profile"] == "azure-sap-hana" and r.labels["check_severity"] == severity
            assert r.value == (1.0 if r.labels["status"] == current else 0.0), (check, r)
    assert value(text, "tunewatch_host_compliant", profile="azure-sap-hana") == 0.0


def test_compliant_host():
    scan = sr.result([sr.check("a", [sr.obj("x", "pass")]), sr.check("b", [sr.obj("y", "waived")]),
                      sr.check("c", [sr.obj("-", "notapplicable")])])
    assert value(prom.render(scan), "tunewatch_host_compliant") == 1.0


def test_object_counts_by_default_are_the_nonzero_problem_counts():
    text = prom.render(small_result())
    counts = {(r.labels["check"], r.labels["status"]): r.value for r in series(text, "tunewatch_check_objects")}
    assert counts == {("nic-queue-count", "fail"): 1.0, ("sysctl-vm-dirty-bytes", "waived"): 1.0,
                      ("nfs-nconnect", "error"): 1.0, ("nic-irq-affinity", "fail"): 1.0}


def test_object_counts_and_object_status_with_detail():
    text = prom.render(small_result(), detail=True)
    counts = {r.labels["status"]: r.value for r in series(text, "tunewatch_check_objects", check="nic-irq-affinity")}
    assert counts == {"pass": 3.0, "fail": 1.0, "error": 0.0, "notapplicable": 0.0, "waived": 0.0}
    row = series(text, "tunewatch_object_status", check="nic-queue-count", object="eth1")
    # no expected/actual text in labels: that is in the JSON report
    assert [(r.labels, r.value) for r in row] == \
        [({"check": "nic-queue-count", "object": "eth1", "status": "fail"}, 1.0)]
    # notapplicable objects are counted but not exported one by one
    assert value(text, "tunewatch_check_objects", check="vmxnet3-ring-size", status="notapplicable") == 1.0
    assert series(text, "tunewatch_object_status", check="vmxnet3-ring-size") == []
    assert series(text, "tunewatch_object_status", check="nfs-nconnect")[0].labels["status"] == "error"


def test_settings_observed_and_expected():
    text = prom.render(small_result(), detail=True)
    assert value(text, "tunewatch_setting_observed", check="nic-queue-count", object="eth1",
                 setting="channels.combined") == 32
    assert value(text, "tunewatch_setting_expected", check="nic-queue-count", object="eth1",
                 setting="channels.limit") == 16
    # None halves are absent, not NaN
    assert series(text, "tunewatch_setting_expected", setting="channels.combined") == []
    assert series(text, "tunewatch_setting_observed", setting="channels.limit") == []
    assert value(text, "tunewatch_setting_expected", setting="vm.dirty_bytes") == 629145600
    # IRQ placement settings are not duplicated as generic settings
    assert not any(s.labels["setting"].startswith("affinity_")
                   for s in samples(text)["tunewatch_setting_observed"])


def test_irq_placement_metrics():
    text = prom.render(small_result(), detail=True)
    assert value(text, "tunewatch_irq_affinity_cpus", interface="eth1", irq="42") == 2
    assert value(text, "tunewatch_irq_affinity_first_cpu", interface="eth1", irq="42") == 3
    assert value(text, "tunewatch_irq_affinity_cpus", interface="eth1", irq="41") == 1
    placement = {r.labels["node"]: r.value for r in series(text, "tunewatch_nic_data_irqs", interface="eth1")}
    # irq40 -> cpu0, irq41 -> cpu1, irq43 -> cpus 0-1: node 0; irq42 -> cpus 3,4: nodes 0 and 1
    assert placement == {"0": 3.0, "1": 0.0, "multiple": 1.0}
    # by default: only the non-zero counts, no per-IRQ series
    text = prom.render(small_result())
    placement = {r.labels["node"]: r.value for r in series(text, "tunewatch_nic_data_irqs", interface="eth1")}
    assert placement == {"0": 3.0, "multiple": 1.0}
    assert "tunewatch_irq_affinity_cpus{" not in text


def test_irq_placement_comes_from_the_objects_irq_data_not_from_names_or_text():
    """Interface, IRQ, CPUs and node are the object's `irq` data (IrqPlacement); neither the
    object's name nor its `actual`/`message` text is parsed."""
    irq = sr.irq_obj("eth0", 30, [2], cpu_node={2: 1})
    irq.object, irq.actual, irq.message = "not an irq name", "not a cpulist", ""
    scan = sr.result([sr.check("nic-irq-affinity", [irq], kind="irq_affinity"),
                      # objects named like IRQs without placement data do not count
                      sr.check("nic-irq-spread", [sr.obj("eth0/irq30", "pass", "1 CPU", "2"),
                                                  sr.obj("eth0/irq31", "pass", "1 CPU", "2")], kind="irq_spread")],
                     numa_node_cpus={0: 8, 1: 8})
    text = prom.render(scan, detail=True)
    assert {r.labels["node"]: r.value for r in series(text, "tunewatch_nic_data_irqs")} == \
        {"0": 0.0, "1": 1.0, "multiple": 0.0}
    assert value(text, "tunewatch_irq_affinity_first_cpu", interface="eth0", irq="30") == 2
    assert "irq=\"31\"" not in text


def test_host_nic_and_scan_facts():
    scan = small_result(started_at=1_700_000_100.0)
    text = prom.render(scan)
    info = series(text, "tunewatch_host_info")[0].labels
    assert info == {"hostname": "hana01", "platform": "azure", "kernel": "5.14.21-150500.55.39-default",
                    "os": "SUSE Linux Enterprise Server 15 SP5"}
    assert value(text, "tunewatch_boot_time_seconds") == 1_700_000_000
    # by default the nodes that hold data IRQs (node 0; irq42 spans nodes), every node with detail
    assert {r.labels["node"]: r.value for r in series(text, "tunewatch_numa_node_cpus")} == {"0": 4}
    assert value(prom.render(scan, detail=True), "tunewatch_numa_node_cpus", node="1") == 4
    assert series(text, "tunewatch_nic_info")[0].labels == {
        "interface": "eth1", "driver": "mlx5_core", "version": "5.14", "firmware": "16.30.1004", "bus": "0000:00:02.0"}
    assert value(text, "tunewatch_scan_success") == 1
    assert value(text, "tunewatch_scan_duration_seconds") == 0.25
    assert value(text, "tunewatch_last_scan_timestamp_seconds") == 1_700_000_100.25
    assert series(text, "tunewatch_content_info")[0].labels == {"profile": "azure-sap-hana", "digest": "0123456789ab"}
    assert value(text, "tunewatch_checks_selected", profile="azure-sap-hana") == 6  # a count is a value
    assert series(text, "tunewatch_build_info")[0].labels["python_version"] == ".".join(map(str, sys.version_info[:3]))


def test_no_host_facts():
    scan = sr.result([sr.check("a", [sr.obj("x", "pass")])], host_=None, numa_node_cpus={})
    text = prom.render(scan)
    assert "tunewatch_host_info{" not in text and "tunewatch_boot_time_seconds " not in text
    assert value(text, "tunewatch_check_status", check="a", status="pass") == 1


def test_long_and_odd_label_values_are_truncated_and_escaped():
    odd = 'a "quoted" \\ back\nslash ' + "x" * 300
    scan = sr.result([sr.check("a", [sr.obj("obj\u00e9", "fail", odd, odd), sr.obj(odd, "fail")])])
    text = prom.render(scan, detail=True)
    rows = series(text, "tunewatch_object_status")
    assert rows[0].labels["object"] == "obj\u00e9"
    assert len(rows[1].labels["object"]) == prom.MAX_LABEL_CHARS and rows[1].labels["object"].endswith("\u2026")
    assert rows[1].labels["object"].startswith('a "quoted" \\ back\nslash ')
    assert odd[:20] not in "".join(r.labels.get("expected", "") + r.labels.get("actual", "") for r in rows)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=40), st.text(max_size=120),
                          st.sampled_from(STATUSES)), min_size=1, max_size=6, unique_by=lambda t: t[0]))
def test_label_values_round_trip(objects):
    scan = sr.result([sr.check("c", [sr.obj(name, status, text, text) for name, text, status in objects])])
    text = prom.render(scan, detail=True)
    exported = {s.labels["object"]: s.labels for s in samples(text).get("tunewatch_object_status", [])}
    for name, _label_text, status in objects:
        if status == "notapplicable":
            continue
        assert exported[prom._label(name)]["status"] == status


def test_duplicate_objects_do_not_duplicate_series():
    scan = sr.result([sr.check("a", [sr.obj("x", "fail", "1", "2", [sr.Setting("s", 2, 1)]),
                                     sr.obj("x", "fail", "1", "3", [sr.Setting("s", 3, 1)])])])
    text = prom.render(scan, detail=True)
    assert len(series(text, "tunewatch_object_status", check="a")) == 1
    assert len(series(text, "tunewatch_setting_observed", check="a")) == 1


@needs_promtool
def test_promtool_check_metrics_is_clean():
    for scan in (small_result(), sr.big_host()):
        for detail in (False, True):
            done = check_metrics(prom.render(scan, detail=detail))
            assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stdout + done.stderr


@needs_promtool
def test_promtool_check_metrics_serve_output_is_clean():
    for detail in (False, True):
        render = prom.make_renderer(detail=detail)
        state = ScanState(result=small_result(), result_completed_at=1.7e9, result_duration_seconds=0.5,
                          scans_total=3, scan_errors_total={"exception": 1, "timeout": 0}, last_success=True,
                          first_scan_done=True)
        done = check_metrics(render(state).decode())
        assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stdout + done.stderr


def load_gen_big_host():
    path = REPO / "benchmarks" / "gen_big_host.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("gen_big_host", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def count(text: str) -> int:
    return sum(len(v) for v in samples(text).values())


def serve_count(scan, detail: bool = False) -> int:
    state = ScanState(result=scan, result_completed_at=1.7e9, result_duration_seconds=1.5, scans_total=1,
                      last_success=True, first_scan_done=True)
    return count(prom.make_renderer(detail=detail)(state).decode())


def test_series_budget_of_the_synthetic_big_host():
    """416 CPUs / 8 nodes, 4 AN pairs x 64 data IRQs, 50 NFS mounts (synthetic, same shape as
    benchmarks/gen_big_host.py): <= 150 series by default (docs/metrics.md), textfile and serve."""
    scan = sr.big_host()
    assert count(prom.render(scan)) <= 150 and serve_count(scan) <= 150, (count(prom.render(scan)), serve_count(scan))
    # the default grows with neither CPUs, IRQs nor mounts
    for bigger in (sr.big_host(cpus_per_node=208), sr.big_host(irqs_per_nic=128), sr.big_host(nfs_mounts=500)):
        assert count(prom.render(bigger)) == count(prom.render(scan))
    # detail is per object, IRQ and setting: ~4 series per extra data IRQ (two object checks,
    # two placement gauges), never per CPU
    detailed = count(prom.render(scan, detail=True))
    assert detailed > 1000
    assert count(prom.render(sr.big_host(cpus_per_node=104), detail=True)) == detailed
    assert count(prom.render(sr.big_host(irqs_per_nic=65), detail=True)) - detailed == 4 * 4


@pytest.fixture(scope="module")
def content():
    from tunewatch.content.catalog import Content
    return Content()


def scan_root(content, root, profile):
    from tunewatch.scan import engine
    return engine.scan(content, content.resolve(profile), str(root))


@pytest.mark.parametrize("profile", ["auto", "azure-sas-grid-anf"])
def test_series_budget_of_the_generated_big_host(tmp_path_factory, content, profile):
    """The real engine on benchmarks/gen_big_host.py's 416-CPU tree: <= 150 series by default."""
    gen = load_gen_big_host()
    root = gen.build(str(tmp_path_factory.mktemp("big") / "host"))
    scan = scan_root(content, root, profile)
    assert any(c.status != "notapplicable" for c in scan.results)
    text = prom.render(scan)
    assert count(text) <= 150 and serve_count(scan) <= 150, (count(text), serve_count(scan))
    assert count(prom.render(scan, detail=True)) > 1000  # what detail costs on this host


def nothing_applies_host(root, cpus: int):
    """A host of `cpus` CPUs (52 per NUMA node) where no check applies: no NIC, NFS or VMware."""
    (root / "sys/devices/system/cpu").mkdir(parents=True)
    (root / "sys/devices/system/cpu/online").write_text(f"0-{cpus - 1}\n")
    for node in range(cpus // 52 or 1):
        (root / f"sys/devices/system/node/node{node}").mkdir(parents=True)
        (root / f"sys/devices/system/node/node{node}/cpulist").write_text(f"{node * 52}-{node * 52 + 51}\n")
    (root / "proc").mkdir()
    (root / "proc/stat").write_text("cpu  1 2 3 4\nbtime 1700000000\n")
    (root / "proc/1").mkdir()  # a visible process list: an empty one is an error, not a pass
    (root / "proc/1/comm").write_text("systemd\n")
    return root


def test_series_budget_where_no_check_applies(tmp_path, content):
    """A host where nothing applies exports <= 100 series whatever its CPU count and NUMA
    nodes (8 CPUs on 1 node, 1,664 on 32, 6,656 on 128): the same number in fact."""
    counts = {}
    for cpus in (8, 1664, 6656):
        scan = scan_root(content, nothing_applies_host(tmp_path / str(cpus), cpus), "auto")
        assert all(c.status in ("notapplicable", "pass") for c in scan.results), \
            [(c.check, c.status) for c in scan.results if c.status not in ("notapplicable", "pass")]
        counts[cpus] = (count(prom.render(scan)), serve_count(scan))
    assert all(textfile <= 100 and serve <= 100 for textfile, serve in counts.values()), counts
    assert len(set(counts.values())) == 1, counts


def test_serve_renderer_caches_per_scan_part(monkeypatch):
    calls = []
    real = prom.scan_families
    monkeypatch.setattr(prom, "scan_families", lambda result, detail=False: calls.append(result) or real(result, detail))
    render = prom.make_renderer()
    scan = small_result()
    state = ScanState(result=scan, result_completed_at=1.7e9, result_duration_seconds=0.5, scans_total=1,
                      last_success=True, first_scan_done=True)
    bodies = []
    threads = [threading.Thread(target=lambda: bodies.append(render(state))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(calls) == 1 and len(set(bodies)) == 1
    render(ScanState(result=scan, scans_total=2, last_success=True, first_scan_done=True))
    assert len(calls) == 1  # same result object: still cached
    render(ScanState(result=small_result(), scans_total=3, last_success=True, first_scan_done=True))
    assert len(calls) == 2  # a new scan renders once more


def test_serve_renderer_health_series():
    render = prom.make_renderer()
    text = render(ScanState()).decode()  # before any scan: no result, no success yet
    assert "tunewatch_check_status" not in text and "tunewatch_scan_success" not in text
    assert value(text, "tunewatch_scan_in_progress") == 0
    assert value(text, "tunewatch_scans_total") == 0
    assert value(text, "tunewatch_scan_errors_total", reason="timeout") == 0
    families = {f.name: f.type for f in text_string_to_metric_families(text)}
    assert families["tunewatch_scans"] == families["tunewatch_scan_errors"] == "counter"

    state = ScanState(result=small_result(), result_completed_at=1_700_000_500.0, result_duration_seconds=2.5,
                      scans_total=7, scan_errors_total={"exception": 2, "timeout": 1}, scans_skipped_total=4,
                      last_success=False, first_scan_done=True, scan_in_progress=True)
    text = render(state).decode()
    assert value(text, "tunewatch_scan_success") == 0
    assert value(text, "tunewatch_scan_duration_seconds") == 2.5
    assert value(text, "tunewatch_last_scan_timestamp_seconds") == 1_700_000_500
    assert value(text, "tunewatch_scan_in_progress") == 1
    assert value(text, "tunewatch_scans_total") == 7
    assert value(text, "tunewatch_scan_errors_total", reason="exception") == 2
    assert value(text, "tunewatch_scans_skipped_total") == 4
    assert value(text, "tunewatch_check_status", check="nic-queue-count", status="fail") == 1
    assert len(series(text, "tunewatch_build_info")) == 1


def test_write_textfile_is_atomic_and_world_readable(tmp_path):
    target = tmp_path / "tunewatch.prom"
    target.write_text("old\n")
    old_umask = os.umask(0o077)
    try:
        prom.write_textfile(str(target), "new 1\n")
    finally:
        os.umask(old_umask)
    assert target.read_text() == "new 1\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tunewatch.prom"]  # no temp file left


def test_write_textfile_failure_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "tunewatch.prom"
    target.write_text("old\n")

    def boom(*_a):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        prom.write_textfile(str(target), "new\n")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tunewatch.prom"]


def test_lost_on_readd_counts_the_objects_a_readd_leaves_failing():
    """One series per applicable check whose objects a device event touches: 2 VFs pinned by
    a boot oneshot are lost, none pinned by a udev rule; sysctl and service checks are not
    counted (not affected by a re-add)."""
    import os

    from tunewatch.content.catalog import Content
    from tunewatch.scan import engine

    content = Content()
    examples = os.path.join(os.path.dirname(__file__), "..", "snapshots", "examples")
    for example, lost in (("azure-m-pinned-oneshot", 2.0), ("azure-m-pinned-udev", 0.0)):
        text = prom.render(engine.scan(content, content.resolve("azure-sap-hana"), os.path.join(examples, example)))
        series = [ln for ln in text.splitlines() if ln.startswith("tunewatch_check_objects_lost_on_readd{")]
        assert sorted(series) == [
            f'tunewatch_check_objects_lost_on_readd{{check="nic-irq-affinity-persistent"}} {lost}',
            'tunewatch_check_objects_lost_on_readd{check="nic-settings-persistent"} 0.0'], series
