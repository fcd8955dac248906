"""Synthetic ScanResults (the engine's own dataclasses) for output/exporter/rules tests.

`result([...checks])` for small cases, `big_host()` for the 416-CPU cardinality host.
"""

from __future__ import annotations

import time
from typing import Any

from tunewatch.results import CheckResult, NicInfo, ScanResult
from tunewatch.facts.host import Host
from tunewatch.results import AfterReadd, IrqPlacement, ObjectResult, Setting

_RANKS = {"fail": 4, "error": 3, "waived": 2, "pass": 1, "notapplicable": 0}


def worst(objects: list) -> str:
    return max((o.status for o in objects), key=_RANKS.__getitem__, default="notapplicable")


def check(check_id: str, objects: list, severity: str = "high", kind: str = "sysctl") -> Any:
    return CheckResult(check_id, check_id.replace("-", " "), severity, kind, worst(objects), objects)


def obj(name: str, status: str, expected: str = "", actual: str = "", settings: list | None = None,
        after_readd: str | None = None) -> Any:
    """`after_readd`: the status a re-add of the object's device leaves (persistent checks)."""
    o = ObjectResult(name, status, expected, actual, f"{name}: {status}", list(settings or []))
    if after_readd is not None:
        o.after_readd = AfterReadd(actual, f"re-applied on add by {actual}" if after_readd == "pass"
                                   else "driver default", after_readd)
    return o


def host(hostname: str = "hana01", platform: str = "azure", boot_time: int | None = 1_700_000_000) -> Any:
    return Host(hostname, "5.14.21-150500.55.39-default", "sles", "15.5", "SUSE Linux Enterprise Server 15 SP5",
                platform, "Virtual Machine", boot_time)


def result(results: list, *, profile: str = "azure-sap-hana", nics: list | None = None,
           numa_node_cpus: dict | None = None, cpu_node: dict | None = None, host_: Any = "default",
           duration: float = 0.25, started_at: float | None = None) -> Any:
    scan = ScanResult(profile, "/snapshot", host() if host_ == "default" else host_, results,
                      time.time() - 1 if started_at is None else started_at, duration, "0123456789ab",
                      list(nics or []), dict(numa_node_cpus or {0: 4}))
    if cpu_node is not None:
        scan.cpu_node = cpu_node
    return scan


def irq_obj(interface: str, irq: int, cpus: list[int], status: str = "pass", allowed: str = "0-51",
            cpu_node: dict | None = None, node: int = 0) -> Any:
    """An irq_affinity object as the kind reports it; `cpu_node` maps CPUs to NUMA nodes
    (default: every CPU on node 0), `node` is the node the IRQ belongs on."""
    on = {(cpu_node or {}).get(c, 0) for c in cpus}
    placed = obj(f"{interface}/irq{irq}", status, f"within {allowed} (node {node})", _cpulist(cpus))
    placed.irq = IrqPlacement(interface, irq, tuple(sorted(set(cpus))), on.pop() if len(on) == 1 else None)
    return placed


def _cpulist(cpus: list[int]) -> str:
    cpus = sorted(set(cpus))
    out, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            out.append(str(start) if start == c else f"{start}-{c}")
            start = None
    return ",".join(out)


