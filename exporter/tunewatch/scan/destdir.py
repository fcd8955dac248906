"""The directory `tunewatch collect` writes a snapshot into, written only through
directory file descriptors.

`collect` usually runs as root, often into a shared place (`/var/tmp/snap`). So it writes
only into a directory it creates, or an empty one owned by the invoking user that neither
group nor others may write: nobody else can plant a link in it. Every path inside is then
walked from the directory's fd one component at a time with O_NOFOLLOW (`openat`), files are
created with O_EXCL and their mode set through their own fd: no link is followed, not even
one that appeared despite the checks, and nothing is changed through one.

The snapshot is marked incomplete (rootcheck.INCOMPLETE) before the first file and complete
after the last; `scan --root` refuses one that still carries the first mark.
"""

from __future__ import annotations

import os
import stat
import time

from ..errors import ContentError
from ..host.rootcheck import COMPLETE, INCOMPLETE

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_CACHED = 256


class Dest:
    def __init__(self, directory: str):
        self.path = os.path.abspath(directory)
        self.fd = _open_dest(self.path)
        self._dirs: dict[str, int] = {"": self.fd}

    # -- directories ------------------------------------------------------------------

    def dir_fd(self, rel_dir: str) -> int:
        """The fd of `rel_dir` (created, mode 0755, when missing); OSError when a component
        is a link or not a directory."""
        rel_dir = rel_dir.strip("/")
        cached = self._dirs.get(rel_dir)
        if cached is not None:
            return cached
        parent, _, name = rel_dir.rpartition("/")
        parent_fd = self.dir_fd(parent)
        if name in ("", ".", ".."):
            raise OSError(f"{rel_dir}: not a plain path")
        try:
            os.mkdir(name, 0o755, dir_fd=parent_fd)
        except FileExistsError:
            pass
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        if len(self._dirs) > _MAX_CACHED:
            self._drop_cache()
        self._dirs[rel_dir] = fd
        return fd

    def _drop_cache(self) -> None:
        for rel, fd in list(self._dirs.items()):
            if rel:
                os.close(fd)
        self._dirs = {"": self.fd}

    def mkdir(self, rel: str) -> None:
        self.dir_fd(rel)

    # -- files and links ------------------------------------------------------------------

    def write(self, rel: str, data: bytes, mode: int | None = None) -> bool:
        """Create `rel` with `data` (and `mode`); False when it exists (first writer wins)."""
        parent, _, name = rel.strip("/").rpartition("/")
        dir_fd = self.dir_fd(parent)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                         dir_fd=dir_fd)
        except FileExistsError:
            return False
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        return True

    def symlink(self, rel: str, target: str) -> bool:
        parent, _, name = rel.strip("/").rpartition("/")
        try:
            os.symlink(target, name, dir_fd=self.dir_fd(parent))
        except FileExistsError:
            return False
        return True

    def lexists(self, rel: str) -> bool:
        parent, _, name = rel.strip("/").rpartition("/")
        try:
            os.stat(name, dir_fd=self.dir_fd(parent), follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    # -- completeness ------------------------------------------------------------------

    def start(self) -> None:
        self.write(INCOMPLETE, b"tunewatch collect is writing this snapshot (or was cut short)\n")

    def finish(self, summary: str) -> None:
        """Mark the snapshot complete: the last thing collect writes."""
        self.write(COMPLETE, f"{summary}\nfinished {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n".encode())
        os.fsync(self.fd)
        os.unlink(INCOMPLETE, dir_fd=self.fd)

    def close(self) -> None:
        self._drop_cache()
        os.close(self.fd)


def _open_dest(path: str) -> int:
    """An fd on `path`: created now, or an existing empty directory owned by this user that
    group and others cannot write. Anything else is refused."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        os.mkdir(path, 0o755)
        created = True
    except FileExistsError:
        created = False
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError as e:
        raise ContentError(path, f"collect writes only into a directory, not through a link ({e.strerror})") from e
    st = os.fstat(fd)
    why = None
    if st.st_uid != os.geteuid():
        why = f"it is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    elif created:
        os.fchmod(fd, 0o755)
    elif stat.S_IMODE(st.st_mode) & 0o022:
        why = f"group or others may write it (mode {stat.S_IMODE(st.st_mode):04o})"
    elif os.listdir(fd):
        why = "it is not empty"
    if why:
        os.close(fd)
        raise ContentError(path, f"collect writes only into a new directory or an empty one of its own; {why}: "
                                 "another user could plant links in it")
    return fd
