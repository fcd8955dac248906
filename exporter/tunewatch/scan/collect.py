"""`tunewatch collect DIR`: write a host snapshot (docs/snapshot-contract.md) that scans like the host.

Every file is read through `FS(root)` (so a snapshot can be collected from a snapshot) and
written under DIR at the same relative path. Symlinks that carry meaning (systemd wants
and mask links, `master`, `lower_*`, `device/driver`) are recreated as symlinks with the same
target text. Network interfaces are written from the parsed `read_interface` facts plus
what their consumers match on: MAC, its origin and type, and the device with every parent
up to sys/devices at its real path, each with its `driver` and `subsystem` link (so udev
DRIVERS==, systemd .link Driver= and NM's unmanaged-VF rule see the same device).
Every path goes through `FS`, so collect and scan share one rule: paths are resolved inside
the root first (links, `..`, `//`), nothing on a network file system (`fs.NETWORK_FSTYPES`,
from the root's mountinfo) is ever stat'ed, opened or listed, and only regular files are
read: a hung NFS server, a FIFO or a device node cannot hang or flood a collect. Only
small text is copied: a file over its cap (SMALL_MAX_BYTES for config and scripts, larger
for the kernel's tables) or a binary (a unit's ExecStart daemon) is skipped. Every skip is
printed on stderr with its reason, and counted at the end; it never aborts the collect.

A link inside a configuration directory stays a link (`99-sysctl.conf -> ../sysctl.conf`,
a `/dev/null` mask), and the file it leads to is copied too. Owner and mode, which
NetworkManager checks and git cannot keep, go to `filestat.json` (facts/filestat.py) for
every configuration file copied; a snapshot's own entries are carried over.
"""

from __future__ import annotations

import json
import os
import re
import sys

from ..content.catalog import Content
from ..errors import ContentError, TunewatchError
from ..facts import boot, ethtool, filestat, interfaces, netdevice
from ..facts.automount import autofs_map_files
from ..facts.linkfiles import LINK_DIRS
from ..facts.modules import MODULES_LOAD_DIRS
from ..facts.netconfig import NM_DIRS
from ..facts.nextkernel import BLS_DIR, GRUB_CFGS, GRUBENVS, VMLINUZ_LINK
from ..facts.services import UNIT_DIRS
from ..facts.sysctl import MODPROBE_DIRS, TUNED_MAIN
from ..facts.tuned_vars import variables_files
from ..facts.tuned_version import version_file_matches
from ..facts.udev import RULES_DIRS
from ..host.fs import FS
from ..kinds._predict import default_sibling
from ..parsers.mountinfo import parse_mountinfo
from ..parsers.sysctl_conf import sysctl_key_to_path
from .destdir import Dest
from .snapshot_writer import SnapshotWriter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

SYSCTL_DIRS = ("etc/sysctl.d", "run/sysctl.d", "usr/local/lib/sysctl.d", "usr/lib/sysctl.d", "lib/sysctl.d")

IDENTITY = ("proc/sys/kernel/osrelease", "proc/sys/kernel/hostname", "proc/sys/kernel/random/boot_id",
            "proc/sys/kernel/ostype", "proc/sys/kernel/version", "proc/sys/kernel/arch",  # a tuned unit's uname_regex
            "etc/os-release", "usr/lib/os-release", "proc/stat", "sys/class/dmi/id/sys_vendor",
            "sys/class/dmi/id/product_name", "sys/class/dmi/id/product_uuid",
            "sys/class/dmi/id/chassis_asset_tag", "sys/devices/system/cpu/online", "proc/interrupts",
            "proc/self/mountinfo", "proc/1/mountinfo", "etc/fstab", "etc/sysctl.conf", "etc/tuned/active_profile",
            TUNED_MAIN, "proc/cmdline", "etc/auto.master", "etc/autofs.conf", "etc/nfsmount.conf",
            "etc/sysconfig/saptune", "proc/cpuinfo")
