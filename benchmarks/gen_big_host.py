#!/usr/bin/env python3
"""Generate a large Azure SAS Grid host snapshot for the benchmarks.

    python3 benchmarks/gen_big_host.py DIR [NCPU]   # writes the snapshot, prints its root

416 vCPUs (or NCPU) in 8 NUMA nodes (52 each, like an M416-class VM); 4 Accelerated Networking pairs
(hv_netvsc eth0..3, mlx5_core VFs, one per node 0..3) with 64 data IRQs each
(`mlx5_comp0..63`) plus one `mlx5_async0` control vector; 8 local NVMe disks with a queue
per few CPUs, so proc/interrupts has ~1,000 IRQ lines of 416 count columns (~4.5 MB, the
kernel's own layout); 50 NFSv3 mounts from ANF (mountinfo, fstab, bdi read_ahead_kb: sys/class/bdi/<bdi>
links to sys/devices/virtual/bdi/<bdi>, as sysfs makes them);
sysctl.d, modprobe.d, tuned, ethtool/*.json, systemd units and ~3,000 processes.

Tuning is realistic, neither all-pass nor all-fail: VFs 0 and 1 are pinned right (single
CPUs of their own node, CPUs 0-1 left alone), VF 2 has 8 vectors on the wrong node, VF 3 was
left to irqbalance; VF 3 runs 64 channels (> 52 CPUs of its node); 5 mounts lack
`nconnect`, 3 have read_ahead_kb 128. Shapes come from tests/snapshots/build_examples.py.
"""

from __future__ import annotations

import importlib.util
import os
import random

PROFILE = "azure-sas-grid-anf"  # the Azure AN network checks plus every NFS/sysctl/tuned check

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "build_examples", os.path.join(HERE, "..", "tests", "snapshots", "build_examples.py"))
ex = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ex)

NODES = 8
PER_NODE = 52
NCPU = NODES * PER_NODE  # the default size; build(dir, ncpu) makes 64 ... 1,664 CPUs for the scaling run
COMP = 64  # mlx5 completion vectors per VF
NVME = 8
NFS_MOUNTS = 50
NPROC = 3000
KERNEL = "4.18.0-305.el8.x86_64"


class _Root(ex.Root):
    """build_examples.Root writing into any directory (its own writes under examples/)."""

    def __init__(self, path: str):  # noqa: D107 - no super(): that would wipe an example
        self.name = os.path.basename(path)
        self.path = path
        os.makedirs(path, exist_ok=True)


DEBIAN12_RULES = os.path.join(HERE, "..", "tests", "udev", "debian12-rules")  # 50 files, 1,688 lines (ORIGIN.md)


def distribution_rules(r, name: str) -> None:
    """Copy a distribution's stock udev rules into the host (`debian12`: the files Debian 12's
    udev, systemd, lvm2, mdadm, multipath-tools, open-iscsi, nfs-common and network-manager
    install, kept under tests/ with their origin)."""
    if name != "debian12":
        raise ValueError(f"unknown rule set {name!r} (known: debian12)")
    for d, _, names in os.walk(DEBIAN12_RULES):
        for n in names:
            if n.endswith(".rules"):
                path = os.path.join(d, n)
                with open(path, encoding="utf-8") as f:
                    r.write(os.path.relpath(path, DEBIAN12_RULES), f.read())


# A site's own rules, as they grow on a long-lived fleet: block, net, bdi and module events,
# each line keyed by SUBSYSTEM/ACTION/KERNEL as such rules are, some by ENV or ATTRS only,
# GOTO sections, and a few lines that apply to every NFS bdi.
_SITE_LINES = (
    'ACTION=="add|change", SUBSYSTEM=="block", KERNEL=="sd[a-z]*", ATTR{{queue/scheduler}}="mq-deadline"',
    'SUBSYSTEM=="block", ACTION=="add", KERNEL=="nvme{n}n*", ATTR{{queue/nr_requests}}="{v}"',
    'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", KERNEL=="enP*s{n}", RUN+="/usr/sbin/ethtool -G %k rx {v}"',
    'SUBSYSTEM=="net", ACTION=="add", ATTR{{address}}=="00:0d:3a:{n:02x}:*", NAME="site{n}"',
    'ACTION!="add", GOTO="site_end_{f}_{n}"',
    'SUBSYSTEM=="scsi", ATTRS{{vendor}}=="Msft*", ATTR{{timeout}}="{v}"',
    'ENV{{ID_VENDOR}}=="vendor{n}", ENV{{SITE_DISK}}="{v}"',
    'SUBSYSTEM=="bdi", ACTION=="add", KERNEL=="0:{k}", ATTR{{read_ahead_kb}}="16384"',
    'SUBSYSTEM=="module", KERNEL=="mod{n}", RUN+="/usr/sbin/sysctl -p /etc/sysctl.d/{n}.conf"',
    'LABEL="site_end_{f}_{n}"',
)


