"""Which mounts a scan must never read under: network (and cluster) file systems.

fs.FS refuses any path that reaches one of these mount points before it stats, opens or
lists anything there (a hung NFS or sshfs server must not hang a scan).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    from ..parsers.mountinfo import MountInfo

    class FS(Protocol):
        """What is read here of fs.FS (a Protocol, so that fs.py can import this module)."""
        root: str

        def mount_table(self) -> list[MountInfo]: ...

# Network (and cluster) file systems, matched on the fstype field of mountinfo. `nfs*`
# covers nfs, nfs4 (not nfsd, the local server's control fs). FUSE file systems are named
# `fuse.<subtype>`: only subtypes that talk to a server are listed, because lxcfs
# (`fuse.lxcfs`) serves /proc/stat and friends inside containers and is local.
NETWORK_FSTYPES = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "ceph", "glusterfs", "9p", "afs", "coda", "lustre", "gpfs",
    "beegfs", "orangefs", "pvfs2", "ocfs2", "gfs2", "davfs",
    "fuse.sshfs", "fuse.glusterfs", "fuse.ceph", "fuse.ceph-fuse", "fuse.cephfs", "fuse.s3fs", "fuse.rclone",
    "fuse.gcsfuse", "fuse.blobfuse", "fuse.blobfuse2", "fuse.goofys", "fuse.juicefs", "fuse.mfs", "fuse.davfs2",
    "fuse.lizardfs", "fuse.beegfs", "fuseblk.sshfs"})

def is_network_fstype(fstype: str) -> bool:
    return fstype in NETWORK_FSTYPES or (fstype.startswith("nfs") and fstype != "nfsd")


def network_mount_points(fs: FS, host: FS | None) -> dict[str, str]:
    """Root-relative mount points of network file systems under `fs`'s root (e.g.
    {"opt/sas": "nfs"}): from the root's own mount table, and for a snapshot from `host`'s
    (the scanning host's), the mounts below the snapshot directory. A mount table that
    cannot be read adds nothing here: the facts that need it say so."""
    found: dict[str, str] = {}
    tables = [(fs, "")]
    if host is not None:
        tables.append((host, os.path.realpath(fs.root)))
    for table, under in tables:
        try:
            mounts = table.mount_table()
        except Exception:  # noqa: BLE001 - unknown mounts: the facts that need them say so
            continue
        for m in mounts:
            if not is_network_fstype(m.fstype):
                continue
            point = m.mount_point
            if under:
                if not point.startswith(under.rstrip("/") + "/"):
                    continue  # outside the snapshot, or the snapshot itself is on it
                point = point[len(under):]
            point = "/".join(p for p in point.split("/") if p)
            if point:  # the root mount is never refused
                found[point] = m.fstype
    return found
