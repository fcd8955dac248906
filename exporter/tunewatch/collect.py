"""`tunewatch collect DIR`: write a host snapshot (SPEC section 2) that scans like the host.

Every file is read through `FS(root)` (so a snapshot can be collected from a snapshot) and
written under DIR at the same relative path. Symlinks that carry meaning (systemd wants
and mask links, `master`, `lower_*`, `device/driver`) are recreated as symlinks with the same
target text. Network interfaces are written in a normalised form built from the parsed
`read_interface` facts, which is simpler than sysfs but reads to the same facts.
Nothing under a network file system's mount point is ever stat'ed, opened or listed: a hung
NFS server must not hang a collect. A file that is unreadable or too large is skipped with
a warning on stderr; it never aborts the collect.
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
from .fs import FS
from .parsers.mountinfo import parse_mountinfo
from .parsers.sysctl_conf import sysctl_key_to_path

SCRIPT_DIRS = re.compile(r"^/(usr|etc|opt|root|sbin|bin|lib)/")  # as facts.boot._script_text
MAX_BYTES = 64 << 20  # proc/interrupts of a 416-CPU host is ~5 MB
NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "lustre", "9p", "afs")
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
        self.netmounts: list[str] = []

    @staticmethod
    def warn(rel: str, why: str) -> None:
        print(f"tunewatch collect: skipped {rel}: {why}", file=sys.stderr)

    def forbidden(self, rel: str) -> bool:
        """True (and never touched) when `rel` lies under a network file system's mount point."""
        path = "/" + rel.strip("/")
        return any(path == m or path.startswith(m.rstrip("/") + "/") for m in self.netmounts)

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

    def copy(self, rel: str, as_rel: str | None = None) -> bool:
        """Copy one file's bytes; False when it is missing, forbidden, unreadable or too large."""
        if self.forbidden(rel):
            self.warn(rel, "under a network file system mount point")
            return False
        try:  # small reads: a procfs sysctl allocates a buffer of the size asked for
            with open(self.fs.path(rel), "rb") as f:
                chunks, size = [], 0
                while size <= MAX_BYTES and (chunk := f.read(1 << 16)):
                    chunks.append(chunk)
                    size += len(chunk)
            data = b"".join(chunks)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except (OSError, TunewatchError) as e:
            self.warn(rel, getattr(e, "strerror", None) or str(e))
            return False
        if len(data) > MAX_BYTES:
            self.warn(rel, f"larger than {MAX_BYTES >> 20} MiB")
            return False
        self.write(as_rel or rel, data)
        try:  # NetworkManager only runs executable dispatcher scripts: keep the mode
            os.chmod(self._target(as_rel or rel), os.stat(self.fs.path(rel)).st_mode & 0o777)
        except OSError:
            pass
        return True

    def listdir(self, rel: str) -> list[str]:
        try:
            return [] if self.forbidden(rel) else self.fs.listdir(rel)
        except TunewatchError as e:
            self.warn(rel, str(e))
            return []

    def copy_dir(self, rel: str, pattern: str | None) -> None:
        for name in self.listdir(rel):
            sub = f"{rel}/{name}"
            if pattern is None and not self.forbidden(sub) and self.fs.is_dir(sub):
                self.copy_dir(sub, None)
            elif pattern is None or fnmatch.fnmatchcase(name, pattern):
                self.copy(sub)


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
    target = s.fs.readlink(rel)
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
            if fs.readlink(rel) is None and fs.is_dir(rel):  # *.wants / *.requires / *.d
                for unit in s.listdir(rel):
                    _link(s, f"{rel}/{unit}")
            else:
                _link(s, rel)
    copied = FS(s.dest)  # read units back from the snapshot: links resolve inside it
    for rel in (r for d in UNIT_DIRS for r in copied.glob(d, "*.service")):
        text = "" if copied.is_dir(rel) else copied.read_text(rel) or ""
        for m in boot._EXEC.finditer(text):  # the scripts boot_scripts() reads for enabled units
            if SCRIPT_DIRS.match(m.group(1)):
                s.copy(m.group(1).lstrip("/"))


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
    for rel in ("proc/self/mountinfo", "proc/1/mountinfo"):
        try:
            text = s.fs.read_text(rel)
            if text is not None:
                mounts = parse_mountinfo(text, rel)
                s.netmounts = [m.mount_point for m in mounts if m.fstype.split(".")[0] in NETWORK_FS]
                bdis = {f"{m.major}:{m.minor}" for m in mounts if m.fstype in ("nfs", "nfs4")}
                break
        except TunewatchError as e:
            s.warn(rel, str(e))
    else:
        bdis = set()
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
        try:
            _interface(s, name)
        except (OSError, TunewatchError) as e:
            s.warn(f"sys/class/net/{name}", str(e))
    return s.written
