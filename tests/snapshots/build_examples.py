#!/usr/bin/env python3
"""Build the example host snapshots under tests/snapshots/examples/.

Each example is a directory that mirrors a host's root filesystem as far as the snapshot
contract (SPEC section 2) names it, plus `ethtool/<if>.json` and `vmware/...`. Run from
anywhere; stdlib only; idempotent: every example directory is deleted and rewritten, and
every value is derived deterministically (seeded RNG), so re-running gives identical trees.

    python3 tests/snapshots/build_examples.py            # all examples
    python3 tests/snapshots/build_examples.py sas-anf    # only some

Keep the output small: only files the contract names, no fillers.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "examples")

AZURE_ASSET_TAG = "7783-7084-3265-9085-8269-3286-77"


# --------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------

class Root:
    """A snapshot directory being written."""

    def __init__(self, name: str):
        self.name = name
        self.path = os.path.join(EXAMPLES, name)
        if os.path.lexists(self.path):
            shutil.rmtree(self.path)
        os.makedirs(self.path)

    def _abs(self, rel: str) -> str:
        return os.path.join(self.path, rel.strip("/"))

    def write(self, rel: str, text: str, mode: int | None = None) -> None:
        path = self._abs(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        if mode is not None:
            os.chmod(path, mode)

    def value(self, rel: str, value) -> None:
        """A one-value sysfs/procfs file (the kernel ends it with a newline)."""
        self.write(rel, f"{value}\n")

    def touch(self, rel: str) -> None:
        self.write(rel, "")

    def mkdir(self, rel: str) -> None:
        os.makedirs(self._abs(rel), exist_ok=True)

    def symlink(self, rel: str, target: str) -> None:
        path = self._abs(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.lexists(path):
            os.remove(path)
        os.symlink(target, path)

    def rel_symlink(self, rel: str, target_rel: str) -> None:
        """A relative symlink at `rel` pointing to `target_rel` (both root-relative)."""
        link_dir = os.path.dirname(rel.strip("/"))
        self.symlink(rel, os.path.relpath(target_rel.strip("/"), link_dir or "."))

    def json(self, rel: str, data: dict) -> None:
        self.write(rel, json.dumps(data, indent=2) + "\n")


def cpulist(cpus) -> str:
    """Kernel cpulist syntax: 0-3,8,10-11."""
    cpus = sorted(set(cpus))
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def msi_hwirq(domain: int, bus: int, devfn: int, index: int) -> int:
    """pci_msi_domain_calc_hwirq(): entry | pci_dev_id << 11 | domain << 27."""
    return index | ((bus << 8) | devfn) << 11 | (domain & 0xFFFFFFFF) << 27


# --------------------------------------------------------------------------------------
# host identity, CPUs, processes
# --------------------------------------------------------------------------------------

OS_RELEASE = {
    "sles16": """NAME="SLES"
VERSION="16.0"
VERSION_ID="16.0"
PRETTY_NAME="SUSE Linux Enterprise Server 16.0"
ID="sles"
ID_LIKE="suse"
ANSI_COLOR="0;32"
CPE_NAME="cpe:/o:suse:sles:16:16.0"
DOCUMENTATION_URL="https://documentation.suse.com/"
""",
    "sles15sp4": """NAME="SLES"
VERSION="15-SP4"
VERSION_ID="15.4"
PRETTY_NAME="SUSE Linux Enterprise Server 15 SP4"
ID="sles"
ID_LIKE="suse"
ANSI_COLOR="0;32"
CPE_NAME="cpe:/o:suse:sles_sap:15:sp4"
DOCUMENTATION_URL="https://documentation.suse.com/"
""",
    "rhel86": """NAME="Red Hat Enterprise Linux"
VERSION="8.6 (Ootpa)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="8.6"
PLATFORM_ID="platform:el8"
PRETTY_NAME="Red Hat Enterprise Linux 8.6 (Ootpa)"
ANSI_COLOR="0;31"
CPE_NAME="cpe:/o:redhat:enterprise_linux:8::baseos"
HOME_URL="https://www.redhat.com/"
DOCUMENTATION_URL="https://access.redhat.com/documentation/red_hat_enterprise_linux/8/"
BUG_REPORT_URL="https://bugzilla.redhat.com/"

REDHAT_BUGZILLA_PRODUCT="Red Hat Enterprise Linux 8"
REDHAT_BUGZILLA_PRODUCT_VERSION=8.6
REDHAT_SUPPORT_PRODUCT="Red Hat Enterprise Linux"
REDHAT_SUPPORT_PRODUCT_VERSION="8.6"
""",
    "rhel84": """NAME="Red Hat Enterprise Linux"
VERSION="8.4 (Ootpa)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="8.4"
PLATFORM_ID="platform:el8"
PRETTY_NAME="Red Hat Enterprise Linux 8.4 (Ootpa)"
ANSI_COLOR="0;31"
CPE_NAME="cpe:/o:redhat:enterprise_linux:8.4:GA"
HOME_URL="https://www.redhat.com/"
DOCUMENTATION_URL="https://access.redhat.com/documentation/red_hat_enterprise_linux/8/"
BUG_REPORT_URL="https://bugzilla.redhat.com/"

REDHAT_BUGZILLA_PRODUCT="Red Hat Enterprise Linux 8"
REDHAT_BUGZILLA_PRODUCT_VERSION=8.4
REDHAT_SUPPORT_PRODUCT="Red Hat Enterprise Linux"
REDHAT_SUPPORT_PRODUCT_VERSION="8.4"
""",
    "sles15sp5": """NAME="SLES"
VERSION="15-SP5"
VERSION_ID="15.5"
PRETTY_NAME="SUSE Linux Enterprise Server 15 SP5"
ID="sles"
ID_LIKE="suse"
ANSI_COLOR="0;32"
CPE_NAME="cpe:/o:suse:sles_sap:15:sp5"
DOCUMENTATION_URL="https://documentation.suse.com/"
""",
    "rhel92": """NAME="Red Hat Enterprise Linux"
VERSION="9.2 (Plow)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="9.2"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Red Hat Enterprise Linux 9.2 (Plow)"
ANSI_COLOR="0;31"
LOGO="fedora-logo-icon"
CPE_NAME="cpe:/o:redhat:enterprise_linux:9::baseos"
HOME_URL="https://www.redhat.com/"
DOCUMENTATION_URL="https://access.redhat.com/documentation/en-us/red_hat_enterprise_linux/9"
BUG_REPORT_URL="https://bugzilla.redhat.com/"

REDHAT_BUGZILLA_PRODUCT="Red Hat Enterprise Linux 9"
REDHAT_BUGZILLA_PRODUCT_VERSION=9.2
REDHAT_SUPPORT_PRODUCT="Red Hat Enterprise Linux"
REDHAT_SUPPORT_PRODUCT_VERSION="9.2"
""",
    "rhel96": """NAME="Red Hat Enterprise Linux"
VERSION="9.6 (Plow)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="9.6"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Red Hat Enterprise Linux 9.6 (Plow)"
ANSI_COLOR="0;31"
LOGO="fedora-logo-icon"
CPE_NAME="cpe:/o:redhat:enterprise_linux:9::baseos"
HOME_URL="https://www.redhat.com/"
DOCUMENTATION_URL="https://access.redhat.com/documentation/en-us/red_hat_enterprise_linux/9"
BUG_REPORT_URL="https://issues.redhat.com/"

REDHAT_BUGZILLA_PRODUCT="Red Hat Enterprise Linux 9"
REDHAT_BUGZILLA_PRODUCT_VERSION=9.6
REDHAT_SUPPORT_PRODUCT="Red Hat Enterprise Linux"
REDHAT_SUPPORT_PRODUCT_VERSION="9.6"
""",
    "ubuntu1804": """NAME="Ubuntu"
VERSION="18.04.6 LTS (Bionic Beaver)"
ID=ubuntu
ID_LIKE=debian
PRETTY_NAME="Ubuntu 18.04.6 LTS"
VERSION_ID="18.04"
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
VERSION_CODENAME=bionic
UBUNTU_CODENAME=bionic
""",
    "ubuntu2404": "",  # UBUNTU2404_OS below (the next-kernel files share it)
    # BIG-IP's TMOS host side is a CentOS 7 userland.
    "bigip": """NAME="CentOS Linux"
VERSION="7 (Core)"
ID="centos"
ID_LIKE="rhel fedora"
VERSION_ID="7"
PRETTY_NAME="CentOS Linux 7 (Core)"
ANSI_COLOR="0;31"
CPE_NAME="cpe:/o:centos:centos:7"
HOME_URL="https://www.centos.org/"
BUG_REPORT_URL="https://bugs.centos.org/"
""",
}


def identity(r: Root, *, hostname: str, kernel: str, os_key: str, vendor: str, product: str,
             asset_tag: str) -> None:
    r.value("proc/sys/kernel/hostname", hostname)
    r.value("proc/sys/kernel/osrelease", kernel)
    r.write("etc/os-release", OS_RELEASE[os_key])
    r.value("sys/class/dmi/id/sys_vendor", vendor)
    r.value("sys/class/dmi/id/product_name", product)
    r.value("sys/class/dmi/id/chassis_asset_tag", asset_tag)


def topology(r: Root, nodes: dict[int, list[int]]) -> None:
    online = sorted(c for cpus in nodes.values() for c in cpus)
    r.value("sys/devices/system/cpu/online", cpulist(online))
    for node, cpus in nodes.items():
        r.value(f"sys/devices/system/node/node{node}/cpulist", cpulist(cpus))


def processes(r: Root, procs: dict[int, str]) -> None:
    for pid, comm in procs.items():
        r.value(f"proc/{pid}/comm", comm)


def proc_stat(r: Root, rng: random.Random, ncpu: int, btime: int, uptime_s: int,
              irq_totals: dict[int, int]) -> None:
    """proc/stat: aggregate and per-CPU lines in USER_HZ, intr, ctxt, btime, ..."""
    hz = 100
    per_cpu = []
    for _ in range(ncpu):
        total = uptime_s * hz
        user = int(total * rng.uniform(0.02, 0.10))
        nice = int(total * rng.uniform(0.0, 0.002))
        system = int(total * rng.uniform(0.01, 0.04))
        iowait = int(total * rng.uniform(0.0, 0.005))
        irq = 0
        softirq = int(total * rng.uniform(0.0005, 0.004))
        steal = int(total * rng.uniform(0.0, 0.001))
        idle = total - user - nice - system - iowait - irq - softirq - steal
        per_cpu.append([user, nice, system, idle, iowait, irq, softirq, steal, 0, 0])
    agg = [sum(col) for col in zip(*per_cpu)]
    lines = ["cpu  " + " ".join(map(str, agg))]
    lines += [f"cpu{i} " + " ".join(map(str, v)) for i, v in enumerate(per_cpu)]
    top = max(irq_totals) if irq_totals else 0
    counts = [irq_totals.get(i, 0) for i in range(top + 1)]
    lines.append("intr " + " ".join(map(str, [sum(counts)] + counts)))
    lines.append(f"ctxt {uptime_s * ncpu * rng.randint(180, 420)}")
    lines.append(f"btime {btime}")
    lines.append(f"processes {rng.randint(40_000, 900_000)}")
    lines.append(f"procs_running {rng.randint(1, 4)}")
    lines.append("procs_blocked 0")
    soft = [rng.randint(10, 99), uptime_s * ncpu * 3, rng.randint(10**4, 10**7),
            sum(counts), rng.randint(10**4, 10**6), 0, rng.randint(10, 999),
            uptime_s * ncpu * 2, uptime_s * 9, uptime_s * ncpu * 4]
    lines.append("softirq " + " ".join(map(str, [sum(soft)] + soft)))
    r.write("proc/stat", "\n".join(lines) + "\n")


# --------------------------------------------------------------------------------------
# proc/interrupts in the kernel's own layout (kernel/irq/proc.c show_interrupts and
# arch/x86/kernel/irq.c arch_show_interrupts)
# --------------------------------------------------------------------------------------

class Irq:
    def __init__(self, irq: int, chip: str, hwirq: int | None, flow: str, name: str,
                 counts: list[int]):
        self.irq, self.chip, self.hwirq, self.flow, self.name, self.counts = irq, chip, hwirq, flow, name, counts


def proc_interrupts(r: Root, rng: random.Random, ncpu: int, irqs: list[Irq], *, hyperv: bool,
                    uptime_s: int, show_hwirq: bool = True) -> dict[int, int]:
    """`show_hwirq=False`: kernels before 4.x print `IO-APIC-edge` (no hardware IRQ number)."""
    prec = 3 if ncpu * 72 < 1000 else 4  # width of the IRQ column follows nr_irqs
    out = [" " * (prec + 8) + "".join(f"CPU{c:<8d}" for c in range(ncpu)).rstrip()]
    for q in sorted(irqs, key=lambda q: q.irq):
        counts = "".join(f"{n:10d} " for n in q.counts)
        chip = f" {q.chip:>8s}"
        if not show_hwirq:
            hw = ""
        elif q.hwirq is not None:
            hw = f" {q.hwirq:>{prec}d}"
        else:
            hw = " " * (prec + 1)
        out.append(f"{q.irq:>{prec}d}: {counts}{chip}{hw}-{q.flow:<8s}  {q.name}")

    def row(label: str, desc: str, scale: int) -> None:
        vals = "".join(f"{rng.randint(scale // 3, scale) if scale else 0:10d} " for _ in range(ncpu))
        out.append(f"{label:>{prec}s}: {vals} {desc}")

    row("NMI", "Non-maskable interrupts", 0)
    row("LOC", "Local timer interrupts", uptime_s * 250)
    row("SPU", "Spurious interrupts", 0)
    row("PMI", "Performance monitoring interrupts", 0)
    row("IWI", "IRQ work interrupts", uptime_s // 50)
    row("RTR", "APIC ICR read retries", 0)
    row("RES", "Rescheduling interrupts", uptime_s * 20)
    row("CAL", "Function call interrupts", uptime_s * 4)
    row("TLB", "TLB shootdowns", uptime_s * 2)
    row("TRM", "Thermal event interrupts", 0)
    row("THR", "Threshold APIC interrupts", 0)
    row("DFR", "Deferred Error APIC interrupts", 0)
    row("MCE", "Machine check exceptions", 0)
    row("MCP", "Machine check polls", uptime_s // 300)
    if hyperv:
        row("HYP", "Hypervisor callback interrupts", uptime_s * 30)
        row("HRE", "Hyper-V reenlightenment interrupts", 0)
        row("HVS", "Hyper-V stimer0 interrupts", uptime_s * 200)
    out.append(f"{'ERR':>{prec}s}: {0:10d}")
    out.append(f"{'MIS':>{prec}s}: {0:10d}")
    row("PIN", "Posted-interrupt notification event", 0)
    row("NPI", "Nested posted-interrupt event", 0)
    row("PIW", "Posted-interrupt wakeup event", 0)
    r.write("proc/interrupts", "\n".join(out) + "\n")
    return {q.irq: sum(q.counts) for q in irqs}


def counts_on(rng: random.Random, ncpu: int, cpus: list[int], scale: int) -> list[int]:
    """Per-CPU counts for an IRQ that has been delivered to `cpus` since boot."""
    c = [0] * ncpu
    for cpu in cpus:
        c[cpu] += rng.randint(scale // 4, scale)
    return c


def legacy_irqs(rng: random.Random, ncpu: int, uptime_s: int, *, boot_cpu: int = 0,
                ata: bool = False) -> list[Irq]:
    io = "IO-APIC"
    rows = [Irq(0, io, 2, "edge", "timer", counts_on(rng, ncpu, [boot_cpu], 60)),
            Irq(1, io, 1, "edge", "i8042", counts_on(rng, ncpu, [boot_cpu], 12)),
            Irq(4, io, 4, "edge", "ttyS0", counts_on(rng, ncpu, [boot_cpu], 2000)),
            Irq(8, io, 8, "edge", "rtc0", counts_on(rng, ncpu, [boot_cpu], 2)),
            Irq(9, io, 9, "fasteoi", "acpi", [0] * ncpu),
            Irq(12, io, 12, "edge", "i8042", counts_on(rng, ncpu, [boot_cpu], 200))]
    if ata:
        rows += [Irq(14, io, 14, "edge", "ata_piix", [0] * ncpu),
                 Irq(15, io, 15, "edge", "ata_piix", counts_on(rng, ncpu, [boot_cpu], 900))]
    return rows


def irq_affinity(r: Root, irq: int, smp: list[int], effective: list[int] | None) -> None:
    r.value(f"proc/irq/{irq}/smp_affinity_list", cpulist(smp))
    if effective is not None:
        r.value(f"proc/irq/{irq}/effective_affinity_list", cpulist(effective))


def pin_round_robin(irqs: list[int], cpus: list[int], start: int = 0) -> dict[int, int]:
    """What set_irq_affinity_cpulist.sh does: IRQ i of the NIC goes to cpus[i % len]."""
    return {irq: cpus[(start + i) % len(cpus)] for i, irq in enumerate(irqs)}


# --------------------------------------------------------------------------------------
# network interfaces (sysfs shape)
# --------------------------------------------------------------------------------------

def net_loopback(r: Root) -> None:
    base = "sys/devices/virtual/net/lo"
    r.value(f"{base}/operstate", "unknown")
    r.rel_symlink("sys/class/net/lo", base)


def net_device(r: Root, ifname: str, dev_dir: str, driver_dir: str, *, numa: int | None,
               msi: list[int], operstate: str = "up", subsys_net: str = "net") -> str:
    """A NIC whose device is `dev_dir` (root-relative); returns its net dir."""
    net_dir = f"{dev_dir}/{subsys_net}/{ifname}"
    r.value(f"{net_dir}/operstate", operstate)
    # the kernel writes this link as ../../../<device>
    r.symlink(f"{net_dir}/device", "../../../" + os.path.basename(dev_dir))
    r.rel_symlink("sys/class/net/" + ifname, net_dir)
    if not os.path.lexists(r._abs(f"{dev_dir}/driver")):
        r.rel_symlink(f"{dev_dir}/driver", driver_dir)
    if numa is not None:
        r.value(f"{dev_dir}/numa_node", numa)
    if msi:
        r.mkdir(f"{dev_dir}/msi_irqs")
        for n in msi:
            r.touch(f"{dev_dir}/msi_irqs/{n}")
    return net_dir


def an_link(r: Root, master_net: str, master: str, vf_net: str, vf: str) -> None:
    """Accelerated Networking: VF's master -> synthetic NIC, which lists lower_<vf>."""
    r.rel_symlink(f"{vf_net}/master", master_net)
    r.rel_symlink(f"{vf_net}/upper_{master}", master_net)
    r.rel_symlink(f"{master_net}/lower_{vf}", vf_net)