# what facts/boot.py reads for rc.local and cron @reboot (scripts: kept only when text)
STARTUP_SCRIPTS = ("etc/rc.d/rc.local", "etc/rc.local", "etc/init.d/after.local")
CRONTABS = ("etc/crontab", "var/spool/cron/root", "var/spool/cron/tabs/root", "var/spool/cron/crontabs/root")
# tuned's profile directories of every layout (content checks/layouts/tuned.yaml)
TUNED_PROFILE_DIRS = ("etc/tuned", "usr/lib/tuned", "lib/tuned", "etc/tuned/profiles", "usr/lib/tuned/profiles")
# (directory, glob) pairs copied file by file; directories are walked recursively when glob is None.
CONFIG = [*((d, "*.conf") for d in SYSCTL_DIRS), *((d, "*.conf") for d in MODPROBE_DIRS),
          *((d, "*.conf") for d in MODULES_LOAD_DIRS),
          ("etc/sysconfig/network", "ifcfg-*"), ("etc/sysconfig/network-scripts", "ifcfg-*"),
          ("etc/NetworkManager/dispatcher.d", None), ("usr/lib/NetworkManager/dispatcher.d", None),
          *((d, "*.nmconnection") for d in NM_DIRS), *((d, "*.link") for d in LINK_DIRS),
          # facts/nmconf.py ([keyfile] unmanaged-devices) and facts/netplan.py (generated .link files)
          ("etc/NetworkManager", "NetworkManager.conf"), *((f"{d}/NetworkManager/conf.d", "*.conf")
                                                          for d in ("etc", "run", "usr/lib")),
          *((f"{d}/netplan", "*.yaml") for d in ("lib", "etc", "run")),
          *((d, "*.rules") for d in RULES_DIRS), ("etc", "nfs.conf"), ("etc/nfs.conf.d", "*.conf"), ("etc/cron.d", "*"),
          ("etc/auto.master.d", "*.autofs"), ("etc/nfsmount.conf.d", "*.conf"),
          ("usr/share/saptune/notes", "*"), ("etc/saptune/extra", "*.conf"), ("etc/saptune/override", "*"),
          ("vmware", "*.vmx"), ("vmware/esxcli", "*.txt"),
          ("etc/default/grub.d", "*.cfg"), (BLS_DIR, "*.conf")]
# the boot loader's choice of the next kernel (facts/nextkernel.py): small text files only;
# boot/vmlinuz is kept as a link, never the kernel image it names
NEXT_KERNEL_FILES = ("etc/default/grub", "etc/sysconfig/kernel", *GRUB_CFGS, *GRUBENVS)
# sysfs attributes of an interface that its facts read (netdevice: MAC, its origin, ARPHRD type)
NET_ATTRS = ("address", "addr_assign_type", "type", "ifindex", "uevent")  # ifindex, uevent: udev's properties
_UDEV_ATTR = re.compile(r"\bATTRS?\{([A-Za-z0-9_./-]+)\}")


def _sysctl_keys(content: Content) -> set[str]:
    keys: set[str] = set()

    def walk(cond: object) -> None:  # applicability: {sysctl_present: key} anywhere in any_of/all_of/not
        for k, v in cond.items() if isinstance(cond, dict) else enumerate(cond if isinstance(cond, list) else []):
            keys.add(v) if k == "sysctl_present" and isinstance(v, str) else walk(v)

    for check in content.checks.values():
        walk(check.applicability)
        if check.kind == "sysctl":
            keys.update(check.vars.get("settings", {}))
    for pid in content.profiles:  # profiles may add settings
        for sel in content.resolve(pid).checks:
            if sel.check.kind == "sysctl":
                keys.update(sel.vars.get("settings", {}))
    # a per-interface key re-added without a reboot copies its `default` entry (after_readd)
    return keys | {d for d in map(default_sibling, keys) if d}


def _link(s: SnapshotWriter, rel: str) -> None:
    """A unit link stays a link with the same target text: absolute targets resolve inside
    the snapshot root, so dangling and /dev/null mask links mean what they meant live."""
    try:
        target = s.fs.readlink(rel)
    except TunewatchError as e:
        s.warn(rel, str(e))
        return
    if target is None:
        s.copy(rel)
    else:
        s.symlink(rel, target)


