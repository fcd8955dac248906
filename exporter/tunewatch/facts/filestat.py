"""Owner and mode of configuration files, for consumers that refuse insecure ones
(NetworkManager keyfiles and dispatcher scripts).

On a live host this is `stat()`. A snapshot keeps file modes (collect copies them), but git
keeps only the executable bit and a copy made by any user loses the owner, so a snapshot
may state both in `filestat.json` at its root: `{"<relative path>": {"mode": "0600",
"uid": 0}}` (either key optional). A path it does not list has the mode of the snapshot's
file; its owner is the snapshot file's own owner when the snapshot keeps owners (its root
directory is owned by uid 0, as a copy made by root with owners kept is: `tar -p`,
`rsync -a`, `cp -a`, `collect` run as root), and root (uid 0) otherwise: a copy made by an
ordinary user owns every file itself and says nothing about the host (docs/snapshot-contract.md).
"""

from __future__ import annotations

import json
import os
import stat

from .._record import FrozenRecord
from ..errors import FactError
from ..host.fs import FS

SIDECAR = "filestat.json"


class FileStat(FrozenRecord):
    __slots__ = ("mode", "uid", "regular")
    mode: int  # permission bits and setuid/setgid/sticky (S_IMODE)
    uid: int
    regular: bool

    def __init__(self, mode: int, uid: int, regular: bool):
        self.mode = mode
        self.uid = uid
        self.regular = regular


def _keeps_owners(fs: FS) -> bool:
    """A snapshot whose root directory is owned by uid 0 kept its files' owners."""
    def owned_by_root() -> bool:
        try:
            return os.stat(fs.root).st_uid == 0
        except OSError:
            return False
    return fs.derived(_keeps_owners, owned_by_root)


def _sidecar(fs: FS) -> dict:
    """The snapshot's filestat.json, read once per FS (one FS per scan or collect, so a
    re-scan still sees an edited snapshot)."""
    return {} if fs.live else fs.derived(_sidecar, lambda: _read_sidecar(fs))


def _read_sidecar(fs: FS) -> dict:
    text = fs.read_text(SIDECAR)
    try:
        data = json.loads(text) if text else {}
    except ValueError as e:
        raise FactError(f"{SIDECAR}: not JSON: {e}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise FactError(f"{SIDECAR}: expected {{path: {{mode, uid}}}}")
    return data


def file_stat(fs: FS, rel: str) -> FileStat | None:
    """Owner and mode of `rel` (links followed, as NetworkManager's stat() does); None when
    it does not exist."""
    try:
        st = os.stat(fs.path(rel))
    except OSError:
        return None
    mode, uid = stat.S_IMODE(st.st_mode), st.st_uid if fs.live or _keeps_owners(fs) else 0
    entry = _sidecar(fs).get(rel.strip("/"), {})
    try:
        mode = int(str(entry["mode"]), 8) if "mode" in entry else mode
        uid = int(entry.get("uid", uid))
    except (TypeError, ValueError):
        raise FactError(f"{SIDECAR}: {rel}: mode must be an octal string and uid a number") from None
    return FileStat(mode, uid, stat.S_ISREG(st.st_mode))