def big_host(nodes: int = 8, cpus_per_node: int = 52, pairs: int = 4, irqs_per_nic: int = 64,
             nfs_mounts: int = 50) -> Any:
    """The shape of benchmarks/gen_big_host.py scanned with an Azure HANA profile:
    416 CPUs on 8 NUMA nodes, 4 accelerated-networking pairs (hv_netvsc + mlx5 VF) whose VFs
    have 64 data IRQs each, 50 NFS mounts, ~25 checks."""
    cpu_node = {n * cpus_per_node + i: n for n in range(nodes) for i in range(cpus_per_node)}
    synth = [f"eth{i}" for i in range(pairs)]
    vfs = [f"enP{30832 + i}s1" for i in range(pairs)]
    nics = [NicInfo(v, "mlx5_core", "5.14.21", "16.30.1004 (MSF0000000012)", f"{7870 + i:04x}:00:02.0")
            for i, v in enumerate(vfs)]
    nics += [NicInfo(s, "hv_netvsc", "5.14.21", "N/A", "") for s in synth]
    checks = []
    aff, spread = [], []
    for i, vf in enumerate(vfs):
        node = i % nodes
        base = node * cpus_per_node
        for q in range(irqs_per_nic):
            irq = 100 + i * irqs_per_nic + q
            cpu = base + (q % cpus_per_node)
            aff.append(irq_obj(vf, irq, [cpu], allowed=f"{base}-{base + cpus_per_node - 1}", cpu_node=cpu_node,
                               node=node))
            spread.append(obj(f"{vf}/irq{irq}", "pass", "1 CPU, <= 2 IRQs per CPU", str(cpu)))
    checks.append(check("nic-irq-affinity", aff, kind="irq_affinity"))
    checks.append(check("nic-irq-spread", spread, kind="irq_spread"))
    checks.append(check("nic-irq-affinity-persistent",
                        [obj(v, "pass", "pinned at boot", "udev rule", after_readd="pass") for v in vfs], kind="irq_affinity_persistent"))
    checks.append(check("accelerated-networking", [obj(s, "pass", "VF present", v) for s, v in zip(synth, vfs)],
                        kind="accelerated_networking"))
    checks.append(check("nic-queue-count",
                        [obj(v, "pass", f"<= {cpus_per_node}", "32",
                             [Setting("channels.combined", 32, None), Setting("channels.limit", None, cpus_per_node)])
                         for v in vfs], kind="nic_channels"))
    checks.append(check("nic-rings", [obj(v, "pass", "rx 8192", "rx 8192",
                                          [Setting("rings.rx", 8192, 8192), Setting("rings.tx", 8192, 8192)])
                                      for v in vfs], kind="nic_ethtool"))
    checks.append(check("nic-settings-persistent", [obj(v, "pass", "persisted", "udev", after_readd="pass") for v in vfs],
                        kind="nic_settings_persistent"))
    mounts = [f"/hana/shared{i:02d}" if i < 2 else f"/hana/data/vol{i:02d}" for i in range(nfs_mounts)]
    for cid in ("nfs-mount-options", "nfs-mount-options-persistent"):
        checks.append(check(cid, [obj(m, "pass", "rw,hard,vers=4.1", "rw,hard,vers=4.1") for m in mounts],
                            kind="nfs_mount_options"))
    checks.append(check("nfs-nconnect", [obj(m, "pass", "nconnect=4", "nconnect=4",
                                             [Setting("nconnect", 4, 4)]) for m in mounts], kind="nfs_nconnect"))
    checks.append(check("nfs-read-ahead", [obj(m, "pass", "16384", "16384", [Setting("read_ahead_kb", 16384, 16384)])
                                           for m in mounts], kind="bdi_readahead"))
    sysctls = {"sunrpc.tcp_slot_table_entries": 128, "sunrpc.tcp_max_slot_table_entries": 128,
               "vm.dirty_bytes": 629145600, "vm.dirty_background_bytes": 314572800,
               "vm.dirty_expire_centisecs": 3000, "vm.dirty_writeback_centisecs": 500,
               "net.core.rmem_max": 16777216, "net.core.wmem_max": 16777216,
               "net.ipv4.tcp_rmem": None, "net.ipv4.tcp_wmem": None, "net.core.netdev_max_backlog": 300000,
               "net.ipv4.tcp_slow_start_after_idle": 0}
    for key, value in sysctls.items():
        settings = [Setting(key, value, value)] if value is not None else []
        checks.append(check(f"sysctl-{key.replace('.', '-').replace('_', '-')}",
                            [obj(key, "pass", str(value), str(value), settings)], severity="medium"))
    checks.append(check("irqbalance-disabled", [obj("irqbalance.service", "pass", "disabled", "disabled")],
                        kind="service_disabled"))
    checks.append(check("tuned-profile", [obj("tuned", "pass", "sap-hana", "sap-hana")], kind="tuned_profile"))
    return result(checks, nics=nics, numa_node_cpus={n: cpus_per_node for n in range(nodes)}, cpu_node=cpu_node,
                  duration=1.5)