def _units(s: SnapshotWriter) -> None:
    """Unit files with their content (a few hundred small files) and links as links."""
    fs = s.fs
    for d in UNIT_DIRS:
        for name in s.listdir(d):
            rel = f"{d}/{name}"
            if fs.readlink(rel) is None and s.is_dir(rel):  # *.wants / *.requires / *.d
                for unit in s.listdir(rel):
                    _link(s, f"{rel}/{unit}")
            else:
                _link(s, rel)
    copied = FS(s.dest)  # read units back from the snapshot: links resolve inside it
    scripts: set[str] = set()
    for rel in (r for d in UNIT_DIRS for r in copied.glob(d, "*.service")):
        try:
            text = "" if copied.is_dir(rel) else copied.read_text(rel) or ""
        except TunewatchError:  # a link onto a network mount: already said when it was copied
            continue
        for m in boot._EXEC.finditer(text):  # the scripts boot_scripts() reads for enabled units
            if m.group(1).startswith(boot.SCRIPT_DIRS) and m.group(1) not in scripts:
                scripts.add(m.group(1))
                s.copy(m.group(1).lstrip("/"), script=True)


def _real_rel(fs: FS, rel: str) -> str:
    """`rel` with every link resolved, relative to the root (as facts/netdevice.py walks it)."""
    return os.path.realpath(fs.path(rel)).lstrip("/") if fs.live else os.path.relpath(fs.path(rel), fs.root)


def _udev_attrs(dest: str) -> set[str]:
    """ATTR{x}/ATTRS{x} names the copied udev rules test: those sysfs values are copied."""
    copied = FS(dest)
    names: set[str] = set()
    for rel in copied.config_files(RULES_DIRS, "*.rules"):
        try:
            names.update(a for a in _UDEV_ATTR.findall(copied.read_text(rel) or "") if ".." not in a.split("/"))
        except TunewatchError:
            continue
    return names


def _attr(s: SnapshotWriter, rel: str) -> None:
    """A sysfs value; links (`device`, `driver`) and directories are written by _interface."""
    if s.fs.exists(rel) and s.fs.readlink(rel) is None and not s.fs.is_dir(rel):
        s.copy(rel)


def _interface(s: SnapshotWriter, name: str, attrs: set[str]) -> None:
    """The interface's sysfs as its facts read it: state, MAC and type, master/lower links,
    and its device with every parent up to sys/devices (driver and subsystem links), so udev
    DRIVERS/SUBSYSTEMS/KERNELS and systemd .link `Driver=`/`Path=` match as they did (the
    Azure VF's hv_pci parent)."""
    base = f"sys/class/net/{name}"
    iface = interfaces.read_interface(s.fs, name)
    s.write(f"{base}/operstate", iface.operstate + "\n")
    for attr in sorted({*NET_ATTRS, *attrs}):
        _attr(s, f"{base}/{attr}")
    if iface.master:
        s.symlink(f"{base}/master", f"../{iface.master}")
    for lower in iface.lowers:
        s.symlink(f"{base}/lower_{lower}", f"../{lower}")
    if not s.fs.exists(f"{base}/device"):
        try:  # a scope may name a veth or bridge: its driver and channels as ethtool reports them
            s.write(f"ethtool/{name}.json", json.dumps(ethtool.read_ethtool(s.fs, name), indent=2) + "\n")
        except TunewatchError:
            pass  # lo and friends answer no ethtool query; nothing judges them unless named
        return
    chain = netdevice.read_net_device(s.fs, iface).parents  # nearest first
    if not chain:  # a device outside sys/devices: a directory named after the bus address
        dev = f"sys/devices/tunewatch-collect/{name}/{iface.bus_info or 'device'}"
        chain = (netdevice.SysDevice(dev, os.path.basename(dev), None, iface.driver),)
    s.symlink(f"{base}/device", os.path.relpath(chain[0].rel, base))
    for parent in chain:
        if parent.subsystem:
            s.symlink(f"{parent.rel}/subsystem", os.path.relpath(f"sys/bus/{parent.subsystem}", parent.rel))
        if parent.driver:
            s.symlink(f"{parent.rel}/driver",
                      os.path.relpath(f"sys/bus/{parent.subsystem or 'unknown'}/drivers/{parent.driver}", parent.rel))
        for attr in sorted(attrs):
            _attr(s, f"{parent.rel}/{attr}")
    # msi_irqs and numa_node where the scan finds them: the device, or its parent for virtio
    holder = interfaces._device_dir(s.fs, base) or f"{base}/device"
    holder = chain[0].rel if holder.endswith("/device") or len(chain) < 2 else _real_rel(s.fs, holder)
    s.write(f"{holder}/numa_node", f"{-1 if iface.numa_node is None else iface.numa_node}\n")
    s.out.mkdir(f"{holder}/msi_irqs")
    for irq in iface.msi_irqs:
        s.write(f"{holder}/msi_irqs/{irq}", b"msi\n")
    if iface.driver:  # live: SIOCETHTOOL; a snapshot: its ethtool/<if>.json
        try:
            s.write(f"ethtool/{name}.json", json.dumps(ethtool.read_ethtool(s.fs, name), indent=2) + "\n")
        except TunewatchError as e:
            s.warn(f"ethtool/{name}.json", str(e))