VMBUS = "sys/devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00"
HV_NETVSC_DRIVER = "sys/bus/vmbus/drivers/hv_netvsc"
MLX5_DRIVER = "sys/bus/pci/drivers/mlx5_core"
VMXNET3_DRIVER = "sys/bus/pci/drivers/vmxnet3"


def azure_an_pair(r: Root, *, synth: str, synth_guid: str, vf: str, vpci_guid: str,
                  domain: int, numa: int, vf_msi: list[int]) -> tuple[str, str, str]:
    """hv_netvsc `synth` on VMBus and its mlx5 VF `vf` on a Hyper-V vPCI bus.

    Returns (synthetic net dir, VF net dir, VF bus-info)."""
    synth_dev = f"{VMBUS}/{synth_guid}"
    synth_net = net_device(r, synth, synth_dev, HV_NETVSC_DRIVER, numa=numa, msi=[])
    bdf = f"{domain:04x}:00:02.0"
    vf_dev = f"{VMBUS}/{vpci_guid}/pci{domain:04x}:00/{bdf}"
    vf_net = net_device(r, vf, vf_dev, MLX5_DRIVER, numa=numa, msi=vf_msi)
    an_link(r, synth_net, synth, vf_net, vf)
    return synth_net, vf_net, bdf


# --------------------------------------------------------------------------------------
# ethtool/<if>.json (SPEC section 2 shape, ethtool's own key names)
# --------------------------------------------------------------------------------------

def ethtool_hv_netvsc(kernel: str, combined: int, combined_max: int) -> dict:
    return {
        "driver": {"driver": "hv_netvsc", "version": kernel, "firmware-version": "N/A", "bus-info": ""},
        "channels": {"rx-max": 0, "tx-max": 0, "other-max": 0, "combined-max": combined_max,
                     "rx": 0, "tx": 0, "other": 0, "combined": combined},
        "features": {"large-receive-offload": False, "generic-receive-offload": True,
                     "tcp-segmentation-offload": True},
    }


def ethtool_mlx5(version: str, firmware: str, bdf: str, combined: int, combined_max: int) -> dict:
    return {
        "driver": {"driver": "mlx5_core", "version": version, "firmware-version": firmware, "bus-info": bdf},
        "channels": {"rx-max": 0, "tx-max": 0, "other-max": 0, "combined-max": combined_max,
                     "rx": 0, "tx": 0, "other": 0, "combined": combined},
        "rings": {"rx-max": 8192, "rx-mini-max": 0, "rx-jumbo-max": 0, "tx-max": 8192,
                  "rx": 1024, "rx-mini": 0, "rx-jumbo": 0, "tx": 1024},
        "coalesce": {"rx-usecs": 8, "tx-usecs": 16, "adaptive-rx": True, "adaptive-tx": True},
        "features": {"large-receive-offload": False, "generic-receive-offload": True,
                     "tcp-segmentation-offload": True},
    }


def ethtool_vmxnet3(bdf: str, queues: int, *, tuned: bool) -> dict:
    # vmxnet3_get_channels(): buddy-shared rx/tx vectors are reported as `combined`,
    # plus one `other` (the event vector); set_channels is not supported, so max == current.
    return {
        "driver": {"driver": "vmxnet3", "version": "1.6.0.0-k-NAPI", "firmware-version": "", "bus-info": bdf},
        "channels": {"rx-max": 0, "tx-max": 0, "other-max": 1, "combined-max": queues,
                     "rx": 0, "tx": 0, "other": 1, "combined": queues},
        "rings": {"rx-max": 4096, "rx-mini-max": 2048, "rx-jumbo-max": 4096, "tx-max": 4096,
                  "rx": 512 if tuned else 1024, "rx-mini": 0 if tuned else 128, "rx-jumbo": 256,
                  "tx": 512},
        "coalesce": {"rx-usecs": 25 if tuned else 250, "tx-usecs": 0, "adaptive-rx": False, "adaptive-tx": False},
        "features": {"large-receive-offload": not tuned, "generic-receive-offload": True,
                     "tcp-segmentation-offload": True},
    }


# --------------------------------------------------------------------------------------
# systemd units
# --------------------------------------------------------------------------------------

UNITS = {
    "sshd.service": """[Unit]
Description=OpenSSH Daemon
After=network.target

[Service]
Type=notify
EnvironmentFile=-/etc/sysconfig/ssh
ExecStartPre=/usr/sbin/sshd-gen-keys-start
ExecStart=/usr/sbin/sshd -D $SSHD_OPTS
ExecReload=/bin/kill -HUP $MAINPID
KillMode=process
Restart=always

[Install]
WantedBy=multi-user.target
""",
    "sshd.service@rhel": """[Unit]
Description=OpenSSH server daemon
Documentation=man:sshd(8) man:sshd_config(5)
After=network.target sshd-keygen.target
Wants=sshd-keygen.target

[Service]
Type=notify
EnvironmentFile=-/etc/crypto-policies/back-ends/opensshserver.config
EnvironmentFile=-/etc/sysconfig/sshd
ExecStart=/usr/sbin/sshd -D $OPTIONS $CRYPTO_POLICY
ExecReload=/bin/kill -HUP $MAINPID
KillMode=process
Restart=on-failure
RestartSec=42s

[Install]
WantedBy=multi-user.target
""",
    "irqbalance.service": """[Unit]
Description=irqbalance daemon
Documentation=man:irqbalance(1)
ConditionVirtualization=!container

[Service]
EnvironmentFile=-/etc/sysconfig/irqbalance
ExecStart=/usr/sbin/irqbalance --foreground $IRQBALANCE_ARGS

[Install]
WantedBy=multi-user.target
""",
    "tuned.service": """[Unit]
Description=Dynamic System Tuning Daemon
After=systemd-sysctl.service network.target dbus.service
Requires=dbus.service polkit.service
Conflicts=cpupower.service auto-cpufreq.service tlp.service power-profiles-daemon.service
Documentation=man:tuned(8) man:tuned.conf(5) man:tuned-adm(8)

[Service]
Type=dbus
PIDFile=/run/tuned/tuned.pid
BusName=com.redhat.tuned
ExecStart=/usr/sbin/tuned -l -P

[Install]
WantedBy=multi-user.target
""",
    "NetworkManager.service": """[Unit]
Description=Network Manager
Documentation=man:NetworkManager(8)
Wants=network.target
After=network-pre.target dbus.service
Before=network.target network.service

[Service]
Type=dbus
BusName=org.freedesktop.NetworkManager
ExecReload=/usr/bin/busctl call org.freedesktop.NetworkManager /org/freedesktop/NetworkManager org.freedesktop.NetworkManager Reload u 0
ExecStart=/usr/sbin/NetworkManager --no-daemon
Restart=on-failure

[Install]
WantedBy=multi-user.target
Also=NetworkManager-dispatcher.service
""",
    "NetworkManager-dispatcher.service": """[Unit]
Description=Network Manager Script Dispatcher Service

[Service]
Type=dbus
BusName=org.freedesktop.nm_dispatcher
ExecStart=/usr/libexec/nm-dispatcher
NotifyAccess=main

[Install]
Alias=dbus-org.freedesktop.nm-dispatcher.service
""",
    "wicked.service": """[Unit]
Description=wicked managed network interfaces
Wants=network.target wickedd.service wickedd-nanny.service
After=network-pre.target wickedd.service wickedd-nanny.service
Before=network-online.target network.target

[Service]
Type=oneshot
RemainAfterExit=yes
LimitCORE=infinity
ExecStart=/usr/sbin/wicked --systemd ifup all
ExecStop=/usr/sbin/wicked --systemd ifdown all
ExecReload=/usr/sbin/wicked --systemd ifreload all

[Install]
WantedBy=multi-user.target
Alias=network.service
""",
    "vmtoolsd.service": """[Unit]
Description=Service for virtual machines hosted on VMware
Documentation=http://github.com/vmware/open-vm-tools
ConditionVirtualization=vmware
DefaultDependencies=no
Before=cloud-init-local.service
After=vgauthd.service

[Service]
ExecStart=/usr/bin/vmtoolsd
TimeoutStopSec=5

[Install]
WantedBy=multi-user.target
""",
    # SUSE/saptune ospackage/svc/saptune.service (saptune 3), hardening options left out
    "saptune.service": """[Unit]
Description=Optimise system for running SAP workloads
After=syslog.target systemd-sysctl.service network.target tuned.service multipathd.service

[Service]
Type=oneshot
RemainAfterExit=true
ExecStart=/usr/sbin/saptune service apply
ExecReload=/usr/sbin/saptune service reload
ExecStop=/usr/sbin/saptune service revert

[Install]
WantedBy=multi-user.target
""",
    "waagent.service": """[Unit]
Description=Azure Linux Agent
Wants=network-online.target sshd.service sshd-keygen.service
After=network-online.target

ConditionFileIsExecutable=/usr/sbin/waagent
ConditionPathExists=/etc/waagent.conf

[Service]
Type=simple
ExecStart=/usr/bin/python3 -u /usr/sbin/waagent -daemon
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
""",
    # Ubuntu 24.04 (openssh-server, systemd, walinuxagent packages)
    "ssh.service": """[Unit]
Description=OpenBSD Secure Shell server
Documentation=man:sshd(8) man:sshd_config(5)
After=network.target auditd.service
ConditionPathExists=!/etc/ssh/sshd_not_to_be_run

[Service]
EnvironmentFile=-/etc/default/ssh
ExecStartPre=/usr/sbin/sshd -t
ExecStart=/usr/sbin/sshd -D $SSHD_OPTS
ExecReload=/usr/sbin/sshd -t
ExecReload=/bin/kill -HUP $MAINPID
KillMode=process
Restart=on-failure
RestartPreventExitStatus=255
Type=notify
RuntimeDirectory=sshd
RuntimeDirectoryMode=0755

[Install]
WantedBy=multi-user.target
Alias=sshd.service
""",
    "systemd-networkd.service": """[Unit]
Description=Network Configuration
Documentation=man:systemd-networkd.service(8)
ConditionCapability=CAP_NET_ADMIN
DefaultDependencies=no
After=systemd-networkd.socket systemd-udevd.service network-pre.target systemd-sysusers.service systemd-sysctl.service
Before=network.target multi-user.target shutdown.target initrd-switch-root.target
Conflicts=shutdown.target initrd-switch-root.target
Wants=systemd-networkd.socket network.target

[Service]
AmbientCapabilities=CAP_NET_ADMIN CAP_NET_BIND_SERVICE CAP_NET_BROADCAST CAP_NET_RAW
BusName=org.freedesktop.network1
ExecStart=!!/usr/lib/systemd/systemd-networkd
Restart=on-failure
RestartSec=0
Type=notify-reload
User=systemd-network

[Install]
WantedBy=multi-user.target
Also=systemd-networkd.socket
Alias=dbus-org.freedesktop.network1.service
""",
    "walinuxagent.service": """[Unit]
Description=Azure Linux Agent
After=network-online.target cloud-init.service
Wants=network-online.target sshd.service sshd-keygen.service

ConditionFileIsExecutable=/usr/sbin/waagent
ConditionPathExists=/etc/waagent.conf

[Service]
Type=simple
ExecStart=/usr/bin/python3 -u /usr/sbin/waagent -daemon
Restart=always
RestartSec=5
Slice=azure.slice
CPUAccounting=yes

[Install]
WantedBy=multi-user.target
""",
}


