"""Prometheus text exposition of a scan (docs/metrics.md is the contract).

Two users:

* `tunewatch scan --format prometheus --output F`: `render(result, detail)` then
  `write_textfile(F, text)` for node_exporter's textfile collector.
* `tunewatch serve`: `make_renderer(detail)` gives the `/metrics` callback. The per-scan
  part is rendered once per completed scan and cached; a scrape only adds the few
  serve-only series (scan health counters), so it costs the same whatever the size of the
  host.

Series budget (docs/metrics.md): by default a host exports per-check and per-host series
only, so the count depends on the number of checks, NICs and NUMA nodes, never on objects,
IRQs, mounts or CPUs. `detail=True` adds one series per object, per data IRQ and per
numeric setting (docs/metrics.md, "Detail"). No label ever carries a value that changes
from scan to scan (expected/actual text, pids, file:line): those are in the JSON report.

The families are built as light `Family` objects (outputs/textformat.py); serve hands
them to prometheus_client (`scan_families`/`serve_families` return the library's metric
objects, for its text and OpenMetrics writers), while `render` writes the 0.0.4 text with
textformat, byte for byte what `generate_latest` writes, without importing the library.
"""

from __future__ import annotations

from .. import __version__
from .textformat import Family, client_families, text_exposition

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any, Callable

# Same values and order as kinds.base.STATUSES (not imported: keep this module light).
STATUSES = ("pass", "fail", "error", "notapplicable", "waived")
# The state set of a check that applies; a check that does not apply has one series
# (status="notapplicable"), which keeps a host where nothing applies small.
APPLICABLE_STATUSES = ("pass", "fail", "error", "waived")
# Object counts exported by default (only when non-zero): the ones an alert or a fleet
# panel needs. With detail every status is exported, zeros included.
COUNTED_BY_DEFAULT = ("fail", "error", "waived")
NOT_COMPLIANT = ("fail", "error")
ERROR_REASONS = ("exception", "timeout")
MAX_LABEL_CHARS = 100
# IRQ placement comes from the objects' `irq` data (kinds.base.IrqPlacement: interface,
# irq, cpus, node), never from object names or text: per-IRQ gauges in detail, per-node
# counts by default. The first object that places an IRQ counts.
MULTIPLE_NODES = "multiple"
# after_readd.source of a setting no device event touches (kinds/_predict.py NOT_AFFECTED)
NOT_AFFECTED_BY_READD = "not affected by a re-add"


def _label(value: Any) -> str:
    """Valid UTF-8, at most MAX_LABEL_CHARS, unique when shortened (escape.label)."""
    from .._escape import label
    return label(value, MAX_LABEL_CHARS)


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, (str, bool)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and number not in (float("inf"), float("-inf")) else None


Metric = Family  # the type the builders below return


def _gauge(name: str, documentation: str, labels: Iterable[str] = ()) -> Family:
    return Family(name, documentation, "gauge", labels)


def _counter(name: str, documentation: str, labels: Iterable[str] = ()) -> Family:
    """As CounterMetricFamily: the family is named without `_total`, its sample with it."""
    return Family(name[:-6] if name.endswith("_total") else name, documentation, "counter", labels)


def scan_families(result: Any, detail: bool = False) -> list:
    """Every per-scan metric of docs/metrics.md except scan health and build info, as
    prometheus_client metric objects."""
    return client_families(_scan_families(result, detail))


