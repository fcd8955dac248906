"""Every file tunewatch writes for a user (`--output`, reports, remediation scripts, the
textfile for node_exporter) is replaced atomically: written to a temp file in the same
directory, fsynced, renamed over the target. A full disk or a kill leaves the old file
whole, never a truncated report or a half script. The new file keeps the old one's mode and
owner; a new file gets `mode` (default: 0666 minus the umask, as open() would create it).
A device or FIFO (`/dev/null`, `/dev/stdout`) is written to, never replaced; a link the
user (or root) owns leads to the file replaced, another user's link is refused.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: str, data: str | bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` (str: UTF-8; undecodable bytes of host names kept as the
    bytes they were, surrogateescape)."""
    payload = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    try:
        old = os.lstat(path)
    except FileNotFoundError:
        old = None
    if old is not None and stat.S_ISLNK(old.st_mode):
        if old.st_uid not in (0, os.geteuid()):  # another user's link: not followed
            raise PermissionError(f"{path}: a link owned by uid {old.st_uid}; not written through")
        path = os.path.realpath(path)  # the user's own link: its target is replaced
        try:
            old = os.lstat(path)
        except FileNotFoundError:
            old = None
    if old is not None and not stat.S_ISREG(old.st_mode):  # /dev/null, a FIFO: written to, never replaced
        with open(path, "wb") as f:
            f.write(payload)
        return
    directory = os.path.dirname(os.path.abspath(path))
    keep = old if old is not None and stat.S_ISREG(old.st_mode) else None  # the file replaced: its mode, owner
    if not os.path.isdir(directory):  # else mkstemp names its own temp file, not the directory
        raise FileNotFoundError(errno.ENOENT, "output directory does not exist", directory)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, stat.S_IMODE(keep.st_mode) if keep is not None else (_umask_mode() if mode is None else mode))
        if keep is not None and (keep.st_uid, keep.st_gid) != (os.geteuid(), os.getegid()):
            try:
                os.fchown(fd, keep.st_uid, keep.st_gid)
            except PermissionError:
                pass  # not ours to give away: the file is the writer's, as open() would leave it
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def write_output(text: str, path: str | None, mode: int | None = None) -> None:
    """`text` to `path` (atomically, above) or to standard output when `path` is None; the
    bytes of undecodable host names go out as they came in (surrogateescape), never an
    encoding error that loses the whole report."""
    if path:
        write_atomic(path, text, mode)
        return
    from .stdout import write_stdout

    write_stdout(text)