def install_units(r: Root, names: list[str], *, rhel: bool = False) -> None:
    for name in names:
        text = UNITS.get(f"{name}@rhel" if rhel else name) or UNITS[name]
        r.write(f"usr/lib/systemd/system/{name}", text)


def enable(r: Root, unit: str, *, where: str = "/usr/lib/systemd/system", target: str = "multi-user.target") -> None:
    r.symlink(f"etc/systemd/system/{target}.wants/{unit}", f"{where}/{unit}")


# --------------------------------------------------------------------------------------
# mounts
# --------------------------------------------------------------------------------------

def mountinfo(r: Root, lines: list[str]) -> None:
    r.write("proc/self/mountinfo", "\n".join(lines) + "\n")


def base_mountinfo(root_dev: str, root_majmin: str, root_fs: str, root_opts: str, extra: list[str],
                   *, cgroup2: bool) -> list[str]:
    """The usual pseudo filesystems of a systemd host plus the root and `extra` lines."""
    lines = [
        f"23 1 {root_majmin} / / rw,relatime shared:1 - {root_fs} {root_dev} {root_opts}",
        "22 23 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw",
        "21 23 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw",
        "24 23 0:5 / /dev rw,nosuid shared:9 - devtmpfs devtmpfs rw,size=4096k,nr_inodes=1048576,mode=755",
        "25 21 0:6 / /sys/kernel/security rw,nosuid,nodev,noexec,relatime shared:3 - securityfs securityfs rw",
        "26 24 0:22 / /dev/shm rw,nosuid,nodev shared:10 - tmpfs tmpfs rw",
        "27 24 0:23 / /dev/pts rw,nosuid,noexec,relatime shared:11 - devpts devpts rw,gid=5,mode=620,ptmxmode=000",
        "28 23 0:24 / /run rw,nosuid,nodev shared:12 - tmpfs tmpfs rw,mode=755",
    ]
    if cgroup2:
        lines.append("29 21 0:25 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate")
    else:
        lines += [
            "29 21 0:25 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:4 - tmpfs tmpfs ro,mode=755",
            "30 29 0:26 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:5 - cgroup cgroup rw,xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd",
            "31 29 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:6 - cgroup cgroup rw,cpu,cpuacct",
        ]
    lines += [
        "33 21 0:29 / /sys/kernel/debug rw,relatime shared:25 - debugfs debugfs rw",
        "34 24 0:30 / /dev/hugepages rw,relatime shared:26 - hugetlbfs hugetlbfs rw,pagesize=2M",
        "35 24 0:18 / /dev/mqueue rw,relatime shared:27 - mqueue mqueue rw",
    ]
    lines += extra
    lines.append("90 28 0:45 / /run/user/1000 rw,nosuid,nodev,relatime shared:250 - tmpfs tmpfs rw,size=13162136k,mode=700,uid=1000,gid=1000")
    return lines


# --------------------------------------------------------------------------------------
# VMware side
# --------------------------------------------------------------------------------------

def esxcli_advanced(path: str, typ: str, int_value: int, default_int: int, min_v: int, max_v: int,
                    string_value: str, default_string: str, valid: str, desc: str) -> str:
    """`esxcli system settings advanced list -o <path>` output."""
    return (f"   Path: {path}\n"
            f"   Type: {typ}\n"
            f"   Int Value: {int_value}\n"
            f"   Default Int Value: {default_int}\n"
            f"   Min Value: {min_v}\n"
            f"   Max Value: {max_v}\n"
            f"   String Value: {string_value}\n"
            f"   Default String Value: {default_string}\n"
            f"   Valid Characters: {valid}\n"
            f"   Description: {desc}\n")


def esxcli_netq_pair(value: int) -> str:
    return esxcli_advanced("/Net/NetNetqRxQueueFeatPairEnable", "integer", value, 1, 0, 1, "", "", "",
                           "Enable pairing of RX queue features")


def esxcli_cpu_policy(policy: str) -> str:
    return esxcli_advanced("/Power/CpuPolicy", "string", 0, 0, 0, 0, policy, "Balanced", "*",
                           'CPU power management policy: "High Performance", "Balanced", "Low Power", or "Custom"')


def esxcli_cpu_global(packages: int, cores: int, ht_active: bool, ht_supported: bool, ht_enabled: bool) -> str:
    """`esxcli hardware cpu global get` output."""
    threads = cores * 2 if ht_active else cores
    b = lambda v: "true" if v else "false"  # noqa: E731
    return (f"   CPU Packages: {packages}\n"
            f"   CPU Cores: {cores}\n"
            f"   CPU Threads: {threads}\n"
            f"   Hyperthreading Active: {b(ht_active)}\n"
            f"   Hyperthreading Supported: {b(ht_supported)}\n"
            f"   Hyperthreading Enabled: {b(ht_enabled)}\n"
            f"   HV Support: 3\n")


def vmx_file(display: str, guest_os: str, vcpus: int, cores_per_socket: int, mem_mb: int,
             affinity: str | None, nics: list[dict], extra: list[str] = ()) -> str:
    lines = [
        '.encoding = "UTF-8"',
        'config.version = "8"',
        'virtualHW.version = "19"',
        f'displayName = "{display}"',
        f'guestOS = "{guest_os}"',
        'firmware = "efi"',
        f'numvcpus = "{vcpus}"',
        f'cpuid.coresPerSocket = "{cores_per_socket}"',
        f'memSize = "{mem_mb}"',
        f'sched.mem.min = "{mem_mb}"',
        'sched.mem.minSize = "{}"'.format(mem_mb),
        'sched.mem.shares = "normal"',
        'sched.mem.pin = "TRUE"',
        'sched.cpu.min = "0"',
        'sched.cpu.shares = "normal"',
    ]
    if affinity is not None:
        lines.append(f'sched.cpu.affinity = "{affinity}"')
    lines += [
        'scsi0.virtualDev = "pvscsi"',
        'scsi0.present = "TRUE"',
        'scsi0.pciSlotNumber = "160"',
        'scsi0:0.deviceType = "scsi-hardDisk"',
        f'scsi0:0.fileName = "{display}.vmdk"',
        'scsi0:0.present = "TRUE"',
    ]
    for i, nic in enumerate(nics):
        p = f"ethernet{i}"
        lines += [
            f'{p}.virtualDev = "vmxnet3"',
            f'{p}.networkName = "{nic["network"]}"',
            f'{p}.addressType = "vpx"',
            f'{p}.generatedAddress = "{nic["mac"]}"',
            f'{p}.uptCompatibility = "TRUE"',
            f'{p}.pciSlotNumber = "{nic["slot"]}"',
            f'{p}.present = "TRUE"',
        ]
        for key, value in nic.get("options", {}).items():
            lines.append(f'{p}.{key} = "{value}"')
    lines += list(extra)
    lines += ['tools.syncTime = "FALSE"', 'tools.upgrade.policy = "manual"',
              'uuid.bios = "42 1c 5e 8a 3b 7d 90 12-4f 6e 2a 91 c4 d8 07 33"',
              'vc.uuid = "50 1c 2b 77 8e 49 f1 a0-93 56 0d 2c 7b 61 e4 18"']
    return "\n".join(lines) + "\n"


# ======================================================================================
# 1 + 2: Azure M-series, SLES 15 SP4 for SAP HANA
# ======================================================================================

AZ_KERNEL = "5.14.21-150400.24.81-default"
AZ_NODES = {0: list(range(0, 32)), 1: list(range(32, 64))}
AZ_NCPU = 64
# Azure M416(s)_v2 on SUSE Linux Enterprise Server 16 (Linux 6.12): 416 vCPUs, 8 NUMA nodes of 52
M416_KERNEL = "6.12.0-160000.5-default"
M416_NODES = {n: list(range(52 * n, 52 * (n + 1))) for n in range(8)}
AZ_COMP = 32  # mlx5 completion vectors (kept after `ethtool -L combined 16`)
AZ_PAIRS = [
    # synthetic, its VMBus instance, VF, vPCI VMBus instance (2nd group = PCI domain), domain
    dict(synth="eth0", synth_guid="000d3a2e-9c41-000d-3a2e-9c41000d3a2e", vf="enP30832s1",
         vpci_guid="4d2a7e90-7870-4c8e-a7f2-6045bd9c1e52", domain=30832),
    dict(synth="eth1", synth_guid="000d3a2e-b5f7-000d-3a2e-b5f7000d3a2e", vf="enP30833s2",
         vpci_guid="9e51c3b4-7871-4f1a-8d6b-6045bd9c27a8", domain=30833),
]
MLX5_FW = "16.30.1004 (MSF0010110035)"

SLES_FSTAB = """UUID=3f1c6b5e-2d7a-4e51-9c0e-7a1b2c3d4e5f / xfs defaults 0 0
UUID=9b2d4c6e-8f01-4a23-b456-c789d0e1f234 /boot xfs defaults 0 0
UUID=5A1B-3C2D /boot/efi vfat utf8 0 2
UUID=c2f4e6a8-1b3d-4e5f-a7b9-d1e3f5a7b9c1 /hana/shared xfs defaults,nofail 0 2
"""


def sles_azure_mounts() -> list[str]:
    return base_mountinfo("/dev/sda4", "8:4", "xfs", "rw,attr2,inode64,logbufs=8,logbsize=32k,noquota", [
        "60 23 8:2 / /boot rw,relatime shared:29 - xfs /dev/sda2 rw,attr2,inode64,logbufs=8,logbsize=32k,noquota",
        "62 60 8:1 / /boot/efi rw,relatime shared:31 - vfat /dev/sda1 rw,fmask=0022,dmask=0022,codepage=437,iocharset=iso8859-1,shortname=mixed,utf8,errors=remount-ro",
        "64 23 8:49 / /hana/shared rw,relatime shared:33 - xfs /dev/sdd1 rw,attr2,inode64,logbufs=8,logbsize=32k,sunit=512,swidth=1024,noquota",
        "66 24 0:44 / /dev/shm/azure rw,relatime shared:35 - tmpfs tmpfs rw,size=1048576k",
    ], cgroup2=False)


AN_QUEUES_RULE = """# Accelerated Networking: 16 queues (seed 000) on every mlx5 VF and on the synthetic NICs.
# Matched by driver, so the rule follows the VF whatever name it gets after a redeploy.
ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", RUN+="/sbin/ethtool -L $name combined 16"
ACTION=="add", SUBSYSTEM=="net", DRIVERS=="hv_netvsc", RUN+="/sbin/ethtool -L $name combined 16"
"""


# the VFs only: the hv_netvsc masters keep their driver default (8 channels before Linux 6.12)
AN_VF_QUEUES_RULE = """# Accelerated Networking: 16 queues (seed 000) on every mlx5 VF, matched by driver, so the
# rule follows the VF whatever name it gets after a redeploy. The synthetic NICs keep the
# hv_netvsc default.
ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", RUN+="/sbin/ethtool -L $name combined 16"
"""


