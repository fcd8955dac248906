"""A sysfs attribute of a device that udev writes at boot (ATTR{x}="v"), predicted per
object. Today: read_ahead_kb of each NFS mount's bdi (subsystem "bdi").

For each NFS mount in scope, the bdi `<major>:<minor>` gets an "add" event when the mount
is made; the rules are evaluated for that device as systemd-udevd does (facts/udev.py:
rules directories of the next boot, masks, dropped lines, GOTO, ...). The last
`ATTR{read_ahead_kb}=` written is the prediction (`configured by FILE:LINE`).
- nfs-utils' `nfsrahead` (usr/lib/udev/rules.d/99-nfs.rules: `PROGRAM="/usr/libexec/nfsrahead
  %k", ATTR{read_ahead_kb}="%c"`) is run here as nfs-utils tools/nfsrahead/main.c does: the
  mount's fstype (`nfs` for NFSv2/3, `nfs4` for NFSv4) is the key of `[nfsrahead]`, then
  `default`, else 128 (NFS_DEFAULT_READAHEAD), read from etc/nfs.conf and then
  etc/nfs.conf.d/*.conf in name order (a later value wins).
- Another PROGRAM (seed 003's awk over /proc/fs/nfsfs/volumes) is taken to succeed: the
  device is an NFS bdi.
- Where no rule writes the attribute, the kernel's default for an NFS bdi applies (content:
  the check's `kernel_defaults`, cited), `kernel default (...)`; a line udev drops that
  would have written it is named (`never applied: WHY`).
The prediction is judged with the runtime check's requirement (`value`).
"""

from __future__ import annotations

import os
import re

from ..errors import TunewatchError
from ..facts import udev
from ..facts.udev_device import sysattr_reader
from ..facts.udev_shared import SharedOutcomes
from ..parsers._text import option_value
from ..parsers.nfs_conf import read_conf
from ..results import FAIL, PASS, UNKNOWN, Fix, ObjectResult
from .base import Target, per_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..facts.udev_files import RulesFile
    from ..host.fs import FS
    from ..parsers.mountinfo import MountInfo

VARS_SCHEMA = {
    "type": "object", "required": ["subsystem", "attribute", "value"], "additionalProperties": False,
    "properties": {
        "subsystem": {"type": "string"}, "attribute": {"type": "string"},
        "value": {"type": ["string", "integer"]},
        "kernel_defaults": {"type": "array", "items": {
            "type": "object", "required": ["since", "source"], "additionalProperties": False,
            "properties": {"since": {"type": "string"}, "source": {"type": "string"},
                           "value": {"type": "integer"}, "rsize_pages_times": {"type": "integer"}}}}}}

NFSRAHEAD_DEFAULT = 128  # nfs-utils tools/nfsrahead/main.c NFS_DEFAULT_READAHEAD
_SEED_RULE = ('SUBSYSTEM=="bdi", ACTION=="add", PROGRAM="/bin/awk -v bdi=$kernel \'BEGIN{ret=1} {if ($4 == bdi) '
              '{ret=0}} END{exit ret}\' /proc/fs/nfsfs/volumes", ATTR{read_ahead_kb}="%s"')


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text.split("-")[0])[:3])


def _nfs_conf(fs: FS) -> list[tuple[str, str, str, int]]:
    """[nfsrahead] items of etc/nfs.conf then etc/nfs.conf.d/*.conf, as conffile.c reads
    them (parsers/nfs_conf.py: inline `#` and `;` comments cut): (key, value, file, line)."""
    items = []
    for e in read_conf(fs, "etc/nfs.conf"):
        if e.section.lower() == "nfsrahead" and e.arg is None:
            rel, _, line = e.source.rpartition(":")
            items.append((e.tag.lower(), e.value.strip(), rel, int(line)))
    return items


def nfsrahead_value(items: list[tuple[str, str, str, int]], fstype: str) -> tuple[int, str]:
    """conf_get_readahead(): key = fstype, then "default", then 128; last value wins."""
    for key in (fstype, "default"):
        hits = [(v, f"{rel}:{n}") for k, v, rel, n in items if k == key and v.isdigit()]
        if hits:
            return int(hits[-1][0]), f"{hits[-1][1]} ([nfsrahead] {key}={hits[-1][0]})"
    return NFSRAHEAD_DEFAULT, f"no [nfsrahead] {fstype}= in etc/nfs.conf: nfsrahead's default {NFSRAHEAD_DEFAULT}"


