#!/usr/bin/env python3
"""Write the named scenario snapshots under tests/scenarios/<kind>/<what>.<status>/.

The scenarios are plain data (scenario.yaml + a tiny root/ tree) and may be edited by hand;
this script is how they were produced, reusing the sysfs/procfs shapes of
tests/snapshots/build_examples.py (kernel layout of proc/interrupts, sysfs device links,
esxcli output, .vmx files). It rewrites only the scenarios it defines and leaves any other
directory alone. Stdlib + PyYAML; deterministic.

    python3 tests/scenarios/build_scenarios.py            # all
    python3 tests/scenarios/build_scenarios.py sysctl     # one kind

scenario.yaml keys (read by tests/test_scenarios.py):
  check:    check id evaluated (the only check of the scan)
  profile:  profile whose vars and scope apply (default: auto)
  vars:     overrides of the check's variables
  scope:    replaces the profile's scope (like a tailoring's scope)
  objects:  {object: status} expected per object
  xfail:    reason: a known scanner bug; the test is a strict xfail
"""
from __future__ import annotations

import os
import random
import re
import shutil
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "snapshots"))
import build_examples as bx  # noqa: E402

SCENARIOS: dict[str, list] = {}


def scenario(kind: str):
    def register(fn):
        SCENARIOS.setdefault(kind, []).append(fn)
        return fn
    return register