def azure_m(name: str, *, rebooted: bool, kernel: str = AZ_KERNEL, nodes: dict | None = None,
            os_key: str = "sles15sp4", master_queues: bool = True, netvsc_max: int = 64,
            hostname: str = "hanadb01", master_runtime: int = 16, ubuntu: bool = False, extra=None,
            irq_pinning: str = "oneshot") -> None:
    """`master_queues`: ifcfg ETHTOOL_OPTIONS set the hv_netvsc masters' channels (seed 000);
    without it only the VFs are configured (their udev rule) and the masters come back at
    their driver default. `ubuntu`: systemd-networkd and walinuxagent instead of wicked and
    SUSE ifcfg files, an ext4 root; `extra(r)` adds files (boot loader) at the end.
    `irq_pinning`: "oneshot" (a boot oneshot unit runs set_irq_affinity_cpulist.sh: lost when
    a VF is re-added) or "udev" (a rule on the VF's add event runs it: re-applied)."""
    r = Root(name)
    rng = random.Random(name)
    nodes = nodes or AZ_NODES
    ncpu = sum(len(c) for c in nodes.values())
    identity(r, hostname=hostname, kernel=kernel, os_key=os_key,
             vendor="Microsoft Corporation", product="Virtual Machine", asset_tag=AZURE_ASSET_TAG)
    topology(r, nodes)
    net_loopback(r)

    uptime = 3 * 86400 + 4211 if rebooted else 41 * 86400 + 15003
    btime = 1717570245 if rebooted else 1714032117  # reboot was later than the tuned boot

    # MSI vectors: async0 then comp0..31 per VF. After the reboot the two VFs probed in the
    # other order, so the IRQ numbers differ from the tuned boot.
    order = [1, 0] if rebooted else [0, 1]
    first_irq = {}
    nxt = 24
    for idx in order:
        first_irq[idx] = nxt
        nxt += 1 + AZ_COMP

    allowed = [c for c in nodes[0] if c not in (0, 1)]  # node 0 minus core 0 (CPUs 0-1)
    irq_rows = legacy_irqs(rng, ncpu, uptime)
    for idx, pair in enumerate(AZ_PAIRS):
        base = first_irq[idx]
        msi = list(range(base, base + 1 + AZ_COMP))
        synth_net, vf_net, bdf = azure_an_pair(
            r, synth=pair["synth"], synth_guid=pair["synth_guid"], vf=pair["vf"], vpci_guid=pair["vpci_guid"],
            domain=pair["domain"], numa=0, vf_msi=msi)
        combined_vf = AZ_COMP if rebooted else 16
        r.json(f"ethtool/{pair['synth']}.json", ethtool_hv_netvsc(kernel, master_runtime, netvsc_max))
        r.json(f"ethtool/{pair['vf']}.json", ethtool_mlx5(kernel, MLX5_FW, bdf, combined_vf, AZ_COMP))

        if rebooted:
            # irqbalance: one CPU per vector, anywhere on the machine (both nodes, core 0 too)
            spread = list(range(ncpu))
            rng.shuffle(spread)
            cpu_of = {irq: spread[i % ncpu] for i, irq in enumerate(msi)}
            cpu_of[msi[0]] = 0 if idx == 0 else 33
        else:
            # set_irq_affinity_cpulist.sh 2-31 <vf>: round robin over the list, async first
            cpu_of = pin_round_robin(msi, allowed, start=idx * 7)
        for i, irq in enumerate(msi):
            cpu = cpu_of[irq]
            irq_affinity(r, irq, [cpu], [cpu])
            name_ = f"mlx5_async0@pci:{bdf}" if i == 0 else f"mlx5_comp{i - 1}@pci:{bdf}"
            hw = msi_hwirq(pair["domain"], 0, 0x10, i)
            scale = 4000 if i == 0 else (uptime * 900 if (i - 1) < combined_vf else 300)
            history = [cpu] if not rebooted else sorted({cpu, rng.choice(range(ncpu))})
            irq_rows.append(Irq(irq, "Hyper-V PCIe MSI", hw, "edge", name_,
                                counts_on(rng, ncpu, history, scale)))

    totals = proc_interrupts(r, rng, ncpu, irq_rows, hyperv=True, uptime_s=uptime)
    proc_stat(r, rng, ncpu, btime, uptime, totals)

    procs = {1: "systemd", 2: "kthreadd", 612: "systemd-journal", 655: "systemd-udevd", 1187: "wickedd",
             1201: "wickedd-nanny", 1290: "sshd", 1302: "cron", 1318: "python3", 1544: "sapstartsrv",
             4102: "hdbindexserver", 4133: "hdbnameserver"}
    units = ["sshd.service", "irqbalance.service", "wicked.service", "waagent.service"]
    if ubuntu:
        procs.update({1187: "systemd-network", 1201: "systemd-resolve"})
        units = ["ssh.service", "irqbalance.service", "systemd-networkd.service", "walinuxagent.service"]
    if rebooted:
        procs[1163] = "irqbalance"
    processes(r, procs)

    install_units(r, units)
    for unit in (u for u in units if u != "irqbalance.service"):
        enable(r, unit)
    if rebooted:
        enable(r, "irqbalance.service")
    elif irq_pinning == "udev":
        # the same script on every add of an mlx5 VF, whatever name it comes back under
        r.write("etc/udev/rules.d/71-azure-an-irq-affinity.rules",
                'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", '
                'RUN+="/usr/local/sbin/set_irq_affinity_cpulist.sh 2-31 $name"\n')
    else:
        # boot-time IRQ pinning for both AN VFs (mlnx-tools script, seed 000 step 7)
        r.write("etc/systemd/system/mlnx-irq-affinity.service", f"""[Unit]
Description=Pin Accelerated Networking IRQs to NUMA node 0, CPUs 2-31 (SAP HANA network tuning)
After=network-online.target wicked.service
Wants=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/set_irq_affinity_cpulist.sh 2-31 {AZ_PAIRS[0]['vf']}
ExecStart=/usr/local/sbin/set_irq_affinity_cpulist.sh 2-31 {AZ_PAIRS[1]['vf']}

[Install]
WantedBy=multi-user.target
""")
        enable(r, "mlnx-irq-affinity.service", where="/etc/systemd/system")

    if not rebooted:
        # ETHTOOL_OPTIONS on the synthetic NIC (seed 000) sets only its own channels; the VFs
        # get theirs from a udev rule matching their driver, whatever name a redeploy gives them
        r.write("etc/udev/rules.d/70-azure-an-queues.rules", AN_QUEUES_RULE if master_queues else AN_VF_QUEUES_RULE)
    # SUSE ifcfg (seed 000): queue count re-applied by wicked at ifup
    for idx, pair in enumerate(AZ_PAIRS if not ubuntu else []):
        ifc = pair["synth"]
        opts = f"ETHTOOL_OPTIONS='-L {ifc} combined 16'\n" if master_queues and (not rebooted or idx == 0) else ""
        r.write(f"etc/sysconfig/network/ifcfg-{ifc}", f"""BOOTPROTO='dhcp'
DHCLIENT6_MODE='managed'
MTU=''
REMOTE_IPADDR=''
STARTMODE='onboot'
CLOUD_NETCONFIG_MANAGE='yes'
{opts}""")

    if ubuntu:
        mountinfo(r, base_mountinfo("/dev/sda1", "8:1", "ext4", "rw,discard,errors=remount-ro,commit=30", [
            "62 23 8:15 / /boot/efi rw,relatime shared:31 - vfat /dev/sda15 rw,fmask=0077,dmask=0077,codepage=437,iocharset=iso8859-1,shortname=mixed,errors=remount-ro",
            "64 23 8:49 / /hana/shared rw,relatime shared:33 - xfs /dev/sdd1 rw,attr2,inode64,logbufs=8,logbsize=32k,sunit=512,swidth=1024,noquota",
        ], cgroup2=True))
        r.write("etc/fstab", "LABEL=cloudimg-rootfs\t/\t ext4\tdiscard,commit=30,errors=remount-ro\t0 1\n"
                "LABEL=UEFI\t/boot/efi\tvfat\tumask=0077\t0 1\n"
                "UUID=c2f4e6a8-1b3d-4e5f-a7b9-d1e3f5a7b9c1 /hana/shared xfs defaults,nofail 0 2\n")
    else:
        mountinfo(r, sles_azure_mounts())
        r.write("etc/fstab", SLES_FSTAB)
    if extra is not None:
        extra(r)


# ======================================================================================
# 3 + 4: VMware VM, RHEL 8.6 for SAP HANA, two vmxnet3 NICs
# ======================================================================================

VM_KERNEL = "4.18.0-372.9.1.el8.x86_64"
VM_NODES = {0: list(range(0, 16)), 1: list(range(16, 32))}
VM_NCPU = 32
VM_QUEUES = 8  # vmxnet3: min(8, vCPUs) buddy-shared rx/tx queues
VM_NICS = [
    # guest name, vmx slot, PCI bridge, bus, mac, network, role
    dict(ifname="ens192", slot=192, bridge="0000:00:15.0", bus=0x0b, mac="00:50:56:9c:4e:21",
         network="hana-mgmt", ip="10.10.10.21/24"),
    dict(ifname="ens224", slot=224, bridge="0000:00:16.0", bus=0x13, mac="00:50:56:9c:7a:08",
         network="hana-client", ip="10.10.20.21/24"),
]

RHEL_VMWARE_FSTAB = """#
# /etc/fstab
# Created by anaconda on Tue Mar 14 09:12:44 2023
#
# Accessible filesystems, by reference, are maintained under '/dev/disk/'.
# See man pages fstab(5), findfs(8), mount(8) and/or blkid(8) for more info.
#
# After editing this file, run 'systemctl daemon-reload' to update systemd
# units generated from this file.
#
/dev/mapper/rhel-root   /                       xfs     defaults        0 0
UUID=4c6a2e1f-8b3d-4f7a-9e2c-1d5b7a9c3e0f /boot                   xfs     defaults        0 0
UUID=7E3A-91C4          /boot/efi               vfat    umask=0077,shortname=winnt 0 2
/dev/mapper/hanavg-shared /hana/shared          xfs     defaults        0 0
/dev/mapper/rhel-swap   none                    swap    defaults        0 0
"""


def rhel_vmware_mounts() -> list[str]:
    return base_mountinfo("/dev/mapper/rhel-root", "253:0", "xfs", "rw,attr2,inode64,logbufs=8,logbsize=32k,noquota", [
        "70 23 8:2 / /boot rw,relatime shared:29 - xfs /dev/sda2 rw,attr2,inode64,logbufs=8,logbsize=32k,noquota",
        "72 70 8:1 / /boot/efi rw,relatime shared:31 - vfat /dev/sda1 rw,fmask=0077,dmask=0077,codepage=437,iocharset=ascii,shortname=winnt,errors=remount-ro",
        "74 23 253:2 / /hana/shared rw,relatime shared:33 - xfs /dev/mapper/hanavg-shared rw,attr2,inode64,logbufs=8,logbsize=32k,noquota",
    ], cgroup2=False)


SAP_HANA_TUNED = """#
# tuned configuration
#

[main]
summary=Optimize for SAP HANA
include=throughput-performance

[cpu]
force_latency=cstate.id_no_zero:3|70
governor=performance
energy_perf_bias=performance
min_perf_pct=100

[vm]
transparent_hugepages=never

[sysctl]
kernel.sem = 32000 1024000000 500 32000
kernel.numa_balancing = 0
"""


# distribution of a VMware HANA VM: kernel, os-release key, network stack, guest OS id (.vmx)
VM_DISTROS = {
    "rhel86": dict(kernel=VM_KERNEL, net="NetworkManager", guest="rhel8-64"),
    "rhel92": dict(kernel="5.14.0-284.11.1.el9_2.x86_64", net="NetworkManager", guest="rhel9-64"),
    "sles15sp5": dict(kernel="5.14.21-150500.55.19-default", net="wicked", guest="sles15-64"),
}