def site_rules(r, files: int, lines: int) -> None:
    """`files` rules files of `lines` lines each in etc/udev/rules.d (see _SITE_LINES)."""
    for f in range(files):
        body = [_SITE_LINES[i % len(_SITE_LINES)].format(f=f, n=i // len(_SITE_LINES), v=4000 + i, k=60 + (f * lines + i) % 1000)
                for i in range(lines)]
        r.write(f"etc/udev/rules.d/{60 + f}-site{f:02d}.rules", "\n".join(body) + "\n")


def build(directory: str, ncpu: int = NCPU, mounts: int = NFS_MOUNTS, rules: str | None = None,
          site: tuple[int, int] = (0, 0)) -> str:
    """Write the snapshot into `directory` (created; should be empty); return the root path.
    `ncpu` (a multiple of 8, at least 64) CPUs in 8 NUMA nodes; NVMe queues and kernel
    threads grow with it, so proc/interrupts grows as CPUs squared, like a real host.
    `mounts` NFS mounts; `rules`: a distribution's rule set (`debian12`); `site`: (files,
    lines) of a site's own udev rules."""
    if ncpu % NODES or ncpu < 64:
        raise ValueError(f"ncpu must be a multiple of {NODES}, at least 64")
    NCPU, PER_NODE = ncpu, ncpu // NODES  # noqa: N806 - the module's names, for this size
    root = os.path.abspath(directory)
    r = _Root(root)
    rng = random.Random("big-host")
    nodes = {n: list(range(n * PER_NODE, (n + 1) * PER_NODE)) for n in range(NODES)}
    ex.identity(r, hostname="sasgrid-big01", kernel=KERNEL, os_key="rhel84", vendor="Microsoft Corporation",
                product="Virtual Machine", asset_tag=ex.AZURE_ASSET_TAG)
    ex.topology(r, nodes)
    ex.net_loopback(r)
    uptime, btime = 9 * 86400 + 611, 1716000000
    irq_rows = ex.legacy_irqs(rng, NCPU, uptime)
    next_irq = 24

    # --- 4 AN pairs ------------------------------------------------------------------
    for k in range(4):
        domain = 0x7870 + k
        msi = list(range(next_irq, next_irq + 1 + COMP))
        next_irq += len(msi)
        _, _, bdf = ex.azure_an_pair(
            r, synth=f"eth{k}", synth_guid=f"000d3a4f-21c{k}-000d-3a4f-21c8000d3a4f", vf=f"enP{domain}s{k + 1}",
            vpci_guid=f"6b3e9d2{k}-b22c-4a07-9f3e-6045bd7a1c90", domain=domain, numa=k, vf_msi=msi)
        channels = 64 if k == 3 else 32
        r.json(f"ethtool/eth{k}.json", ex.ethtool_hv_netvsc(KERNEL, 32, 64))
        r.json(f"ethtool/enP{domain}s{k + 1}.json",
               ex.ethtool_mlx5("5.0-0", "16.31.1014 (MSF0000000012)", bdf, channels, COMP))
        allowed = [c for c in nodes[k] if c not in (0, 1)]
        for i, irq in enumerate(msi):
            if k == 3:  # irqbalance: anywhere
                cpu = rng.randrange(NCPU)
            elif k == 2 and 1 <= i <= 8:  # 8 vectors on the wrong node
                cpu = nodes[(k + 1) % NODES][i % PER_NODE]
            else:
                cpu = allowed[i % len(allowed)]
            ex.irq_affinity(r, irq, [cpu], [cpu])
            name = f"mlx5_async0@pci:{bdf}" if i == 0 else f"mlx5_comp{i - 1}@pci:{bdf}"
            irq_rows.append(ex.Irq(irq, "Hyper-V PCIe MSI", ex.msi_hwirq(domain, 0, 0x10, i), "edge", name,
                                   ex.counts_on(rng, NCPU, [cpu], 3000 if i == 0 else uptime * 900)))

    # --- local NVMe: an admin queue plus one I/O queue per 4 CPUs (managed affinity) ------
    for d in range(NVME):
        domain = 0x9a00 + d
        r.write(f"sys/devices/LNXSYSTM:00/nvme-pci{domain:04x}/numa_node", f"{d % NODES}\n")
        for q in range(NCPU // 4 + 1):
            cpus = list(range(0, NCPU)) if q == 0 else list(range((q - 1) * 4, q * 4))
            ex.irq_affinity(r, next_irq, cpus, [cpus[0]])
            irq_rows.append(ex.Irq(next_irq, "Hyper-V PCIe MSI", ex.msi_hwirq(domain, 0, 0x8, q), "edge",
                                   f"nvme{d}q{q}", ex.counts_on(rng, NCPU, cpus[:1], uptime * 10)))
            next_irq += 1
    for row in irq_rows:
        if not os.path.exists(os.path.join(root, f"proc/irq/{row.irq}")):
            ex.irq_affinity(r, row.irq, [0], [0])
    totals = ex.proc_interrupts(r, rng, NCPU, irq_rows, hyperv=True, uptime_s=uptime)
    ex.proc_stat(r, rng, NCPU, btime, uptime, totals)

    # --- processes: per-CPU kernel threads and a busy userland ---------------------------
    kthreads = ["migration/{}", "ksoftirqd/{}", "cpuhp/{}", "kworker/{}:0H", "kworker/{}:1", "idle_inject/{}"]
    names = ["systemd", "kthreadd"] + [t.format(c) for c in range(NCPU) for t in kthreads]
    names += ["sshd", "tuned", "NetworkManager", "rpcbind", "rpc.statd", "waagent", "lsf_daemons"]
    names += [f"sas{i}" for i in range(NPROC - len(names))]
    ex.processes(r, {pid: name for pid, name in enumerate(names[:NPROC], start=1)})

    # --- services ----------------------------------------------------------------------
    ex.install_units(r, ["sshd.service", "irqbalance.service", "tuned.service", "NetworkManager.service",
                         "NetworkManager-dispatcher.service", "waagent.service"], rhel=True)
    for unit in ("sshd.service", "tuned.service", "NetworkManager.service", "waagent.service"):
        ex.enable(r, unit)
    for extra in range(120):  # the vendor unit directory of a full RHEL install
        r.write(f"usr/lib/systemd/system/vendor-{extra:03d}.service", "[Service]\nExecStart=/bin/true\n")
    r.write("etc/NetworkManager/dispatcher.d/90-accelnet-tuning", "#!/bin/sh\n" + "".join(
        f"/sbin/ethtool -L enP{0x7870 + k}s{k + 1} combined 32\n"
        f"/usr/local/sbin/set_irq_affinity_cpulist.sh {k * PER_NODE + 2}-{(k + 1) * PER_NODE - 1} "
        f"enP{0x7870 + k}s{k + 1}\n" for k in range(3)), mode=0o751)
    for k in range(4):
        r.write(f"etc/sysconfig/network-scripts/ifcfg-eth{k}",
                f'DEVICE=eth{k}\nONBOOT=yes\nBOOTPROTO=dhcp\nETHTOOL_OPTS="-L eth{k} combined 32"\n')

    # --- NFSv3 mounts (50) ----------------------------------------------------------------
    nfs, fstab = [], []
    for m in range(mounts):
        server, minor, mnt = f"10.0.{2 + m // 25}.{4 + m % 25}", 60 + m, f"/sas/vol{m:02d}"
        nconnect = "" if m % 10 == 9 else ",nconnect=8"
        nfs.append(f"{200 + m} 23 0:{minor} / {mnt} rw,noatime,nodiratime shared:{100 + m} - nfs {server}:/vol{m:02d} "
                   f"rw,vers=3,rsize=65536,wsize=65536,namlen=255,acdirmin=0,hard,proto=tcp{nconnect},timeo=600,"
                   f"retrans=2,sec=sys,mountaddr={server},mountvers=3,mountport=635,mountproto=tcp,local_lock=none,"
                   f"addr={server}")
        fstab.append(f"{server}:/vol{m:02d} {mnt} nfs bg,rw,hard,rsize=65536,wsize=65536,vers=3,noatime,nodiratime,"
                     f"rdirplus,acdirmin=0,tcp,_netdev{nconnect} 0 0")
        # as sysfs makes them: the class entry is a link to the device's directory
        r.value(f"sys/devices/virtual/bdi/0:{minor}/read_ahead_kb", 128 if m in (7, 23, 41) else 15380)
        r.symlink(f"sys/class/bdi/0:{minor}", f"../../devices/virtual/bdi/0:{minor}")
    ex.mountinfo(r, ex.base_mountinfo("/dev/mapper/rootvg-rootlv", "253:0", "xfs", "rw,attr2,inode64,noquota", [
        "74 21 0:47 / /var/lib/nfs/rpc_pipefs rw,relatime shared:39 - rpc_pipefs sunrpc rw"] + nfs, cgroup2=False))
    r.write("etc/fstab", "/dev/mapper/rootvg-rootlv / xfs defaults 0 0\n" + "\n".join(fstab) + "\n")
    r.write("etc/udev/rules.d/99-nfs.rules", ex.SAS_UDEV_RULE)
    if rules:
        distribution_rules(r, rules)
    if site[0]:
        site_rules(r, *site)

    # --- sysctls and tuned --------------------------------------------------------------
    for key, value in (("sunrpc/tcp_slot_table_entries", 128), ("sunrpc/tcp_max_slot_table_entries", 128),
                       ("vm/dirty_bytes", 31457280), ("vm/dirty_expire_centisecs", 100),
                       ("vm/dirty_writeback_centisecs", 300)):
        r.value(f"proc/sys/{key}", value)
    r.write("etc/sysctl.d/90-sas-anf.conf", "sunrpc.tcp_max_slot_table_entries = 128\n"
                                           "sunrpc.tcp_slot_table_entries = 128\n")
    for n in range(20):
        r.write(f"usr/lib/sysctl.d/{10 + n}-vendor.conf", f"# vendor defaults {n}\nkernel.sysrq = 16\nnet.core.somaxconn = {4096 + n}\n")
    r.write("etc/sysctl.conf", "# local\n")
    r.write("etc/modprobe.d/sunrpc.conf", "options sunrpc tcp_max_slot_table_entries=128\n")
    r.write("etc/tuned/active_profile", "sas-performance\n")
    r.write("etc/tuned/sas-performance/tuned.conf", "[main]\ninclude=throughput-performance\n\n[sysctl]\n"
                                                    "vm.dirty_bytes = 31457280\nvm.dirty_expire_centisecs = 100\n"
                                                    "vm.dirty_writeback_centisecs = 300\n")
    r.write("usr/lib/tuned/throughput-performance/tuned.conf", ex.THROUGHPUT_PERFORMANCE)
    return root


if __name__ == "__main__":
    import argparse
    cli = argparse.ArgumentParser(description="Write a large host snapshot; print its root.")
    cli.add_argument("dir")
    cli.add_argument("ncpu", nargs="?", type=int, default=NCPU)
    cli.add_argument("--mounts", type=int, default=NFS_MOUNTS, help="NFS mounts (default %(default)s)")
    cli.add_argument("--rules", choices=["debian12"], help="a distribution's stock udev rules")
    cli.add_argument("--site", default="0x0", metavar="FILESxLINES", help="a site's own udev rules, e.g. 20x500")
    a = cli.parse_args()
    print(build(a.dir, a.ncpu, a.mounts, a.rules, tuple(int(x) for x in a.site.split("x"))))