class Root(bx.Root):
    """A scenario directory: scenario.yaml next to the root/ tree."""

    def __init__(self, kind: str, name: str, check: str, description: str, **meta):
        self.name = name
        self.dir = os.path.join(HERE, kind, name)
        if os.path.lexists(self.dir):
            shutil.rmtree(self.dir)
        self.path = os.path.join(self.dir, "root")
        os.makedirs(self.path)
        doc = {"description": description, "check": check}
        doc.update({k: v for k, v in meta.items() if v is not None})
        with open(os.path.join(self.dir, "scenario.yaml"), "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f, sort_keys=False, width=100, default_flow_style=None)


# --------------------------------------------------------------------------------------
# building blocks
# --------------------------------------------------------------------------------------

AZ_KERNEL = "5.14.21-150400.24.81-default"
RHEL84_KERNEL = "4.18.0-305.el8.x86_64"
VM_KERNEL = "4.18.0-372.9.1.el8.x86_64"
NODES16 = {0: list(range(0, 8)), 1: list(range(8, 16))}
# an M-series-like topology: 16 CPUs per node, so 16 queues are within nic-queue-count's node limit
NODES32 = {0: list(range(0, 16)), 1: list(range(16, 32))}

OS = {
    "sles15sp4": 'NAME="SLES"\nVERSION="15-SP4"\nVERSION_ID="15.4"\nPRETTY_NAME="SUSE Linux Enterprise Server 15 SP4"\nID="sles"\nID_LIKE="suse"\n',
    "sles12sp5": 'NAME="SLES"\nVERSION="12-SP5"\nVERSION_ID="12.5"\nPRETTY_NAME="SUSE Linux Enterprise Server 12 SP5"\nID="sles"\n',
    "rhel84": 'NAME="Red Hat Enterprise Linux"\nVERSION="8.4 (Ootpa)"\nID="rhel"\nID_LIKE="fedora"\nVERSION_ID="8.4"\nPRETTY_NAME="Red Hat Enterprise Linux 8.4 (Ootpa)"\n',
    "rhel82": 'NAME="Red Hat Enterprise Linux"\nVERSION="8.2 (Ootpa)"\nID="rhel"\nID_LIKE="fedora"\nVERSION_ID="8.2"\nPRETTY_NAME="Red Hat Enterprise Linux 8.2 (Ootpa)"\n',
    "rhel86": 'NAME="Red Hat Enterprise Linux"\nVERSION="8.6 (Ootpa)"\nID="rhel"\nID_LIKE="fedora"\nVERSION_ID="8.6"\nPRETTY_NAME="Red Hat Enterprise Linux 8.6 (Ootpa)"\n',
    "rhel10": 'NAME="Red Hat Enterprise Linux"\nVERSION="10.0 (Coughlan)"\nID="rhel"\nID_LIKE="centos fedora"\nVERSION_ID="10.0"\nPRETTY_NAME="Red Hat Enterprise Linux 10.0 (Coughlan)"\n',
    "ubuntu2004": 'NAME="Ubuntu"\nVERSION="20.04.6 LTS (Focal Fossa)"\nID=ubuntu\nID_LIKE=debian\nPRETTY_NAME="Ubuntu 20.04.6 LTS"\nVERSION_ID="20.04"\n',
}


def azure_host(r: Root, *, kernel: str = AZ_KERNEL, os_key: str = "sles15sp4", nodes=None) -> None:
    r.value("proc/sys/kernel/hostname", "azvm01")
    r.value("proc/sys/kernel/osrelease", kernel)
    r.write("etc/os-release", OS[os_key])
    r.value("sys/class/dmi/id/sys_vendor", "Microsoft Corporation")
    r.value("sys/class/dmi/id/product_name", "Virtual Machine")
    r.value("sys/class/dmi/id/chassis_asset_tag", bx.AZURE_ASSET_TAG)
    bx.topology(r, nodes or NODES16)
    mountinfo(r, [])


def vmware_host(r: Root, *, nodes=None) -> None:
    r.value("proc/sys/kernel/hostname", "hanavm01")
    r.value("proc/sys/kernel/osrelease", VM_KERNEL)
    r.write("etc/os-release", OS["rhel86"])
    r.value("sys/class/dmi/id/sys_vendor", "VMware, Inc.")
    r.value("sys/class/dmi/id/product_name", "VMware7,1")
    r.value("sys/class/dmi/id/chassis_asset_tag", "No Asset Tag")
    bx.topology(r, nodes or NODES16)
    mountinfo(r, [])


def ncpu_of(nodes) -> int:
    return max(c for cpus in nodes.values() for c in cpus) + 1


VF_DOMAIN = 1
VF_BDF = "0001:00:02.0"


def an_pair(r: Root, *, synth="eth0", vf="enP1s1", domain=VF_DOMAIN, numa=0, msi=(), vf_driver=bx.MLX5_DRIVER,
            synth_state="up", vf_state="up", guid_tail="01", lower_link=True) -> tuple[str, str, str]:
    """hv_netvsc `synth` on VMBus and its SR-IOV VF on a Hyper-V vPCI bus (sysfs shape)."""
    synth_dev = f"{bx.VMBUS}/000d3a2e-9c41-000d-3a2e-9c41000d3a{guid_tail}"
    synth_net = bx.net_device(r, synth, synth_dev, bx.HV_NETVSC_DRIVER, numa=numa, msi=[], operstate=synth_state)
    bdf = f"{domain:04x}:00:02.0"
    vf_dev = f"{bx.VMBUS}/4d2a7e90-7870-4c8e-a7f2-6045bd9c1e{guid_tail}/pci{domain:04x}:00/{bdf}"
    vf_net = bx.net_device(r, vf, vf_dev, vf_driver, numa=numa, msi=list(msi), operstate=vf_state)
    r.rel_symlink(f"{vf_net}/master", synth_net)
    r.rel_symlink(f"{vf_net}/upper_{synth}", synth_net)
    if lower_link:
        r.rel_symlink(f"{synth_net}/lower_{vf}", vf_net)
    return synth_net, vf_net, bdf


def hv_netvsc_only(r: Root, name="eth0", state="up", guid_tail="02") -> str:
    dev = f"{bx.VMBUS}/000d3a2e-b5f7-000d-3a2e-b5f7000d3a{guid_tail}"
    return bx.net_device(r, name, dev, bx.HV_NETVSC_DRIVER, numa=0, msi=[], operstate=state)


def vmxnet3_nic(r: Root, ifname="ens192", bus=0x0b, bridge="0000:00:15.0", msi=(), numa=-1) -> str:
    bdf = f"0000:{bus:02x}:00.0"
    bx.net_device(r, ifname, f"sys/devices/pci0000:00/{bridge}/{bdf}", bx.VMXNET3_DRIVER, numa=numa, msi=list(msi))
    return bdf


def interrupts(r: Root, nodes, rows: list[tuple[int, list[int], str, str]], *, hyperv=True,
               affinity: dict[int, tuple[list[int], list[int] | None]] | None = None) -> None:
    """proc/interrupts in the kernel's layout plus proc/irq/<n>/*affinity_list.

    rows: (irq, CPUs it was delivered to, chip, action name)."""
    rng = random.Random(r.name)
    ncpu = ncpu_of(nodes)
    irqs = bx.legacy_irqs(rng, ncpu, 86400)[:2]
    for i, (irq, cpus, chip, name) in enumerate(rows):
        irqs.append(bx.Irq(irq, chip, bx.msi_hwirq(VF_DOMAIN, 0, 0x10, i), "edge", name,
                           bx.counts_on(rng, ncpu, cpus, 90000)))
    bx.proc_interrupts(r, rng, ncpu, irqs, hyperv=hyperv, uptime_s=86400)
    for irq, (smp, eff) in (affinity or {}).items():
        bx.irq_affinity(r, irq, smp, eff)


def mlx5_rows(first: int, bdf: str, ncomp: int, *, async_name="mlx5_async0", placement=None):
    """async (control) + `ncomp` completion vectors; placement: comp index -> CPU list."""
    rows = [(first, [0], "Hyper-V PCIe MSI", f"{async_name}@pci:{bdf}")]
    for i in range(ncomp):
        cpus = placement[i] if placement else [2 + i % 6]
        rows.append((first + 1 + i, cpus, "Hyper-V PCIe MSI", f"mlx5_comp{i}@pci:{bdf}"))
    return rows


def affinity_of(rows, *, control_cpus=None, override=None, effective=True):
    """smp/effective affinity: each row pinned to the CPUs it was delivered to."""
    out = {}
    for k, (irq, cpus, _chip, _name) in enumerate(rows):
        smp = cpus if k or control_cpus is None else control_cpus
        out[irq] = (smp, [smp[0]] if effective else None)
    out.update(override or {})
    return out


def ethtool_vf(r: Root, vf="enP1s1", bdf=VF_BDF, combined=16, combined_max=32, **drop) -> None:
    data = bx.ethtool_mlx5("5.14.21", "16.30.1004 (MSF0010110035)", bdf, combined, combined_max)
    for k in drop:
        data.pop(k, None)
    r.json(f"ethtool/{vf}.json", data)


def az_mlx5_host(r: Root, *, ncomp=8, combined=8, placement=None, nodes=None, numa=0, kernel=AZ_KERNEL,
                 os_key="sles15sp4", async_name="mlx5_async0", control_cpus=None, override=None,
                 effective=True) -> list[tuple]:
    azure_host(r, kernel=kernel, os_key=os_key, nodes=nodes)
    msi = list(range(24, 24 + 1 + ncomp))
    _, _, bdf = an_pair(r, numa=numa, msi=msi)
    rows = mlx5_rows(24, bdf, ncomp, async_name=async_name, placement=placement)
    interrupts(r, nodes or NODES16, rows,
               affinity=affinity_of(rows, control_cpus=control_cpus, override=override, effective=effective))
    r.json("ethtool/eth0.json", bx.ethtool_hv_netvsc(kernel, combined, 64))
    ethtool_vf(r, bdf=bdf, combined=combined, combined_max=ncomp)
    return rows


def mountinfo(r: Root, nfs_lines: list[str]) -> None:
    bx.mountinfo(r, [
        "23 1 8:4 / / rw,relatime shared:1 - xfs /dev/sda4 rw,attr2,inode64,logbufs=8,logbsize=32k,noquota",
        "22 23 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw",
        "21 23 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw",
        "74 21 0:47 / /var/lib/nfs/rpc_pipefs rw,relatime shared:39 - rpc_pipefs sunrpc rw",
    ] + nfs_lines)


SUPER = ("rw,vers=3,rsize=65536,wsize=65536,namlen=255,acdirmin=0,hard,proto=tcp,nconnect=8,timeo=600,"
         "retrans=2,sec=sys,mountaddr=10.0.2.4,mountvers=3,mountport=635,mountproto=tcp,local_lock=none,"
         "addr=10.0.2.4")


def nfs_line(mnt="/sasdata", *, minor=52, per_mount="rw,noatime,nodiratime", super_opts=SUPER, mount_id=120,
             fstype="nfs", source=None) -> str:
    source = source or f"10.0.2.4:{mnt}"
    return f"{mount_id} 23 0:{minor} / {mnt} {per_mount} shared:80 - {fstype} {source} {super_opts}"


FSTAB_HEAD = ("/dev/mapper/rootvg-rootlv /                       xfs     defaults        0 0\n"
              "UUID=1f3e5a7c-9b2d-4c6e-8a0f-2b4d6e8f0a1c /boot                   xfs     defaults        0 0\n")
FSTAB_OPTS = "bg,rw,hard,rsize=65536,wsize=65536,vers=3,noatime,nodiratime,rdirplus,acdirmin=0,tcp,_netdev,nconnect=8"


def fstab(r: Root, *entries: str) -> None:
    r.write("etc/fstab", FSTAB_HEAD + "".join(e + "\n" for e in entries))


def nfs_host(r: Root, *, kernel=RHEL84_KERNEL, os_key="rhel84", lines=None, fstab_entries=None) -> None:
    azure_host(r, kernel=kernel, os_key=os_key)
    mountinfo(r, [nfs_line()] if lines is None else lines)
    if fstab_entries is not None:
        fstab(r, *fstab_entries)


def sunrpc_runtime(r: Root, slot=128, max_slot=128) -> None:
    r.value("proc/sys/sunrpc/tcp_slot_table_entries", slot)
    r.value("proc/sys/sunrpc/tcp_max_slot_table_entries", max_slot)


def sysctl_file(r: Root, rel: str, slot=128, max_slot=128, comment="SAS Grid on ANF") -> None:
    body = f"# {comment}\n"
    if max_slot is not None:
        body += f"sunrpc.tcp_max_slot_table_entries = {max_slot}\n"
    if slot is not None:
        body += f"sunrpc.tcp_slot_table_entries = {slot}\n"
    r.write(rel, body)


IRQBALANCE_UNIT = bx.UNITS["irqbalance.service"]


# --------------------------------------------------------------------------------------
# sysctl
# --------------------------------------------------------------------------------------

def sunrpc_scn(name, check, desc, early=True, **meta) -> Root:
    """A RHEL 8.4 Azure host. `early`: sunrpc is listed in etc/modules-load.d, so it is
    loaded before systemd-sysctl and sysctl files reach its keys (the scenarios about
    sysctl file precedence need that; the boot-prediction ones set early=False)."""
    r = Root("sysctl", name, check, desc, **meta)
    azure_host(r, kernel=RHEL84_KERNEL, os_key="rhel84")
    mountinfo(r, [])
    if early:
        r.write("etc/modules-load.d/sunrpc.conf", "# load sunrpc before systemd-sysctl\nsunrpc\n")
    return r


def tuned_runs(r: Root, profile: str | None = "throughput-performance", reapply: str | None = None) -> None:
    """tuned.service enabled with an active profile; reapply: tuned-main.conf reapply_sysctl."""
    bx.install_units(r, ["tuned.service"])
    bx.enable(r, "tuned.service")
    if profile:
        r.write("etc/tuned/active_profile", profile + "\n")
        r.write("usr/lib/tuned/throughput-performance/tuned.conf", bx.THROUGHPUT_PERFORMANCE)
    if reapply is not None:
        r.write("etc/tuned/tuned-main.conf", "# tuned-main.conf(5)\ndaemon = 1\ndynamic_tuning = 0\n"
                f"reapply_sysctl = {reapply}\n")


# nfs-utils systemd/60-nfs.rules (nfs-utils 2.6.3, commit 9466df03 "systemd: Apply all sysctl
# settings through udev rule when NFS-related modules are loaded"), the sunrpc rule verbatim
NFS_UTILS_60_NFS_RULES = (
    "# Ensure all NFS systctl settings get applied when modules load\n\n"
    "# sunrpc module supports \"sunrpc.*\" sysctls\n"
    "ACTION==\"add\", SUBSYSTEM==\"module\", KERNEL==\"sunrpc\", \\\n"
    "  RUN+=\"/sbin/sysctl -q --pattern ^sunrpc --system\"\n\n"
    "# lockd module supports \"fs.nfs.nlm*\" and \"fs.nfs.nsm*\" sysctls\n"
    "ACTION==\"add\", SUBSYSTEM==\"module\", KERNEL==\"lockd\", \\\n"
    "  RUN+=\"/sbin/sysctl -q --pattern ^fs.nfs.n[sl]m --system\"\n")
# nfs-utils 2.6.2 systemd/50-nfs.conf (commit afc7132d, installed in modprobe.d; reverted in 2.6.3)
NFS_UTILS_50_NFS_CONF = (
    "# Ensure all NFS systctl settings get applied when modules load\n\n"
    "# sunrpc module supports \"sunrpc.*\" sysctls\n"
    "install sunrpc /sbin/modprobe --ignore-install sunrpc $CMDLINE_OPTS && /sbin/sysctl -q --pattern sunrpc "
    "--system\n")
BOTH = {"sunrpc.tcp_max_slot_table_entries": "fail", "sunrpc.tcp_slot_table_entries": "fail"}


def seed003_sysctl_conf(r: Root) -> None:
    """Seed 003: "add the following tunables to /etc/sysctl.conf", on RHEL 8, which ships
    etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf (systemd-sysctl reads it)."""
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.conf", comment="seed 003: RPC Slot Table Tuning")
    r.symlink("etc/sysctl.d/99-sysctl.conf", "../sysctl.conf")


def _sunrpc_boot(P: str) -> None:
    """docs/snapshot-contract.md "Persistence": sunrpc.* reaches the module at boot only when it is loaded
    before systemd-sysctl or a hook re-applies sysctl files when it loads."""
    r = sunrpc_scn("sunrpc_sysctl_conf_only.fail", P,
                   "seed 003 verbatim: sunrpc.* only in etc/sysctl.conf (read by systemd-sysctl through the RHEL "
                   "99-sysctl.conf link), but sunrpc loads after systemd-sysctl and nothing re-applies it: the slot "
                   "tables come back at the module defaults 2 and 65536", early=False, objects=BOTH)
    seed003_sysctl_conf(r)

    r = sunrpc_scn("sunrpc_nfs_utils_udev_hook.pass", P,
                   "seed 003's etc/sysctl.conf plus nfs-utils >= 2.6.3 usr/lib/udev/rules.d/60-nfs.rules: "
                   "`sysctl -q --pattern ^sunrpc --system` runs when sunrpc loads", early=False)
    seed003_sysctl_conf(r)
    r.write("usr/lib/udev/rules.d/60-nfs.rules", NFS_UTILS_60_NFS_RULES)

    r = sunrpc_scn("sunrpc_udev_hook_applies_unlinked_sysctl_conf.pass", P,
                   "no 99-sysctl.conf link (systemd-sysctl would ignore etc/sysctl.conf), but the udev hook runs "
                   "procps `sysctl --system`, which reads etc/sysctl.conf last", early=False)
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.conf")
    r.write("usr/lib/udev/rules.d/60-nfs.rules", NFS_UTILS_60_NFS_RULES)

    r = sunrpc_scn("sunrpc_hook_masked.fail", P,
                   "60-nfs.rules is installed but masked by etc/udev/rules.d/60-nfs.rules -> /dev/null: no hook",
                   early=False, objects=BOTH)
    seed003_sysctl_conf(r)
    r.write("usr/lib/udev/rules.d/60-nfs.rules", NFS_UTILS_60_NFS_RULES)
    r.symlink("etc/udev/rules.d/60-nfs.rules", "/dev/null")

    r = sunrpc_scn("sunrpc_udev_hook_pattern_excludes_sunrpc.fail", P,
                   "a hook whose --pattern (^fs.nfs) does not select sunrpc keys applies none of them",
                   early=False, objects=BOTH)
    seed003_sysctl_conf(r)
    r.write("etc/udev/rules.d/60-nfs-local.rules", 'ACTION=="add", SUBSYSTEM=="module", KERNEL=="sunrpc", '
                                                   'RUN+="/sbin/sysctl -q --pattern ^fs.nfs --system"\n')

    r = sunrpc_scn("sunrpc_udev_hook_systemd_sysctl_prefix.pass", P,
                   "a udev rule runs systemd-sysctl --prefix=/sunrpc when sunrpc loads; etc/sysctl.d sets 128",
                   early=False)
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.d/90-sas-anf.conf")
    r.write("etc/udev/rules.d/60-sunrpc.rules", 'ACTION=="add", SUBSYSTEM=="module", KERNEL=="sunrpc", '
                                                'RUN+="/usr/lib/systemd/systemd-sysctl --prefix=/sunrpc"\n')

    r = sunrpc_scn("sunrpc_modules_load_d.pass", P,
                   "seed 003's etc/sysctl.conf plus etc/modules-load.d/sunrpc.conf: systemd-modules-load loads "
                   "sunrpc before systemd-sysctl", early=False)
    seed003_sysctl_conf(r)
    r.write("etc/modules-load.d/sunrpc.conf", "sunrpc\n")

    r = sunrpc_scn("sunrpc_modules_load_d_masked.fail", P,
                   "usr/lib/modules-load.d/sunrpc.conf is masked by etc/modules-load.d/sunrpc.conf -> /dev/null",
                   early=False, objects=BOTH)
    seed003_sysctl_conf(r)
    r.write("usr/lib/modules-load.d/sunrpc.conf", "sunrpc\n")
    r.symlink("etc/modules-load.d/sunrpc.conf", "/dev/null")

    r = sunrpc_scn("sunrpc_builtin.pass", P,
                   "sunrpc is built into the kernel (modules.builtin lists kernel/net/sunrpc/sunrpc.ko): its keys "
                   "exist when systemd-sysctl runs", early=False)
    seed003_sysctl_conf(r)
    r.write(f"lib/modules/{RHEL84_KERNEL}/modules.builtin", "kernel/fs/nfs_common/grace.ko\n"
                                                           "kernel/net/sunrpc/sunrpc.ko\n")

    r = sunrpc_scn("sunrpc_modprobe_install_line.pass", P,
                   "nfs-utils 2.6.2's usr/lib/modprobe.d/50-nfs.conf: `install sunrpc /sbin/modprobe "
                   "--ignore-install sunrpc && /sbin/sysctl -q --pattern sunrpc --system`", early=False)
    seed003_sysctl_conf(r)
    r.write("usr/lib/modprobe.d/50-nfs.conf", NFS_UTILS_50_NFS_CONF)

    r = sunrpc_scn("sunrpc_modprobe_install_without_sysctl.fail", P,
                   "an install line that loads sunrpc but runs no sysctl re-applies nothing",
                   early=False, objects=BOTH)
    seed003_sysctl_conf(r)
    r.write("etc/modprobe.d/sunrpc.conf", "install sunrpc /sbin/modprobe --ignore-install sunrpc $CMDLINE_OPTS\n")

    r = sunrpc_scn("sunrpc_modprobe_options_at_load.pass", P,
                   "modprobe.d `options sunrpc` applies when sunrpc loads, whenever that is", early=False)
    sunrpc_runtime(r)
    r.write("etc/modprobe.d/sunrpc.conf",
            "options sunrpc tcp_slot_table_entries=128 tcp_max_slot_table_entries=128\n")

    r = sunrpc_scn("sunrpc_tuned_sysctl_not_counted.fail", P,
                   "the active tuned profile's [sysctl] sets 128, but tuned is not ordered after the NFS mounts "
                   "that load sunrpc: it does not count", early=False, objects=BOTH)
    sunrpc_runtime(r)
    tuned_runs(r, profile="sas-anf")
    r.write("etc/tuned/sas-anf/tuned.conf", "[main]\ninclude=throughput-performance\n\n[sysctl]\n"
                                           "sunrpc.tcp_slot_table_entries=128\nsunrpc.tcp_max_slot_table_entries=128\n")
    r.write("usr/lib/tuned/throughput-performance/tuned.conf", bx.THROUGHPUT_PERFORMANCE)

    r = sunrpc_scn("sunrpc_tuned_sysctl_with_modules_load.pass", P,
                   "the same tuned profile with sunrpc in etc/modules-load.d: loaded before tuned starts, so it "
                   "counts", early=False)
    sunrpc_runtime(r)
    tuned_runs(r, profile="sas-anf")
    r.write("etc/tuned/sas-anf/tuned.conf", "[main]\ninclude=throughput-performance\n\n[sysctl]\n"
                                           "sunrpc.tcp_slot_table_entries=128\nsunrpc.tcp_max_slot_table_entries=128\n")
    r.write("usr/lib/tuned/throughput-performance/tuned.conf", bx.THROUGHPUT_PERFORMANCE)
    r.write("etc/modules-load.d/sunrpc.conf", "sunrpc\n")


@scenario("sysctl")
def _sysctl():
    P = "sunrpc-slot-table-persistent"
    r = sunrpc_scn("runtime_correct.pass", "sunrpc-slot-table", "both slot tables are 128 in proc/sys")
    sunrpc_runtime(r)

    r = sunrpc_scn("runtime_wrong.fail", "sunrpc-slot-table", "RHEL default tcp_max_slot_table_entries 65536",
                   objects={"sunrpc.tcp_max_slot_table_entries": "fail", "sunrpc.tcp_slot_table_entries": "pass"})
    sunrpc_runtime(r, max_slot=65536)

    sunrpc_scn("sunrpc_not_loaded_no_nfs.notapplicable", "sunrpc-slot-table",
               "no proc/sys/sunrpc and no NFS mount: the check does not apply")
    sunrpc_scn("sunrpc_not_loaded_no_nfs_persistent.notapplicable", P,
               "no proc/sys/sunrpc and no NFS mount: the persistent form does not apply either")

    r = Root("sysctl", "module_not_loaded.error", "sunrpc-slot-table",
             "an NFS mount is listed but proc/sys/sunrpc is missing: cannot decide",
             objects={"sunrpc.tcp_slot_table_entries": "error"})
    nfs_host(r)

    r = sunrpc_scn("sysctl_d_correct.pass", P, "etc/sysctl.d sets both to 128")
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.d/90-sas-anf.conf")

    r = sunrpc_scn("not_configured.fail", P, "runtime is right but nothing configures it for boot",
                   objects={"sunrpc.tcp_max_slot_table_entries": "fail", "sunrpc.tcp_slot_table_entries": "fail"})
    sunrpc_runtime(r)
    r.write("etc/sysctl.d/50-other.conf", "vm.swappiness = 10\n")

    # sysctl.conf(5) (procps-ng): "If you are using systemd-sysctl(8) ... it won't use the file
    # /etc/sysctl.conf"; procps `sysctl --system` reads it last (sysctl.c PreloadSystem()).
    r = sunrpc_scn("sysctl_conf_without_99_link_ignored_at_boot.fail", P,
                   "only etc/sysctl.conf sets 128 (as seed 003 says), no sysctl.d link brings it to "
                   "systemd-sysctl and tuned does not run: nothing sets it at boot",
                   objects={"sunrpc.tcp_max_slot_table_entries": "fail", "sunrpc.tcp_slot_table_entries": "fail"})
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.conf")

    r = sunrpc_scn("sysctl_conf_through_99_link.pass", P,
                   "etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf (the RHEL/Debian link) brings etc/sysctl.conf "
                   "(128) to systemd-sysctl")
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.conf")
    r.symlink("etc/sysctl.d/99-sysctl.conf", "../sysctl.conf")

    r = sunrpc_scn("sysctl_conf_link_applies_at_its_name.fail", P,
                   "etc/sysctl.conf (128) comes through 99-sysctl.conf, but usr/lib/sysctl.d/99-zz-vendor.conf "
                   "(65536) sorts after that name and wins",
                   objects={"sunrpc.tcp_max_slot_table_entries": "fail", "sunrpc.tcp_slot_table_entries": "pass"})
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.conf")
    r.symlink("etc/sysctl.d/99-sysctl.conf", "../sysctl.conf")
    sysctl_file(r, "usr/lib/sysctl.d/99-zz-vendor.conf", slot=None, max_slot=65536, comment="vendor")

    r = sunrpc_scn("procps_applies_sysctl_conf_last.fail", P,
                   "etc/sysctl.d/90 says 128 (systemd-sysctl), but tuned's reapply_sysctl runs sysctl --system, "
                   "which applies the unlinked etc/sysctl.conf (65536) last: the consumers disagree",
                   objects={"sunrpc.tcp_max_slot_table_entries": "fail", "sunrpc.tcp_slot_table_entries": "pass"})
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.d/90-sas-anf.conf")
    r.write("etc/sysctl.conf", "# old tuning\nsunrpc.tcp_max_slot_table_entries=65536\n")
    tuned_runs(r)

    r = sunrpc_scn("procps_and_systemd_sysctl_agree.pass", P,
                   "etc/sysctl.d/90 and the unlinked etc/sysctl.conf both say 128: systemd-sysctl and tuned's "
                   "sysctl --system leave the same value")
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.d/90-sas-anf.conf")
    sysctl_file(r, "etc/sysctl.conf")
    tuned_runs(r)

    r = sunrpc_scn("tuned_reapply_sysctl_0_skips_sysctl_conf.pass", P,
                   "tuned-main.conf reapply_sysctl = 0: tuned does not run sysctl --system, so the unlinked "
                   "etc/sysctl.conf (65536) is applied by no one; sysctl.d says 128")
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.d/90-sas-anf.conf")
    sysctl_file(r, "etc/sysctl.conf", slot=2, max_slot=65536, comment="old")
    tuned_runs(r, reapply="0")

    r = sunrpc_scn("etc_shadows_usr_lib_same_name.pass", P,
                   "usr/lib/sysctl.d/50-sunrpc.conf (65536) is replaced by etc/sysctl.d/50-sunrpc.conf (128)")
    sunrpc_runtime(r)
    sysctl_file(r, "usr/lib/sysctl.d/50-sunrpc.conf", slot=2, max_slot=65536, comment="vendor default")
    sysctl_file(r, "etc/sysctl.d/50-sunrpc.conf")

    r = sunrpc_scn("etc_shadows_usr_lib_same_name_wrong.fail", P,
                   "usr/lib/sysctl.d/50-sunrpc.conf (128) is replaced by etc/sysctl.d/50-sunrpc.conf (65536)",
                   objects={"sunrpc.tcp_max_slot_table_entries": "fail", "sunrpc.tcp_slot_table_entries": "fail"})
    sunrpc_runtime(r)
    sysctl_file(r, "usr/lib/sysctl.d/50-sunrpc.conf")
    sysctl_file(r, "etc/sysctl.d/50-sunrpc.conf", slot=2, max_slot=65536, comment="local override")

    r = sunrpc_scn("two_sysctl_d_conflicting.fail", P,
                   "etc/sysctl.d/10-sas.conf says 128, etc/sysctl.d/99-vendor.conf (later name) says 65536",
                   objects={"sunrpc.tcp_max_slot_table_entries": "fail"})
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.d/10-sas.conf")
    sysctl_file(r, "etc/sysctl.d/99-vendor.conf", slot=None, max_slot=65536)

    r = sunrpc_scn("two_sysctl_d_later_name_right.pass", P,
                   "etc/sysctl.d/10-vendor.conf says 65536, etc/sysctl.d/90-sas.conf (later name) says 128")
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.d/10-vendor.conf", slot=2, max_slot=65536)
    sysctl_file(r, "etc/sysctl.d/90-sas.conf")

    r = sunrpc_scn("usr_lib_later_name_beats_etc.fail", P,
                   "names are merged across directories: usr/lib/sysctl.d/99-x.conf (65536) sorts after "
                   "etc/sysctl.d/50-sas.conf (128)", objects={"sunrpc.tcp_max_slot_table_entries": "fail"})
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.d/50-sas.conf")
    sysctl_file(r, "usr/lib/sysctl.d/99-x.conf", slot=None, max_slot=65536)

    r = sunrpc_scn("modprobe_options_only.pass", P, "options sunrpc in etc/modprobe.d sets both to 128")
    sunrpc_runtime(r)
    r.write("etc/modprobe.d/sunrpc.conf",
            "options sunrpc tcp_slot_table_entries=128 tcp_max_slot_table_entries=128\n")

    r = sunrpc_scn("modprobe_overridden_by_sysctl_d.fail", P,
                   "modprobe.d sets tcp_max_slot_table_entries=128 but a sysctl.d file (applied later) sets 65536",
                   objects={"sunrpc.tcp_max_slot_table_entries": "fail", "sunrpc.tcp_slot_table_entries": "pass"})
    sunrpc_runtime(r)
    r.write("etc/modprobe.d/sunrpc.conf", "options sunrpc tcp_max_slot_table_entries=128\n")
    sysctl_file(r, "etc/sysctl.d/90-nfs.conf", slot=128, max_slot=65536)

    r = sunrpc_scn("modprobe_wrong_sysctl_d_right.pass", P,
                   "modprobe.d sets 65536, sysctl.d overrides it with 128")
    sunrpc_runtime(r)
    r.write("etc/modprobe.d/sunrpc.conf", "options sunrpc tcp_max_slot_table_entries=65536\n")
    sysctl_file(r, "etc/sysctl.d/90-sas-anf.conf")

    r = sunrpc_scn("modprobe_etc_shadows_usr_lib_same_name.pass", P,
                   "etc/modprobe.d/50-sunrpc.conf (128) replaces usr/lib/modprobe.d/50-sunrpc.conf (65536) of "
                   "the same name (modprobe.d(5))")
    sunrpc_runtime(r)
    r.write("usr/lib/modprobe.d/50-sunrpc.conf", "options sunrpc tcp_slot_table_entries=2 "
                                                 "tcp_max_slot_table_entries=65536\n")
    r.write("etc/modprobe.d/50-sunrpc.conf", "options sunrpc tcp_slot_table_entries=128 "
                                             "tcp_max_slot_table_entries=128\n")

    r = sunrpc_scn("vendor_file_masked_with_dev_null.pass", P,
                   "usr/lib/sysctl.d/99-vendor.conf (65536) is masked by etc/sysctl.d/99-vendor.conf -> /dev/null "
                   "(sysctl.d(5)); etc/sysctl.d/90-sas-anf.conf sets 128")
    sunrpc_runtime(r)
    sysctl_file(r, "etc/sysctl.d/90-sas-anf.conf")
    sysctl_file(r, "usr/lib/sysctl.d/99-vendor.conf", slot=2, max_slot=65536)
    r.symlink("etc/sysctl.d/99-vendor.conf", "/dev/null")

    _sunrpc_boot(P)

    D = "vm-dirty-settings-persistent"
    r = Root("sysctl", "dirty_runtime_correct.pass", "vm-dirty-settings", "NFS mounted; dirty settings at runtime")
    nfs_host(r)
    r.value("proc/sys/vm/dirty_bytes", 31457280)
    r.value("proc/sys/vm/dirty_expire_centisecs", 100)
    r.value("proc/sys/vm/dirty_writeback_centisecs", 300)

    r = Root("sysctl", "dirty_runtime_defaults.fail", "vm-dirty-settings", "kernel defaults (dirty_bytes 0)",
             objects={"vm.dirty_bytes": "fail", "vm.dirty_expire_centisecs": "fail",
                      "vm.dirty_writeback_centisecs": "fail"})
    nfs_host(r)
    r.value("proc/sys/vm/dirty_bytes", 0)
    r.value("proc/sys/vm/dirty_expire_centisecs", 3000)
    r.value("proc/sys/vm/dirty_writeback_centisecs", 500)

    r = Root("sysctl", "dirty_not_configured_kernel_default.fail", D,
             "nothing sets vm.dirty_* for boot: they come back at the kernel defaults (dirty_bytes 0, "
             "dirty_expire_centisecs 3000, dirty_writeback_centisecs 500; mm/page-writeback.c)",
             objects={"vm.dirty_bytes": "fail", "vm.dirty_expire_centisecs": "fail",
                      "vm.dirty_writeback_centisecs": "fail"})
    nfs_host(r)
    r.write("etc/sysctl.d/50-other.conf", "vm.swappiness = 10\n")
    r = Root("sysctl", "tuned_profile_sysctl_via_include.pass", D,
             "active tuned profile sas-performance includes sas-base, whose [sysctl] sets the dirty values")
    nfs_host(r)
    r.write("etc/tuned/active_profile", "sas-performance\n")
    r.write("etc/tuned/sas-performance/tuned.conf", "[main]\nsummary=SAS on ANF\ninclude=sas-base\n")
    r.write("etc/tuned/sas-base/tuned.conf", "[main]\nsummary=SAS base\ninclude=throughput-performance\n\n[sysctl]\n"
            "vm.dirty_bytes = 31457280\nvm.dirty_expire_centisecs = 100\nvm.dirty_writeback_centisecs = 300\n")
    r.write("usr/lib/tuned/throughput-performance/tuned.conf", bx.THROUGHPUT_PERFORMANCE)
    tuned_runs(r, profile=None)

    r = Root("sysctl", "tuned_value_overridden_by_sysctl_d.fail", D,
             "tuned [sysctl] sets vm.dirty_bytes but etc/sysctl.d (re-applied after tuned) sets 0",
             objects={"vm.dirty_bytes": "fail", "vm.dirty_expire_centisecs": "pass"})
    nfs_host(r)
    r.write("etc/tuned/active_profile", "sas-performance\n")
    r.write("etc/tuned/sas-performance/tuned.conf", "[main]\ninclude=throughput-performance\n\n[sysctl]\n"
            "vm.dirty_bytes = 31457280\nvm.dirty_expire_centisecs = 100\nvm.dirty_writeback_centisecs = 300\n")
    r.write("usr/lib/tuned/throughput-performance/tuned.conf", bx.THROUGHPUT_PERFORMANCE)
    r.write("etc/sysctl.d/99-dirty.conf", "vm.dirty_bytes = 0\nvm.dirty_ratio = 20\n")
    tuned_runs(r, profile=None)

    r = Root("sysctl", "tuned_service_disabled_profile_not_applied.fail", D,
             "the active profile's [sysctl] has the dirty values, but tuned.service is not enabled: nothing "
             "applies them at boot", objects={"vm.dirty_bytes": "fail"})
    nfs_host(r)
    r.write("etc/tuned/active_profile", "sas-performance\n")
    r.write("etc/tuned/sas-performance/tuned.conf", "[main]\ninclude=throughput-performance\n\n[sysctl]\n"
            "vm.dirty_bytes = 31457280\nvm.dirty_expire_centisecs = 100\nvm.dirty_writeback_centisecs = 300\n")
    r.write("usr/lib/tuned/throughput-performance/tuned.conf", bx.THROUGHPUT_PERFORMANCE)
    bx.install_units(r, ["tuned.service"])

    r = Root("sysctl", "tuned_profile_not_active.fail", D,
             "the custom profile with the dirty values exists but balanced is active")
    nfs_host(r)
    r.write("etc/tuned/active_profile", "balanced\n")
    r.write("etc/tuned/sas-performance/tuned.conf", "[main]\ninclude=throughput-performance\n\n[sysctl]\n"
            "vm.dirty_bytes = 31457280\nvm.dirty_expire_centisecs = 100\nvm.dirty_writeback_centisecs = 300\n")

    r = Root("sysctl", "slash_separated_keys.pass", D, "sysctl.d(5) keys written with / separators")
    nfs_host(r)
    r.write("etc/sysctl.d/90-dirty.conf", "vm/dirty_bytes = 31457280\nvm/dirty_expire_centisecs=100\n"
            "-vm/dirty_writeback_centisecs = 300\n")


# --------------------------------------------------------------------------------------
# service_disabled / process_absent
# --------------------------------------------------------------------------------------

def units_host(name, desc, **meta) -> Root:
    r = Root("service_disabled", name, "irqbalance-disabled-persistent", desc, **meta)
    bx.install_units(r, ["sshd.service"])
    bx.enable(r, "sshd.service")
    return r


@scenario("service_disabled")
def _service_disabled():
    r = units_host("enabled_wants_link.fail", "installed and linked from multi-user.target.wants",
                   objects={"irqbalance.service": "fail"})
    bx.install_units(r, ["irqbalance.service"])
    bx.enable(r, "irqbalance.service")

    r = units_host("enabled_lib_systemd_debian.fail", "Debian layout: unit in lib/systemd/system, enabled")
    r.write("lib/systemd/system/irqbalance.service", IRQBALANCE_UNIT)
    bx.enable(r, "irqbalance.service", where="/lib/systemd/system")

    r = units_host("masked_with_stale_wants_link.pass", "masked (-> /dev/null) beats a stale wants link")
    bx.install_units(r, ["irqbalance.service"])
    bx.enable(r, "irqbalance.service")
    r.symlink("etc/systemd/system/irqbalance.service", "/dev/null")

    r = units_host("masked_runtime.pass", "masked in run/systemd/system")
    bx.install_units(r, ["irqbalance.service"])
    r.symlink("run/systemd/system/irqbalance.service", "/dev/null")

    # systemd.unit(5) "System Unit Search Path"; systemctl(1) mask --runtime: "/run ... lost on reboot"
    r = units_host("runtime_mask_only.fail",
                   "enabled, masked only in run/systemd/system (systemctl mask --runtime): /run is emptied at boot, "
                   "so the next boot starts irqbalance", objects={"irqbalance.service": "fail"})
    bx.install_units(r, ["irqbalance.service"])
    bx.enable(r, "irqbalance.service")
    r.symlink("run/systemd/system/irqbalance.service", "/dev/null")

    r = units_host("empty_unit_file_in_etc_masks.pass",
                   "enabled, but etc/systemd/system/irqbalance.service is an empty file: an empty unit file is "
                   "masked (systemd.unit(5))")
    bx.install_units(r, ["irqbalance.service"])
    bx.enable(r, "irqbalance.service")
    r.write("etc/systemd/system/irqbalance.service", "")

    r = units_host("etc_unit_overrides_vendor_mask.fail",
                   "usr/lib/systemd/system/irqbalance.service -> /dev/null, but a real unit file of the same name "
                   "in etc/systemd/system comes first in the search path and is enabled")
    r.symlink("usr/lib/systemd/system/irqbalance.service", "/dev/null")
    r.write("etc/systemd/system/irqbalance.service", IRQBALANCE_UNIT)
    bx.enable(r, "irqbalance.service", where="/etc/systemd/system")

    r = units_host("usr_local_lib_unit_enabled.fail",
                   "unit installed in usr/local/lib/systemd/system (search path) and enabled")
    r.write("usr/local/lib/systemd/system/irqbalance.service", IRQBALANCE_UNIT)
    bx.enable(r, "irqbalance.service", where="/usr/local/lib/systemd/system")

    r = units_host("runtime_enable_only.pass",
                   "installed, wanted only from run/systemd/system/multi-user.target.wants (enable --runtime): "
                   "nothing starts it at the next boot")
    bx.install_units(r, ["irqbalance.service"])
    r.symlink("run/systemd/system/multi-user.target.wants/irqbalance.service",
              "/usr/lib/systemd/system/irqbalance.service")

    # systemd load-dropin.c process_deps(): a wants entry names the unit (link name), which must
    # load at boot; file-hierarchy(7): /run "is flushed on boot"
    r = units_host("wants_link_into_run_not_enabled_at_boot.pass",
                   "irqbalance.service exists only in run/systemd/system; an etc/systemd/system/"
                   "multi-user.target.wants link points to it: /run is empty at the next boot, so the unit "
                   "cannot be loaded and nothing starts irqbalance")
    r.write("run/systemd/system/irqbalance.service", IRQBALANCE_UNIT)
    bx.enable(r, "irqbalance.service", where="/run/systemd/system")

    r = units_host("wants_link_into_run_unit_also_in_usr_lib.fail",
                   "the etc wants link points to a runtime copy in run/systemd/system, but irqbalance.service is also "
                   "installed in usr/lib/systemd/system: systemd adds the dependency by the link's name and loads "
                   "the unit from usr/lib at the next boot, so irqbalance starts", objects={"irqbalance.service": "fail"})
    bx.install_units(r, ["irqbalance.service"])
    r.write("run/systemd/system/irqbalance.service", IRQBALANCE_UNIT)
    bx.enable(r, "irqbalance.service", where="/run/systemd/system")

    units_host("not_installed.pass", "no irqbalance unit anywhere")

    r = units_host("disabled.pass", "installed, no wants link")
    bx.install_units(r, ["irqbalance.service"])

    r = units_host("uninstalled_dangling_wants_link.pass",
                   "package removed, a dangling multi-user.target.wants link remains: systemd cannot load "
                   "the unit, so nothing starts it at boot")
    bx.enable(r, "irqbalance.service")


@scenario("process_absent")
def _process_absent():
    procs = {1: "systemd", 2: "kthreadd", 612: "systemd-journal", 1290: "sshd"}
    r = Root("process_absent", "irqbalance_running.fail", "irqbalance-disabled", "proc/1163/comm is irqbalance",
             objects={"irqbalance": "fail"})
    bx.processes(r, {**procs, 1163: "irqbalance"})
    # proc(5) "Mount options": hidepid=2 (invisible) hides other users' pid folders,
    # hidepid=1 (noaccess) lists them but denies their files
    r = Root("process_absent", "hidepid_invisible_only_own_pids.error", "irqbalance-disabled",
             "collected by a non-root user under hidepid=2: only its own pids are visible, pid 1 is not")
    bx.processes(r, {4711: "bash", 4790: "tunewatch"})
    r = Root("process_absent", "hidepid_unreadable.error", "irqbalance-disabled",
             "hidepid=1: every pid folder is listed but none of their comm files could be read")
    for pid in procs:
        r.mkdir(f"proc/{pid}")
    r = Root("process_absent", "no_pid_folders.error", "irqbalance-disabled",
             "a snapshot without any proc/<pid> folder: the process list is absent, not empty")
    r.value("proc/sys/kernel/osrelease", AZ_KERNEL)
    r = Root("process_absent", "absent.pass", "irqbalance-disabled", "no irqbalance process")
    bx.processes(r, procs)
    r = Root("process_absent", "similar_names.pass", "irqbalance-disabled",
             "irqbalance-ui and an irq/ kernel thread are not irqbalance")
    bx.processes(r, {**procs, 2001: "irqbalance-ui", 77: "irq/24-mlx5_asy"})


# --------------------------------------------------------------------------------------
# nfs_mount_options
# --------------------------------------------------------------------------------------

NFS_RT, NFS_FS = "nfs-mount-options", "nfs-mount-options-persistent"


def nfs_scn(name, check, desc, lines=None, fstab_entries=(), **meta) -> Root:
    r = Root("nfs_mount_options", name, check, desc, **meta)
    nfs_host(r, lines=lines, fstab_entries=list(fstab_entries))
    return r


def fs_entry(opts=FSTAB_OPTS, mnt="/sasdata", server="10.0.2.4:/sasdata") -> str:
    return f"{server:<18s} {mnt:<12s} nfs   {opts} 0 0"


@scenario("nfs_mount_options")
def _nfs_mount_options():
    # an applicability condition whose fact cannot be read runs the check (selectors.py), so
    # the unreadable mountinfo is reported, not hidden as "no NFS mounted"
    r = nfs_scn("mountinfo_unreadable.error", NFS_RT,
                "proc/self/mountinfo is not mountinfo (a broken copy): error, not notapplicable")
    r.write("proc/self/mountinfo", "\x7fELF\x02\x01 garbage\n")
    nfs_scn("canonical_mountinfo.pass", NFS_RT,
            "kernel-canonical options: vers=3, proto=tcp, no rdirplus shown (the default)")
    nfs_scn("nordirplus.fail", NFS_RT, "mountinfo shows nordirplus",
            lines=[nfs_line(super_opts=SUPER.replace(",hard,", ",hard,nordirplus,"))])
    nfs_scn("rsize_negotiated_down.fail", NFS_RT, "server negotiated rsize down to 32768",
            lines=[nfs_line(super_opts=SUPER.replace("rsize=65536", "rsize=32768"))],
            fstab_entries=[fs_entry()])
    nfs_scn("relatime_not_noatime.fail", NFS_RT, "per-mount options relatime instead of noatime,nodiratime",
            lines=[nfs_line(per_mount="rw,relatime")])
    nfs_scn("soft_mount.fail", NFS_RT, "soft instead of hard",
            lines=[nfs_line(super_opts=SUPER.replace(",hard,", ",soft,"))])
    nfs_scn("proto_udp.fail", NFS_RT, "proto=udp",
            lines=[nfs_line(super_opts=SUPER.replace("proto=tcp,nconnect=8", "proto=udp"))])
    nfs_scn("nfs4_vers_4_1.fail", NFS_RT, "an NFSv4.1 mount: vers=4.1",
            lines=[nfs_line(fstype="nfs4", super_opts=SUPER.replace("vers=3,", "vers=4.1,")
                            .replace(",mountaddr=10.0.2.4,mountvers=3,mountport=635,mountproto=tcp", ""))])
    nfs_scn("two_mounts_one_bad.fail", NFS_RT, "/sasdata is right, /sashome has rsize=1048576",
            lines=[nfs_line(), nfs_line("/sashome", minor=54, mount_id=122,
                                        super_opts=SUPER.replace("rsize=65536", "rsize=1048576"))],
            objects={"/sasdata": "pass", "/sashome": "fail"})
    nfs_scn("overmounted_last_visible.pass", NFS_RT,
            "a bad mount on /sasdata is hidden by a later good mount on the same path",
            lines=[nfs_line(mount_id=118, minor=50, per_mount="rw,relatime"), nfs_line()])
    nfs_scn("space_in_mount_point.pass", NFS_RT, "mount point with a blank (\\040 in mountinfo)",
            lines=[nfs_line("/sas\\040data")], objects={"/sas data": "pass"})

    # persistent (fstab)
    nfs_scn("fstab_canonical.pass", NFS_FS, "the seed's fstab line", fstab_entries=[fs_entry()])
    nfs_scn("fstab_duplicate_line_first_counts.fail", NFS_FS,
            "two fstab lines for /sasdata, the first with rsize=1048576: systemd-fstab-generator opens each unit "
            "O_EXCL, so the second line's unit is refused ('Duplicate entry in /etc/fstab?', shared/generator.c "
            "generator_open_unit_file_full()) and the first line mounts at boot (a pass before: the last line "
            "was taken, as mount -a would)",
            fstab_entries=[fs_entry(FSTAB_OPTS.replace("rsize=65536", "rsize=1048576")), fs_entry()])
    nfs_scn("fstab_noauto.fail", NFS_FS,
            "the fstab line has every option and noauto: systemd-fstab-generator add_mount() links a noauto "
            "unit into no target, so nothing mounts /sasdata at the next boot (a pass before)",
            fstab_entries=[fs_entry(FSTAB_OPTS + ",noauto")])
    nfs_scn("fstab_noauto_automount.pass", NFS_FS,
            "noauto with x-systemd.automount: the generator writes an automount unit that remote-fs.target "
            "requires, and the first access mounts /sasdata with the line's options",
            fstab_entries=[fs_entry(FSTAB_OPTS + ",noauto,x-systemd.automount")])
    r = nfs_scn("fstab_noauto_required_by_a_service.pass", NFS_FS,
                "noauto, but the enabled sas-grid.service has RequiresMountsFor=/sasdata/config: systemd adds "
                "Requires= on the mount units of that path, so /sasdata mounts at boot with the line's options "
                "(systemd.unit(5) RequiresMountsFor=)",
                fstab_entries=[fs_entry(FSTAB_OPTS + ",noauto")])
    r.write("etc/systemd/system/sas-grid.service", "[Unit]\nDescription=SAS Grid\nRequiresMountsFor=/sasdata/config\n\n"
            "[Service]\nExecStart=/opt/sas/grid/start\n\n[Install]\nWantedBy=multi-user.target\n")
    r.symlink("etc/systemd/system/multi-user.target.wants/sas-grid.service", "/etc/systemd/system/sas-grid.service")
    nfs_scn("fstab_noauto_then_auto.pass", NFS_FS,
            "noauto first, auto last: fstab_test_yes_no_option() takes the last of noauto/auto, so the line "
            "mounts at boot",
            fstab_entries=[fs_entry("noauto," + FSTAB_OPTS + ",auto")])
    nfs_scn("fstab_nfsvers_3.pass", NFS_FS, "fstab nfsvers=3 vs mountinfo vers=3",
            fstab_entries=[fs_entry(FSTAB_OPTS.replace("vers=3", "nfsvers=3"))])
    nfs_scn("fstab_vers_3_0.pass", NFS_FS, "fstab vers=3.0 vs mountinfo vers=3",
            fstab_entries=[fs_entry(FSTAB_OPTS.replace("vers=3", "vers=3.0"))])
    nfs_scn("fstab_proto_tcp.pass", NFS_FS, "fstab proto=tcp instead of the tcp flag",
            fstab_entries=[fs_entry(FSTAB_OPTS.replace(",tcp,", ",proto=tcp,"))])
    nfs_scn("fstab_rdirplus_default.pass", NFS_FS, "fstab without rdirplus: it is the default",
            fstab_entries=[fs_entry(FSTAB_OPTS.replace(",rdirplus", ""))])
    nfs_scn("rsize_negotiated_down_fstab_ok.pass", NFS_FS,
            "mountinfo rsize=32768 (server), fstab still asks for 65536: persistent form passes",
            lines=[nfs_line(super_opts=SUPER.replace("rsize=65536", "rsize=32768"))], fstab_entries=[fs_entry()])
    nfs_scn("fstab_missing_bg.fail", NFS_FS, "fstab lacks bg (an fstab-only option)",
            fstab_entries=[fs_entry(FSTAB_OPTS.replace("bg,", ""))])
    nfs_scn("fstab_missing_netdev.fail", NFS_FS, "fstab lacks _netdev (an fstab-only option)",
            fstab_entries=[fs_entry(FSTAB_OPTS.replace(",_netdev", ""))])
    nfs_scn("fstab_rsize_1048576.fail", NFS_FS, "fstab rsize=1048576 is not rsize=65536",
            fstab_entries=[fs_entry(FSTAB_OPTS.replace("rsize=65536", "rsize=1048576"))])
    nfs_scn("fstab_nordirplus.fail", NFS_FS, "fstab nordirplus", fstab_entries=[fs_entry(
        FSTAB_OPTS.replace("rdirplus", "nordirplus"))])
    nfs_scn("not_in_fstab.fail", NFS_FS, "mounted by hand, no fstab entry")
    nfs_scn("fstab_entry_commented_out.fail", NFS_FS, "the fstab line is commented out",
            fstab_entries=["#" + fs_entry()])
    nfs_scn("fstab_space_in_mount_point.pass", NFS_FS, "fstab and mountinfo both escape the blank as \\040",
            lines=[nfs_line("/sas\\040data")], fstab_entries=[fs_entry(mnt="/sas\\040data")],
            objects={"/sas data": "pass"})
    nfs_scn("fstab_trailing_slash.pass", NFS_FS,
            "fstab names the mount point /sasdata/ (mount(8) and systemd-fstab-generator normalise it to /sasdata)",
            fstab_entries=[fs_entry(mnt="/sasdata/")])


# --------------------------------------------------------------------------------------
# nfs_nconnect
# --------------------------------------------------------------------------------------

def nconnect_scn(name, desc, kernel, os_key, nconnect, check="nfs-nconnect", fstab_opts=None, **meta):
    r = Root("nfs_nconnect", name, check, desc, **meta)
    opts = SUPER if nconnect == 8 else (SUPER.replace("nconnect=8", f"nconnect={nconnect}") if nconnect
                                         else SUPER.replace("nconnect=8,", ""))
    nfs_host(r, kernel=kernel, os_key=os_key, lines=[nfs_line(super_opts=opts)],
             fstab_entries=None if fstab_opts is None else ([fs_entry(fstab_opts)] if fstab_opts else []))
    return r


@scenario("nfs_nconnect")
def _nfs_nconnect():
    nconnect_scn("kernel_5_14_without_nconnect.fail", "SLES 15 SP4 kernel 5.14 supports nconnect; none set",
                 AZ_KERNEL, "sles15sp4", None, objects={"/sasdata": "fail"})
    nconnect_scn("kernel_5_14_nconnect_8.pass", "SLES 15 SP4 kernel 5.14 with nconnect=8", AZ_KERNEL, "sles15sp4", 8)
    nconnect_scn("rhel84_backport_nconnect_8.pass", "RHEL 8.4 4.18.0-305 (backport from 4.18.0-240), nconnect=8",
                 RHEL84_KERNEL, "rhel84", 8)
    nconnect_scn("rhel84_backport_without_nconnect.fail", "RHEL 8.4 4.18.0-305 supports nconnect; none set",
                 RHEL84_KERNEL, "rhel84", None)
    nconnect_scn("rhel82_no_backport.notapplicable", "RHEL 8.2 4.18.0-193 predates the backport",
                 "4.18.0-193.el8.x86_64", "rhel82", None)
    nconnect_scn("sles12_kernel_4_12.notapplicable", "SLES 12 SP5 kernel 4.12 without nconnect",
                 "4.12.14-122.37-default", "sles12sp5", None)
    nconnect_scn("old_kernel_but_mount_shows_nconnect.pass",
                 "SLES 12 SP5 kernel 4.12 (not in the table) but the mount shows nconnect=8: proves support",
                 "4.12.14-122.37-default", "sles12sp5", 8)
    r = nconnect_scn("kernel_version_unreadable.error",
                     "proc/sys/kernel/osrelease missing: support unknown, and the mount shows no nconnect",
                     AZ_KERNEL, "sles15sp4", None, objects={"/sasdata": "error"})
    os.remove(os.path.join(r.path, "proc/sys/kernel/osrelease"))
    r = nconnect_scn("kernel_unknown_but_mount_shows_nconnect.pass",
                     "kernel version unknown, but the mount shows nconnect=8, which proves support",
                     AZ_KERNEL, "sles15sp4", 8)
    os.remove(os.path.join(r.path, "proc/sys/kernel/osrelease"))
    P = "nfs-nconnect-persistent"
    no_nc = FSTAB_OPTS.replace(",nconnect=8", "")
    nconnect_scn("fstab_nconnect_8.pass", "the fstab line carries nconnect=8", AZ_KERNEL, "sles15sp4", 8, check=P,
                 fstab_opts=FSTAB_OPTS)
    nconnect_scn("remounted_with_nconnect_fstab_without.fail",
                 "remounted by hand with nconnect=8, but the fstab line lacks it: the next boot mounts with one "
                 "connection", RHEL84_KERNEL, "rhel84", 8, check=P, fstab_opts=no_nc, objects={"/sasdata": "fail"})
    nconnect_scn("fstab_nconnect_4.fail", "fstab says nconnect=4", AZ_KERNEL, "sles15sp4", 4, check=P,
                 fstab_opts=no_nc + ",nconnect=4")
    nconnect_scn("fstab_not_listed.fail", "mounted by hand, no fstab line", AZ_KERNEL, "sles15sp4", 8, check=P,
                 fstab_opts="")
    nconnect_scn("fstab_kernel_without_nconnect.notapplicable", "RHEL 8.2 4.18.0-193: no nconnect to persist",
                 "4.18.0-193.el8.x86_64", "rhel82", None, check=P, fstab_opts=no_nc)
    nconnect_scn("nconnect_4.fail", "nconnect=4 instead of 8", AZ_KERNEL, "sles15sp4", 4)
    nconnect_scn("ubuntu_5_4_without_nconnect.fail", "Ubuntu 20.04 azure kernel 5.4 >= 5.3",
                 "5.4.0-1109-azure", "ubuntu2004", None)


# --------------------------------------------------------------------------------------
# bdi_readahead / udev_attr / tuned_profile
# --------------------------------------------------------------------------------------

def bdi(r: Root, minor: int, value: int) -> None:
    r.value(f"sys/devices/virtual/bdi/0:{minor}/read_ahead_kb", value)
    r.rel_symlink(f"sys/class/bdi/0:{minor}", f"sys/devices/virtual/bdi/0:{minor}")


@scenario("bdi_readahead")
def _bdi_readahead():
    r = Root("bdi_readahead", "readahead_15380.pass", "nfs-readahead", "bdi 0:52 read_ahead_kb 15380")
    nfs_host(r)
    bdi(r, 52, 15380)
    r = Root("bdi_readahead", "readahead_default_128.fail", "nfs-readahead", "bdi 0:52 at the 128 KiB default")
    nfs_host(r)
    bdi(r, 52, 128)
    r = Root("bdi_readahead", "two_mounts_one_default.fail", "nfs-readahead", "the second mount's bdi is 128",
             objects={"/sasdata": "pass", "/sashome": "fail"})
    nfs_host(r, lines=[nfs_line(), nfs_line("/sashome", minor=54, mount_id=122)])
    bdi(r, 52, 15380)
    bdi(r, 54, 128)
    r = Root("bdi_readahead", "bdi_missing.error", "nfs-readahead", "no sys/class/bdi entry for the mount's device")
    nfs_host(r)
    r = Root("bdi_readahead", "bdi_value_garbage.error", "nfs-readahead",
             "read_ahead_kb holds no number (a broken copy): unreadable, not a wrong value",
             objects={"/sasdata": "error"})
    nfs_host(r)
    r.write("sys/class/bdi/0:52/read_ahead_kb", "\x00\x00\n")
    r = Root("bdi_readahead", "no_nfs.notapplicable", "nfs-readahead", "no NFS mount")
    nfs_host(r, lines=[])
    bdi(r, 52, 128)


NFS_RULE = bx.SAS_UDEV_RULE


@scenario("udev_attr")
def _udev_attr():
    def scn(name, desc, **meta):
        r = Root("udev_attr", name, "nfs-readahead-persistent", desc, **meta)
        nfs_host(r)
        return r
    r = scn("seed_99_nfs_rules.pass", "the seed 003 /etc/udev/rules.d/99-nfs.rules")
    r.write("etc/udev/rules.d/99-nfs.rules", NFS_RULE)
    r = scn("value_128.fail", "the rule sets 128")
    r.write("etc/udev/rules.d/99-nfs.rules", NFS_RULE.replace("15380", "128"))
    scn("no_rule.fail", "no udev rule")
    r = scn("block_subsystem.fail", "a rule for SUBSYSTEM==\"block\" does not set NFS bdis")
    r.write("etc/udev/rules.d/60-readahead.rules", 'SUBSYSTEM=="block", ACTION=="add", ATTR{bdi/read_ahead_kb}="15380"\n'
            'SUBSYSTEM=="block", ACTION=="add", ATTR{read_ahead_kb}="15380"\n')
    r = scn("continued_line_assign_final.pass", "the rule split with a backslash, := assignment")
    r.write("etc/udev/rules.d/99-nfs.rules", 'SUBSYSTEM=="bdi", ACTION=="add", \\\n  ATTR{read_ahead_kb}:="15380"\n')
    r = scn("masked_by_etc_dev_null.fail",
            "usr/lib/udev/rules.d/99-nfs.rules sets it but etc/udev/rules.d/99-nfs.rules -> /dev/null masks it "
            "(udev(7): same name in /etc replaces /usr/lib)")
    r.write("usr/lib/udev/rules.d/99-nfs.rules", NFS_RULE)
    r.symlink("etc/udev/rules.d/99-nfs.rules", "/dev/null")
    r = scn("later_rule_overrides.fail", "99-nfs.rules sets 15380, a later 99-zz-readahead.rules sets 128 (last wins)")
    r.write("etc/udev/rules.d/99-nfs.rules", NFS_RULE)
    r.write("etc/udev/rules.d/99-zz-readahead.rules", 'SUBSYSTEM=="bdi", ACTION=="add", ATTR{read_ahead_kb}="128"\n')
    r = scn("subsystem_alternatives.pass", 'SUBSYSTEM=="block|bdi" (| alternatives) matches bdi devices')
    r.write("etc/udev/rules.d/99-nfs.rules", 'SUBSYSTEM=="block|bdi", ACTION=="add", ATTR{read_ahead_kb}="15380"\n')
    r = scn("change_action_only.fail", 'ACTION=="change": a bdi appears with an "add" event at mount time')
    r.write("etc/udev/rules.d/99-nfs.rules", 'SUBSYSTEM=="bdi", ACTION=="change", ATTR{read_ahead_kb}="15380"\n')


@scenario("tuned_profile")
def _tuned_profile():
    def scn(name, desc, active, enabled=True, **meta):
        r = Root("tuned_profile", name, "tuned-profile", desc, **meta)
        nfs_host(r)
        bx.install_units(r, ["tuned.service"])
        if enabled:
            bx.enable(r, "tuned.service")
        if active is not None:
            r.write("etc/tuned/active_profile", active + "\n")
        r.write("usr/lib/tuned/throughput-performance/tuned.conf", bx.THROUGHPUT_PERFORMANCE)
        r.write("usr/lib/tuned/balanced/tuned.conf", "[main]\nsummary=General non-specialized tuned profile\n\n"
                "[cpu]\npriority=10\ngovernor=conservative|powersave\nenergy_perf_bias=normal\n")
        return r
    scn("throughput_performance.pass", "throughput-performance itself", "throughput-performance")
    r = scn("custom_includes_throughput_performance.pass", "etc/tuned/sas-performance includes it",
            "sas-performance")
    r.write("etc/tuned/sas-performance/tuned.conf", "[main]\nsummary=SAS\ninclude=throughput-performance\n\n"
            "[sysctl]\nvm.dirty_bytes = 31457280\n")
    r = scn("include_chain_two_deep.pass", "sas-performance -> sas-base -> throughput-performance", "sas-performance")
    r.write("etc/tuned/sas-performance/tuned.conf", "[main]\ninclude=sas-base\n")
    r.write("etc/tuned/sas-base/tuned.conf", "[main]\ninclude=throughput-performance\n\n[vm]\n"
            "transparent_hugepages=never\n")
    scn("tuned_service_disabled.fail", "throughput-performance is active_profile, but tuned.service is not enabled: "
        "nothing applies it at boot", "throughput-performance", enabled=False, objects={"tuned": "fail"})
    scn("balanced.fail", "balanced is active", "balanced", objects={"tuned": "fail"})
    scn("no_active_profile.fail", "tuned never configured (no etc/tuned/active_profile)", None)
    r = scn("custom_not_including.fail", "a custom profile that includes balanced", "sas-performance")
    r.write("etc/tuned/sas-performance/tuned.conf", "[main]\ninclude=balanced\n")


# --------------------------------------------------------------------------------------
# nic_channels / nic_ethtool / accelerated_networking / nic_settings_persistent
# --------------------------------------------------------------------------------------

def channels_scn(name, desc, *, combined, combined_max=32, nodes=None, numa=0, ncomp=None, drop=(), vf_driver=None,
                 channels=None, **meta):
    r = Root("nic_channels", name, "nic-queue-count", desc, **meta)
    azure_host(r, nodes=nodes)
    ncomp = ncomp or combined_max
    kw = {"vf_driver": vf_driver} if vf_driver else {}
    _, _, bdf = an_pair(r, numa=numa, msi=range(24, 25 + ncomp), **kw)
    r.json("ethtool/eth0.json", bx.ethtool_hv_netvsc(AZ_KERNEL, min(combined, 16), 64))
    data = bx.ethtool_mlx5("5.14.21", "16.30.1004 (MSF0010110035)", bdf, combined, combined_max)
    if channels:
        data["channels"] = channels
    for k in drop:
        data.pop(k)
    if "driver" not in drop and vf_driver:
        data["driver"]["driver"] = os.path.basename(vf_driver)
    r.json("ethtool/enP1s1.json", data)
    return r


@scenario("nic_channels")
def _nic_channels():
    n64 = {0: list(range(64))}
    channels_scn("vf_32_combined_on_64cpu_node.fail", "32 combined on a 64-CPU node: max_queues 16 applies",
                 combined=32, nodes=n64, objects={"enP1s1": "fail", "eth0": "pass"})
    channels_scn("vf_16_combined.pass", "16 combined on a 64-CPU node", combined=16, nodes=n64,
                 objects={"enP1s1": "pass", "eth0": "pass"})
    channels_scn("node_8_cpus_12_queues.fail", "NUMA node 0 has 8 CPUs; 12 queues exceed it", combined=12,
                 combined_max=16, objects={"enP1s1": "fail"})
    channels_scn("node_8_cpus_8_queues.pass", "8 queues on a node with 8 CPUs", combined=8, combined_max=16)
    channels_scn("numa_unknown_treated_as_node0.fail",
                 "numa_node -1 is node 0 (8 CPUs) although node 1 has 56: 12 queues fail",
                 combined=12, combined_max=16, numa=-1, nodes={0: list(range(8)), 1: list(range(8, 64))},
                 objects={"enP1s1": "fail"})
    channels_scn("numa_unknown_8_queues.pass", "numa_node -1 (node 0, 8 CPUs) with 8 queues", combined=8,
                 combined_max=16, numa=-1, nodes={0: list(range(8)), 1: list(range(8, 64))})
    channels_scn("driver_without_channels.error", "the VF's ethtool JSON has no channels section",
                 combined=16, nodes=n64, drop=("channels",), objects={"enP1s1": "error", "eth0": "pass"})
    channels_scn("mlx4_rx_tx_channels.fail", "mlx4_en reports rx/tx channels (no combined): rx 24 > 16",
                 combined=0, combined_max=0, ncomp=24, nodes=n64, vf_driver="sys/bus/pci/drivers/mlx4_core",
                 channels={"rx-max": 32, "tx-max": 32, "other-max": 0, "combined-max": 0,
                           "rx": 24, "tx": 24, "other": 0, "combined": 0}, objects={"enP1s1": "fail"})
    n32 = {0: list(range(32)), 1: list(range(32, 64))}
    channels_scn("sas_profile_queues_equal_node_cpus.pass",
                 "azure-sas-grid-anf (seed 003): 32 queues on a 32-CPU node are fine (no 16 limit)",
                 combined=32, nodes=n32, profile="azure-sas-grid-anf", objects={"enP1s1": "pass"})
    channels_scn("sas_profile_queues_above_node_cpus.fail",
                 "azure-sas-grid-anf: 12 queues on a node of 8 CPUs",
                 combined=12, combined_max=16, profile="azure-sas-grid-anf", objects={"enP1s1": "fail"})
    channels_scn("hana_profile_32_queues.fail", "azure-sap-hana (seed 000): 32 queues on a 32-CPU node exceed 16",
                 combined=32, nodes=n32, profile="azure-sap-hana", objects={"enP1s1": "fail"})
    r = channels_scn("bonding_masters_file_ignored.pass", "sys/class/net/bonding_masters beside the NICs",
                     combined=8, combined_max=16)
    r.write("sys/class/net/bonding_masters", "\n")
    r = Root("nic_channels", "hv_netvsc_without_vf.notapplicable", "nic-queue-count",
             "a synthetic NIC without a VF has no queues judged here")
    azure_host(r)
    hv_netvsc_only(r)
    r.json("ethtool/eth0.json", bx.ethtool_hv_netvsc(AZ_KERNEL, 32, 64))
    r = Root("nic_channels", "vmxnet3_8_queues.pass", "nic-queue-count", "vmxnet3 with 8 combined queues")
    vmware_host(r)
    bdf = vmxnet3_nic(r, msi=range(59, 68))
    r.json("ethtool/ens192.json", bx.ethtool_vmxnet3(bdf, 8, tuned=True))


def vmx_nic_scn(kind, name, check, desc, *, tuned=True, nics=(("ens192", 0x0b, "0000:00:15.0"),), patch=None,
                **meta) -> Root:
    r = Root(kind, name, check, desc, **meta)
    vmware_host(r)
    for k, (ifn, bus, bridge) in enumerate(nics):
        bdf = vmxnet3_nic(r, ifn, bus, bridge, msi=range(59 + 9 * k, 68 + 9 * k))
        data = bx.ethtool_vmxnet3(bdf, 8, tuned=tuned if not isinstance(tuned, tuple) else tuned[k])
        if patch and ifn in patch:
            patch[ifn](data)
        r.json(f"ethtool/{ifn}.json", data)
    return r


TWO_NICS = (("ens192", 0x0b, "0000:00:15.0"), ("ens224", 0x13, "0000:00:16.0"))


@scenario("nic_ethtool")
def _nic_ethtool():
    K = "nic_ethtool"
    vmx_nic_scn(K, "coalesce_25.pass", "vmxnet3-rx-coalesce", "rx-usecs 25")
    vmx_nic_scn(K, "coalesce_default_250.fail", "vmxnet3-rx-coalesce", "driver default rx-usecs 250", tuned=False)
    vmx_nic_scn(K, "lro_off.pass", "vmxnet3-lro-disabled", "large-receive-offload off")
    vmx_nic_scn(K, "lro_on.fail", "vmxnet3-lro-disabled", "large-receive-offload on", tuned=False)
    vmx_nic_scn(K, "rings_512_0_512.pass", "vmxnet3-ring-size", "rx 512 rx-mini 0 tx 512")
    vmx_nic_scn(K, "rings_default.fail", "vmxnet3-ring-size", "rx 1024 rx-mini 128", tuned=False)
    vmx_nic_scn(K, "two_nics_one_untuned.fail", "vmxnet3-rx-coalesce", "ens224 still at 250", nics=TWO_NICS,
                tuned=(True, False), objects={"ens192": "pass", "ens224": "fail"})
    vmx_nic_scn(K, "features_section_missing.error", "vmxnet3-lro-disabled", "no features in the ethtool JSON",
                patch={"ens192": lambda d: d.pop("features")}, objects={"ens192": "error"})
    r = Root(K, "no_vmxnet3.notapplicable", "vmxnet3-rx-coalesce", "a VMware VM without vmxnet3 NICs")
    vmware_host(r)
    bx.net_loopback(r)


@scenario("accelerated_networking")
def _accelerated_networking():
    K, C = "accelerated_networking", "accelerated-networking"
    r = Root(K, "mlx5_vf.pass", C, "hv_netvsc eth0 with an mlx5 VF", objects={"eth0": "pass"})
    azure_host(r)
    an_pair(r, msi=range(24, 33))
    r = Root(K, "mlx4_vf.pass", C, "hv_netvsc eth0 with an mlx4 VF (driver mlx4_core)")
    azure_host(r)
    an_pair(r, msi=range(24, 30), vf_driver="sys/bus/pci/drivers/mlx4_core")
    r = Root(K, "mana_vf.pass", C, "hv_netvsc eth0 with a MANA VF")
    azure_host(r)
    an_pair(r, msi=range(24, 33), vf_driver="sys/bus/pci/drivers/mana")
    r = Root(K, "vf_master_link_only.pass", C, "the VF's master link exists, the lower_ link does not")
    azure_host(r)
    an_pair(r, msi=range(24, 33), lower_link=False)
    r = Root(K, "no_vf.fail", C, "hv_netvsc eth0 without a VF", objects={"eth0": "fail"})
    azure_host(r)
    hv_netvsc_only(r)
    r = Root(K, "two_synthetic_one_without_vf.fail", C, "eth0 accelerated, eth1 not",
             objects={"eth0": "pass", "eth1": "fail"})
    azure_host(r)
    an_pair(r, msi=range(24, 33))
    hv_netvsc_only(r, "eth1")
    r = Root(K, "management_nic_excluded_by_scope.pass", C,
             "eth1 without VF is exempted by a scope exclude on its name",
             scope={"interfaces": {"include": [{"driver": ["hv_netvsc"]}], "exclude": [{"name": "^eth1$"}]}},
             objects={"eth0": "pass"})
    azure_host(r)
    an_pair(r, msi=range(24, 33))
    hv_netvsc_only(r, "eth1")
    r = Root(K, "master_down.notapplicable", C, "the only hv_netvsc interface is down: nothing to judge")
    azure_host(r)
    hv_netvsc_only(r, state="down")
    r = Root(K, "vf_down.fail", C,
             "the VF is down: netvsc keeps the data path on the synthetic NIC (netvsc_vf_changed)",
             objects={"eth0": "fail"})
    azure_host(r)
    an_pair(r, msi=range(24, 33), vf_state="down")
    # docs/snapshot-contract.md: Azure's DMI chassis asset tag 7783-7084-3265-9085-8269-3286-77; Hyper-V on premises
    # reports sys_vendor "Microsoft Corporation" too, without Azure services
    r = Root(K, "azure_vendor_without_asset_tag.notapplicable", C,
             "Hyper-V on premises: vendor Microsoft Corporation, no Azure asset tag, hv_netvsc without VF")
    azure_host(r)
    r.value("sys/class/dmi/id/chassis_asset_tag", "")
    hv_netvsc_only(r)
    r = Root(K, "hyperv_on_premises_asset_tag_none.notapplicable", C,
             "Hyper-V on premises with a chassis asset tag set by the owner")
    azure_host(r)
    r.value("sys/class/dmi/id/chassis_asset_tag", "ACME-0042")
    hv_netvsc_only(r)
    r = Root(K, "azure_asset_tag_other_vendor_string.fail", C,
             "the Azure asset tag decides even with an unexpected vendor string: eth0 without VF fails",
             objects={"eth0": "fail"})
    azure_host(r)
    r.value("sys/class/dmi/id/sys_vendor", "Microsoft Corp.")
    hv_netvsc_only(r)
    r = Root(K, "bonding_masters_file_is_not_an_interface.pass", C,
             "sys/class/net/bonding_masters (the bonding driver's control file) next to an AN pair",
             objects={"eth0": "pass"})
    azure_host(r)
    an_pair(r, msi=range(24, 33))
    r.write("sys/class/net/bonding_masters", "bond0\n")
    r = Root(K, "not_azure.notapplicable", C, "a VMware VM")
    vmware_host(r)
    vmxnet3_nic(r, msi=range(59, 68))


def persist_az(name, desc, net="wicked.service", **meta) -> Root:
    r = Root("nic_settings_persistent", name, "nic-settings-persistent", desc, **meta)
    azure_host(r, nodes=NODES32)
    an_pair(r, msi=range(24, 33))
    network_service(r, net)
    return r


def network_service(r: Root, unit: str | None, enabled: bool = True) -> None:
    """The network service that reads ifcfg/keyfiles at boot (wicked or NetworkManager)."""
    if unit:
        extra = ["NetworkManager-dispatcher.service"] if unit == "NetworkManager.service" else []
        bx.install_units(r, [unit, *extra])
        if enabled:
            bx.enable(r, unit)


AZURE_NM_UNMANAGED = """# Accelerated Networking on Azure exposes a new SRIOV interface to the VM.
# This interface is transparently bonded to the synthetic interface,
# so NetworkManager should just ignore any SRIOV interfaces.
SUBSYSTEM=="net", DRIVERS=="hv_pci", ACTION!="remove", ENV{NM_UNMANAGED}="1"
"""


IFCFG_SUSE = "BOOTPROTO='dhcp'\nDHCLIENT6_MODE='managed'\nSTARTMODE='onboot'\nCLOUD_NETCONFIG_MANAGE='yes'\n"
IFCFG_RHEL = ("TYPE=Ethernet\nBOOTPROTO=none\nNAME={i}\nDEVICE={i}\nONBOOT=yes\nIPADDR=10.10.10.21\nPREFIX=24\n")
NM_KEYFILE = """[connection]
id={i}
uuid=2b4d6f8a-1c3e-4a5b-8d7f-9e1a3c5b7d9f
type=ethernet
interface-name={i}

[ethernet]

[ethtool]
coalesce-rx-usecs=25
feature-lro=false
ring-rx={rx}
ring-rx-mini=0
ring-tx=512

[ipv4]
method=auto
"""
LINK_FILE = """[Match]
{match}

[Link]
NamePolicy=kernel database onboard slot path
MACAddressPolicy=persistent
RxCoalesceSec=25us
LargeReceiveOffload=false
RxBufferSize=512
RxMiniBufferSize=0
TxBufferSize=512
"""


def filestat(r: Root, entries: dict) -> None:
    """Owner/mode git cannot keep (facts/filestat.py): {path: {"mode": "0600", "uid": 0}}."""
    import json
    r.write("filestat.json", json.dumps(entries, indent=1, sort_keys=True) + "\n")


def mac(r: Root, ifname: str, address: str, assign_type: int = 0) -> None:
    """sysfs `address` and `addr_assign_type` (0: permanent, 3: set by userspace)."""
    r.value(f"sys/class/net/{ifname}/address", address)
    r.value(f"sys/class/net/{ifname}/addr_assign_type", assign_type)


KEYFILE = "etc/NetworkManager/system-connections/{i}.nmconnection"
SECURE = {"mode": "0600", "uid": 0}
VF_DRIVER_RULE = ('ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", '
                  'RUN+="/usr/sbin/ethtool -L $kernel combined 16"\n')
RX_MINI_RULE = 'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="vmxnet3", RUN+="/usr/sbin/ethtool -G %k rx-mini 0"\n'


ETHTOOL_UNIT = """[Unit]
Description=VMXNET3 settings for SAP HANA (seed 001)
After=network-online.target

[Service]
Type=oneshot
ExecStart=/usr/sbin/ethtool -C ens192 rx-usecs 25
ExecStart=/usr/sbin/ethtool -K ens192 lro off
ExecStart=/usr/sbin/ethtool -G ens192 rx 512 rx-mini 0 tx 512

[Install]
WantedBy=multi-user.target
"""


# Azure M416(s)_v2: 416 vCPUs in 8 NUMA nodes of 52
NODES416 = {n: list(range(52 * n, 52 * (n + 1))) for n in range(8)}
EL10_KERNEL = "6.12.0-55.12.1.el10_0.x86_64"


def netvsc_scn(name, desc, *, kernel=AZ_KERNEL, os_key="sles15sp4", nodes=None, combined_max=64,
               driver=bx.MLX5_DRIVER, **meta) -> Root:
    """An AN pair whose VF is configured by a udev rule matching its driver; the hv_netvsc
    master `eth0` has no configuration: judged by its driver default (checks/defaults)."""
    r = Root("nic_settings_persistent", name, "nic-settings-persistent", desc, **meta)
    azure_host(r, kernel=kernel, os_key=os_key, nodes=nodes or NODES32)
    an_pair(r, msi=range(24, 33), vf_driver=driver)
    r.json("ethtool/eth0.json", bx.ethtool_hv_netvsc(kernel, 8, combined_max))
    r.write("etc/udev/rules.d/70-accelnet-queues.rules", VF_DRIVER_RULE.replace("mlx5_core", driver.rsplit("/", 1)[-1]))
    return r


@scenario("nic_settings_persistent")
def _netvsc_defaults():
    """docs/snapshot-contract.md "Persistence": a setting nothing configures is judged by the driver default."""
    netvsc_scn("netvsc_default_8_on_5_14.pass",
               "Linux 5.14, 32 vCPUs: hv_netvsc opens min(8, vCPUs) = 8 channels (VRSS_CHANNEL_DEFAULT 8), "
               "<= 16: the master needs no configuration", objects={"eth0": "pass", "enP1s1": "pass"})
    netvsc_scn("netvsc_default_64_on_6_12_m416.fail",
               "Linux 6.12 on an M416 (416 vCPUs): hv_netvsc opens 64 channels by default (commit \"net: netvsc: "
               "Update default VMBus channels\"), above 16: the master must be configured",
               kernel=EL10_KERNEL, os_key="rhel10", nodes=NODES416,
               objects={"eth0": "fail", "enP1s1": "pass"})
    netvsc_scn("netvsc_default_16_on_6_12_32_vcpus.pass",
               "Linux 6.12 with 32 vCPUs: min(16, vCPUs) = 16 channels, within the limit",
               kernel=EL10_KERNEL, os_key="rhel10", objects={"eth0": "pass"})
    netvsc_scn("netvsc_default_6_12_capped_by_combined_max.pass",
               "Linux 6.12 on 416 vCPUs, but the host offers at most 16 channels (combined-max 16): the default "
               "is never above it", kernel=EL10_KERNEL, os_key="rhel10", nodes=NODES416, combined_max=16,
               objects={"eth0": "pass"})
    r = netvsc_scn("netvsc_6_12_m416_configured_16.pass",
                   "the M416 on Linux 6.12 with the master configured to 16 channels (NetworkManager keyfile)",
                   kernel=EL10_KERNEL, os_key="rhel10", nodes=NODES416, objects={"eth0": "pass"})
    network_service(r, "NetworkManager.service")
    r.write(KEYFILE.format(i="eth0"), "[connection]\nid=eth0\ntype=ethernet\ninterface-name=eth0\n\n[ethtool]\n"
                                      "channels-combined=16\n", mode=0o600)
    filestat(r, {KEYFILE.format(i="eth0"): SECURE})
    r = netvsc_scn("vf_default_within_node_limit_sas.pass",
                   "azure-sas-grid-anf (queues <= the node's CPUs): an mlx5 VF nothing configures comes back at "
                   "min(64, combined-max 8) = 8 <= 16 CPUs of its node", profile="azure-sas-grid-anf",
                   objects={"enP1s1": "pass", "eth0": "pass"})
    r.write("etc/udev/rules.d/70-accelnet-queues.rules", "# the VF keeps its driver default\n")
    ethtool_vf(r, combined=8, combined_max=8)
    r = netvsc_scn("node_limit_applies_to_configured_value.fail",
                   "ifcfg sets 16 channels on the master, but its NUMA node has 8 CPUs: nic-queue-count's limit "
                   "is min(16, 8)", nodes=NODES16, objects={"eth0": "fail"})
    network_service(r, "wicked.service")
    r.write("etc/sysconfig/network/ifcfg-eth0", IFCFG_SUSE + "ETHTOOL_OPTIONS='-L eth0 combined 16'\n")
    r = netvsc_scn("mana_default_unknown.fail",
                   "a MANA VF nothing configures: content knows no mana default, so it fails as not configured",
                   driver=bx.MLX5_DRIVER.replace("mlx5_core", "mana"), objects={"enP1s1": "fail"})
    r.write("etc/udev/rules.d/70-accelnet-queues.rules", "# nothing for mana\n")


@scenario("nic_settings_persistent")
def _nic_settings_persistent():
    K, C = "nic_settings_persistent", "nic-settings-persistent"
    # -- ifcfg: wicked / NetworkManager ifcfg-rh apply a file's options to its own interface
    r = persist_az("ethtool_opts_on_master_only.fail",
                   "ifcfg-eth0 ETHTOOL_OPTIONS='-L eth0 combined 16' sets the hv_netvsc master only: ethtool -L on "
                   "the synthetic NIC does not change the VF's channels",
                   objects={"eth0": "pass", "enP1s1": "fail"})
    r.write("etc/sysconfig/network/ifcfg-eth0", IFCFG_SUSE + "ETHTOOL_OPTIONS='-L eth0 combined 16'\n")
    r = persist_az("suse_ifcfg_iface_placeholder.pass",
                   "ifcfg-eth0 and ifcfg-enP1s1 with the `iface` and `*` interface placeholders (ifcfg(5))",
                   objects={"eth0": "pass", "enP1s1": "pass"})
    r.write("etc/sysconfig/network/ifcfg-eth0", IFCFG_SUSE + "ETHTOOL_OPTIONS='-L iface combined 8'\n")
    r.write("etc/sysconfig/network/ifcfg-enP1s1", "STARTMODE='hotplug'\nBOOTPROTO='none'\n"
            "ETHTOOL_OPTIONS='-L * combined 8'\n")
    r = persist_az("ifcfg_master_file_names_vf.fail",
                   "ifcfg-eth0 ETHTOOL_OPTIONS='-L enP1s1 combined 16': the interface word is a placeholder, wicked "
                   "applies the options to eth0, never to enP1s1", objects={"enP1s1": "fail"})
    r.write("etc/sysconfig/network/ifcfg-eth0", IFCFG_SUSE + "ETHTOOL_OPTIONS='-L enP1s1 combined 16'\n")
    r = persist_az("suse_ifcfg_combined_32.fail", "ETHTOOL_OPTIONS sets 32 queues (> 16)",
                   objects={"eth0": "fail", "enP1s1": "fail"})
    r.write("etc/sysconfig/network/ifcfg-eth0", IFCFG_SUSE + "ETHTOOL_OPTIONS='-L eth0 combined 32'\n")
    persist_az("no_config.fail", "nothing configures the queue count: the VF comes back at the mlx5 default (64, "
               "above 16), the hv_netvsc master at its default 8 on Linux 5.14", objects={"eth0": "pass", "enP1s1": "fail"})

    def vm(name, desc, net="NetworkManager.service", net_enabled=True, **meta):
        r = vmx_nic_scn(K, name, C, desc, **meta)
        network_service(r, net, net_enabled)
        return r
    r = vm("rhel_ifcfg_ethtool_opts_semicolons.pass", "RHEL ifcfg ETHTOOL_OPTS with `;`-separated commands")
    r.write("etc/sysconfig/network-scripts/ifcfg-ens192", IFCFG_RHEL.format(i="ens192") +
            'ETHTOOL_OPTS="-C ens192 rx-usecs 25; -K ens192 lro off; -G ens192 rx 512 rx-mini 0 tx 512"\n')
    # wicked: every ETHTOOL_OPTIONS<suffix> is one command, split at blanks only (compat-suse.c
    # try_add_ethtool_vars(): ni_string_split(&opts, var->value, " \t", 0))
    suse_ifcfg = "BOOTPROTO='static'\nSTARTMODE='auto'\nIPADDR='10.10.10.21/24'\n"
    r = vm("suse_ifcfg_suffixed_ethtool_options.pass", net="wicked.service",
           desc="SLES ifcfg-ens192 with ETHTOOL_OPTIONS, ETHTOOL_OPTIONS_lro and ETHTOOL_OPTIONS_rings: wicked "
                "applies every ETHTOOL_OPTIONS<suffix> variable, one command each", objects={"ens192": "pass"})
    r.write("etc/sysconfig/network/ifcfg-ens192", suse_ifcfg + "ETHTOOL_OPTIONS='-C ens192 rx-usecs 25'\n"
            "ETHTOOL_OPTIONS_lro='-K ens192 lro off'\nETHTOOL_OPTIONS_rings='-G ens192 rx 512 rx-mini 0 tx 512'\n")
    r = vm("suse_ifcfg_suffixed_semicolon_not_split.fail", net="wicked.service",
           desc="ETHTOOL_OPTIONS_more='-K ens192 lro off; -G ens192 rx 512 ...': wicked splits a variable at blanks "
                "only, so `;` separates nothing and neither LRO nor the rings are set", objects={"ens192": "fail"})
    r.write("etc/sysconfig/network/ifcfg-ens192", suse_ifcfg + "ETHTOOL_OPTIONS='-C ens192 rx-usecs 25'\n"
            "ETHTOOL_OPTIONS_more='-K ens192 lro off; -G ens192 rx 512 rx-mini 0 tx 512'\n")
    r = vm("suse_ifcfg_plain_semicolon_not_split.fail", net="wicked.service",
           desc="ETHTOOL_OPTIONS='-C ens192 rx-usecs 25; -K ens192 lro off; -G ...': wicked reads the plain variable "
                "like a suffixed one (suffix \"\"), one command split at blanks only, so `;` separates nothing and "
                "none of the three is applied", objects={"ens192": "fail"})
    r.write("etc/sysconfig/network/ifcfg-ens192", suse_ifcfg +
            "ETHTOOL_OPTIONS='-C ens192 rx-usecs 25; -K ens192 lro off; -G ens192 rx 512 rx-mini 0 tx 512'\n")
    r = vm("suse_ifcfg_suffixed_wicked_not_enabled.fail", net="wicked.service", net_enabled=False,
           desc="the same ETHTOOL_OPTIONS<suffix> variables, but wicked.service (their only reader) is not enabled",
           objects={"ens192": "fail"})
    r.write("etc/sysconfig/network/ifcfg-ens192", suse_ifcfg + "ETHTOOL_OPTIONS='-C ens192 rx-usecs 25'\n"
            "ETHTOOL_OPTIONS_lro='-K ens192 lro off'\nETHTOOL_OPTIONS_rings='-G ens192 rx 512 rx-mini 0 tx 512'\n")
    r = vm("suse_ifcfg_suffixed_names_other_nic.fail", net="wicked.service", nics=TWO_NICS,
           desc="ifcfg-ens192's ETHTOOL_OPTIONS_lro names ens224: the interface word is a placeholder, so wicked "
                "never sets ens224; a command that names another NIC is not credited to ens192 either (as for the "
                "unsuffixed ETHTOOL_OPTIONS)", objects={"ens192": "fail", "ens224": "fail"})
    r.write("etc/sysconfig/network/ifcfg-ens192", suse_ifcfg + "ETHTOOL_OPTIONS='-C ens192 rx-usecs 25'\n"
            "ETHTOOL_OPTIONS_rings='-G ens192 rx 512 rx-mini 0 tx 512'\nETHTOOL_OPTIONS_lro='-K ens224 lro off'\n")
    r.write("etc/sysconfig/network/ifcfg-ens224", suse_ifcfg.replace("10.10.10.21", "10.10.20.21") +
            "ETHTOOL_OPTIONS='-C ens224 rx-usecs 25'\nETHTOOL_OPTIONS_rings='-G ens224 rx 512 rx-mini 0 tx 512'\n")
    # units at the next boot: /run is a tmpfs emptied at boot (services.BOOT_UNIT_DIRS)
    r = vm("unit_enabled_only_in_run.fail",
           desc="a unit running ethtool exists only in run/systemd/system (written at runtime) with a wants link in "
                "/etc: /run is empty at the next boot, so the link dangles and nothing runs",
           objects={"ens192": "fail"})
    r.write("run/systemd/system/vmxnet3-ethtool.service", ETHTOOL_UNIT)
    bx.enable(r, "vmxnet3-ethtool.service", where="/run/systemd/system")
    r = vm("unit_in_etc_enabled.pass", desc="the same unit in etc/systemd/system, enabled: it runs at every boot",
           objects={"ens192": "pass"})
    r.write("etc/systemd/system/vmxnet3-ethtool.service", ETHTOOL_UNIT)
    bx.enable(r, "vmxnet3-ethtool.service", where="/etc/systemd/system")
    r = vm("rhel_ifcfg_missing_rings.fail", "ETHTOOL_OPTS without the ring sizes", objects={"ens192": "fail"})
    r.write("etc/sysconfig/network-scripts/ifcfg-ens192", IFCFG_RHEL.format(i="ens192") +
            'ETHTOOL_OPTS="-C ens192 rx-usecs 25; -K ens192 lro off"\n')
    r = vm("rhel_ifcfg_wrong_coalesce.fail", "ETHTOOL_OPTS sets rx-usecs 50")
    r.write("etc/sysconfig/network-scripts/ifcfg-ens192", IFCFG_RHEL.format(i="ens192") +
            'ETHTOOL_OPTS="-C ens192 rx-usecs 50; -K ens192 lro off; -G ens192 rx 512 rx-mini 0 tx 512"\n')
    r = vm("ethtool_rx_usec_typo.fail",
           "seed 001's `-C ens192 rx-usec 25`: ethtool rejects the unknown parameter (\"unknown parameter "
           "'rx-usec'\") and the whole -C command applies nothing", objects={"ens192": "fail"})
    r.write("etc/sysconfig/network-scripts/ifcfg-ens192", IFCFG_RHEL.format(i="ens192") +
            'ETHTOOL_OPTS="-C ens192 rx-usec 25; -K ens192 lro off; -G ens192 rx 512 rx-mini 0 tx 512"\n')
    # -- NetworkManager keyfiles
    r = vm("nm_keyfile_ethtool.pass", "NetworkManager keyfile [ethtool] section, root-owned 0600")
    r.write(KEYFILE.format(i="ens192"), NM_KEYFILE.format(i="ens192", rx=512), mode=0o600)
    filestat(r, {KEYFILE.format(i="ens192"): SECURE})
    r = vm("nm_keyfile_ring_rx_1024.fail", "keyfile ring-rx=1024")
    r.write(KEYFILE.format(i="ens192"), NM_KEYFILE.format(i="ens192", rx=1024), mode=0o600)
    filestat(r, {KEYFILE.format(i="ens192"): SECURE})
    r = vm("keyfile_mode_0644_ignored.fail",
           "the keyfile is mode 0644: NetworkManager refuses it (\"File permissions (644) are insecure\")")
    r.write(KEYFILE.format(i="ens192"), NM_KEYFILE.format(i="ens192", rx=512), mode=0o644)
    filestat(r, {KEYFILE.format(i="ens192"): {"mode": "0644", "uid": 0}})
    r = vm("keyfile_not_owned_by_root.fail", "the keyfile is 0600 but owned by uid 1000: NetworkManager refuses it")
    r.write(KEYFILE.format(i="ens192"), NM_KEYFILE.format(i="ens192", rx=512), mode=0o600)
    filestat(r, {KEYFILE.format(i="ens192"): {"mode": "0600", "uid": 1000}})
    r = vm("keyfile_bound_by_mac.pass",
           "no interface-name: [ethernet] mac-address is ens192's permanent MAC (addr_assign_type 0)")
    mac(r, "ens192", "00:50:56:9a:12:34")
    r.write(KEYFILE.format(i="data"), NM_KEYFILE.format(i="ens192", rx=512).replace(
        "interface-name=ens192\n", "").replace("[ethernet]\n", "[ethernet]\nmac-address=00:50:56:9A:12:34\n"),
        mode=0o600)
    filestat(r, {KEYFILE.format(i="data"): SECURE})
    r = vm("keyfile_mac_of_other_nic.fail", "mac-address names another NIC's MAC: the keyfile binds nothing here")
    mac(r, "ens192", "00:50:56:9a:12:34")
    r.write(KEYFILE.format(i="data"), NM_KEYFILE.format(i="ens192", rx=512).replace(
        "interface-name=ens192\n", "").replace("[ethernet]\n", "[ethernet]\nmac-address=00:50:56:9a:99:99\n"),
        mode=0o600)
    filestat(r, {KEYFILE.format(i="data"): SECURE})
    r = vm("keyfile_match_driver.pass", "[match] driver=vmxnet3 binds the keyfile to both vmxnet3 NICs",
           nics=TWO_NICS, objects={"ens192": "pass", "ens224": "pass"})
    r.write(KEYFILE.format(i="vmxnet3"), NM_KEYFILE.format(i="x", rx=512).replace(
        "interface-name=x\n", "").replace("[ethernet]\n", "[match]\ndriver=vmxnet3;\n\n[ethernet]\n"), mode=0o600)
    filestat(r, {KEYFILE.format(i="vmxnet3"): SECURE})
    r = vm("keyfile_option_typo.fail", "`coalesce-rx-usec=25` is not an NM ethtool option: NetworkManager ignores it")
    r.write(KEYFILE.format(i="ens192"), NM_KEYFILE.format(i="ens192", rx=512).replace(
        "coalesce-rx-usecs", "coalesce-rx-usec"), mode=0o600)
    filestat(r, {KEYFILE.format(i="ens192"): SECURE})
    r = persist_az("keyfile_on_vf_master_at_driver_default.pass", net="NetworkManager.service", desc=
                   "only the VF's keyfile sets channels: it does not reach the hv_netvsc master, which comes back "
                   "at its driver default, 8 on Linux 5.14 (<= 16: it needs no configuration of its own)",
                   objects={"enP1s1": "pass", "eth0": "pass"})
    r.write(KEYFILE.format(i="enP1s1"),
            "[connection]\nid=enP1s1\ntype=ethernet\ninterface-name=enP1s1\n\n[ethtool]\nchannels-combined=16\n",
            mode=0o600)
    filestat(r, {KEYFILE.format(i="enP1s1"): SECURE})
    # -- NetworkManager dispatcher scripts
    dispatch = "etc/NetworkManager/dispatcher.d/90-accelnet-tuning"
    both = """#!/bin/sh
[ "$1" = "eth0" ] && [ "$2" = "up" ] || exit 0
/sbin/ethtool -L eth0 combined 16
/sbin/ethtool -L enP1s1 combined 16
"""
    r = persist_az("nm_dispatcher_script.pass", net="NetworkManager.service",
                   desc="a dispatcher script (0755, root) runs ethtool -L for eth0 and enP1s1")
    r.write(dispatch, both, mode=0o755)
    r = persist_az("dispatcher_group_writable.fail", net="NetworkManager.service", desc=
                   "the same script, mode 0775: NetworkManager-dispatcher(8) never runs a script writable by group",
                   objects={"eth0": "pass", "enP1s1": "fail"})
    r.write(dispatch, both, mode=0o755)
    filestat(r, {dispatch: {"mode": "0775", "uid": 0}})
    r = persist_az("dispatcher_not_owned_by_root.fail", net="NetworkManager.service",
                   desc="the same script owned by uid 1000: never run",
                   objects={"eth0": "pass", "enP1s1": "fail"})
    r.write(dispatch, both, mode=0o755)
    filestat(r, {dispatch: {"mode": "0755", "uid": 1000}})
    r = persist_az("dispatcher_resolves_vf.pass", net="NetworkManager.service", desc=
                   "the script runs for eth0 and finds its VF through the lower_* link: ethtool -L reaches enP1s1",
                   objects={"eth0": "pass", "enP1s1": "pass"})
    r.write(dispatch, """#!/bin/sh
# queues of the Accelerated Networking pair (the VF name changes after a redeploy)
[ "$1" = "eth0" ] && [ "$2" = "up" ] || exit 0
/sbin/ethtool -L "$1" combined 16
for link in /sys/class/net/"$1"/lower_*; do
    vf=${link##*/lower_}
    /sbin/ethtool -L "$vf" combined 16
done
""", mode=0o750)
    r = persist_az("dispatcher_usr_lib_masked_by_etc.fail", net="NetworkManager.service", desc=
                   "usr/lib/NetworkManager/dispatcher.d/90-accelnet-tuning is hidden by the same name in /etc linked "
                   "to /dev/null", objects={"eth0": "pass", "enP1s1": "fail"})
    r.write("usr/lib/NetworkManager/dispatcher.d/90-accelnet-tuning", both, mode=0o755)
    r.symlink(dispatch, "/dev/null")
    # -- udev rules
    r = persist_az("udev_rule_matches_vf_by_driver.pass",
                   "a udev rule matching DRIVERS==\"mlx5_core\" runs ethtool -L $kernel for every mlx5 VF; "
                   "ifcfg-eth0 sets the master", objects={"eth0": "pass", "enP1s1": "pass"})
    r.write("etc/udev/rules.d/70-accelnet-queues.rules", VF_DRIVER_RULE)
    r.write("etc/sysconfig/network/ifcfg-eth0", IFCFG_SUSE + "ETHTOOL_OPTIONS='-L eth0 combined 16'\n")
    r = persist_az("udev_driver_key_never_matches_net.fail",
                   "DRIVER== (not DRIVERS==) tests the net device itself, which has no driver: the rule never fires",
                   objects={"enP1s1": "fail"})
    r.write("etc/udev/rules.d/70-accelnet-queues.rules", VF_DRIVER_RULE.replace("DRIVERS==", "DRIVER=="))
    r = persist_az("udev_rule_change_action_only.fail",
                   "ACTION==\"change\": boot sends \"add\" events (udevadm trigger --action=add)",
                   objects={"enP1s1": "fail"})
    r.write("etc/udev/rules.d/70-accelnet-queues.rules", VF_DRIVER_RULE.replace('"add"', '"change"'))
    r = persist_az("udev_rule_kernel_alternatives.pass",
                   "KERNEL==\"eth[0-9]*|enP*\" (globs with | alternatives) matches both interfaces",
                   objects={"eth0": "pass", "enP1s1": "pass"})
    r.write("etc/udev/rules.d/70-accelnet-queues.rules",
            'ACTION=="add", SUBSYSTEM=="net", KERNEL=="eth[0-9]*|enP*", RUN+="/usr/sbin/ethtool -L %k combined 16"\n')
    # -- systemd .link files: only the first matching file applies; RxMiniBufferSize=0 is refused
    r = vm("systemd_link_driver_match.pass",
           "a .link file matching Driver=vmxnet3 (rx-usecs, LRO, rx/tx rings) plus a udev rule for rx-mini 0, "
           "which a .link cannot set", nics=TWO_NICS, objects={"ens192": "pass", "ens224": "pass"})
    r.write("etc/systemd/network/10-vmxnet3.link", LINK_FILE.format(match="Driver=vmxnet3").replace(
        "RxMiniBufferSize=0\n", ""))
    r.write("etc/udev/rules.d/85-vmxnet3-rx-mini.rules", RX_MINI_RULE)
    r = vm("systemd_link_name_glob.pass", "the same with OriginalName=ens*")
    r.write("etc/systemd/network/10-vmxnet3.link", LINK_FILE.format(match="OriginalName=ens*").replace(
        "RxMiniBufferSize=0\n", ""))
    r.write("etc/udev/rules.d/85-vmxnet3-rx-mini.rules", RX_MINI_RULE)
    r = vm("link_rx_mini_zero_not_applied.fail",
           "RxMiniBufferSize=0: systemd accepts only max or 1..4294967295 and ignores the assignment",
           objects={"ens192": "fail"})
    r.write("etc/systemd/network/10-vmxnet3.link", LINK_FILE.format(match="Driver=vmxnet3"))
    r = vm("systemd_link_shadowed_by_earlier_match.fail",
           "05-names.link (no ethtool settings) matches first, so 10-vmxnet3.link is never applied "
           "(systemd.link(5): the first matching file in lexical order applies)")
    r.write("etc/systemd/network/05-names.link", "[Match]\nOriginalName=ens*\n\n[Link]\nNamePolicy=path\n")
    r.write("etc/systemd/network/10-vmxnet3.link", LINK_FILE.format(match="Driver=vmxnet3"))
    r = vm("link_masked_by_etc_dev_null.fail",
           "usr/lib/systemd/network/10-vmxnet3.link is masked by etc/systemd/network/10-vmxnet3.link -> /dev/null")
    r.write("usr/lib/systemd/network/10-vmxnet3.link", LINK_FILE.format(match="Driver=vmxnet3").replace(
        "RxMiniBufferSize=0\n", ""))
    r.write("etc/udev/rules.d/85-vmxnet3-rx-mini.rules", RX_MINI_RULE)
    r.symlink("etc/systemd/network/10-vmxnet3.link", "/dev/null")
    r = vm("link_coalesce_bare_number_is_seconds.fail",
           "RxCoalesceSec=25 is 25 seconds (systemd time span), not 25 microseconds")
    r.write("etc/systemd/network/10-vmxnet3.link", LINK_FILE.format(match="Driver=vmxnet3").replace(
        "RxMiniBufferSize=0\n", "").replace("25us", "25"))
    r.write("etc/udev/rules.d/85-vmxnet3-rx-mini.rules", RX_MINI_RULE)
    r = vm("link_negated_driver_excludes.fail", "Driver=!vmxnet3 excludes the vmxnet3 NICs")
    r.write("etc/systemd/network/10-vmxnet3.link", LINK_FILE.format(match="Driver=!vmxnet3").replace(
        "RxMiniBufferSize=0\n", ""))
    r.write("etc/udev/rules.d/85-vmxnet3-rx-mini.rules", RX_MINI_RULE)
    r = vm("filestat_not_json.error", "a snapshot whose filestat.json is not JSON: owner and mode are unknown, "
           "so the keyfile can be neither credited nor refused")
    r.write(KEYFILE.format(i="ens192"), NM_KEYFILE.format(i="ens192", rx=512), mode=0o600)
    r.write("filestat.json", "{etc/NetworkManager: 0600\n")
    # -- the consumer must start at boot, and set the interface up at boot
    r = persist_az("suse_ifcfg_startmode_manual.fail",
                   "ifcfg-enP1s1 has no STARTMODE: ifcfg(5) default \"manual\" is not set up at boot",
                   objects={"enP1s1": "fail"})
    r.write("etc/sysconfig/network/ifcfg-eth0", IFCFG_SUSE + "ETHTOOL_OPTIONS='-L eth0 combined 16'\n")
    r.write("etc/sysconfig/network/ifcfg-enP1s1", "BOOTPROTO='none'\nETHTOOL_OPTIONS='-L enP1s1 combined 16'\n")
    r = vm("rhel_ifcfg_onboot_no.fail", "ETHTOOL_OPTS in an ifcfg with ONBOOT=no: not activated at boot")
    r.write("etc/sysconfig/network-scripts/ifcfg-ens192", IFCFG_RHEL.format(i="ens192").replace(
        "ONBOOT=yes", "ONBOOT=no") + 'ETHTOOL_OPTS="-C ens192 rx-usecs 25; -K ens192 lro off; '
        '-G ens192 rx 512 rx-mini 0 tx 512"\n')
    r = vm("keyfile_autoconnect_false.fail", "a 0600 keyfile with autoconnect=false: not activated at boot")
    r.write(KEYFILE.format(i="ens192"), NM_KEYFILE.format(i="ens192", rx=512).replace(
        "interface-name=ens192\n", "interface-name=ens192\nautoconnect=false\n"), mode=0o600)
    filestat(r, {KEYFILE.format(i="ens192"): SECURE})
    r = vm("keyfile_in_run_is_not_persistent.fail",
           "the keyfile is in /run/NetworkManager/system-connections: an in-memory profile, gone after a reboot")
    r.write("run/NetworkManager/system-connections/ens192.nmconnection", NM_KEYFILE.format(i="ens192", rx=512),
            mode=0o600)
    filestat(r, {"run/NetworkManager/system-connections/ens192.nmconnection": SECURE})
    r = persist_az("suse_ifcfg_wicked_not_enabled.fail", net="NetworkManager.service",
                   desc="ifcfg-eth0 and ifcfg-enP1s1 set the queues, but wicked.service (their only reader) is not "
                        "enabled: NetworkManager runs instead", objects={"eth0": "pass", "enP1s1": "fail"})
    r.write("etc/sysconfig/network/ifcfg-eth0", IFCFG_SUSE + "ETHTOOL_OPTIONS='-L eth0 combined 16'\n")
    r.write("etc/sysconfig/network/ifcfg-enP1s1", "STARTMODE='hotplug'\nETHTOOL_OPTIONS='-L enP1s1 combined 16'\n")
    r = vm("keyfile_networkmanager_disabled.fail", "a good 0600 keyfile, but NetworkManager.service is not enabled",
           net_enabled=False)
    r.write(KEYFILE.format(i="ens192"), NM_KEYFILE.format(i="ens192", rx=512), mode=0o600)
    filestat(r, {KEYFILE.format(i="ens192"): SECURE})
    r = persist_az("keyfile_vf_unmanaged_by_udev.fail", net="NetworkManager.service",
                   desc="the VF's keyfile is never activated: Azure's 68-azure-sriov-nm-unmanaged.rules sets "
                        "NM_UNMANAGED=1 for interfaces below hv_pci", objects={"enP1s1": "fail"})
    r.rel_symlink(f"{bx.VMBUS}/4d2a7e90-7870-4c8e-a7f2-6045bd9c1e01/driver", "sys/bus/vmbus/drivers/hv_pci")
    r.write("usr/lib/udev/rules.d/68-azure-sriov-nm-unmanaged.rules", AZURE_NM_UNMANAGED)
    r.write(KEYFILE.format(i="enP1s1"),
            "[connection]\nid=enP1s1\ntype=ethernet\ninterface-name=enP1s1\n\n[ethtool]\nchannels-combined=16\n",
            mode=0o600)
    filestat(r, {KEYFILE.format(i="enP1s1"): SECURE})
    r = vm("link_without_match_applies_to_all.pass",
           "a .link without [Match] matches every interface (systemd.link(5): \"the file will match all interfaces "
           "and systemd-udevd warns about that\")", nics=TWO_NICS, objects={"ens192": "pass", "ens224": "pass"})
    r.write("etc/systemd/network/10-vmxnet3.link", LINK_FILE.format(match="").replace("[Match]\n\n", "").replace(
        "RxMiniBufferSize=0\n", ""))
    r.write("etc/udev/rules.d/85-vmxnet3-rx-mini.rules", RX_MINI_RULE)
    r = vm("link_match_path_other_nic.fail", "Path=pci-0000:13:00.0 (ID_PATH) names ens224's slot, not ens192's",
           objects={"ens192": "fail"})
    r.write("etc/systemd/network/10-vmxnet3.link", LINK_FILE.format(match="Path=pci-0000:13:00.0").replace(
        "RxMiniBufferSize=0\n", ""))
    r.write("etc/udev/rules.d/85-vmxnet3-rx-mini.rules", RX_MINI_RULE)
    r = vm("link_match_path.pass", "Path=pci-0000:0b:00.0 matches ens192 by its ID_PATH")
    r.write("etc/systemd/network/10-vmxnet3.link", LINK_FILE.format(match="Path=pci-0000:0b:00.0").replace(
        "RxMiniBufferSize=0\n", ""))
    r.write("etc/udev/rules.d/85-vmxnet3-rx-mini.rules", RX_MINI_RULE)
    r = persist_az("udev_rule_env_id_net_driver.pass",
                   "ENV{ID_NET_DRIVER}==\"mlx5_core\" (udev's net driver property) selects the VF",
                   objects={"enP1s1": "pass"})
    r.write("etc/udev/rules.d/81-accelnet-queues.rules",
            'ACTION=="add", SUBSYSTEM=="net", ENV{ID_NET_DRIVER}=="mlx5_core", '
            'RUN+="/usr/sbin/ethtool -L $kernel combined 16"\n')
    r.write("etc/sysconfig/network/ifcfg-eth0", IFCFG_SUSE + "ETHTOOL_OPTIONS='-L eth0 combined 16'\n")
    # DRIVERS!="mlx5_core" holds at the VF's net device itself (no driver): see build_udev_scenarios.py
    # -- seed 003: set_best_affinity.ksh at start-up sets the AN queues to the node's CPUs
    r = sas_best_affinity("set_best_affinity_at_boot.pass", K, C,
                          "an enabled unit runs set_best_affinity.ksh at start-up (seed 003)", enabled=True)
    r = sas_best_affinity("set_best_affinity_unit_disabled.fail", K, C,
                          "the unit running set_best_affinity.ksh is not enabled", enabled=False)
    r = sas_best_affinity("set_best_affinity_cron_reboot.pass", K, C,
                          "root's crontab runs set_best_affinity.ksh @reboot", enabled=None)


BEST_UNIT = """[Unit]
Description=Set Accelerated Networking queues and IRQ affinity (set_best_affinity.ksh, SAS Grid on ANF)
After=remote-fs.target network-online.target
Wants=network-online.target

[Service]
Type=oneshot
ExecStart=/sasdata/tools/set_best_affinity.ksh /sasdata/.affinity

[Install]
WantedBy=multi-user.target
"""


def sas_best_affinity(name, kind, check, desc, *, enabled, **meta) -> Root:
    """An Azure SAS Grid node (azure-sas-grid-anf) whose start-up runs set_best_affinity.ksh."""
    r = Root(kind, name, check, desc, profile="azure-sas-grid-anf", **meta)
    azure_host(r)
    an_pair(r, msi=range(24, 33))
    mountinfo(r, [nfs_line()])
    if enabled is None:
        r.write("var/spool/cron/tabs/root", "@reboot /sasdata/tools/set_best_affinity.ksh /sasdata/.affinity\n")
    else:
        r.write("etc/systemd/system/sas-affinity.service", BEST_UNIT)
        if enabled:
            bx.enable(r, "sas-affinity.service", where="/etc/systemd/system")
    return r


# --------------------------------------------------------------------------------------
# irq_affinity / irq_spread / irq_affinity_persistent
# --------------------------------------------------------------------------------------

def irq_scn(kind, name, check, desc, *, host=None, meta=None, **kw) -> Root:
    r = Root(kind, name, check, desc, **(meta or {}))
    (host or az_mlx5_host)(r, **kw)
    return r


def garble_count(r: Root, irq: int) -> None:
    """IRQ `irq`'s first count in proc/interrupts gets a `9x` in front: not a number."""
    with open(os.path.join(r.path, "proc/interrupts")) as f:
        lines = f.read().splitlines(keepends=True)
    for k, line in enumerate(lines):
        if line.lstrip().startswith(f"{irq}:"):
            label, rest = line.split(":", 1)
            lines[k] = label + ":" + re.sub(r"[0-9]+", lambda m: "9x" + m.group(), rest, count=1)
    r.write("proc/interrupts", "".join(lines))


def mlx4_host(r: Root) -> None:
    """mlx4 VF: `mlx4-async@pci:<bdf>` control, `mlx4-<n>@<bdf>` data; msi_irqs 30 has no proc/irq entry."""
    azure_host(r, kernel="4.12.14-122.37-default", os_key="sles12sp5")
    bdf = "0002:00:02.0"
    an_pair(r, domain=2, msi=range(24, 31), vf_driver="sys/bus/pci/drivers/mlx4_core")
    rows = [(24, [0], "PCI-MSI", f"mlx4-async@pci:{bdf}")]
    rows += [(24 + n, [1 + n], "PCI-MSI", f"mlx4-{n}@{bdf}") for n in range(1, 6)]
    interrupts(r, NODES16, rows, affinity=affinity_of(rows))


def vmxnet3_irq_host(r: Root, *, placement=(2, 3, 4, 5)) -> None:
    vmware_host(r)
    bdf = vmxnet3_nic(r, msi=range(59, 64))
    rows = [(59 + i, [cpu], "PCI-MSI", f"ens192-rxtx-{i}") for i, cpu in enumerate(placement)]
    rows.append((63, [0], "PCI-MSI", "ens192-event-4"))
    aff = affinity_of(rows)
    aff[63] = (list(range(16)), [0])
    interrupts(r, NODES16, rows, hyperv=False, affinity=aff)
    r.json("ethtool/ens192.json", bx.ethtool_vmxnet3(bdf, 4, tuned=True))


VIRTIO_SCOPE = {"interfaces": {"include": [{"driver": ["virtio_net"]}]}}


def virtio_host(r: Root, *, numa=0, cpus=(2, 3, 4, 5)) -> None:
    """virtio_net: the netdev's device is virtio1; msi_irqs and numa_node live on the PCI parent."""
    r.value("proc/sys/kernel/osrelease", "5.15.0-91-generic")
    r.write("etc/os-release", OS["ubuntu2004"])
    r.value("sys/class/dmi/id/sys_vendor", "QEMU")
    bx.topology(r, NODES16)
    mountinfo(r, [])
    pci = "sys/devices/pci0000:00/0000:00:03.0"
    r.rel_symlink(f"{pci}/driver", "sys/bus/pci/drivers/virtio-pci")
    r.value(f"{pci}/numa_node", numa)
    msi = list(range(40, 45))
    r.mkdir(f"{pci}/msi_irqs")
    for n in msi:
        r.touch(f"{pci}/msi_irqs/{n}")
    vdev = f"{pci}/virtio1"
    r.rel_symlink(f"{vdev}/driver", "sys/bus/virtio/drivers/virtio_net")
    net = f"{vdev}/net/eth0"
    r.value(f"{net}/operstate", "up")
    r.symlink(f"{net}/device", "../../../virtio1")
    r.rel_symlink("sys/class/net/eth0", net)
    names = ["virtio1-config", "virtio1-input.0", "virtio1-output.0", "virtio1-input.1", "virtio1-output.1"]
    rows = [(irq, [0] if k == 0 else [cpus[k - 1]], "PCI-MSI", nm) for k, (irq, nm) in enumerate(zip(msi, names))]
    aff = affinity_of(rows)
    aff[40] = (list(range(16)), [0])
    interrupts(r, NODES16, rows, hyperv=False, affinity=aff)


def control_vector_host(r: Root, *, control: list[str], data: list[str], data_cpus=None,
                        kernel=AZ_KERNEL, os_key="sles15sp4", vf_driver=bx.MLX5_DRIVER) -> None:
    """An AN VF whose IRQ names are given as the driver registers them (`%s@pci:<bdf>`): the
    control vectors sit on every CPU (as irqbalance or the driver left them), data on 2.."""
    azure_host(r, kernel=kernel, os_key=os_key)
    n = len(control) + len(data)
    _, _, bdf = an_pair(r, msi=range(24, 24 + n), vf_driver=vf_driver)
    cpus = data_cpus or [[2 + k % 6] for k in range(len(data))]
    rows = [(24 + k, [0], "Hyper-V PCIe MSI", f"{name}@pci:{bdf}") for k, name in enumerate(control)]
    rows += [(24 + len(control) + k, cpus[k], "Hyper-V PCIe MSI", f"{name}@pci:{bdf}") for k, name in enumerate(data)]
    aff = affinity_of(rows)
    for k in range(len(control)):
        aff[24 + k] = (list(range(16)), [0])
    interrupts(r, NODES16, rows, affinity=aff)


@scenario("irq_affinity")
def _irq_affinity():
    K, C = "irq_affinity", "nic-irq-affinity"
    irq_scn(K, "mlx5_pinned_node0.pass", C, "async0 on CPU 0 (control), comp0-7 on CPUs 2-7",
            meta={"objects": {"enP1s1/irq25": "pass", "enP1s1/irq32": "pass"}})
    irq_scn(K, "mlx5_comp_beyond_channels_unpinned.fail", C,
            "4 channels, but completion vectors comp4-7 (beyond the channel count) still sit on 0-15",
            combined=4, placement=[[2], [3], [4], [5], list(range(16)), list(range(16)), list(range(16)),
                                   list(range(16))],
            meta={"objects": {"enP1s1/irq25": "pass", "enP1s1/irq29": "fail", "enP1s1/irq32": "fail"}})
    irq_scn(K, "mlx5_old_kernel_async_name.pass", C, "RHEL 8.4 kernel names the control vector mlx5_async@pci:",
            kernel=RHEL84_KERNEL, os_key="rhel84", async_name="mlx5_async")
    irq_scn(K, "mlx4_async_and_stale_msi_entry.pass", C,
            "mlx4-async@pci: on CPU 0 is control; msi_irqs/30 has no proc/irq entry and is skipped",
            host=mlx4_host, meta={"objects": {"enP1s1/irq25": "pass", "enP1s1/irq29": "pass"}})
    irq_scn(K, "vmxnet3_event_excluded.pass", C, "ens192-rxtx-0..3 on CPUs 2-5; ens192-event-4 on all CPUs",
            host=vmxnet3_irq_host, meta={"objects": {"ens192/irq59": "pass"}})
    irq_scn(K, "vmxnet3_rxtx_on_cpu0.fail", C, "rxtx-0 left on CPU 0 (driver default)",
            host=lambda r: vmxnet3_irq_host(r, placement=(0, 3, 4, 5)),
            meta={"objects": {"ens192/irq59": "fail", "ens192/irq60": "pass"}})
    irq_scn(K, "virtio_net_parent_pci.pass", C,
            "virtio1-input/output on CPUs 2-5, virtio1-config (control) on all; msi_irqs on the PCI parent",
            host=virtio_host, meta={"scope": VIRTIO_SCOPE, "objects": {"eth0/irq41": "pass", "eth0/irq44": "pass"}})
    irq_scn(K, "virtio_net_numa_from_parent.pass", C,
            "node: nic reads numa_node 1 from the virtio device's PCI parent; IRQs on CPUs 10-13",
            host=lambda r: virtio_host(r, numa=1, cpus=(10, 11, 12, 13)),
            meta={"scope": VIRTIO_SCOPE, "vars": {"node": "nic"}})
    irq_scn(K, "effective_affinity_outside.fail", C, "smp_affinity_list 2-7 but effective_affinity_list 0",
            override={25: ([2, 3, 4, 5, 6, 7], [0])}, meta={"objects": {"enP1s1/irq25": "fail"}})
    irq_scn(K, "affinity_includes_cpu0.fail", C, "comp0 allowed on 0-7", override={25: (list(range(8)), [2])},
            meta={"objects": {"enP1s1/irq25": "fail", "enP1s1/irq26": "pass"}})
    irq_scn(K, "affinity_on_cpu1.fail", C, "comp1 pinned to CPU 1 (core 0's sibling)", override={26: ([1], [1])},
            meta={"objects": {"enP1s1/irq26": "fail"}})
    irq_scn(K, "irqs_on_node1.fail", C, "all completion vectors on node 1 (CPUs 8-13)",
            placement=[[8 + i % 6] for i in range(8)],
            meta={"objects": {"enP1s1/irq25": "fail", "enP1s1/irq32": "fail"}})
    irq_scn(K, "node_nic_profile_nic_on_node1.pass", C,
            "azure-sas-grid-anf (node: nic): the VF is on node 1 and its IRQs on CPUs 10-15",
            numa=1, placement=[[10 + i % 6] for i in range(8)], meta={"profile": "azure-sas-grid-anf"})
    # control vector names by driver and kernel (checks/network/nic-irq-affinity.yaml cites the sources)
    irq_scn(K, "mlx5_4_18_cmd_async_pages_eq_excluded.pass", C,
            "kernel 4.18 (eq.c mlx5_start_eqs): mlx5_cmd_eq, mlx5_async_eq and mlx5_pages_eq on all CPUs are "
            "control; mlx5_comp0-5 on CPUs 2-7",
            host=lambda r: control_vector_host(r, control=["mlx5_cmd_eq", "mlx5_async_eq", "mlx5_pages_eq"],
                                               data=[f"mlx5_comp{k}" for k in range(6)],
                                               kernel="4.18.0-193.el8.x86_64", os_key="rhel82"),
            meta={"objects": {"enP1s1/irq27": "pass"}})
    irq_scn(K, "mlx5_old_kernel_async_excluded.pass", C,
            "kernel 5.4 (pci_irq.c irq_set_name): one mlx5_async@pci: control vector on all CPUs",
            host=lambda r: control_vector_host(r, control=["mlx5_async"], data=[f"mlx5_comp{k}" for k in range(6)],
                                               kernel="5.4.0-1109-azure", os_key="ubuntu2004"))
    irq_scn(K, "mlx5_old_kernel_comp_on_cpu0.fail", C,
            "kernel 4.18 names: the control vectors are excluded, but mlx5_comp0 on CPU 0 is data and fails",
            host=lambda r: control_vector_host(r, control=["mlx5_cmd_eq", "mlx5_async_eq", "mlx5_pages_eq"],
                                               data=[f"mlx5_comp{k}" for k in range(4)],
                                               data_cpus=[[0], [3], [4], [5]],
                                               kernel="4.18.0-193.el8.x86_64", os_key="rhel82"),
            meta={"objects": {"enP1s1/irq27": "fail", "enP1s1/irq28": "pass"}})
    irq_scn(K, "mana_hwc_excluded.pass", C,
            "MANA (gdma_main.c mana_gd_setup_irqs): mana_hwc@pci: on all CPUs is the hardware channel, "
            "mana_q0-5 on CPUs 2-7",
            host=lambda r: control_vector_host(r, control=["mana_hwc"], data=[f"mana_q{k}" for k in range(6)],
                                               vf_driver="sys/bus/pci/drivers/mana"))
    irq_scn(K, "mana_q_on_cpu1.fail", C, "MANA data vector mana_q1 pinned to CPU 1",
            host=lambda r: control_vector_host(r, control=["mana_hwc"], data=[f"mana_q{k}" for k in range(4)],
                                               data_cpus=[[2], [1], [4], [5]], vf_driver="sys/bus/pci/drivers/mana"),
            meta={"objects": {"enP1s1/irq26": "fail", "enP1s1/irq25": "pass"}})
    r = irq_scn(K, "bonding_masters_file_beside_vf.pass", C,
                "sys/class/net/bonding_masters (a file, bonding loaded with no bond) beside the AN pair")
    r.write("sys/class/net/bonding_masters", "\n")
    irq_scn(K, "sas_profile_cpu0_allowed_on_nic_node.pass", C,
            "azure-sas-grid-anf (seed 003): IRQs anywhere on the NIC's node; comp0 on CPU 0 and comp1 on CPU 1 "
            "are fine there (seed 000's CPU 0-1 exclusion does not apply)",
            placement=[[0], [1], [2], [3], [4], [5], [6], [7]],
            meta={"profile": "azure-sas-grid-anf", "objects": {"enP1s1/irq25": "pass", "enP1s1/irq26": "pass"}})
    irq_scn(K, "sas_profile_irqs_off_nic_node.fail", C,
            "azure-sas-grid-anf: the VF is on node 0 but its IRQs sit on node 1 (CPUs 8-13)",
            placement=[[8 + i % 6] for i in range(8)],
            meta={"profile": "azure-sas-grid-anf", "objects": {"enP1s1/irq25": "fail"}})
    r = irq_scn(K, "garbage_proc_interrupts.error", C, "proc/interrupts is not text from the kernel")
    r.write("proc/interrupts", "\x7fELF\x02\x01\x01\x00garbage\n\x00\x00\x00\n")
    r = irq_scn(K, "garbled_row_of_another_irq.pass", C,
                "IRQ 1 (not the NIC's: not in its msi_irqs) has a count that is not a number; the NIC's rows "
                "are whole, so its IRQs are judged", meta={"objects": {"enP1s1/irq25": "pass"}})
    garble_count(r, 1)
    r = irq_scn(K, "proc_interrupts_empty.error", C, "proc/interrupts is an empty file (a failed copy)")
    r.write("proc/interrupts", "")
    r = irq_scn(K, "proc_interrupts_cut_in_header.error", C, "proc/interrupts truncated inside the CPU header")
    r.write("proc/interrupts", "           CPU0       CPU1       CPU2       CP")
    r = irq_scn(K, "proc_interrupts_truncated_before_nic_rows.error", C,
                "proc/interrupts cut after the legacy rows: the NIC's rows (names) are missing, so control and "
                "data vectors cannot be told apart")
    with open(os.path.join(r.path, "proc/interrupts")) as f:
        text = f.read()
    r.write("proc/interrupts", "".join(text.splitlines(keepends=True)[:3]))


@scenario("irq_spread")
def _irq_spread():
    K, C = "irq_spread", "nic-irq-spread"
    irq_scn(K, "one_irq_per_cpu.pass", C, "6 completion vectors on CPUs 2-7, one each", ncomp=6, combined=6)
    irq_scn(K, "two_irqs_same_cpu_enough_cpus.fail", C, "comp0 and comp1 both on CPU 3 while CPUs 4-7 are free",
            ncomp=4, combined=4, placement=[[3], [3], [2], [4]],
            meta={"objects": {"enP1s1/irq25": "fail", "enP1s1/irq26": "fail", "enP1s1/irq27": "pass"}})
    irq_scn(K, "more_irqs_than_cpus_doubled_evenly.pass", C, "12 completion vectors on 6 CPUs, two each",
            ncomp=12, combined=12)
    irq_scn(K, "more_irqs_than_cpus_uneven.fail", C, "12 vectors on 6 CPUs, CPU 2 holds three",
            ncomp=12, combined=12, placement=[[2], [2], [2], [3], [3], [4], [4], [5], [5], [6], [6], [7]])
    irq_scn(K, "multi_cpu_mask.fail", C, "comp2 may run on CPUs 2-7", ncomp=6, combined=6,
            override={27: ([2, 3, 4, 5, 6, 7], [2])}, meta={"objects": {"enP1s1/irq27": "fail"}})
    irq_scn(K, "comp_beyond_channels_stacked.fail", C,
            "4 channels; comp4-7 (beyond the channel count) all stacked on CPU 2 with comp0",
            ncomp=8, combined=4, placement=[[2], [3], [4], [5], [2], [2], [2], [2]])
    irq_scn(K, "vmxnet3_event_excluded.pass", C, "ens192-event-4 spans all CPUs but is control",
            host=vmxnet3_irq_host)
    irq_scn(K, "virtio_net_config_excluded.pass", C, "virtio1-config spans all CPUs but is control",
            host=virtio_host, meta={"scope": VIRTIO_SCOPE})
    r = irq_scn(K, "garbage_proc_interrupts.error", C, "proc/interrupts has a count that is not a number")
    garble_count(r, 25)


PIN_SCRIPT = """#!/bin/bash
# pin the data IRQs of the NICs given to CPUs $1 (usage: pin-nic-irqs.sh 2-7 enP1s1)
cpus=$1; shift
for ifc in "$@"; do
    for irq in $(ls /sys/class/net/"$ifc"/device/msi_irqs); do
        echo "$cpus" > /proc/irq/"$irq"/smp_affinity_list
    done
done
"""
PIN_UNIT = """[Unit]
Description=Pin Accelerated Networking IRQs to NUMA node 0
After=network-online.target
Wants=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/pin-nic-irqs.sh 2-7 {nic}

[Install]
WantedBy=multi-user.target
"""
DISPATCHER = """#!/bin/sh
[ "$1" = "{master}" ] && [ "$2" = "up" ] || exit 0
/usr/local/sbin/set_irq_affinity_cpulist.sh 2-7 {nic}
"""


AN_UNIT = """[Unit]
Description=Accelerated Networking tuning at boot
After=network-online.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/{script} {args}

[Install]
WantedBy=multi-user.target
"""
# finds the VF below the synthetic NIC it is given, whatever name the VF has after a redeploy
LOWER_QUEUES_SCRIPT = """#!/bin/bash
# usage: an-queues.sh MASTER COUNT
for lower in /sys/class/net/"$1"/lower_*; do
    vf=${lower##*/lower_}
    /usr/sbin/ethtool -L "$vf" combined "$2"
done
"""
LOWER_PIN_SCRIPT = """#!/bin/bash
# usage: an-irqs.sh MASTER CPULIST: pin every MSI vector of the VF below MASTER to CPULIST
for lower in /sys/class/net/"$1"/lower_*; do
    for irq in $(ls "$lower"/device/msi_irqs); do
        echo "$2" > /proc/irq/$irq/smp_affinity_list
    done
done
"""
ARGS_QUEUES_SCRIPT = """#!/bin/sh
# usage: set-queues.sh IFACE COUNT
exec /usr/sbin/ethtool -L "$1" combined "$2"
"""


def an_unit(r: Root, script: str, text: str, args: str) -> None:
    r.write("etc/systemd/system/an-tuning.service", AN_UNIT.format(script=script, args=args))
    r.write(f"usr/local/sbin/{script}", text, mode=0o755)
    bx.enable(r, "an-tuning.service", where="/etc/systemd/system")


@scenario("nic_settings_persistent")
def _script_arguments():
    """A script that finds the VF through the master's lower_* links counts for the VF,
    whatever runs it; a unit's ExecStart arguments are the script's $1, $2..."""
    r = persist_az("unit_script_lower_links_reaches_vf.pass", net=None, desc=
                   "an enabled unit runs an-queues.sh eth0 16, which sets the VF below eth0 (lower_* links) to 16",
                   objects={"enP1s1": "pass", "eth0": "pass"})
    an_unit(r, "an-queues.sh", LOWER_QUEUES_SCRIPT, "eth0 16")
    r = persist_az("unit_script_lower_links_other_master.fail", net=None, desc=
                   "the same script run for eth1: the VF below eth0 is not reached", objects={"enP1s1": "fail"})
    an_unit(r, "an-queues.sh", LOWER_QUEUES_SCRIPT, "eth1 16")
    r = persist_az("unit_execstart_args_are_script_positional.pass", net=None, desc=
                   "ExecStart=set-queues.sh enP1s1 16: the script's ethtool -L \"$1\" combined \"$2\" sets enP1s1 "
                   "to 16 (systemd.service(5) command lines)", objects={"enP1s1": "pass"})
    an_unit(r, "set-queues.sh", ARGS_QUEUES_SCRIPT, "enP1s1 16")
    r = persist_az("unit_execstart_args_count_too_high.fail", net=None, desc=
                   "ExecStart=set-queues.sh enP1s1 32: the script sets 32 combined channels", objects={"enP1s1": "fail"})
    an_unit(r, "set-queues.sh", ARGS_QUEUES_SCRIPT, "enP1s1 32")


@scenario("irq_affinity_persistent")
def _irq_affinity_persistent():
    K, C = "irq_affinity_persistent", "nic-irq-affinity-persistent"

    def scn(name, desc, net="NetworkManager.service", **meta):
        r = Root(K, name, C, desc, **meta)
        azure_host(r)
        an_pair(r, msi=range(24, 33))
        network_service(r, net)
        return r
    r = scn("nm_dispatcher_set_irq_affinity.pass", "dispatcher script runs set_irq_affinity_cpulist.sh for the VF",
            objects={"enP1s1": "pass"})
    r.write("etc/NetworkManager/dispatcher.d/90-accelnet-irqs", DISPATCHER.format(master="eth0", nic="enP1s1"),
            mode=0o755)
    r = scn("systemd_unit_script_writes_smp_affinity_list.pass",
            "enabled unit names the VF; the script it runs writes smp_affinity_list")
    r.write("etc/systemd/system/pin-nic-irqs.service", PIN_UNIT.format(nic="enP1s1"))
    r.write("usr/local/sbin/pin-nic-irqs.sh", PIN_SCRIPT, mode=0o755)
    bx.enable(r, "pin-nic-irqs.service", where="/etc/systemd/system")
    r = scn("systemd_unit_disabled.fail", "the same unit, not enabled", objects={"enP1s1": "fail"})
    r.write("etc/systemd/system/pin-nic-irqs.service", PIN_UNIT.format(nic="enP1s1"))
    r.write("usr/local/sbin/pin-nic-irqs.sh", PIN_SCRIPT, mode=0o755)
    r = scn("unit_script_pins_vf_through_lower_links.pass",
            "an enabled unit runs an-irqs.sh eth0 2-7: the script writes smp_affinity_list for the VF below eth0 "
            "(lower_* links), so it pins the VF though only the master is named", objects={"enP1s1": "pass"})
    an_unit(r, "an-irqs.sh", LOWER_PIN_SCRIPT, "eth0 2-7")
    r = scn("unit_script_lower_links_other_master.fail",
            "the same script run for eth1: the VF below eth0 is not reached", objects={"enP1s1": "fail"})
    an_unit(r, "an-irqs.sh", LOWER_PIN_SCRIPT, "eth1 2-7")
    r = scn("unit_execstart_arg_is_script_dollar_1.pass",
            "ExecStart=pin-one.sh enP1s1: the script pins \"$1\" with set_irq_affinity_cpulist.sh",
            objects={"enP1s1": "pass"})
    an_unit(r, "pin-one.sh", "#!/bin/sh\n# usage: pin-one.sh IFACE\n"
                             "/usr/local/sbin/set_irq_affinity_cpulist.sh 2-7 \"$1\"\n", "enP1s1")
    r = scn("udev_rule_runs_pinning_script.pass", "a udev rule RUNs set_irq_affinity_cpulist.sh for the VF")
    r.write("etc/udev/rules.d/90-accelnet-irqs.rules",
            'ACTION=="add", SUBSYSTEM=="net", KERNEL=="enP1s1", '
            'RUN+="/usr/local/sbin/set_irq_affinity_cpulist.sh 2-7 enP1s1"\n')
    scn("no_mechanism.fail", "nothing pins the IRQs at boot")
    r = scn("other_nic_named.fail", "the dispatcher pins enP1s10 for eth1, not enP1s1 (eth0)")
    r.write("etc/NetworkManager/dispatcher.d/90-accelnet-irqs", DISPATCHER.format(master="eth1", nic="enP1s10"),
            mode=0o755)
    r = scn("systemd_unit_in_usr_lib_enabled.pass",
            "a packaged unit in usr/lib/systemd/system, enabled through multi-user.target.wants")
    r.write("usr/lib/systemd/system/pin-nic-irqs.service", PIN_UNIT.format(nic="enP1s1"))
    r.write("usr/local/sbin/pin-nic-irqs.sh", PIN_SCRIPT, mode=0o755)
    bx.enable(r, "pin-nic-irqs.service")
    dispatch = "etc/NetworkManager/dispatcher.d/90-accelnet-irqs"
    r = scn("nm_dispatcher_not_executable.fail",
            "the dispatcher script is mode 0644: NetworkManager only runs executable scripts")
    r.write(dispatch, DISPATCHER.format(master="eth0", nic="enP1s1"), mode=0o644)
    r = scn("dispatcher_group_writable.fail",
            "mode 0775: NetworkManager-dispatcher(8) never runs a script writable by group or other")
    r.write(dispatch, DISPATCHER.format(master="eth0", nic="enP1s1"), mode=0o755)
    filestat(r, {dispatch: {"mode": "0775", "uid": 0}})
    r = scn("dispatcher_setuid.fail", "mode 4755: setuid scripts are never run")
    r.write(dispatch, DISPATCHER.format(master="eth0", nic="enP1s1"), mode=0o755)
    filestat(r, {dispatch: {"mode": "4755", "uid": 0}})
    r = scn("dispatcher_in_usr_lib.pass", "a root-owned 0755 script in usr/lib/NetworkManager/dispatcher.d runs too")
    r.write("usr/lib/NetworkManager/dispatcher.d/90-accelnet-irqs", DISPATCHER.format(master="eth0", nic="enP1s1"),
            mode=0o755)
    r = scn("pins_master_only.fail",
            "set_irq_affinity_cpulist.sh eth0 names the hv_netvsc master, which has no MSI IRQs: the VF's IRQs "
            "stay where they are")
    r.write(dispatch, DISPATCHER.format(master="eth0", nic="eth0"), mode=0o755)
    r = scn("udev_rule_pins_vf_by_driver.pass",
            "a udev rule matching DRIVERS==\"mlx5_core\" runs set_irq_affinity_cpulist.sh for %k")
    r.write("etc/udev/rules.d/90-accelnet-irqs.rules",
            'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", '
            'RUN+="/usr/local/sbin/set_irq_affinity_cpulist.sh 2-7 %k"\n')
    r = scn("udev_rule_other_kernel_name.fail", "the udev rule matches KERNEL==\"enP2s*\" only")
    r.write("etc/udev/rules.d/90-accelnet-irqs.rules",
            'ACTION=="add", SUBSYSTEM=="net", KERNEL=="enP2s*", '
            'RUN+="/usr/local/sbin/set_irq_affinity_cpulist.sh 2-7 %k"\n')
    r = scn("udev_rule_run_reset_by_later_rule.fail",
            "a later rule assigns RUN= (not +=), which drops the pinning program collected before (udev(7))")
    r.write("etc/udev/rules.d/90-accelnet-irqs.rules",
            'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", '
            'RUN+="/usr/local/sbin/set_irq_affinity_cpulist.sh 2-7 %k"\n')
    r.write("etc/udev/rules.d/95-local.rules", 'ACTION=="add", SUBSYSTEM=="net", RUN="/usr/bin/logger net $kernel"\n')
    r = scn("dispatcher_networkmanager_not_enabled.fail",
            "a valid dispatcher script, but NetworkManager.service is not enabled (wicked runs): nothing dispatches",
            net="wicked.service")
    r.write(dispatch, DISPATCHER.format(master="eth0", nic="enP1s1"), mode=0o755)
    # bash(1) COMMENTS: a word beginning with # and the rest of the line are ignored; only code names a NIC
    r = scn("script_names_nic_only_in_comment.fail",
            "the dispatcher script pins enP1s10 (for eth1); enP1s1 appears only in a comment line, which the shell "
            "ignores", objects={"enP1s1": "fail"})
    r.write(dispatch, "#!/bin/sh\n# enP1s1 (the VF of eth0) is pinned by the SAS start-up script, not here\n"
            '[ "$1" = "eth1" ] && [ "$2" = "up" ] || exit 0\n/usr/local/sbin/set_irq_affinity_cpulist.sh 2-7 enP1s10\n',
            mode=0o755)
    r = scn("script_trailing_comment_names_nic.fail",
            "the pinning line names enP1s10; enP1s1 is only in the trailing `# was enP1s1` comment",
            objects={"enP1s1": "fail"})
    r.write(dispatch, '#!/bin/sh\n[ "$1" = "eth0" ] && [ "$2" = "up" ] || exit 0\n'
            "/usr/local/sbin/set_irq_affinity_cpulist.sh 2-7 enP1s10  # was enP1s1\n", mode=0o755)
    r = scn("pinning_only_in_comment.fail",
            "the dispatcher script names enP1s1 in code (ethtool -K), but the pinning line is commented out",
            objects={"enP1s1": "fail"})
    r.write(dispatch, '#!/bin/sh\n[ "$1" = "eth0" ] && [ "$2" = "up" ] || exit 0\n'
            "# /usr/local/sbin/set_irq_affinity_cpulist.sh 2-7 enP1s1\n/usr/sbin/ethtool -K enP1s1 lro off\n",
            mode=0o755)
    r = scn("script_comment_hash_in_quotes_and_length.pass",
            "a `#` inside quotes or in ${#cpus[@]} starts no comment: the script names enP1s1 and writes "
            "smp_affinity_list", objects={"enP1s1": "pass"})
    r.write(dispatch, '#!/bin/bash\n[ "$1" = "eth0" ] && [ "$2" = "up" ] || exit 0\ncpus=(2 3 4 5) n=0\n'
            'for irq in $(awk -F: \'/ enP1s1 # mlx5_comp/ {print $1}\' /proc/interrupts); do\n'
            '    echo "${cpus[n % ${#cpus[@]}]}" > "/proc/irq/${irq// /}/smp_affinity_list"; n=$((n + 1))\ndone\n',
            mode=0o755)
    # the rule `tunewatch remediate` writes for Accelerated Networking VFs (remediate/nic.py _irq_udev_rules)
    r = scn("remediate_udev_rule_tunewatch_script.pass",
            "the udev rule tunewatch remediate writes: DRIVERS==\"mlx5_core\" RUNs "
            "tunewatch_set_irq_affinity_cpulist.sh for %k", objects={"enP1s1": "pass"})
    r.write("etc/udev/rules.d/99-tunewatch-irq-affinity-mlx5_core.rules",
            "# written by tunewatch remediate (nic-irq-affinity-persistent)\n"
            'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", '
            "RUN+=\"/usr/local/sbin/tunewatch_set_irq_affinity_cpulist.sh 2-7 %k 'mlx5_async|mlx5_pages'\"\n")
    r = scn("unit_enabled_only_in_run.fail",
            "the pinning unit exists only in run/systemd/system, enabled by a link in /etc: /run is a tmpfs emptied "
            "at boot, so the next boot has no such unit", objects={"enP1s1": "fail"})
    r.write("run/systemd/system/pin-nic-irqs.service", PIN_UNIT.format(nic="enP1s1"))
    r.write("usr/local/sbin/pin-nic-irqs.sh", PIN_SCRIPT, mode=0o755)
    bx.enable(r, "pin-nic-irqs.service", where="/run/systemd/system")
    r = scn("runtime_unit_over_usr_lib_gone_at_boot.pass",
            "run/systemd/system holds a runtime copy of the unit pinning eth0 (the master) over the packaged one "
            "pinning the VF: at the next boot /run is empty and the packaged unit runs", objects={"enP1s1": "pass"})
    r.write("usr/lib/systemd/system/pin-nic-irqs.service", PIN_UNIT.format(nic="enP1s1"))
    r.write("run/systemd/system/pin-nic-irqs.service",
            PIN_UNIT.format(nic="eth0").replace("pin-nic-irqs.sh", "pin-master-irqs.sh"))
    r.write("usr/local/sbin/pin-nic-irqs.sh", PIN_SCRIPT, mode=0o755)
    r.write("usr/local/sbin/pin-master-irqs.sh", PIN_SCRIPT.replace("enP1s1", "eth0"), mode=0o755)
    bx.enable(r, "pin-nic-irqs.service")
    sas_best_affinity("set_best_affinity_at_boot.pass", K, C,
                      "an enabled unit runs set_best_affinity.ksh at start-up (seed 003); it finds the AN VFs itself",
                      enabled=True)
    sas_best_affinity("set_best_affinity_not_enabled.fail", K, C,
                      "the unit running set_best_affinity.ksh is installed but not enabled", enabled=False)


# --------------------------------------------------------------------------------------
# vmx_option / vmx_cpu_affinity / esxcli_setting
# --------------------------------------------------------------------------------------

def vmx_scn(kind, name, check, desc, *, nics, affinity=None, text=None, **meta) -> Root:
    r = Root(kind, name, check, desc, **meta)
    vmware_host(r)
    if text is None:
        text = bx.vmx_file("vm01", "rhel8-64", 16, 8, 65536, affinity, [
            dict(network=f"net{i}", mac=f"00:50:56:9c:4e:{0x20 + i:02x}", slot=192 + 32 * i, options=o)
            for i, o in enumerate(nics)])
    r.write("vmware/vm01.vmx", text)
    return r


HANA = {"pnicFeatures": "4", "ctxPerDev": "3", "udpRSS": "1"}
BIGIP = {"pnicFeatures": "4", "ctxPerDev": "1"}


@scenario("vmx_option")
def _vmx_option():
    K, C = "vmx_option", "vmx-nic-options"
    vmx_scn(K, "hana_tuned.pass", C, "both NICs carry pnicFeatures 4, ctxPerDev 3, udpRSS 1", nics=[HANA, HANA],
            profile="vmware-sap-hana", objects={"vm01.vmx:ethernet0": "pass", "vm01.vmx:ethernet1": "pass"})
    vmx_scn(K, "hana_missing_udprss.fail", C, "ethernet1 lacks udpRSS", nics=[HANA, BIGIP],
            profile="vmware-sap-hana", objects={"vm01.vmx:ethernet0": "pass", "vm01.vmx:ethernet1": "fail"})
    vmx_scn(K, "bigip_mgmt_exempt.pass", C, "ctxPerDev 1 on ethernet1-3; management ethernet0 exempt",
            nics=[{}, BIGIP, BIGIP, BIGIP], profile="bigip-ve-esxi")
    vmx_scn(K, "bigip_ctxperdev_3.fail", C, "ethernet2 has ctxPerDev 3 (the HANA value)",
            nics=[{}, BIGIP, {"pnicFeatures": "4", "ctxPerDev": "3"}, BIGIP], profile="bigip-ve-esxi",
            objects={"vm01.vmx:ethernet2": "fail", "vm01.vmx:ethernet1": "pass"})
    vmx_scn(K, "auto_pnicfeatures_missing.fail", C, "auto profile: ethernet1 without pnicFeatures", nics=[{}, {}])
    text = bx.vmx_file("vm01", "rhel8-64", 16, 8, 65536, None, [
        dict(network="net0", mac="00:50:56:9c:4e:20", slot=192, options={}),
        dict(network="net1", mac="00:50:56:9c:4e:21", slot=224, options={})])
    text += 'ETHERNET1.PNICFEATURES = "4"\nEthernet1.CtxPerDev = 3\nethernet1.udpRSS = \u201c1\u201d\n'
    vmx_scn(K, "case_insensitive_keys_unquoted.pass", C,
            "keys in other case, an unquoted value and typographic quotes as written in articles",
            nics=[], text=text, profile="vmware-sap-hana", vars={"devices": [1]})
    text = bx.vmx_file("vm01", "rhel8-64", 16, 8, 65536, None, [
        dict(network="net0", mac="00:50:56:9c:4e:20", slot=192, options={}),
        dict(network="net1", mac="00:50:56:9c:4e:21", slot=224, options=BIGIP)]).replace(
        'ethernet0.present = "TRUE"', 'ethernet0.present = "FALSE"')
    vmx_scn(K, "absent_device_ignored.pass", C, "ethernet0.present FALSE is not judged", nics=[], text=text,
            vars={"exclude_devices": []})
    r = Root(K, "no_vmx.notapplicable", C, "no .vmx under vmware/")
    vmware_host(r)


@scenario("vmx_cpu_affinity")
def _vmx_cpu_affinity():
    K, C = "vmx_cpu_affinity", "vmx-cpu-affinity-avoids-core0"
    vmx_scn(K, "affinity_1_to_8.pass", C, "BIG-IP style sched.cpu.affinity 1,...,8", nics=[{}],
            affinity="1,2,3,4,5,6,7,8", objects={"vm01.vmx": "pass"})
    vmx_scn(K, "affinity_all.pass", C, "sched.cpu.affinity all", nics=[{}], affinity="all")
    vmx_scn(K, "affinity_unset.pass", C, "no sched.cpu.affinity", nics=[{}])
    vmx_scn(K, "affinity_includes_cpu0.fail", C, "sched.cpu.affinity 0,1,2,3", nics=[{}], affinity="0,1,2,3",
            objects={"vm01.vmx": "fail"})
    vmx_scn(K, "affinity_range_includes_cpu0.fail", C, "sched.cpu.affinity 0-7", nics=[{}], affinity="0-7")
    vmx_scn(K, "affinity_garbage.error", C, "sched.cpu.affinity is not a CPU list", nics=[{}],
            affinity="node0,fast", objects={"vm01.vmx": "error"})


ESX_PROMPT = "[root@esx01:~] esxcli system settings advanced list -o {o}\n"


@scenario("esxcli_setting")
def _esxcli_setting():
    K = "esxcli_setting"

    def scn(name, check, desc, files, **meta):
        r = Root(K, name, check, desc, **meta)
        vmware_host(r)
        for fname, text in files.items():
            r.write(f"vmware/esxcli/{fname}", text)
    N, H, P = "esxi-netq-rx-pair-disabled", "esxi-hyperthreading-disabled", "esxi-power-policy-performance"
    scn("netq_pair_0.pass", N, "/Net/NetNetqRxQueueFeatPairEnable Int Value 0",
        {"netq.txt": bx.esxcli_netq_pair(0)}, objects={"/Net/NetNetqRxQueueFeatPairEnable": "pass"})
    scn("netq_pair_1.fail", N, "pairing still enabled (default 1)", {"netq.txt": bx.esxcli_netq_pair(1)})
    scn("netq_with_shell_prompt.pass", N, "the saved output starts with the shell prompt and command",
        {"out.txt": ESX_PROMPT.format(o="/Net/NetNetqRxQueueFeatPairEnable") + bx.esxcli_netq_pair(0)})
    scn("ht_inactive.pass", H, "esxcli hardware cpu global get: Hyperthreading Active false",
        {"cpu.txt": bx.esxcli_cpu_global(2, 32, False, True, False)})
    scn("ht_active.fail", H, "Hyperthreading Active true", {"cpu.txt": bx.esxcli_cpu_global(2, 32, True, True, True)},
        objects={"Hyperthreading Active": "fail"})
    scn("power_high_performance.pass", P, "/Power/CpuPolicy String Value High Performance",
        {"power.txt": bx.esxcli_cpu_policy("High Performance")})
    scn("power_balanced.fail", P, "/Power/CpuPolicy Balanced (the default)",
        {"power.txt": bx.esxcli_cpu_policy("Balanced")})
    scn("power_not_collected.notapplicable", P, "only the NetQueue option was saved",
        {"netq.txt": bx.esxcli_netq_pair(0)}, objects={"/Power/CpuPolicy": "notapplicable"})
    scn("all_options_in_one_file.pass", N, "a full `advanced list` with several records",
        {"advanced.txt": bx.esxcli_advanced("/Net/NetqRxQueueFeatLroEnable", "integer", 1, 1, 0, 1, "", "", "",
                                            "Enable LRO feature in RX queue") + "\n" + bx.esxcli_netq_pair(0)
         + "\n" + bx.esxcli_cpu_policy("High Performance")})


def main(argv: list[str]) -> int:
    kinds = argv or sorted(SCENARIOS)
    for kind in kinds:
        for fn in SCENARIOS[kind]:
            fn()
        print(f"wrote tests/scenarios/{kind}/ ({len(os.listdir(os.path.join(HERE, kind)))} scenarios)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