def _scan_families(result: Any, detail: bool = False) -> list[Metric]:
    profile = result.profile
    check_status = _gauge("tunewatch_check_status",
                          "State set of each selected check: 1 for its current status, 0 for the others "
                          "(pass, fail, error, waived); a check that does not apply has only status=notapplicable.",
                          ("check", "check_severity", "profile", "status"))
    check_objects = _gauge("tunewatch_check_objects",
                           "Number of the check's objects in a status (by default only non-zero fail, error "
                           "and waived counts; with --metrics.detail every status).", ("check", "status"))
    for check in result.results:
        states = (STATUSES[3],) if check.status == "notapplicable" else APPLICABLE_STATUSES
        for status in states:
            check_status.add_metric([check.check, check.severity, profile, status],
                                    1.0 if check.status == status else 0.0)
        counts = dict.fromkeys(STATUSES, 0)
        for obj in check.objects:
            counts[obj.status] = counts.get(obj.status, 0) + 1
        for status in STATUSES if detail else COUNTED_BY_DEFAULT:
            if detail or counts[status]:
                check_objects.add_metric([check.check, status], float(counts[status]))
    lost = _gauge("tunewatch_check_objects_lost_on_readd",
                  "Number of the check's objects that a re-add of their device (an Azure VF re-added during host "
                  "servicing, a driver reload or update) leaves failing: after_readd status fail. One series per "
                  "applicable check whose objects a device event touches.", ("check",))
    for check in result.results:
        afters = [o.after_readd for o in check.objects if o.after_readd is not None
                  and o.after_readd.source != NOT_AFFECTED_BY_READD]
        if check.status != "notapplicable" and afters:
            lost.add_metric([check.check], float(sum(a.status == "fail" for a in afters)))
    compliant = _gauge("tunewatch_host_compliant", "1 when no selected check fails or errors, else 0.", ("profile",))
    compliant.add_metric([profile], 0.0 if any(c.status in NOT_COMPLIANT for c in result.results) else 1.0)

    placement = _irq_placement(result, dense=detail)
    # By default the CPUs of the nodes that hold data IRQs (what the placement panels
    # compare against); every node with detail. So the default never grows with the number
    # of NUMA nodes on a host where nothing applies.
    irq_nodes = None if detail else {s.labels["node"] for s in placement.samples}
    families: list[Metric] = [check_status, check_objects, lost, compliant]
    families += _host_families(result, irq_nodes)
    families.append(placement)
    if detail:
        families += _detail_families(result)
    content = _gauge("tunewatch_content_info", "Loaded content: profile and short digest.", ("profile", "digest"))
    content.add_metric([profile, str(result.content_digest)], 1.0)
    selected = _gauge("tunewatch_checks_selected", "Number of checks the profile selects.", ("profile",))
    selected.add_metric([profile], float(len(result.results)))
    families += [content, selected]
    return families


def _detail_families(result: Any) -> list[Metric]:
    """Per object, per data IRQ and per numeric setting (opt-in: --metrics.detail)."""
    object_status = _gauge("tunewatch_object_status",
                           "1 per evaluated object (notapplicable ones omitted), labelled with its status.",
                           ("check", "object", "status"))
    observed = _gauge("tunewatch_setting_observed",
                      "Observed numeric value of a setting, in the unit its name says (or a count).",
                      ("check", "object", "setting"))
    expected = _gauge("tunewatch_setting_expected",
                      "Required numeric value of a setting (for limits, the limit), in the unit its name says.",
                      ("check", "object", "setting"))
    irq_cpus = _gauge("tunewatch_irq_affinity_cpus",
                      "Number of CPUs in the IRQ's smp_affinity_list (1 = pinned to one CPU).", ("interface", "irq"))
    irq_first_cpu = _gauge("tunewatch_irq_affinity_first_cpu", "Lowest CPU in the IRQ's smp_affinity_list.",
                           ("interface", "irq"))
    seen_objects: set[tuple[str, str]] = set()
    seen_settings: set[tuple[str, str, str]] = set()
    seen_irqs: set[tuple[str, int]] = set()
    for check in result.results:
        for obj in check.objects:
            if obj.status == "notapplicable" or (check.check, obj.object) in seen_objects:
                continue
            seen_objects.add((check.check, obj.object))
            object_status.add_metric([check.check, _label(obj.object), obj.status], 1.0)
            placed = obj.irq
            if placed is not None and (placed.interface, placed.irq) not in seen_irqs:
                seen_irqs.add((placed.interface, placed.irq))
                labels = [placed.interface, str(placed.irq)]
                irq_cpus.add_metric(labels, float(len(placed.cpus)))
                if placed.cpus:
                    irq_first_cpu.add_metric(labels, float(min(placed.cpus)))
            for setting in obj.settings:
                key = (check.check, obj.object, setting.name)
                if key in seen_settings:
                    continue
                seen_settings.add(key)
                labels = [check.check, _label(obj.object), setting.name]
                for family, value in ((observed, setting.observed), (expected, setting.expected)):
                    number = _number(value)
                    if number is not None:
                        family.add_metric(labels, number)
    return [object_status, observed, expected, irq_cpus, irq_first_cpu]


