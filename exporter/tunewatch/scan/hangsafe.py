"""Can a scan of this root block in the kernel? Decides whether the scan needs its watchdog.

`engine.scan_with_watchdog` runs the scan in a forked child because a read on a hung
network or FUSE file system cannot be interrupted, not even by SIGKILL. The fork, its
copy-on-write faults, pickling every result and reaping the child cost ~20 ms of a ~90 ms
CLI scan (docs/architecture.md#start-up-cost), so it is skipped when nothing the scan can read is on such a mount.

The rule (`needs_watchdog`): the scanning host's own /proc/self/mountinfo (the kernel's,
not the root's snapshot copy) is read; the mount that contains the root (the longest mount
point that is a component prefix of its real path, every entry stacked there) and every
mount at or below the root must all be of a type in LOCAL_FSTYPES. Anything else (nfs*,
cifs, ceph, 9p, every fuse.* including lxcfs, autofs, which mounts on access and may reach
a network, or a type this list does not know) keeps the fork, and so does a mountinfo that
cannot be read or parsed. The scan never reads outside its root (fs.FS resolves every link
inside it; the host's mountinfo it also reads is procfs), so the mounts at and below the
root are all it can reach. A live root (`/`) has every mount below it: one network mount
anywhere on the host keeps the fork.
"""

from __future__ import annotations

import os

MOUNTINFO = "/proc/self/mountinfo"  # the scanning host's, whatever the root (tests point it elsewhere)

# Local, in-kernel file systems: a read waits at most on a local disk or on nothing. Kept
# disjoint from fs.NETWORK_FSTYPES (a test checks); fusectl is the FUSE control fs, local.
LOCAL_FSTYPES = frozenset({
    "ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "proc", "sysfs", "devtmpfs", "devpts", "cgroup",
    "cgroup2", "overlay", "squashfs", "vfat", "debugfs", "tracefs", "securityfs", "pstore", "bpf", "configfs",
    "mqueue", "hugetlbfs", "fusectl"})


def _under(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def read_host_mountinfo() -> bytes | None:
    """The scanning host's mount table as bytes, or None when it cannot be read. The
    in-process scan gets these bytes too (engine.scan `host_mountinfo`): the file is read
    once per scan, not once here and once by fs.FS."""
    from ..host.fs import TEXT_MAX_BYTES, read_regular_file

    try:
        return read_regular_file(MOUNTINFO, TEXT_MAX_BYTES)
    except Exception:  # noqa: BLE001 - unknown mounts: keep the watchdog
        return None


_UNREAD = object()


def needs_watchdog(root: str, mountinfo: bytes | None = _UNREAD) -> bool:  # type: ignore[assignment]
    """True unless every mount the scan of `root` can reach is of a LOCAL_FSTYPES type.
    `mountinfo`: what read_host_mountinfo() returned (None: unreadable), read here when
    not given."""
    from ..parsers.mountinfo import parse_mountinfo  # the scan imports it anyway (fs.FS)

    if mountinfo is _UNREAD:
        mountinfo = read_host_mountinfo()
    try:  # surrogateescape: a mount point that is not UTF-8 still compares with realpath()
        mounts = parse_mountinfo(mountinfo.decode("utf-8", "surrogateescape"), MOUNTINFO)  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001 - unknown (or unreadable: None) mounts: keep the watchdog
        return True
    if not mounts:
        return True
    if all(m.fstype in LOCAL_FSTYPES for m in mounts):
        return False  # the usual host: no path to resolve
    # The caller has stat'ed the root already (rootcheck), so resolving it blocks no more than that did.
    real = os.path.realpath(root)
    containing = max((m.mount_point for m in mounts if _under(real, m.mount_point)), key=len, default=None)
    if containing is None:
        return True
    return any(m.fstype not in LOCAL_FSTYPES for m in mounts
               if m.mount_point == containing or _under(m.mount_point, real))
