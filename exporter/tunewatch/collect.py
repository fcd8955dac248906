"""`tunewatch collect DIR`: write a host snapshot (SPEC section 2) that scans like the host.

Every file is read through `FS(root)` (so a snapshot can be collected from a snapshot) and
written under DIR at the same relative path. Symlinks that carry meaning (systemd wants
and mask links, `master`, `lower_*`, `device/driver`) are recreated as symlinks with the same
target text. Network interfaces are written in a normalised form built from the parsed
`read_interface` facts, which is simpler than sysfs but reads to the same facts.
Every path goes through `FS`, so collect and scan share one rule: paths are resolved inside
the root first (links, `..`, `//`), nothing on a network file system (`fs.NETWORK_FSTYPES`,
from the root's mountinfo) is ever stat'ed, opened or listed, and only regular files are
read: a hung NFS server, a FIFO or a device node cannot hang or flood a collect. Only
small text is copied: a file over its cap (SMALL_MAX_BYTES for config and scripts, larger
for the kernel's tables) or a binary (a unit's ExecStart daemon) is skipped. Every skip is
printed on stderr with its reason, and counted at the end; it never aborts the collect.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sys

from .content import Content
from .errors import ContentError, TunewatchError
from .facts import boot, ethtool, interfaces
from .facts.services import UNIT_DIRS
from .fs import FS, INTERRUPTS_MAX_BYTES, TEXT_MAX_BYTES
from .parsers.mountinfo import parse_mountinfo
from .parsers.sysctl_conf import sysctl_key_to_path

SCRIPT_DIRS = re.compile(r"^/(usr|etc|opt|root|sbin|bin|lib)/")  # as facts.boot._script_text
SMALL_MAX_BYTES = boot._MAX_SCRIPT_BYTES  # config files, unit files and scripts: what a scan reads
# The kernel's own tables grow with the machine: proc/interrupts is 5 MB at 416 CPUs.
LARGE_MAX_BYTES = {"proc/interrupts": INTERRUPTS_MAX_BYTES, "proc/stat": TEXT_MAX_BYTES,
                   "proc/self/mountinfo": TEXT_MAX_BYTES, "proc/1/mountinfo": TEXT_MAX_BYTES}
SYSCTL_DIRS = ("etc/sysctl.d", "run/sysctl.d", "usr/local/lib/sysctl.d", "usr/lib/sysctl.d", "lib/sysctl.d")

IDENTITY = ("proc/sys/kernel/osrelease", "proc/sys/kernel/hostname", "etc/os-release", "usr/lib/os-release",
            "proc/stat", "sys/class/dmi/id/sys_vendor", "sys/class/dmi/id/product_name",
            "sys/class/dmi/id/chassis_asset_tag", "sys/devices/system/cpu/online", "proc/interrupts",
            "proc/self/mountinfo", "proc/1/mountinfo", "etc/fstab", "etc/sysctl.conf", "etc/tuned/active_profile")
# (directory, glob) pairs copied file by file; directories are walked recursively when glob is None.
CONFIG = [*((d, "*.conf") for d in SYSCTL_DIRS), ("etc/modprobe.d", "*.conf"), ("usr/lib/modprobe.d", "*.conf"),
          ("etc/sysconfig/network", "ifcfg-*"), ("etc/sysconfig/network-scripts", "ifcfg-*"),
          ("etc/NetworkManager/dispatcher.d", None), ("etc/NetworkManager/system-connections", "*.nmconnection"),
          ("etc/systemd/network", "*.link"), ("run/systemd/network", "*.link"), ("usr/lib/systemd/network", "*.link"),
          ("etc/udev/rules.d", "*.rules"), ("usr/lib/udev/rules.d", "*.rules"), ("lib/udev/rules.d", "*.rules"),
          ("vmware", "*.vmx"), ("vmware/esxcli", "*.txt")]


class _Snapshot:
    def __init__(self, fs: FS, dest: str):
        self.fs, self.dest, self.written = fs, dest, 0
        self.skipped: list[tuple[str, str]] = []

    def warn(self, rel: str, why: str) -> None:
        self.skipped.append((rel, why))
        print(f"tunewatch collect: skipped {rel}: {why}", file=sys.stderr)

    def _target(self, rel: str) -> str:
        path = os.path.join(self.dest, rel.strip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def write(self, rel: str, data: bytes | str) -> None:
        path = self._target(rel)
        if not os.path.lexists(path):  # first writer wins (a unit's content before its empty name)
            with open(path, "wb") as f:
                f.write(data.encode() if isinstance(data, str) else data)
            self.written += 1

    def symlink(self, rel: str, target: str) -> None:
        path = self._target(rel)
        if not os.path.lexists(path):
            os.symlink(target, path)
            self.written += 1

    def copy(self, rel: str, script: bool = False) -> bool:
        """Copy one regular file's bytes; False when it is missing, on a network file
        system, not a regular file, unreadable, too large or (`script`) a binary."""
        rel = rel.strip("/")
        cap = LARGE_MAX_BYTES.get(rel, SMALL_MAX_BYTES)
        try:
            data = self.fs.read_bytes(rel, cap)
        except TunewatchError as e:
            self.warn(rel, str(e).replace(f"cannot read {rel}: ", "").replace(f"{rel}: ", ""))
            return False
        if data is None:
            return False
        if script and (b"\x00" in data or data.startswith(b"\x7fELF")):
            self.warn(rel, "a binary, not a script (the scan reads scripts only)")
            return False
        self.write(rel, data)
        try:  # NetworkManager only runs executable dispatcher scripts: keep the mode
            os.chmod(self._target(rel), os.stat(self.fs.path(rel)).st_mode & 0o777)
        except (OSError, TunewatchError):
            pass
        return True

    def listdir(self, rel: str) -> list[str]:
        try:
            return self.fs.listdir(rel)
        except TunewatchError as e:
            self.warn(rel, str(e))
            return []

    def is_dir(self, rel: str) -> bool:
        try:
            return self.fs.is_dir(rel)
        except TunewatchError as e:
            self.warn(rel, str(e))
            return False

    def copy_dir(self, rel: str, pattern: str | None) -> None:
        for name in self.listdir(rel):
            sub = f"{rel}/{name}"
            if pattern is None and self.is_dir(sub):
                self.copy_dir(sub, None)
            elif pattern is None or fnmatch.fnmatchcase(name, pattern):
                self.copy(sub, script=pattern is None)


def _sysctl_keys(content: Content) -> set[str]:
    keys: set[str] = set()

    def walk(cond) -> None:  # applicability: {sysctl_present: key} anywhere in any_of/all_of/not
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
    return keys


def _link(s: _Snapshot, rel: str) -> None:
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


def _units(s: _Snapshot) -> None:
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
    for rel in (r for d in UNIT_DIRS for r in copied.glob(d, "*.service")):
        try:
            text = "" if copied.is_dir(rel) else copied.read_text(rel) or ""
        except TunewatchError:  # a link onto a network mount: already said when it was copied
            continue
        for m in boot._EXEC.finditer(text):  # the scripts boot_scripts() reads for enabled units
            if SCRIPT_DIRS.match(m.group(1)):
                s.copy(m.group(1).lstrip("/"), script=True)


def _interface(s: _Snapshot, name: str) -> None:
    base = f"sys/class/net/{name}"
    iface = interfaces.read_interface(s.fs, name)
    s.write(f"{base}/operstate", iface.operstate + "\n")
    if iface.master:
        s.symlink(f"{base}/master", f"../{iface.master}")
    for lower in iface.lowers:
        s.symlink(f"{base}/lower_{lower}", f"../{lower}")
    if not s.fs.exists(f"{base}/device"):
        return
    # device -> a directory named after the bus address (read_interface reports its basename)
    dev = f"sys/devices/tunewatch-collect/{name}/{iface.bus_info or 'device'}"
    s.symlink(f"{base}/device", os.path.relpath(dev, base))
    if iface.driver:
        s.symlink(f"{dev}/driver", f"../../../../bus/drivers/{iface.driver}")
    s.write(f"{dev}/numa_node", f"{-1 if iface.numa_node is None else iface.numa_node}\n")
    os.makedirs(os.path.join(s.dest, dev, "msi_irqs"), exist_ok=True)
    for irq in iface.msi_irqs:
        s.write(f"{dev}/msi_irqs/{irq}", b"msi\n")
    if iface.driver:  # live: SIOCETHTOOL; a snapshot: its ethtool/<if>.json
        try:
            s.write(f"ethtool/{name}.json", json.dumps(ethtool.read_ethtool(s.fs, name), indent=2) + "\n")
        except TunewatchError as e:
            s.warn(f"ethtool/{name}.json", str(e))


def collect(root: str, directory: str, content: Content) -> int:
    """Write the snapshot of `root` into `directory` (absent or empty); the number of files written."""
    if os.path.exists(directory) and (not os.path.isdir(directory) or os.listdir(directory)):
        raise ContentError(directory, "collect needs a new or empty directory; it will not write into this one")
    os.makedirs(directory, exist_ok=True)
    s = _Snapshot(FS(root), os.path.abspath(directory))
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
    for pid in s.listdir("proc"):
        if pid.isdigit():
            s.copy(f"proc/{pid}/comm")
    for key in sorted(_sysctl_keys(content)):
        try:
            s.copy(sysctl_key_to_path(key))
        except TunewatchError as e:
            s.warn(key, str(e))
    for d, pattern in CONFIG:
        s.copy_dir(d, pattern)
    for d in ("etc/tuned", "usr/lib/tuned", "lib/tuned"):
        for name in s.listdir(d):
            s.copy(f"{d}/{name}/tuned.conf")
    _units(s)
    for name in s.listdir("sys/class/net"):
        if not s.is_dir(f"sys/class/net/{name}"):
            continue  # bonding_masters: a control file beside the interfaces, not one of them
        try:
            _interface(s, name)
        except (OSError, TunewatchError) as e:
            s.warn(f"sys/class/net/{name}", str(e))
    if s.skipped:
        print(f"tunewatch collect: skipped {len(s.skipped)} file(s), listed above", file=sys.stderr)
    return s.written