def vmware_hana(name: str, *, tuned: bool, irq_pinned: bool | None = None, distro: str = "rhel86",
                persist: str = "ifcfg+keyfile", esxi_tuned: bool | None = None, hostname: str = "hanavm01") -> None:
    """A VMware SAP HANA VM with two vmxnet3 NICs.

    tuned: seed 001 in the guest (ethtool values, persisted per `persist`), VMX and ESXi
    NetQueue pairing. irq_pinned (default: tuned): irqbalance off and rx/tx IRQs pinned by
    a boot unit (beyond seed 001). esxi_tuned (default: tuned): seed 002's HT off and High
    Performance policy. persist: "ifcfg+keyfile" (RHEL 8 ifcfg ETHTOOL_OPTS on ens192, keyfile
    on ens224), "rhel-ifcfg", "suse-ifcfg" (wicked ETHTOOL_OPTIONS, one command per variable)
    or "keyfile" (NetworkManager keyfiles only, RHEL 9)."""
    irq_pinned = tuned if irq_pinned is None else irq_pinned
    esxi_tuned = tuned if esxi_tuned is None else esxi_tuned
    dist = VM_DISTROS[distro]
    r = Root(name)
    rng = random.Random(name)
    identity(r, hostname=hostname, kernel=dist["kernel"], os_key=distro, vendor="VMware, Inc.",
             product="VMware7,1", asset_tag="No Asset Tag")
    topology(r, VM_NODES)
    net_loopback(r)
    uptime = 12 * 86400 + 3077 if tuned else 6 * 86400 + 611
    btime = 1716812411 if tuned else 1716101987

    irq_rows = legacy_irqs(rng, VM_NCPU, uptime, ata=True)
    # other PCI devices of a VMware VM: pvscsi (0000:03:00.0), vmci (0000:00:07.7)
    irq_rows.append(Irq(16, "IO-APIC", 16, "fasteoi", "vmwgfx", [0] * VM_NCPU))
    irq_rows.append(Irq(56, "PCI-MSI", msi_hwirq(0, 0, 0x3f, 0), "edge", "vmw_vmci",
                        [0] * VM_NCPU))
    irq_rows.append(Irq(57, "PCI-MSI", msi_hwirq(0, 0, 0x3f, 1), "edge", "vmw_vmci",
                        [0] * VM_NCPU))
    irq_rows.append(Irq(58, "PCI-MSI", msi_hwirq(0, 3, 0, 0), "edge", "vmw_pvscsi",
                        counts_on(rng, VM_NCPU, [rng.randrange(VM_NCPU)], uptime * 40)))

    allowed = [c for c in VM_NODES[0] if c not in (0, 1)]  # CPUs 2-15
    irq = 59
    for n, nic in enumerate(VM_NICS):
        ifn, bus = nic["ifname"], nic["bus"]
        bdf = f"0000:{bus:02x}:00.0"
        dev = f"sys/devices/pci0000:00/{nic['bridge']}/{bdf}"
        msi = list(range(irq, irq + VM_QUEUES + 1))  # rxtx-0..7 then event-8
        irq += VM_QUEUES + 1
        net_device(r, ifn, dev, VMXNET3_DRIVER, numa=-1, msi=msi)
        r.json(f"ethtool/{ifn}.json", ethtool_vmxnet3(bdf, VM_QUEUES, tuned=tuned))
        data = msi[:VM_QUEUES]
        if irq_pinned:
            cpu_of = pin_round_robin(data, allowed, start=n * 6)
        else:
            spread = list(range(VM_NCPU))
            rng.shuffle(spread)
            cpu_of = {q: spread[i] for i, q in enumerate(data)}
            cpu_of[data[0]] = 0
            cpu_of[data[1]] = 1
        for i, q in enumerate(msi):
            if i < VM_QUEUES:
                cpu = cpu_of[q]
                smp, eff, nm = [cpu], [cpu], f"{ifn}-rxtx-{i}"
                history = [cpu]
            else:  # event vector: left alone by the tuning
                smp, eff, nm = list(range(VM_NCPU)), [0], f"{ifn}-event-{i}"
                history = [0]
            irq_affinity(r, q, smp, eff if irq_pinned else None)
            scale = uptime * 600 if i < VM_QUEUES else 40
            irq_rows.append(Irq(q, "PCI-MSI", msi_hwirq(0, bus, 0, i), "edge", nm,
                                counts_on(rng, VM_NCPU, history, scale)))

    totals = proc_interrupts(r, rng, VM_NCPU, irq_rows, hyperv=False, uptime_s=uptime)
    proc_stat(r, rng, VM_NCPU, btime, uptime, totals)

    procs = {1: "systemd", 2: "kthreadd", 701: "systemd-journal", 733: "systemd-udevd", 1012: "vmtoolsd",
             1046: "NetworkManager" if dist["net"] == "NetworkManager" else "wickedd", 1103: "sshd", 1110: "tuned",
             1125: "crond", 2291: "sapstartsrv", 3817: "hdbnameserver", 3941: "hdbindexserver"}
    if not irq_pinned:
        procs[1019] = "irqbalance"
    processes(r, procs)

    net_units = (["NetworkManager.service", "NetworkManager-dispatcher.service"] if dist["net"] == "NetworkManager"
                 else ["wicked.service"])
    install_units(r, ["sshd.service", "irqbalance.service", "tuned.service", *net_units, "vmtoolsd.service"],
                  rhel=distro.startswith("rhel"))
    for unit in ("sshd.service", "tuned.service", net_units[0], "vmtoolsd.service"):
        enable(r, unit)
    if not irq_pinned:
        enable(r, "irqbalance.service")
    r.write("etc/tuned/active_profile", "sap-hana\n")
    r.write("usr/lib/tuned/sap-hana/tuned.conf", SAP_HANA_TUNED)
    r.write("usr/lib/tuned/throughput-performance/tuned.conf", THROUGHPUT_PERFORMANCE)

    if persist == "suse-ifcfg":
        suse_vmxnet3_ifcfg(r, tuned)
    if persist == "keyfile":
        for n, nic in enumerate(VM_NICS):
            nm_keyfile(r, nic, n, tuned)
    # ifcfg (network-scripts, read by NetworkManager's ifcfg-rh plugin on RHEL 8)
    for n, nic in enumerate(VM_NICS if persist in ("ifcfg+keyfile", "rhel-ifcfg") else []):
        ifn = nic["ifname"]
        ip, prefix = nic["ip"].split("/")
        if tuned and n == 1 and persist == "ifcfg+keyfile":
            continue  # ens224 is a NetworkManager keyfile connection in the tuned VM
        ethtool_opts = (f'ETHTOOL_OPTS="-C {ifn} rx-usecs 25; -K {ifn} lro off; '
                        f'-G {ifn} rx 512 rx-mini 0 tx 512"\n') if tuned else ""
        r.write(f"etc/sysconfig/network-scripts/ifcfg-{ifn}", f"""TYPE=Ethernet
PROXY_METHOD=none
BROWSER_ONLY=no
BOOTPROTO=none
DEFROUTE={'yes' if n == 0 else 'no'}
IPV4_FAILURE_FATAL=no
IPV6INIT=no
NAME={ifn}
UUID={'8f1c6a2e-3b5d-4e7f-9a1c-2d4e6f8a0b1c' if n == 0 else '2b4d6f8a-1c3e-4a5b-8d7f-9e1a3c5b7d9f'}
DEVICE={ifn}
ONBOOT=yes
IPADDR={ip}
PREFIX={prefix}
{'GATEWAY=10.10.10.1' + chr(10) if n == 0 else ''}{ethtool_opts}""")

    if tuned and persist == "ifcfg+keyfile":
        nm_keyfile(r, VM_NICS[1], 1, tuned)
    if irq_pinned:
        ifnames = " ".join(n["ifname"] for n in VM_NICS)
        r.write("etc/systemd/system/vmxnet3-irq-affinity.service", f"""[Unit]
Description=Pin vmxnet3 rx/tx IRQs to NUMA node 0 (CPUs 2-15) for SAP HANA
After=network-online.target NetworkManager-wait-online.service
Wants=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/vmxnet3-irq-affinity.sh 2-15 {ifnames}

[Install]
WantedBy=multi-user.target
""")
        enable(r, "vmxnet3-irq-affinity.service", where="/etc/systemd/system")
        r.write("usr/local/sbin/vmxnet3-irq-affinity.sh", """#!/bin/bash
# Pin each vmxnet3 rx/tx queue IRQ of the given NICs to one CPU of CPULIST, round robin.
# Usage: vmxnet3-irq-affinity.sh CPULIST IFACE...
set -eu
expand() {  # 2-5,8 -> 2 3 4 5 8
    local part
    for part in ${1//,/ }; do
        if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
    done
}
cpus=($(expand "$1")); shift
for ifc in "$@"; do
    i=0
    for irq in $(ls /sys/class/net/"$ifc"/device/msi_irqs); do
        grep -q "[[:space:]]${ifc}-rxtx-" <(grep "^ *${irq}:" /proc/interrupts) || continue
        echo "${cpus[$((i % ${#cpus[@]}))]}" > /proc/irq/"$irq"/smp_affinity_list
        i=$((i + 1))
    done
done
""", mode=0o755)

    mountinfo(r, rhel_vmware_mounts())
    r.write("etc/fstab", RHEL_VMWARE_FSTAB)

    # hypervisor side: the VM's .vmx and the ESXi host's esxcli output
    hana_opts = {"pnicFeatures": "4", "ctxPerDev": "3", "udpRSS": "1"} if tuned else {}
    nics = [dict(network=n["network"], mac=n["mac"], slot=n["slot"], options=hana_opts) for n in VM_NICS]
    r.write(f"vmware/{hostname}.vmx", vmx_file(hostname, dist["guest"], VM_NCPU, 16, 524288, "all", nics,
                                               extra=['numa.nodeAffinity = "0,1"',
                                                      'cpuid.coresPerSocket.adjustForNumaAndHT = "FALSE"']))
    r.write("vmware/esxcli/netq-rx-queue-feat-pair.txt", esxcli_netq_pair(0 if tuned else 1))
    r.write("vmware/esxcli/hardware-cpu-global.txt",
            esxcli_cpu_global(2, 56, ht_active=not esxi_tuned, ht_supported=True, ht_enabled=not esxi_tuned))
    r.write("vmware/esxcli/power-cpu-policy.txt",
            esxcli_cpu_policy("High Performance" if esxi_tuned else "Balanced"))


# NetworkManager refuses keyfiles that are not owned by root with mode 0600
# (nm-settings-keyfile(5)). git keeps only the executable bit, so a checkout has them 0644:
# the snapshot states owner and mode in `filestat.json` at its root (facts/filestat.py).
_KEYFILE = "etc/NetworkManager/system-connections/{}.nmconnection"


def filestat(r: Root, rel: str, mode: int, uid: int = 0) -> None:
    path = r._abs("filestat.json")
    entries = json.load(open(path, encoding="utf-8")) if os.path.exists(path) else {}
    entries[rel] = {"mode": f"{mode:04o}", "uid": uid}
    r.write("filestat.json", json.dumps(entries, indent=1, sort_keys=True) + "\n")


def nm_keyfile(r: Root, nic: dict, n: int, tuned: bool) -> None:
    """A NetworkManager keyfile bound by interface-name, with seed 001's [ethtool] values."""
    ifn = nic["ifname"]
    uuid = "8f1c6a2e-3b5d-4e7f-9a1c-2d4e6f8a0b1c" if n == 0 else "2b4d6f8a-1c3e-4a5b-8d7f-9e1a3c5b7d9f"
    ethtool = ("\n[ethtool]\ncoalesce-rx-usecs=25\nfeature-lro=false\nring-rx=512\nring-rx-mini=0\nring-tx=512\n"
               if tuned else "")
    before, after = ("gateway=10.10.10.1\n", "") if n == 0 else ("", "never-default=true\n")
    rel = _KEYFILE.format(ifn)
    r.write(rel, f"""[connection]
id={ifn}
uuid={uuid}
type=ethernet
interface-name={ifn}

[ethernet]
{ethtool}
[ipv4]
address1={nic['ip']}
{before}method=manual
{after}
[ipv6]
addr-gen-mode=eui64
method=disabled

[proxy]
""", mode=0o600)
    filestat(r, rel, 0o600)


def suse_vmxnet3_ifcfg(r: Root, tuned: bool) -> None:
    """wicked ifcfg (ifcfg(5)): ETHTOOL_OPTIONS and suffixed ETHTOOL_OPTIONS_<x> hold one
    `-X <ifname> args` command each (wicked compat-suse.c try_add_ethtool_vars()); the SLES
    KB 000017259 way that seed 001 points to."""
    for n, nic in enumerate(VM_NICS):
        ifn = nic["ifname"]
        ethtool = (f"ETHTOOL_OPTIONS='-C {ifn} rx-usecs 25'\n"
                   f"ETHTOOL_OPTIONS_lro='-K {ifn} lro off'\n"
                   f"ETHTOOL_OPTIONS_rings='-G {ifn} rx 512 rx-mini 0 tx 512'\n") if tuned else ""
        r.write(f"etc/sysconfig/network/ifcfg-{ifn}", f"""BOOTPROTO='static'
STARTMODE='auto'
IPADDR='{nic['ip']}'
MTU=''
NAME='VMXNET3 Ethernet Controller'
{ethtool}""")
    r.write("etc/sysconfig/network/routes", "default 10.10.10.1 - -\n")


# ======================================================================================
# Azure VM on an old kernel (Ubuntu 18.04, 4.15): mlx5 control vectors of that era
# ======================================================================================

OLD_KERNEL = "4.15.0-1113-azure"
OLD_VF_IRQ_CONTROL = ["mlx5_pages_eq", "mlx5_cmd_eq", "mlx5_async_eq"]  # eq.c mlx5_start_eqs(), vectors 0-2
AN_PIN_SCRIPT = """#!/bin/bash
# Pin the completion (data) vectors of each mlx5 VF to one CPU of CPULIST each, round
# robin; control vectors (mlx5_*_eq) are left alone.
# Usage: pin-an-irqs.sh CPULIST VF...
set -eu
expand() {
    local part
    for part in ${1//,/ }; do
        if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
    done
}
cpus=($(expand "$1")); shift
for vf in "$@"; do
    i=0
    for irq in $(ls /sys/class/net/"$vf"/device/msi_irqs); do
        grep -q "mlx5_comp" <(grep "^ *${irq}:" /proc/interrupts) || continue
        echo "${cpus[$((i % ${#cpus[@]}))]}" > /proc/irq/"$irq"/smp_affinity_list
        i=$((i + 1))
    done
done
"""


def azure_old_mlx5(name: str = "azure-mlx5-kernel-4.15") -> None:
    """Ubuntu 18.04 on Azure (kernel 4.15): one AN pair eth0/enP30832s1 whose mlx5 VF has the
    kernel-4.x control vectors mlx5_pages_eq, mlx5_cmd_eq, mlx5_async_eq (each its own MSI-X
    vector) plus 32 mlx5_comp<N>, tuned per seed 000."""
    r = Root(name)
    rng = random.Random(name)
    identity(r, hostname="hanadb02", kernel=OLD_KERNEL, os_key="ubuntu1804",
             vendor="Microsoft Corporation", product="Virtual Machine", asset_tag=AZURE_ASSET_TAG)
    topology(r, AZ_NODES)
    net_loopback(r)
    uptime, btime = 9 * 86400 + 1207, 1715510123
    pair = AZ_PAIRS[0]
    msi = list(range(24, 24 + len(OLD_VF_IRQ_CONTROL) + AZ_COMP))
    synth_net, vf_net, bdf = azure_an_pair(
        r, synth=pair["synth"], synth_guid=pair["synth_guid"], vf=pair["vf"], vpci_guid=pair["vpci_guid"],
        domain=pair["domain"], numa=0, vf_msi=msi)
    r.json(f"ethtool/{pair['synth']}.json", ethtool_hv_netvsc(OLD_KERNEL, 16, 64))
    vf_ethtool = ethtool_mlx5("5.0-0", "14.25.8102 (MSF0010110035)", bdf, 16, AZ_COMP)
    r.json(f"ethtool/{pair['vf']}.json", vf_ethtool)
    allowed = [c for c in AZ_NODES[0] if c not in (0, 1)]
    control, data = msi[:len(OLD_VF_IRQ_CONTROL)], msi[len(OLD_VF_IRQ_CONTROL):]
    cpu_of = pin_round_robin(data, allowed)
    irq_rows = legacy_irqs(rng, AZ_NCPU, uptime)
    for i, irq in enumerate(msi):
        hw = msi_hwirq(pair["domain"], 0, 0x10, i)
        if irq in control:  # left where the driver put them: any CPU, delivered on CPU 0
            irq_affinity(r, irq, list(range(AZ_NCPU)), [0])
            nm, counts = f"{OLD_VF_IRQ_CONTROL[i]}@pci:{bdf}", counts_on(rng, AZ_NCPU, [0], 3000)
        else:
            k = i - len(control)
            cpu = cpu_of[irq]
            irq_affinity(r, irq, [cpu], [cpu])
            nm = f"mlx5_comp{k}@pci:{bdf}"
            counts = counts_on(rng, AZ_NCPU, [cpu], uptime * 900 if k < 16 else 300)
        irq_rows.append(Irq(irq, "Hyper-V PCIe MSI", hw, "edge", nm, counts))
    totals = proc_interrupts(r, rng, AZ_NCPU, irq_rows, hyperv=True, uptime_s=uptime)
    proc_stat(r, rng, AZ_NCPU, btime, uptime, totals)
    processes(r, {1: "systemd", 2: "kthreadd", 402: "systemd-journal", 431: "systemd-udevd",
                  866: "systemd-network", 901: "systemd-resolve", 1033: "sshd", 1041: "cron",
                  1102: "python3", 2240: "sapstartsrv", 3410: "hdbnameserver", 3502: "hdbindexserver"})
    # Ubuntu 18.04 is not merged-/usr: vendor units live in /lib/systemd/system
    for unit in ("sshd.service", "irqbalance.service", "walinuxagent.service"):
        r.write(f"lib/systemd/system/{unit}", UNITS["waagent.service" if unit == "walinuxagent.service" else unit])
    for unit in ("sshd.service", "walinuxagent.service"):
        enable(r, unit, where="/lib/systemd/system")
    # irqbalance disabled (seed 000 step 2): installed, no wants link
    r.write("etc/udev/rules.d/70-azure-an-queues.rules", AN_QUEUES_RULE)
    r.write("usr/local/sbin/pin-an-irqs.sh", AN_PIN_SCRIPT, mode=0o755)
    r.write("etc/systemd/system/an-irq-affinity.service", f"""[Unit]
Description=Pin Accelerated Networking data IRQs to NUMA node 0, CPUs 2-31 (SAP HANA network tuning)
After=network-online.target
Wants=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/pin-an-irqs.sh 2-31 {pair['vf']}

[Install]
WantedBy=multi-user.target
""")
    enable(r, "an-irq-affinity.service", where="/etc/systemd/system")
    r.write("etc/netplan/50-cloud-init.yaml", f"""network:
    ethernets:
        {pair['synth']}:
            dhcp4: true
            match:
                driver: hv_netvsc
                macaddress: 00:0d:3a:2e:9c:41
            set-name: {pair['synth']}
    version: 2
""")
    mountinfo(r, base_mountinfo("/dev/sda1", "8:1", "ext4", "rw,discard", [
        "60 23 8:15 / /boot/efi rw,relatime shared:29 - vfat /dev/sda15 rw,fmask=0077,dmask=0077,codepage=437,iocharset=iso8859-1,shortname=mixed,errors=remount-ro",
        "62 23 8:17 / /mnt rw,relatime shared:31 - ext4 /dev/sdb1 rw",
    ], cgroup2=False))
    r.write("etc/fstab", "LABEL=cloudimg-rootfs\t/\t ext4\tdefaults,discard\t0 0\n"
            "UUID=5E2A-1F3C\t/boot/efi\tvfat\tumask=0077\t0 1\n"
            "/dev/disk/cloud/azure_resource-part1\t/mnt\tauto\tdefaults,nofail,x-systemd.requires=cloud-init.service,"
            "comment=cloudconfig\t0\t2\n")