def _comm(s: SnapshotWriter, pid: str) -> str:
    try:
        return (s.fs.read_value(f"proc/{pid}/comm") or "").strip()
    except TunewatchError:
        return ""


def _process_identity(s: SnapshotWriter, pid: str) -> None:
    """What tells a process from one that only took its name: status (Uid) and the exe link's
    target (kinds/process_absent.py)."""
    s.copy(f"proc/{pid}/status")
    exe = s.fs.readlink(f"proc/{pid}/exe")
    if exe:
        s.symlink(f"proc/{pid}/exe", exe)


def _source_filestat(s: SnapshotWriter) -> dict:
    """The source snapshot's filestat.json entries; a broken one is copied as it is, so the
    copy scans to the same `error`."""
    try:
        return filestat._sidecar(s.fs)  # noqa: SLF001 - the one reader of the format
    except TunewatchError as e:
        s.warn(filestat.SIDECAR, f"{e} (copied as it is)")
        s.stats = None
        s.copy(filestat.SIDECAR)
        return {}


def _write_filestat(s: SnapshotWriter, source: dict) -> None:
    if s.stats is None:
        return
    for rel, entry in source.items():  # what the source states about files copied but not recorded here
        if rel not in s.stats and s.out.lexists(rel):
            s.stats[rel] = entry
    if s.stats:
        lines = (f"{json.dumps(rel)}: {json.dumps(s.stats[rel])}" for rel in sorted(s.stats))
        s.write(filestat.SIDECAR, "{\n" + ",\n".join(lines) + "\n}\n")


def skip_summary(skipped: list[tuple[str, str]]) -> str:
    """One line for every skip: how many, for which reasons (most frequent first)."""
    reasons: dict[str, int] = {}
    for _rel, why in skipped:
        reasons[why] = reasons.get(why, 0) + 1
    top = sorted(reasons.items(), key=lambda kv: -kv[1])
    parts = [f"{n} {why}" for why, n in top[:3]]
    if len(top) > 3:
        parts.append(f"{sum(n for _w, n in top[3:])} for {len(top) - 3} other reason(s)")
    return (f"tunewatch collect: skipped {len(skipped)} file(s): {'; '.join(parts)} "
            "(-v lists each; the scan does not need them)")


def collect(root: str, directory: str, content: Content, vsphere: dict[str, str] | None = None,
            verbose: bool = False, progress: Callable[[str], None] | None = None) -> int:
    """Write the snapshot of `root` into `directory` (absent or empty); the number of files written.
    `vsphere`: the vmware/ files read from vSphere (collect --vsphere.config), written instead
    of the root's own vmware/ directory. `verbose`: list every skipped file, not one summary line.
    `progress(text)`: told the files written so far at each step (a terminal's status line)."""
    dest = Dest(directory)  # new, or empty and this user's alone; refused otherwise
    try:
        dest.start()
        written = _collect(SnapshotWriter(FS(root), dest, verbose, progress), content, vsphere, verbose)
        dest.finish(f"tunewatch collect of {root}: {written} files")
    except OSError as e:  # a full disk: the snapshot stays marked incomplete, and scan refuses it
        raise ContentError(directory, f"collect stopped: {e}; the snapshot is incomplete and marked so "
                                      "(scan --root refuses it)") from e
    finally:
        dest.close()
    return written


