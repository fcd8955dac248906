"""Mounts as the kernel has them (mountinfo) and as configured (fstab).

What configures a mount is indexed once per scan by its mount point (`mount_point_key`):
a check looks each mountinfo line up in the index, so its cost grows with the mounts, not
with mounts x fstab lines. Other sources of mounts keyed the same way sit beside it.

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


def mount_point_key(path: str) -> str:
    """The key of a mount point in an index: libmount ignores a trailing slash."""
    return path.rstrip("/") or "/"


def fstab_index(entries: list[FstabEntry]) -> dict[str, FstabEntry]:
    """fstab by mount point (`mount_point_key`) as the next boot mounts it: with several
    lines for one mount point, the first. systemd-fstab-generator writes one unit per mount
    point and opens it O_EXCL, so a later line's unit is refused ("Failed to create unit
    file ..., as it already exists. Duplicate entry in '/etc/fstab'?", shared/generator.c
    `generator_open_unit_file_full()`). facts/boot_mounts.py indexes fstab with it once per scan."""
    index: dict[str, FstabEntry] = {}
    for entry in entries:
        index.setdefault(mount_point_key(entry.file), entry)
    return index


def prefetch_read_ahead_kb(fs: FS, mounts: list[MountInfo]) -> None:
    """The bdi read_ahead_kb files of these mounts read in one pass (FS.prefetch:
    sys/class/bdi opened once), for read_ahead_kb() to find them read."""
    fs.prefetch("sys/class/bdi", [f"{m.major}:{m.minor}" for m in mounts], ("read_ahead_kb",))


def read_ahead_kb(fs: FS, mount: MountInfo) -> int | None:
    """None when the bdi has no read_ahead_kb (absent); unreadable or garbage raises."""
    rel = f"sys/class/bdi/{mount.major}:{mount.minor}/read_ahead_kb"
    value = fs.read_value(rel)
    if value is not None and not value.isdigit():
        raise ParseError(rel, f"not a number: {value[:40]!r}")
    return None if value is None else int(value)
