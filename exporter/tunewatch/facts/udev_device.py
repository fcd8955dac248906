"""A sysfs device as systemd-udevd sees it for an event (sd-device): its sysattr values,
its uevent properties and its parents.

- `sysattr_reader()`: `sd_device_get_sysattr_value()`: the file's content without trailing
  newlines; no value (None) for a missing or unreadable file, a directory, or a link other
  than `driver`, `subsystem` and `module` (whose value is the basename of the target).
- `sysfs_device()`: the device at a root-relative sysfs directory: KERNEL = its directory
  name, SUBSYSTEM/DRIVER from its `subsystem`/`driver` links, properties from its `uevent`
  file, and its parents: every directory above it up to `sys/devices` that is a device
  (`sd_device_get_parent()` skips directories without a `uevent` file; a snapshot that did
  not keep `uevent` files counts every directory).
"""

from __future__ import annotations

import os

from ..errors import TunewatchError
from ..host.fs import FS
from .udev import Level, UdevDevice

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from .udev_records import ProgramResult

_LINK_ATTRS = ("driver", "subsystem", "module")


def sysattr_reader(fs: FS, rel: str) -> Callable[[str], str | None]:
    # A snapshot's attributes do not change during a scan, and a rule set may test the same
    # one on a thousand lines (ATTR{address}=="..."): each is looked up once per reader.
    known: dict[str, str | None] = {}

    def read(attr: str) -> str | None:
        try:
            return known[attr]
        except KeyError:
            value = known[attr] = _sysattr(fs, rel, attr)
            return value
    return read


def _sysattr(fs: FS, rel: str, attr: str) -> str | None:
    if not attr or attr.startswith("/") or ".." in attr.split("/"):
        return None
    path = f"{rel}/{attr}"
    try:
        if fs.readlink(path) is not None:
            return fs.link_basename(path) if attr.rsplit("/", 1)[-1] in _LINK_ATTRS else None
        if fs.is_dir(path):
            return None
        text = fs.read_text(path)
    except TunewatchError:
        return None
    return None if text is None else text.rstrip("\n")


def uevent(fs: FS, rel: str) -> dict[str, str]:
    try:
        text = fs.read_text(f"{rel}/uevent") or ""
    except TunewatchError:
        return {}
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _level(fs: FS, rel: str) -> Level:
    # sd_device_get_sysname(): a '!' in the directory name stands for '/'
    return Level(os.path.basename(rel).replace("!", "/"), fs.link_basename(f"{rel}/subsystem"),
                 fs.link_basename(f"{rel}/driver"),
                 sysattr_reader(fs, rel), "/" + rel[len("sys/"):])


def sysfs_device(fs: FS, rel: str, action: str = "add",
                 program: Callable[[str], ProgramResult] | None = None) -> UdevDevice:
    """The device at `rel` (e.g. `sys/devices/virtual/bdi/0:52`, links resolved by the caller)."""
    me = _level(fs, rel)
    parents, up = [], os.path.dirname(rel)
    keep_uevent = fs.exists(f"{rel}/uevent")
    while up.startswith("sys/devices/"):
        if not keep_uevent or fs.exists(f"{up}/uevent"):
            parents.append(_level(fs, up))
        up = os.path.dirname(up)
    props = {**uevent(fs, rel), "ACTION": action, "DEVPATH": me.devpath or ""}
    if me.subsystem:
        props["SUBSYSTEM"] = me.subsystem
    values = {"KERNEL": me.kernel, "SUBSYSTEM": me.subsystem, "DRIVER": me.driver, "DEVPATH": me.devpath,
              **{f"ENV{{{k}}}": v for k, v in props.items()}}
    kwargs: dict[str, Any] = {"program": program} if program is not None else {}
    return UdevDevice(values, me.attr, (me, *parents), action=action, has_devnode="MAJOR" in props,
                      test=path_test(fs, rel), **kwargs)


def path_test(fs: FS, rel: str) -> Callable[[str], bool | None]:
    """TEST=="path" (udev-rules.c TK_M_TEST): an absolute path under the root, else relative
    to the device; `*/` picks the first entry that has the rest (attr_subst_subdir())."""
    def test(path: str) -> bool | None:
        if path.startswith("["):
            return None  # [subsystem/kernel] names another device
        base = path.lstrip("/") if path.startswith("/") else f"{rel}/{path}"
        if "/*/" in base:
            head, tail = base.split("/*/", 1)
            return any(fs.exists(f"{head}/{e}/{tail}") for e in fs.listdir(head) if not e.startswith("."))
        return fs.exists(base)
    return test