# ======================================================================================
# 5: SAS Grid on Azure NetApp Files, Azure E64ds_v4, RHEL 8.4
# ======================================================================================

SAS_KERNEL = "4.18.0-305.el8.x86_64"
SAS_NODES = {0: list(range(0, 32)), 1: list(range(32, 64))}
SAS_NCPU = 64
SAS_COMP = 32
SAS_QUEUES = 16
SAS_NFS = [
    # mount point, server, export, minor, fstab spelling of the version
    ("/sasdata", "10.0.2.4", "/sasdata", 52, "vers=3"),
    ("/sasconfig", "10.0.2.4", "/sasconfig", 53, "nfsvers=3"),
    ("/sashome", "10.0.2.5", "/sashome", 54, "vers=3.0"),
]

SAS_UDEV_RULE = ('SUBSYSTEM=="bdi", ACTION=="add", PROGRAM="/bin/awk -v bdi=$kernel '
                 "'BEGIN{ret=1} {if ($4 == bdi) {ret=0}} END{exit ret}' /proc/fs/nfsfs/volumes\", "
                 'ATTR{read_ahead_kb}="15380"\n')

THROUGHPUT_PERFORMANCE = """#
# tuned configuration
#

[main]
summary=Broadly applicable tuning that provides excellent performance across a variety of common server workloads

[cpu]
governor=performance
energy_perf_bias=performance
min_perf_pct=100

[disk]
readahead=>4096

[sysctl]
# Start throttling writers at this percentage of dirty memory
vm.dirty_ratio = 40

# Start background writeback at this percentage of dirty memory
vm.dirty_background_ratio = 10

# Prefer dropping page cache over swapping out anonymous memory
vm.swappiness=10
"""


# nfs-utils >= 2.6.3 usr/lib/udev/rules.d/60-nfs.rules (systemd/60-nfs.rules), the sunrpc rule
NFS_UTILS_60_NFS_RULES = """# Ensure all NFS systctl settings get applied when modules load

# sunrpc module supports "sunrpc.*" sysctls
ACTION=="add", SUBSYSTEM=="module", KERNEL=="sunrpc", \\
  RUN+="/sbin/sysctl -q --pattern ^sunrpc --system"

# rpcrdma module supports sunrpc.svc_rdma.*
ACTION=="add", SUBSYSTEM=="module", KERNEL=="rpcrdma", \\
  RUN+="/sbin/sysctl -q --pattern ^sunrpc.svc_rdma --system"

# lockd module supports "fs.nfs.nlm*" and "fs.nfs.nsm*" sysctls
ACTION=="add", SUBSYSTEM=="module", KERNEL=="lockd", \\
  RUN+="/sbin/sysctl -q --pattern ^fs.nfs.n[sl]m --system"
"""
# nfs-utils 2.6.2 systemd/50-nfs.conf, installed in usr/lib/modprobe.d (commit afc7132d)
NFS_UTILS_50_NFS_CONF = """# Ensure all NFS systctl settings get applied when modules load

# sunrpc module supports "sunrpc.*" sysctls
install sunrpc /sbin/modprobe --ignore-install sunrpc $CMDLINE_OPTS && /sbin/sysctl -q --pattern sunrpc --system

# lockd module supports "fs.nfs.nlm*" and "fs.nfs.nsm*" sysctls
install lockd /sbin/modprobe --ignore-install lockd $CMDLINE_OPTS && /sbin/sysctl -q --pattern fs.nfs.n[sl]m --system
"""
SEED003_SYSCTL_CONF = """# sysctl settings are defined through files in
# /usr/lib/sysctl.d/, /run/sysctl.d/, and /etc/sysctl.d/.
#
# Vendors settings live in /usr/lib/sysctl.d/.
# To override a whole file, create a new file with the same in
# /etc/sysctl.d/ and put new settings there. To override
# only specific settings, add a file with a lexically later
# name in /etc/sysctl.d/ and put new settings there.
#
# For more information, see sysctl.conf(5) and sysctl.d(5).
# SAS Grid on ANF (seed 003: RPC Slot Table Tuning)
sunrpc.tcp_max_slot_table_entries=128
sunrpc.tcp_slot_table_entries=128
"""


def _slot_tables(r: Root, how: str) -> None:
    """The RPC slot tables at runtime (128) and how the host configures them for boot:
    "options": a sysctl.d file and the sunrpc module options (the tuned sas-anf host);
    "seed003": only etc/sysctl.conf, as seed 003 says (RHEL's etc/sysctl.d/99-sysctl.conf
    link brings it to systemd-sysctl, which runs before sunrpc loads); "udev-hook",
    "modules-load", "modprobe-install": seed 003 plus one of the three fixes distributions ship."""
    r.value("proc/sys/sunrpc/tcp_slot_table_entries", 128)
    r.value("proc/sys/sunrpc/tcp_max_slot_table_entries", 128)
    if how == "options":
        # sunrpc loads after systemd-sysctl (with the first NFS mount), so the sysctl.d file
        # alone would not reach it at boot (SPEC 2 "Boot prediction"); the options set both
        r.write("etc/sysctl.d/90-sas-anf.conf", """# SAS Grid on Azure NetApp Files: ANF allows 128 outstanding RPCs per TCP connection
sunrpc.tcp_max_slot_table_entries = 128
sunrpc.tcp_slot_table_entries = 128
""")
        r.write("etc/modprobe.d/sunrpc.conf", "options sunrpc tcp_max_slot_table_entries=128 tcp_slot_table_entries=128\n")
        return
    r.write("etc/sysctl.conf", SEED003_SYSCTL_CONF)
    r.symlink("etc/sysctl.d/99-sysctl.conf", "../sysctl.conf")
    if how == "udev-hook":
        r.write("usr/lib/udev/rules.d/60-nfs.rules", NFS_UTILS_60_NFS_RULES)
    elif how == "modules-load":
        r.write("etc/modules-load.d/sunrpc.conf", "# load sunrpc before systemd-sysctl applies sunrpc.*\nsunrpc\n")
    elif how == "modprobe-install":
        r.write("usr/lib/modprobe.d/50-nfs.conf", NFS_UTILS_50_NFS_CONF)


# tuned 2.25 as RHEL 9.6 builds it (tuned.spec `%if 0%{?rhel} && 0%{?rhel} < 10`: the
# pre-2.24 directories usr/lib/tuned and etc/tuned; the Makefile writes them into the
# commented profile_dirs line). The profiles carry the settings of tuned v2.25.1
# profiles/throughput-performance and profiles/virtual-guest: dirty_ratio in the [vm] unit
# (commit 155f232 "Adjust profiles to set dirty_(bytes|ratio) via the vm plugin").
TUNED_MAIN_RHEL9 = """# Global tuned configuration file.

# Whether to use daemon. Without daemon it just applies tuning.
daemon = 1

# Dynamicaly tune devices, if disabled only static tuning will be used.
dynamic_tuning = 0

# Whether to reapply sysctl from /run/sysctl.d/, /etc/sysctl.d/ and
# /etc/sysctl.conf.  If enabled, these sysctls will be reapplied
# after TuneD sysctls are applied, i.e. TuneD sysctls will not
# override user-provided system sysctls.
reapply_sysctl = 1

# Default priority assigned to instances
default_instance_priority = 0

# Directories to search for profiles separated by , or ;
# In case of conflicts in profile names, the later directory
# takes precedence
# profile_dirs = /usr/lib/tuned,/etc/tuned
"""
THROUGHPUT_PERFORMANCE_2_25 = """#
# tuned configuration
#

[main]
summary=Broadly applicable tuning that provides excellent performance across a variety of common server workloads

[variables]
thunderx_cpuinfo_regex=CPU part\\s+:\\s+(0x0?516)|(0x0?af)|(0x0?a[0-3])|(0x0?b8)\\b

[cpu]
governor=performance
energy_perf_bias=performance
min_perf_pct=100
energy_performance_preference=performance

[acpi]
platform_profile=performance

[vm]
# The generator of dirty data starts writeback at this percentage (system default is 20%)
dirty_ratio = 40

# Start background writeback (via writeback threads) at this percentage (system default is 10%)
dirty_background_ratio = 10

[disk]
readahead=>4096

[sysctl]
vm.swappiness=10
net.core.somaxconn=>2048
"""
VIRTUAL_GUEST_2_25 = """#
# tuned configuration
#

[main]
summary=Optimize for running inside a virtual guest
include=throughput-performance

[vm]
# The generator of dirty data starts writeback at this percentage (system default is 20%)
dirty_ratio = 30

[sysctl]
# Filesystem I/O is usually much more efficient than swapping, so try to keep swapping low.
vm.swappiness = 30
"""
SEED003_DIRTY_SYSCTL_CONF = """
# SAS Grid on Azure NetApp Files (seed 003): smaller dirty page limits
vm.dirty_bytes = 31457280
vm.dirty_expire_centisecs = 100
vm.dirty_writeback_centisecs = 300
"""


# SAP note 1984787 as saptune 3 ships it (SUSE/saptune ospackage/usr/share/saptune/notes/1984787),
# abridged to its version header and the [sysctl] lines the scan reads
SAPTUNE_NOTE_1984787 = """# 1984787 - SUSE LINUX Enterprise Server 15: Installation notes
[version]
VERSION=45
DATE=08.05.2024
NAME="SUSE LINUX Enterprise Server 15: Installation notes"

[sysctl]
# vm.dirty_bytes (indirect vm.dirty_ratio)
# vm.dirty_bytes should be set to 629145600 (see TID_7010287)
vm.dirty_bytes=629145600

# vm.dirty_background_bytes (indirect vm.dirty_background_ratio)
# vm.dirty_background_bytes should be set to 314572800 (see TID_7010287)
vm.dirty_background_bytes=314572800
"""
# /etc/sysconfig/saptune (SUSE/saptune ospackage/etc/sysconfig/saptune) after `saptune note apply 1984787`
SAPTUNE_SYSCONFIG = """## Path:        SAP/System Tuning/General
## Description: Global settings for saptune - the comprehensive optimisation management utility for SAP solutions

## Type:        string
## Default:     ""
TUNE_FOR_SOLUTIONS=""

## Type:        string
## Default:     ""
TUNE_FOR_NOTES="1984787"

## Type:        string
## Default:     ""
NOTE_APPLY_ORDER="1984787"

## Type:        string
## Default:     "3"
SAPTUNE_VERSION="3"

## Type:        yesno
## Default:     "false"
STAGING="false"

## Type:        string
## Default:     "/boot"
SKIP_SYSCTL_FILES="/boot"

## Type:        yesno
## Default:     "no"
IGNORE_RELOAD="no"
"""


