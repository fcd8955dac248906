"""Mounts as the kernel has them (mountinfo) and as configured (fstab).

Nothing here stats, opens or lists anything under a mount point: a hung NFS server must
not hang a scan. Read-ahead comes from the mount's bdi in sysfs, found by device number.
"""

from __future__ import annotations

from ..errors import ParseError
from ..host.fs import FS
from ..parsers.fstab import FstabEntry, parse_fstab
from ..parsers.mountinfo import MountInfo


def read_mountinfo(fs: FS) -> list[MountInfo]:
    """The mount table; a snapshot without one knows no mounts (the NFS checks do not
    apply), while an unreadable or garbled one raises (they are `error`). Parsed once per
    scan: FS's network-mount guard reads the same table."""
    return fs.mount_table()


def read_fstab(fs: FS) -> list[FstabEntry]:
    text = fs.read_text("etc/fstab")
    return [] if text is None else parse_fstab(text, "etc/fstab")


def fstab_entry(entries: list[FstabEntry], mount_point: str) -> FstabEntry | None:
    """The fstab line that mounts `mount_point` at boot (libmount ignores a trailing slash);
    with several, the last one, as mount -a mounts them in order over each other."""
    want = mount_point.rstrip("/") or "/"
    found = None
    for entry in entries:
        if (entry.file.rstrip("/") or "/") == want:
            found = entry
    return found


def read_ahead_kb(fs: FS, mount: MountInfo) -> int | None:
    """None when the bdi has no read_ahead_kb (absent); unreadable or garbage raises."""
    rel = f"sys/class/bdi/{mount.major}:{mount.minor}/read_ahead_kb"
    value = fs.read_value(rel)
    if value is not None and not value.isdigit():
        raise ParseError(rel, f"not a number: {value[:40]!r}")
    return None if value is None else int(value)
