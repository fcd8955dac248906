"""The validated-content cache (content.py): its key, and reading and writing its file.

The file is marshal data under cache_dir(), one per content directory (`file_name`),
written whole to a temporary name and renamed; a missing, corrupt or foreign file is no
cache, an unwritable directory means validating every time.

The key: file identities, not file bytes.

A scan must not pay for hashing every content file on every start (hashlib loads OpenSSL:
~2.5 ms, plus reading ~75 files: docs/architecture.md#start-up-cost). The key is what make, git's index and most
build caches use instead: for every file that decides the validated content (the kinds'
sources, which hold their VARS_SCHEMA, the schemas, checks, profiles, defaults and
references) its path, device, inode, size, mtime and ctime in nanoseconds, plus the cache
format, the tunewatch version, the content directory and the kind names.

Why that is as safe as the bytes for content a user edits: every write to a file moves its
ctime to the clock of that moment, and ctime cannot be set back (utime sets mtime and
atime only; `cp -p`, `tar`, `rsync -t` and `git checkout` make new inodes or new ctimes).
The gap is the clock's granularity: two writes within one timestamp tick (a few ms) of the
same size leave the same stat. So a key is "racy" (git's word) when any file changed less
than RACY_NS before the key was taken: such a key is neither saved nor trusted, and the
content is validated from its bytes, as without a cache, until the files are older. What
remains unseen is a file system that does not keep ctime (some FUSE file systems) or a
clock set back by more than RACY_NS between two writes of the same size.
"""

from __future__ import annotations

import json
import marshal
import os
import stat
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import ModuleType

RACY_NS = 2_000_000_000  # timestamps are coarse (jiffies) and NFS servers' clocks drift


def cache_key(head: str, paths: list[str]) -> str | None:
    """`head` and the identity of every path, one line each; None when a path is not a
    regular file (the validating load reports it), or when the key is racy."""
    taken = time.time_ns()
    lines, newest = [head], 0
    try:
        for path in paths:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                return None
            lines.append(f"{path}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}")
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    except (OSError, ValueError):
        return None
    if newest >= taken - RACY_NS:
        return None  # changed just now (or in the future): a later write could keep this stat
    return "\n".join(lines)


def kinds_sources(kinds_dir: str) -> list[str]:
    """The kinds' sources stand for their VARS_SCHEMA (some build it from a sibling's
    constants, so every module of the package): importing 18 kinds to read their schemas
    was a third of a scan's start-up (docs/architecture.md#start-up-cost)."""
    return [os.path.join(kinds_dir, n) for n in sorted(os.listdir(kinds_dir)) if n.endswith(".py")]


def head(cache_format: int, version: str, directory: str, kind_names: Iterable[str]) -> str:
    return f"{cache_format}\0{version}\0{directory}\0{json.dumps(sorted(kind_names))}"


def file_name(directory: str) -> str:
    """`content-<16 hex>.marshal` from FNV-1a 64 of the directory: a name, not a guard (the
    key inside names the directory; two directories sharing a name only evict each other)."""
    h = 0xCBF29CE484222325
    for byte in os.fsencode(directory):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"content-{h:016x}.marshal"


def content_key(directory: str, cache_format: int, version: str, kinds: ModuleType, files: list[str]) -> str | None:
    """The key for the content in `directory`: the kinds' sources, its schemas and `files`."""
    try:
        kinds_files = kinds_sources(os.path.dirname(os.path.abspath(str(kinds.__file__))))
        schema_dir = os.path.join(directory, "schema")
        schemas = [os.path.join(schema_dir, n) for n in sorted(os.listdir(schema_dir))]
    except OSError:
        return None  # the validating load reports it
    return cache_key(head(cache_format, version, directory, kinds.KINDS), kinds_files + schemas + files)


def load(cache_dir: str, directory: str, key: str) -> dict | None:
    """The cached entries of `directory` when they were saved under `key`, else None."""
    from ..host.fs import read_regular_file

    try:  # a regular file of bounded size: a FIFO or a huge file here is just no cache
        cached = marshal.loads(read_regular_file(os.path.join(cache_dir, file_name(directory)), 64 << 20))
    except Exception:  # noqa: BLE001 - any damage: validate again
        return None
    return cached if isinstance(cached, dict) and cached.get("key") == key else None


def save(cache_dir: str, directory: str, entries: dict) -> None:
    """Write `entries` atomically; an unwritable directory or a value marshal cannot keep
    means no cache, never an error."""
    import tempfile

    try:
        data = marshal.dumps(entries)
        os.makedirs(cache_dir, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".content-", dir=cache_dir)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, os.path.join(cache_dir, file_name(directory)))
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):
        pass