def _host_families(result: Any, numa_nodes: set[str] | None) -> list[Metric]:
    families: list[Metric] = []
    host = result.host
    if host is not None:
        info = _gauge("tunewatch_host_info", "Host identity.", ("hostname", "platform", "kernel", "os"))
        info.add_metric([_label(host.hostname), host.platform, _label(host.kernel), _label(host.os_name)], 1.0)
        families.append(info)
        if _number(host.boot_time) is not None:
            boot = _gauge("tunewatch_boot_time_seconds", "Boot time (btime of /proc/stat), Unix seconds.")
            boot.add_metric([], float(host.boot_time))
            families.append(boot)
    numa = _gauge("tunewatch_numa_node_cpus", "Online logical CPUs of each NUMA node.", ("node",))
    for node, cpus in sorted(result.numa_node_cpus.items()):
        if numa_nodes is None or str(node) in numa_nodes:
            numa.add_metric([str(node)], float(cpus))
    nics = _gauge("tunewatch_nic_info", "Driver identity of an in-scope NIC.",
                  ("interface", "driver", "version", "firmware", "bus"))
    seen: set[str] = set()
    for nic in result.nics:
        if nic.interface not in seen:
            seen.add(nic.interface)
            nics.add_metric([nic.interface, _label(nic.driver), _label(nic.version), _label(nic.firmware),
                             _label(nic.bus)], 1.0)
    return families + [numa, nics]


def _irq_placement(result: Any, dense: bool) -> Metric:
    """Data IRQs of each NIC per NUMA node, from the objects' `irq` placement (`node`: the
    node holding every CPU of the IRQ's smp_affinity_list, None when they span nodes). The
    first object placing an IRQ counts; by default only non-zero counts, `dense` lists
    every node and `multiple` per interface, zeros included."""
    placement = _gauge("tunewatch_nic_data_irqs",
                       "Number of the NIC's data IRQs whose smp_affinity_list lies within NUMA node `node` "
                       "(node=\"multiple\": spans nodes).", ("interface", "node"))
    counts: dict[str, dict[str, int]] = {}
    seen: set[tuple[str, int]] = set()
    for check in result.results:
        for obj in check.objects:
            placed = obj.irq
            if placed is None or not placed.cpus or (placed.interface, placed.irq) in seen:
                continue  # not an IRQ, no CPU at all (nowhere to count it), or counted
            seen.add((placed.interface, placed.irq))
            label = MULTIPLE_NODES if placed.node is None else str(placed.node)
            per_node = counts.setdefault(placed.interface, {})
            per_node[label] = per_node.get(label, 0) + 1
    nodes = [str(n) for n in sorted(result.numa_node_cpus)] + [MULTIPLE_NODES]
    for interface in sorted(counts):
        per_node = counts[interface]
        for node in nodes if dense else ():
            per_node.setdefault(node, 0)
        for node in sorted(per_node, key=lambda n: (n == MULTIPLE_NODES, int(n) if n.isdigit() else 0)):
            placement.add_metric([interface, node], float(per_node[node]))
    return placement


def build_info() -> Metric:
    import sys

    info = _gauge("tunewatch_build_info", "tunewatch build.", ("version", "python_version"))
    # platform.python_version() is the first word of sys.version (its regex: [\w.+]+), and
    # importing platform costs ~2.5 ms of a scan (docs/architecture.md#start-up-cost)
    info.add_metric([__version__, sys.version.split()[0]], 1.0)
    return info