def _sles_saptune(r: Root) -> None:
    """SLES 15 SP5 for SAP with saptune 3 (which takes tuned's place: tuned not installed):
    wicked instead of NetworkManager (ifcfg ETHTOOL_OPTIONS for eth0, a udev rule for the VF,
    a boot unit pins its IRQs), seed 003's dirty values in etc/sysctl.d, and SAP note
    1984787 applied by saptune.service after systemd-sysctl: its vm.dirty_bytes wins."""
    for rel in ("etc/NetworkManager", "etc/tuned", "usr/lib/tuned"):
        shutil.rmtree(r._abs(rel), ignore_errors=True)
    for rel in ("usr/lib/systemd/system/NetworkManager.service", "usr/lib/systemd/system/NetworkManager-dispatcher.service",
                "usr/lib/systemd/system/tuned.service", "etc/systemd/system/multi-user.target.wants/NetworkManager.service",
                "etc/systemd/system/multi-user.target.wants/tuned.service"):
        if os.path.lexists(r._abs(rel)):
            os.unlink(r._abs(rel))
    for pid in (1030, 1068):  # NetworkManager and tuned: not on this host
        shutil.rmtree(r._abs(f"proc/{pid}"), ignore_errors=True)
    r.write("proc/1031/comm", "wickedd\n")
    r.write("proc/1033/comm", "wickedd-nanny\n")
    install_units(r, ["wicked.service", "saptune.service"])
    enable(r, "wicked.service")
    enable(r, "saptune.service")
    r.write("etc/sysconfig/network/ifcfg-eth0", f"""BOOTPROTO='dhcp'
DHCLIENT6_MODE='managed'
MTU=''
REMOTE_IPADDR=''
STARTMODE='onboot'
CLOUD_NETCONFIG_MANAGE='yes'
ETHTOOL_OPTIONS='-L eth0 combined {SAS_QUEUES}'
""")
    r.write("etc/udev/rules.d/70-azure-an-queues.rules", AN_VF_QUEUES_RULE.replace("combined 16", f"combined {SAS_QUEUES}"))
    r.write("etc/systemd/system/mlnx-irq-affinity.service", """[Unit]
Description=Pin Accelerated Networking IRQs to NUMA node 0, CPUs 2-31 (SAS Grid network tuning)
After=network-online.target wicked.service
Wants=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/set_irq_affinity_cpulist.sh 2-31 enP45612s1

[Install]
WantedBy=multi-user.target
""")
    enable(r, "mlnx-irq-affinity.service", where="/etc/systemd/system")
    r.write("etc/sysctl.d/90-sas-dirty.conf", "# SAS Grid on Azure NetApp Files (seed 003)" + SEED003_DIRTY_SYSCTL_CONF)
    r.write("usr/share/saptune/notes/1984787", SAPTUNE_NOTE_1984787)
    r.write("etc/sysconfig/saptune", SAPTUNE_SYSCONFIG)
    # saptune.service ran at boot after systemd-sysctl: the note's values are what the kernel has
    r.value("proc/sys/vm/dirty_bytes", 629145600)
    r.value("proc/sys/vm/dirty_ratio", 0)
    r.value("proc/sys/vm/dirty_background_bytes", 314572800)
    r.value("proc/sys/vm/dirty_background_ratio", 0)
    r.value("proc/sys/vm/dirty_expire_centisecs", 100)
    r.value("proc/sys/vm/dirty_writeback_centisecs", 300)


def sas_anf(name: str = "sas-anf", slot_tables: str = "options", hostname: str = "sasgrid01",
            rhel9_tuned: bool = False, sles_saptune: bool = False) -> None:
    """rhel9_tuned: RHEL 9.6 with tuned 2.25's virtual-guest active (its [vm] unit writes
    vm.dirty_ratio = 30, zeroing vm.dirty_bytes) and seed 003's dirty values in
    etc/sysctl.conf, brought back by reapply_sysctl after the profile."""
    r = Root(name)
    rng = random.Random(name)
    kernel = "5.14.0-570.12.1.el9_6.x86_64" if rhel9_tuned else "5.14.21-150500.55.65-default" if sles_saptune \
        else SAS_KERNEL
    identity(r, hostname=hostname, kernel=kernel,
             os_key="rhel96" if rhel9_tuned else "sles15sp5" if sles_saptune else "rhel84",
             vendor="Microsoft Corporation", product="Virtual Machine", asset_tag=AZURE_ASSET_TAG)
    topology(r, SAS_NODES)
    net_loopback(r)
    uptime = 17 * 86400 + 5520
    btime = 1715939402

    domain = 45612  # enP45612s1 -> PCI domain b22c
    msi = list(range(24, 24 + 1 + SAS_COMP))
    synth_net, vf_net, bdf = azure_an_pair(
        r, synth="eth0", synth_guid="000d3a4f-21c8-000d-3a4f-21c8000d3a4f", vf="enP45612s1",
        vpci_guid="6b3e9d21-b22c-4a07-9f3e-6045bd7a1c90", domain=domain, numa=0, vf_msi=msi)
    r.json("ethtool/eth0.json", ethtool_hv_netvsc(kernel, SAS_QUEUES, 64))
    r.json("ethtool/enP45612s1.json", ethtool_mlx5("5.0-0", "14.30.1004 (MSF0010110035)", bdf, SAS_QUEUES, SAS_COMP))

    allowed = [c for c in SAS_NODES[0] if c not in (0, 1)]  # the NIC's own node (0), core 0 left alone
    cpu_of = pin_round_robin(msi, allowed)
    irq_rows = legacy_irqs(rng, SAS_NCPU, uptime)
    for i, irq in enumerate(msi):
        cpu = cpu_of[irq]
        irq_affinity(r, irq, [cpu], [cpu])
        async_name = "mlx5_async0" if rhel9_tuned or sles_saptune else "mlx5_async"  # 4.18: no index on async; 5.12+: async0
        nm = f"{async_name}@pci:{bdf}" if i == 0 else f"mlx5_comp{i - 1}@pci:{bdf}"
        scale = 3000 if i == 0 else (uptime * 1200 if i - 1 < SAS_QUEUES else 200)
        irq_rows.append(Irq(irq, "Hyper-V PCIe MSI", msi_hwirq(domain, 0, 0x10, i), "edge", nm,
                            counts_on(rng, SAS_NCPU, [cpu], scale)))
    totals = proc_interrupts(r, rng, SAS_NCPU, irq_rows, hyperv=True, uptime_s=uptime)
    proc_stat(r, rng, SAS_NCPU, btime, uptime, totals)

    processes(r, {1: "systemd", 2: "kthreadd", 688: "systemd-journal", 721: "systemd-udevd", 1002: "rpcbind",
                  1030: "NetworkManager", 1068: "tuned", 1071: "sshd", 1090: "rpc.statd", 1188: "python3",
                  2207: "sas", 2311: "lsf_daemons"})

    install_units(r, ["sshd.service", "irqbalance.service", "tuned.service", "NetworkManager.service",
                      "NetworkManager-dispatcher.service", "waagent.service"], rhel=True)
    for unit in ("sshd.service", "tuned.service", "NetworkManager.service", "waagent.service"):
        enable(r, unit)
    # irqbalance stays installed but disabled (it would undo the IRQ placement)

    # NetworkManager dispatcher (seed 000, Red Hat procedure): queues and IRQ placement of
    # the AN VF, re-applied whenever eth0 comes up. The VF itself is unmanaged by NM on Azure.
    r.write("etc/NetworkManager/dispatcher.d/90-accelnet-tuning", f"""#!/bin/sh
# Accelerated Networking tuning for SAS Grid on ANF:
# tx/rx queues <= logical CPUs of the NIC's NUMA node, IRQs on that node (node 0).
# https://communities.sas.com/ (SAS Grid on Azure NetApp Files), mlnx-tools v5.1.3
[ "$1" = "eth0" ] && [ "$2" = "up" ] || exit 0
/sbin/ethtool -L eth0 combined {SAS_QUEUES}
/sbin/ethtool -L enP45612s1 combined {SAS_QUEUES}
/usr/local/sbin/set_irq_affinity_cpulist.sh 2-31 enP45612s1
""", mode=0o751)

    # NFSv3 mounts from ANF: kernel-canonical options in mountinfo, admin spelling in fstab
    nfs_lines, fstab_nfs = [], []
    for k, (mnt, server, export, minor, vers) in enumerate(SAS_NFS):
        super_opts = (f"rw,vers=3,rsize=65536,wsize=65536,namlen=255,acdirmin=0,hard,proto=tcp,nconnect=8,"
                      f"timeo=600,retrans=2,sec=sys,mountaddr={server},mountvers=3,mountport=635,mountproto=tcp,"
                      f"local_lock=none,addr={server}")
        nfs_lines.append(f"{120 + k} 23 0:{minor} / {mnt} rw,noatime,nodiratime shared:{80 + k} - nfs "
                         f"{server}:{export} {super_opts}")
        fstab_nfs.append(f"{server}:{export:<12s} {mnt:<12s} nfs   bg,rw,hard,rsize=65536,wsize=65536,{vers},"
                         f"noatime,nodiratime,rdirplus,acdirmin=0,tcp,_netdev,nconnect=8 0 0")
        r.value(f"sys/class/bdi/0:{minor}/read_ahead_kb", 15380)
    mountinfo(r, base_mountinfo("/dev/mapper/rootvg-rootlv", "253:0", "xfs",
                                "rw,attr2,inode64,logbufs=8,logbsize=32k,noquota", [
        "64 23 8:2 / /boot rw,relatime shared:29 - xfs /dev/sda2 rw,attr2,inode64,logbufs=8,logbsize=32k,noquota",
        "66 64 8:1 / /boot/efi rw,relatime shared:31 - vfat /dev/sda1 rw,fmask=0077,dmask=0077,codepage=437,iocharset=ascii,shortname=winnt,errors=remount-ro",
        "68 23 253:3 / /var rw,relatime shared:33 - xfs /dev/mapper/rootvg-varlv rw,attr2,inode64,logbufs=8,logbsize=32k,noquota",
        "70 23 8:17 / /mnt rw,relatime shared:35 - ext4 /dev/sdb1 rw",
        "72 21 0:46 / /proc/sys/fs/binfmt_misc rw,relatime shared:37 - binfmt_misc binfmt_misc rw",
        "74 21 0:47 / /var/lib/nfs/rpc_pipefs rw,relatime shared:39 - rpc_pipefs sunrpc rw",
    ] + nfs_lines, cgroup2=False))
    r.write("etc/fstab", """
#
# /etc/fstab
# Created by anaconda on Thu Jun  3 14:21:07 2021
#
# Accessible filesystems, by reference, are maintained under '/dev/disk/'.
# See man pages fstab(5), findfs(8), mount(8) and/or blkid(8) for more info.
#
# After editing this file, run 'systemctl daemon-reload' to update systemd
# units generated from this file.
#
/dev/mapper/rootvg-rootlv /                       xfs     defaults        0 0
UUID=1f3e5a7c-9b2d-4c6e-8a0f-2b4d6e8f0a1c /boot                   xfs     defaults        0 0
UUID=3C5E-7A91          /boot/efi               vfat    defaults,uid=0,gid=0,umask=077,shortname=winnt 0 2
/dev/mapper/rootvg-varlv /var                   xfs     defaults        0 0
/dev/disk/cloud/azure_resource-part1    /mnt    auto    defaults,nofail,x-systemd.requires=cloud-init.service,comment=cloudconfig       0       2
# SAS Grid on Azure NetApp Files (NFSv3)
""" + "\n".join(fstab_nfs) + "\n")

    # read-ahead for NFS bdis (seed 003, exactly as given)
    r.write("etc/udev/rules.d/99-nfs.rules", SAS_UDEV_RULE)

    _slot_tables(r, slot_tables)

    if rhel9_tuned:
        _rhel9_tuned_dirty(r)
        return
    if sles_saptune:
        _sles_saptune(r)
        return
    # dirty page writeback: runtime and the custom tuned profile
    r.value("proc/sys/vm/dirty_bytes", 31457280)
    r.value("proc/sys/vm/dirty_ratio", 0)
    r.value("proc/sys/vm/dirty_background_ratio", 10)
    r.value("proc/sys/vm/dirty_expire_centisecs", 100)
    r.value("proc/sys/vm/dirty_writeback_centisecs", 300)
    r.write("etc/tuned/active_profile", "sas-performance\n")
    r.write("etc/tuned/profile_mode", "manual\n")
    r.write("etc/tuned/sas-performance/tuned.conf", """#
# SAS 9.4 Grid on Azure NetApp Files
#

[main]
summary=SAS Grid on ANF: throughput-performance with smaller dirty page limits
include=throughput-performance

[sysctl]
vm.dirty_bytes = 31457280
vm.dirty_expire_centisecs = 100
vm.dirty_writeback_centisecs = 300
""")
    r.write("usr/lib/tuned/throughput-performance/tuned.conf", THROUGHPUT_PERFORMANCE)


# ======================================================================================
# 6: BIG-IP VE on ESXi
# ======================================================================================

def bigip_ve(name: str = "bigip-ve-esxi") -> None:
    r = Root(name)
    rng = random.Random(name)
    identity(r, hostname="bigip-ve01.example.net", kernel="3.10.0-862.14.4.el7.ve.x86_64", os_key="bigip",
             vendor="VMware, Inc.", product="VMware Virtual Platform", asset_tag="No Asset Tag")
    ncpu = 8
    topology(r, {0: list(range(ncpu))})
    uptime = 64 * 86400 + 777
    btime = 1712301188
    # TMM drives the data NICs itself; the Linux side only has the loopback and TMM's
    # virtual interfaces (no PCI device behind them).
    net_loopback(r)
    for ifn in ("tmm", "tmm_bp"):
        base = f"sys/devices/virtual/net/{ifn}"
        r.value(f"{base}/operstate", "unknown")
        r.rel_symlink(f"sys/class/net/{ifn}", base)
    irq_rows = legacy_irqs(rng, ncpu, uptime, ata=True)
    totals = proc_interrupts(r, rng, ncpu, irq_rows, hyperv=False, uptime_s=uptime, show_hwirq=False)
    proc_stat(r, rng, ncpu, btime, uptime, totals)
    processes(r, {1: "systemd", 2: "kthreadd", 1432: "mcpd", 1520: "tmm", 1601: "bigd", 1655: "sshd",
                  1702: "httpd", 1810: "restjavad"})
    install_units(r, ["sshd.service"], rhel=True)
    enable(r, "sshd.service")
    mountinfo(r, base_mountinfo("/dev/mapper/vg--db--vda-set.1.root", "253:1", "ext3", "rw,data=ordered", [
        "60 23 253:2 / /config rw,relatime shared:29 - ext3 /dev/mapper/vg--db--vda-set.1._config rw,data=ordered",
        "62 23 253:3 / /usr ro,relatime shared:31 - ext3 /dev/mapper/vg--db--vda-set.1._usr ro,data=ordered",
        "64 23 253:4 / /var rw,relatime shared:33 - ext3 /dev/mapper/vg--db--vda-set.1._var rw,data=ordered",
        "66 23 253:5 / /shared rw,relatime shared:35 - ext4 /dev/mapper/vg--db--vda-dat.share rw,data=ordered",
        "68 23 0:40 / /dev/shm rw,nosuid,nodev shared:37 - tmpfs tmpfs rw",
    ], cgroup2=False))
    r.write("etc/fstab", """/dev/vg-db-vda/set.1.root / ext3 defaults,noatime 1 1
/dev/vg-db-vda/set.1._config /config ext3 defaults,noatime 1 2
/dev/vg-db-vda/set.1._usr /usr ext3 ro,defaults,noatime 1 2
/dev/vg-db-vda/set.1._var /var ext3 defaults,noatime 1 2
/dev/vg-db-vda/dat.share /shared ext4 defaults,noatime 1 2
tmpfs /dev/shm tmpfs defaults 0 0
""")

    # VMX (seed 002): queues from 4 pNIC RSS queues and one Tx thread per data vNIC,
    # management ethernet0 untouched; vCPUs avoid physical core 0.
    nets = ["Management", "Internal", "External", "HA"]
    nics = [dict(network=nets[i], mac=f"00:50:56:a1:3c:{0x10 + i:02x}", slot=[192, 224, 256, 1184][i],
                 options={} if i == 0 else {"pnicFeatures": "4", "ctxPerDev": "1"}) for i in range(4)]
    r.write("vmware/bigip-ve01.vmx", vmx_file("bigip-ve01", "other3xlinux-64", ncpu, ncpu, 16384,
                                              ",".join(str(c) for c in range(1, ncpu + 1)), nics))
    r.write("vmware/esxcli/hardware-cpu-global.txt",
            esxcli_cpu_global(2, 32, ht_active=False, ht_supported=False, ht_enabled=False))
    r.write("vmware/esxcli/power-cpu-policy.txt", esxcli_cpu_policy("High Performance"))