def _collect(s: SnapshotWriter, content: Content, vsphere: dict[str, str] | None, verbose: bool) -> int:
    source_stats = _source_filestat(s)
    bdis: set[str] = set()
    for rel in ("proc/self/mountinfo", "proc/1/mountinfo"):
        try:
            text = s.fs.read_text(rel)
            if text is not None:
                mounts = parse_mountinfo(text, rel)
                bdis = {f"{m.major}:{m.minor}" for m in mounts if m.fstype in ("nfs", "nfs4")}
                break
        except TunewatchError as e:
            s.warn(rel, str(e))
    for rel in IDENTITY:
        s.copy(rel)
    for bdi in sorted(bdis):
        s.copy(f"sys/class/bdi/{bdi}/read_ahead_kb")
    for node in s.listdir("sys/devices/system/node"):
        if node.startswith("node") and node[4:].isdigit():
            s.copy(f"sys/devices/system/node/{node}/cpulist")
    for irq in s.listdir("proc/irq"):
        if irq.isdigit():
            s.copy(f"proc/irq/{irq}/smp_affinity_list")
            s.copy(f"proc/irq/{irq}/effective_affinity_list")
    watched = {c.vars.get("process") for c in content.checks.values() if c.kind == "process_absent"}
    for pid in s.listdir("proc"):
        if pid.isdigit() and s.copy(f"proc/{pid}/comm") and _comm(s, pid) in watched:
            _process_identity(s, pid)
    for key in sorted(_sysctl_keys(content)):
        try:
            s.copy(sysctl_key_to_path(key))
        except TunewatchError as e:
            s.warn(key, str(e))
    for d, pattern in CONFIG:
        if vsphere is None or not d.startswith("vmware"):
            s.copy_dir(d, pattern)
    for rel, text in sorted((vsphere or {}).items()):
        s.write(rel, text)
    for rel in NEXT_KERNEL_FILES:
        s.copy_or_link(rel)  # RHEL 8 EFI: grub2/grubenv links to ../efi/EFI/redhat/grubenv
    try:
        vmlinuz = s.fs.readlink(VMLINUZ_LINK)
    except TunewatchError as e:
        vmlinuz = None
        s.warn(VMLINUZ_LINK, str(e))
    if vmlinuz is not None:
        s.symlink(VMLINUZ_LINK, vmlinuz)
    for d in ("lib/modules", "usr/lib/modules"):  # facts/modules.py: built into the kernel that boots next
        for release in s.listdir(d):
            if "/" not in release and s.is_dir(f"{d}/{release}"):
                s.copy(f"{d}/{release}/modules.builtin")
    for d in TUNED_PROFILE_DIRS:
        for name in s.listdir(d):
            s.copy(f"{d}/{name}/tuned.conf")
    copied = FS(s.dest)
    profiles = [f"{d}/{name}/tuned.conf" for d in TUNED_PROFILE_DIRS for name in copied.listdir(d)
                if copied.resolves(f"{d}/{name}/tuned.conf")]
    for rel in variables_files(copied, profiles):  # [variables] include= files
        s.copy(rel)
    tuned_layout = content.defaults.layouts.get("tuned") or {}
    for pattern in (tuned_layout.get("version_files") or {}).get("paths", []):  # facts/tuned_version.py
        for rel in version_file_matches(s.fs, pattern):
            s.copy(rel)
    for rel in autofs_map_files(FS(s.dest)):  # the maps the copied master maps name
        s.copy(rel)
    for rel in STARTUP_SCRIPTS:
        s.copy_or_link(rel, script=True)
    for rel in CRONTABS:
        s.copy(rel)
    _units(s)
    attrs = _udev_attrs(s.dest)
    for name in s.listdir("sys/class/net"):
        if not s.is_dir(f"sys/class/net/{name}"):
            continue  # bonding_masters: a control file beside the interfaces, not one of them
        try:
            _interface(s, name, attrs)
        except (OSError, TunewatchError) as e:
            s.warn(f"sys/class/net/{name}", str(e))
    _write_filestat(s, source_stats)
    if s.skipped:
        print(f"tunewatch collect: skipped {len(s.skipped)} file(s), listed above" if verbose
              else skip_summary(s.skipped), file=sys.stderr)
    return s.written