def result_health_families(result: Any) -> list[Metric]:
    """Scan health of a one-shot scan (textfile): it completed, so success is 1."""
    success = _gauge("tunewatch_scan_success", "1 when the last scan attempt completed, 0 when it raised or timed out.")
    success.add_metric([], 1.0)
    duration = _gauge("tunewatch_scan_duration_seconds", "Duration of the last completed scan.")
    duration.add_metric([], float(result.duration_seconds))
    last = _gauge("tunewatch_last_scan_timestamp_seconds", "Unix time the last completed scan finished.")
    last.add_metric([], float(result.started_at) + float(result.duration_seconds))
    return [success, duration, last]


def serve_families(state: Any) -> list:
    """Scan health of the serve loop, from a ScanState snapshot (prometheus_client objects)."""
    return client_families(_serve_families(state))


def _serve_families(state: Any) -> list[Metric]:
    families: list[Metric] = []
    if state.first_scan_done:
        success = _gauge("tunewatch_scan_success",
                         "1 when the last scan attempt completed, 0 when it raised or timed out.")
        success.add_metric([], 1.0 if state.last_success else 0.0)
        families.append(success)
    if state.result is not None and state.result_duration_seconds is not None:
        duration = _gauge("tunewatch_scan_duration_seconds", "Duration of the last completed scan.")
        duration.add_metric([], float(state.result_duration_seconds))
        families.append(duration)
    if state.result is not None and state.result_completed_at is not None:
        last = _gauge("tunewatch_last_scan_timestamp_seconds", "Unix time the last completed scan finished.")
        last.add_metric([], float(state.result_completed_at))
        families.append(last)
    running = _gauge("tunewatch_scan_in_progress", "1 while a scan runs.")
    running.add_metric([], 1.0 if state.scan_in_progress else 0.0)
    scans = _counter("tunewatch_scans_total", "Scans started.")
    scans.add_metric([], float(state.scans_total))
    errors = _counter("tunewatch_scan_errors_total", "Failed scans, by reason.", labels=["reason"])
    for reason in ERROR_REASONS:
        errors.add_metric([reason], float(state.scan_errors_total.get(reason, 0)))
    skipped = _counter("tunewatch_scans_skipped_total",
                                  "Due or requested scans not started because a timed-out scan still runs.")
    skipped.add_metric([], float(state.scans_skipped_total))
    return families + [running, scans, errors, skipped, build_info()]


# --- exposition ------------------------------------------------------------------------


class _Families:
    """A collector that yields a fixed list of metric families."""

    def __init__(self, families: list[Metric]):
        self._families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


def expose(families: list) -> bytes:
    """prometheus_client metric objects in the text format, by the library."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(families))  # type: ignore[arg-type]  # a Collector is any object with collect()
    return generate_latest(registry)


def render(result: Any, detail: bool = False) -> str:
    """Text exposition (format 0.0.4) of one scan, for the textfile collector."""
    return text_exposition(_scan_families(result, detail) + result_health_families(result) + [build_info()])


def make_renderer(detail: bool = False) -> Callable[[Any], bytes]:
    """`/metrics` for serve: cached per-scan exposition + serve-only series per scrape.

    The cache holds the exposition of the last result object seen (identity, not
    equality): a new ScanState with the same result costs one dict-free bytes join.
    """
    import threading  # serve's renderer only

    lock = threading.Lock()
    cache: list[Any] = [None, b""]  # [result object, its exposition]

    def per_scan(result: Any) -> bytes:
        if result is None:
            return b""
        with lock:  # concurrent first scrapes after a scan render it once
            if cache[0] is not result:
                cache[1] = expose(scan_families(result, detail))
                cache[0] = result
            return cache[1]

    def render_state(state: Any) -> bytes:
        return per_scan(state.result) + expose(serve_families(state))

    return render_state


def write_textfile(path: str, text: str) -> None:
    """Atomically replace `path` (host/atomic.py); a new file is mode 0644.

    The temp name does not end in .prom, so the textfile collector never reads a partial file.
    """
    import errno
    import os

    from ..host.atomic import write_atomic

    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):  # named here: node_exporter's textfile directory is a setting to fix
        raise FileNotFoundError(errno.ENOENT, "textfile directory does not exist", directory)
    write_atomic(path, text, mode=0o644)