def _kernel_default(t: Target, mount: MountInfo) -> tuple[int | None, str]:
    """The NFS bdi read-ahead of the kernel that boots next (content `kernel_defaults`)."""
    nxt = t.facts.next_kernel
    kernel, of = nxt.release, f" of {nxt.describe()}"
    for d in sorted(t.vars.get("kernel_defaults", []), key=lambda d: _version(d["since"]), reverse=True):
        if _version(kernel) >= _version(d["since"]):
            if "value" in d:
                return d["value"], (f"kernel default (Linux {kernel} >= {d['since']}: {d['value']} KiB; "
                                    f"{d['source']}){of}")
            rsize = option_value(mount.super_options, "rsize")
            if rsize and rsize.isdigit():
                kb = int(rsize) // 4096 * d["rsize_pages_times"] * 4
                return kb, (f"kernel default (Linux {kernel} >= {d['since']}: rsize {rsize} in pages x "
                            f"{d['rsize_pages_times']} = {kb} KiB; {d['source']}){of}")
    return None, f"the kernel default for Linux {kernel} is unknown{of}"


def _bdi_device(t: Target, mount: MountInfo, items: list[tuple[str, str, str, int]],
                used: list[str]) -> udev.UdevDevice:
    bdi = f"{mount.major}:{mount.minor}"

    def program(cmd: str) -> tuple[bool, str | None] | None:
        if "nfsrahead" not in cmd:  # per bdi and PROGRAM line: most are other programs (seed 003's awk)
            return None
        words = cmd.split()
        if words and os.path.basename(words[0]) == "nfsrahead":
            value, where = nfsrahead_value(items, mount.fstype)
            used.append(where)
            return True, str(value)
        return None

    return udev.UdevDevice({"KERNEL": bdi, "SUBSYSTEM": "bdi", "DEVPATH": f"/devices/virtual/bdi/{bdi}"},
                           sysattr_reader(t.facts.fs, f"sys/class/bdi/{bdi}"), program=program)


def _fix(t: Target, mount: MountInfo, attr: str, want: str, files: list[RulesFile]) -> Fix:
    vendor = [f for f in files if f.source.endswith("/99-nfs.rules") and "nfsrahead" in f.text]
    if vendor and attr == "read_ahead_kb":
        key = mount.fstype if mount.fstype in ("nfs", "nfs4") else "default"
        return Fix(file="/etc/nfs.conf.d/readahead.conf", change=f"[nfsrahead]\n{key}={want}",
                   note=f"nfsrahead ({vendor[0].source}) applies it when {mount.mount_point} is mounted")
    return Fix(file="/etc/udev/rules.d/99-nfs.rules", change=_SEED_RULE % want,
               note="udev applies it to every NFS bdi when it is added (seed 003)")


def evaluate(t: Target) -> list[ObjectResult]:
    sub, attr, want = t.vars["subsystem"], t.vars["attribute"], str(t.vars["value"])
    files = t.facts.udev_rules if hasattr(t.facts, "udev_rules") else udev.read_rules(t.facts.fs)
    items = _nfs_conf(t.facts.fs) if sub == "bdi" else []
    shared = SharedOutcomes(files)  # a thousand bdis differ only by name: one line loop for all

    def one(mount: MountInfo) -> ObjectResult:
        used: list[str] = []
        out = shared.evaluate(_bdi_device(t, mount, items, used))
        got = out.attrs.get(attr)
        if got and "%c" not in got[0] and got[0].strip().isdigit():
            predicted = got[0].strip()
            source = f"configured by {got[1]}:{got[2]}" + (f" (nfsrahead: {used[-1]})" if used else "")
        elif got:
            predicted, source = UNKNOWN, f"configured by {got[1]}:{got[2]}, value {got[0]!r} cannot be told"
        else:
            try:
                value, source = _kernel_default(t, mount)
            except TunewatchError as e:
                value, source = None, f"the kernel default is unknown ({e})"
            predicted = UNKNOWN if value is None else str(value)
            dropped = [i for i in out.ignored if any(a == attr for a, _ in i.attrs)]
            if dropped:
                source = (f"never applied: {dropped[0].source}:{dropped[0].line}: udev drops the line "
                          f"({dropped[0].problem}); {source}")
        ok = predicted == want
        msg = (f"{mount.mount_point} (bdi {mount.major}:{mount.minor}): {attr} after the next boot: {predicted} "
               f"({source})" + ("" if ok else f", want {want}"))
        actual = f"{got[1]}:{got[2]}" if got else "no rule"  # the rule's place (outputs/goss.py reads it)
        return ObjectResult(mount.mount_point, PASS if ok else FAIL, want, actual, msg, predicted=predicted,
                            source=source, fix=None if ok else _fix(t, mount, attr, want, files))

    return per_object(t.mounts(), lambda m: m.mount_point, one)
