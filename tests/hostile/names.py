"""Hostile snapshots: shipped examples with one name in each channel renamed to one an
attacker could give it (the kernel or the file system accepts it).

`rename(root, old, new)` renames `old` everywhere in a copied snapshot: path components,
link targets and file contents (bytes, so a name that is not UTF-8 works too).
"""

from __future__ import annotations

import os
from pathlib import Path

# Interface names dev_valid_name() accepts (<= 15 bytes, no '/', ':' or blank)
IFACE_SUBST = b"$(touch${IFS}x)"[:15]
IFACE_BACKTICK = b"`reboot`"
IFACE_SEMI = b"a;reboot"
IFACE_ID = b"$(id>x)"
IFACE_BYTES = b"e\xff\x1b[2J"  # not UTF-8, ESC clears a terminal
HOSTNAME = b"hanadb01\ntouch /tmp/x #{{ lookup('pipe','reboot') }}\ncommand: {x: {exec: reboot}}"
MOUNT = b"/hana/sh\n/dev/sdz1 /etc xfs {{ lookup('pipe','reboot') }}"
NFS_SOURCE = b"anf:/v\n/dev/sdz1 /etc xfs"
FILE_NAME = b"{{ lookup('pipe','reboot') }}$(reboot)\n.conf"
SCRIPT = b"<script>alert(1)</script>\x1b[2J\x07"


def _replace(data: bytes, old: bytes, new: bytes) -> bytes:
    return data.replace(old, new)


def rename(root: Path, old: bytes, new: bytes, contents: bool = True) -> None:
    """`old` becomes `new` in every path component, link target and (with `contents`) file."""
    broot = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(broot, topdown=False):
        for name in filenames + dirnames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                target = os.readlink(path)
                if old in target:
                    os.unlink(path)
                    os.symlink(target.replace(old, new), path)
            elif contents and os.path.isfile(path):
                with open(path, "rb") as f:
                    data = f.read()
                if old in data:
                    with open(path, "wb") as f:
                        f.write(data.replace(old, new))
            if old in name:
                os.rename(path, os.path.join(dirpath, name.replace(old, new)))


def write(root: Path, rel: bytes, data: bytes) -> None:
    path = os.path.join(os.fsencode(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read(root: Path, rel: str) -> bytes:
    return (root / rel).read_bytes()