def _rhel9_tuned_dirty(r: Root) -> None:
    """Seed 003's dirty values in etc/sysctl.conf (RHEL's 99-sysctl.conf link brings it to
    systemd-sysctl); tuned 2.25 virtual-guest writes vm.dirty_ratio = 30 after it, which
    zeroes vm.dirty_bytes, and reapply_sysctl then writes etc/sysctl.conf again."""
    r.value("proc/sys/vm/dirty_bytes", 31457280)
    r.value("proc/sys/vm/dirty_ratio", 0)
    r.value("proc/sys/vm/dirty_background_ratio", 10)
    r.value("proc/sys/vm/dirty_expire_centisecs", 100)
    r.value("proc/sys/vm/dirty_writeback_centisecs", 300)
    path = r._abs("etc/sysctl.conf")
    conf = open(path, encoding="utf-8").read() if os.path.exists(path) else SEED003_SYSCTL_CONF
    os.unlink(path) if os.path.exists(path) else None
    r.write("etc/sysctl.conf", conf + SEED003_DIRTY_SYSCTL_CONF)
    if not os.path.lexists(r._abs("etc/sysctl.d/99-sysctl.conf")):
        r.symlink("etc/sysctl.d/99-sysctl.conf", "../sysctl.conf")
    r.write("etc/tuned/active_profile", "virtual-guest\n")
    r.write("etc/tuned/profile_mode", "auto\n")
    r.write("etc/tuned/tuned-main.conf", TUNED_MAIN_RHEL9)
    r.write("usr/lib/tuned/throughput-performance/tuned.conf", THROUGHPUT_PERFORMANCE_2_25)
    r.write("usr/lib/tuned/virtual-guest/tuned.conf", VIRTUAL_GUEST_2_25)


# --------------------------------------------------------------------------------------
# boot loader files (facts/nextkernel.py): Ubuntu 24.04 on Azure, as grub-mkconfig writes them
# --------------------------------------------------------------------------------------

BOOT_UUID = "1c3c5f7e-0b2d-4d0e-9a43-5f2e8c7d1a6b"
BOOT_PARTUUID = "4b2f6a1d-8e3c-4f57-b1a9-0d6e2c9f7a35"
UBUNTU2404_OS = """PRETTY_NAME="Ubuntu 24.04.2 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.2 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=noble
LOGO=ubuntu-logo
"""
UBUNTU_DEFAULT_GRUB = """# If you change this file or any /etc/default/grub.d/*.cfg file,
# run 'update-grub' afterwards to update /boot/grub/grub.cfg.
# For full documentation of the options in these files, see:
#   info -f grub -n 'Simple configuration'

GRUB_DEFAULT=0
GRUB_TIMEOUT_STYLE=hidden
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=`( . /etc/os-release; echo ${NAME:-Ubuntu} ) 2>/dev/null || echo Ubuntu`
GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"
GRUB_CMDLINE_LINUX=""
"""
CLOUDIMG = """# Cloud Image specific Grub settings for Generic Cloud Images
# CLOUD_IMG: This file was created/modified by the Cloud Image build process

# Set the recordfail timeout
GRUB_RECORDFAIL_TIMEOUT=0

# Do not wait on grub prompt
GRUB_TIMEOUT=0

# Set the default commandline
GRUB_CMDLINE_LINUX_DEFAULT="console=tty1 console=ttyS0 earlyprintk=ttyS0 panic=-1"

# Set the grub console type
GRUB_TERMINAL=console
"""


def _ubuntu_entry(title: str, ident: str, kernel: str, indent: str = "", recovery: bool = False) -> str:
    opts = "ro recovery nomodeset dis_ucode_ldr" if recovery else "ro  console=tty1 console=ttyS0 earlyprintk=ttyS0 panic=-1"
    body = f"""menuentry '{title}' --class ubuntu --class gnu-linux --class gnu --class os $menuentry_id_option '{ident}' {{
	recordfail
	load_video
	gfxmode $linux_gfx_mode
	insmod gzio
	if [ x$grub_platform = xxen ]; then insmod xzio; insmod lzopio; fi
	insmod part_gpt
	insmod ext2
	search --no-floppy --fs-uuid --set=root {BOOT_UUID}
	if [ "${{initrdfail}}" = 1 ]; then
	  echo	'Loading Linux {kernel} ...'
	  linux	/boot/vmlinuz-{kernel} root=PARTUUID={BOOT_PARTUUID} {opts}
	else
	  echo	'Loading Linux {kernel} ...'
	  linux	/boot/vmlinuz-{kernel} root=PARTUUID={BOOT_PARTUUID} {opts}
	  echo	'Loading initial ramdisk ...'
	  initrd	/boot/initrd.img-{kernel}
	fi
	initrdfail
}}
"""
    return "".join(indent + line if line else line for line in body.splitlines(True))


def ubuntu_grub_cfg(kernels: list[str], default: str = "0") -> str:
    """grub-mkconfig's output for `kernels` (already newest first, as 10_linux sorts them)."""
    out = f"""#
# DO NOT EDIT THIS FILE
#
# It is automatically generated by grub-mkconfig using templates
# from /etc/grub.d and settings from /etc/default/grub
#

### BEGIN /etc/grub.d/00_header ###
if [ -s $prefix/grubenv ]; then
  set have_grubenv=true
  load_env
fi
if [ "${{initrdfail}}" = 2 ]; then
   set initrdfail=
elif [ "${{initrdfail}}" = 1 ]; then
   set next_entry="${{prev_entry}}"
   set prev_entry=
   save_env prev_entry
   if [ "${{next_entry}}" ]; then
      set initrdfail=2
   fi
fi
if [ "${{next_entry}}" ] ; then
   set default="${{next_entry}}"
   set next_entry=
   save_env next_entry
   set boot_once=true
else
   set default="{default}"
fi

if [ x"${{feature_menuentry_id}}" = xy ]; then
  menuentry_id_option="--id"
else
  menuentry_id_option=""
fi

export menuentry_id_option

function recordfail {{
  set recordfail=1
  if [ -n "${{have_grubenv}}" ]; then if [ -z "${{boot_once}}" ]; then save_env recordfail; fi; fi
}}
terminal_input console
terminal_output console
set timeout_style=hidden
set timeout=0
### END /etc/grub.d/00_header ###

### BEGIN /etc/grub.d/10_linux ###
function gfxmode {{
	set gfxpayload="${{1}}"
	if [ "${{1}}" = "keep" ]; then
		set vt_handoff=vt.handoff=7
	else
		set vt_handoff=
	fi
}}
set linux_gfx_mode=
export linux_gfx_mode
"""
    out += _ubuntu_entry("Ubuntu", f"gnulinux-simple-{BOOT_UUID}", kernels[0])
    out += f"submenu 'Advanced options for Ubuntu' $menuentry_id_option 'gnulinux-advanced-{BOOT_UUID}' {{\n"
    for k in kernels:
        out += _ubuntu_entry(f"Ubuntu, with Linux {k}", f"gnulinux-{k}-advanced-{BOOT_UUID}", k, "\t")
        out += _ubuntu_entry(f"Ubuntu, with Linux {k} (recovery mode)", f"gnulinux-{k}-recovery-{BOOT_UUID}", k, "\t",
                             recovery=True)
    out += """}

### END /etc/grub.d/10_linux ###

### BEGIN /etc/grub.d/30_uefi-firmware ###
if [ "$grub_platform" = "efi" ]; then
	fwsetup --is-supported
	if [ "$?" = 0 ]; then
		menuentry 'UEFI Firmware Settings' $menuentry_id_option 'uefi-firmware' {
			fwsetup
		}
	fi
fi
### END /etc/grub.d/30_uefi-firmware ###
"""
    return out


# Azure M128s-class VM (128 vCPUs, 4 NUMA nodes of 32) on Ubuntu 24.04, running the GA azure
# kernel 6.8 with the 6.14 HWE azure kernel installed and not booted yet
NEXT_KERNEL_RUNNING = "6.8.0-1021-azure"
NEXT_KERNEL_PENDING = "6.14.0-1012-azure"
M128_NODES = {n: list(range(32 * n, 32 * (n + 1))) for n in range(4)}


def ubuntu_boot_files(r: Root, kernels: list[str]) -> None:
    """etc/default/grub (+ the cloud image's grub.d), grub.cfg, grubenv and the installed
    kernels' modules trees of an Ubuntu 24.04 Azure image; `kernels` newest first."""
    r.write("etc/default/grub", UBUNTU_DEFAULT_GRUB)
    r.write("etc/default/grub.d/50-cloudimg-settings.cfg", CLOUDIMG)
    r.write("etc/default/grub.d/40-force-partuuid.cfg",
            f"# Force boot from the partition with this PARTUUID\nGRUB_FORCE_PARTUUID={BOOT_PARTUUID}\n")
    r.write("boot/grub/grub.cfg", ubuntu_grub_cfg(kernels))
    r.write("boot/grub/grubenv", grubenv())
    r.symlink("boot/vmlinuz", f"vmlinuz-{kernels[0]}")  # linux-base keeps it on the newest kernel
    for k in kernels:
        r.write(f"usr/lib/modules/{k}/modules.builtin", "kernel/net/ipv4/tcp_cubic.ko\nkernel/net/unix/unix.ko\n")


OS_RELEASE["ubuntu2404"] = UBUNTU2404_OS


def grubenv(**values: str) -> str:
    """grub-editenv's 1024-byte block: signature, name=value lines, '#' padding."""
    body = "# GRUB Environment Block\n" + "".join(f"{k}={v}\n" for k, v in values.items())
    return body + "#" * (1024 - len(body.encode()))



BUILDERS = {
    "azure-m-tuned": lambda: azure_m("azure-m-tuned", rebooted=False),
    "azure-m-rebooted": lambda: azure_m("azure-m-rebooted", rebooted=True),
    "vmware-vmxnet3-default": lambda: vmware_hana("vmware-vmxnet3-default", tuned=False),
    "vmware-vmxnet3-tuned": lambda: vmware_hana("vmware-vmxnet3-tuned", tuned=True),
    "vmware-seed001-tuned": lambda: vmware_hana("vmware-seed001-tuned", tuned=True, irq_pinned=False,
                                                esxi_tuned=False, persist="rhel-ifcfg", hostname="hanavm03"),
    "sles15-vmware-ifcfg": lambda: vmware_hana("sles15-vmware-ifcfg", tuned=True, irq_pinned=False,
                                               esxi_tuned=False, distro="sles15sp5", persist="suse-ifcfg",
                                               hostname="hanavm04"),
    "rhel9-vmware-nm-keyfile": lambda: vmware_hana("rhel9-vmware-nm-keyfile", tuned=True, irq_pinned=False,
                                                   esxi_tuned=False, distro="rhel92", persist="keyfile",
                                                   hostname="hanavm05"),
    "azure-mlx5-kernel-4.15": azure_old_mlx5,
    "sas-anf": sas_anf,
    "sas-anf-seed003": lambda: sas_anf("sas-anf-seed003", "seed003", hostname="sasgrid02"),
    "sas-anf-udev-hook": lambda: sas_anf("sas-anf-udev-hook", "udev-hook", hostname="sasgrid03"),
    "sas-anf-modules-load": lambda: sas_anf("sas-anf-modules-load", "modules-load", hostname="sasgrid04"),
    "sas-anf-modprobe-install": lambda: sas_anf("sas-anf-modprobe-install", "modprobe-install", hostname="sasgrid05"),
    "sas-anf-sles15-saptune": lambda: sas_anf("sas-anf-sles15-saptune", "modules-load", hostname="sasgrid07",
                                              sles_saptune=True),
    "sas-anf-rhel9-tuned": lambda: sas_anf("sas-anf-rhel9-tuned", "modules-load", hostname="sasgrid06",
                                           rhel9_tuned=True),
    "azure-m416-kernel-6.12": lambda: azure_m("azure-m416-kernel-6.12", rebooted=False, kernel=M416_KERNEL,
                                              nodes=M416_NODES, os_key="sles16", master_queues=False,
                                              hostname="hanadb416"),
    "bigip-ve-esxi": bigip_ve,
    "azure-ubuntu-next-kernel-6.14": lambda: azure_m(
        "azure-ubuntu-next-kernel-6.14", rebooted=False, kernel=NEXT_KERNEL_RUNNING, nodes=M128_NODES,
        os_key="ubuntu2404", master_queues=False, hostname="hanadb128", master_runtime=8, ubuntu=True,
        extra=lambda r: ubuntu_boot_files(r, [NEXT_KERNEL_PENDING, NEXT_KERNEL_RUNNING])),
    "azure-m-pinned-oneshot": lambda: azure_m("azure-m-pinned-oneshot", rebooted=False, hostname="hanadb02"),
    "azure-m-pinned-udev": lambda: azure_m("azure-m-pinned-udev", rebooted=False, hostname="hanadb03",
                                           irq_pinning="udev"),
}


def main(argv: list[str]) -> int:
    names = argv or list(BUILDERS)
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        print(f"unknown example(s): {', '.join(unknown)}; known: {', '.join(BUILDERS)}", file=sys.stderr)
        return 1
    for n in names:
        BUILDERS[n]()
        print(f"wrote {os.path.relpath(os.path.join(EXAMPLES, n))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
