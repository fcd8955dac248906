"""Bounded reads of regular files: the low level of fs.FS, and of content and user files.

A FIFO, a device node or a socket is never opened (opening some devices has effects, and
a FIFO blocks), nothing is read without a size cap, and text is decoded as Python's text
mode would (UTF-8 with replacement, universal newlines).
"""

from __future__ import annotations

import os
import stat

from ..errors import FactError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Size caps per kind of file (bytes). A sysfs/procfs value is one short line; config
# files and tables are small; /proc/interrupts grows with CPUs x IRQs (66 MB at 1,664
# CPUs) and is read as a stream, never held whole.
VALUE_MAX_BYTES = 256 << 10
TEXT_MAX_BYTES = 16 << 20
INTERRUPTS_MAX_BYTES = 512 << 20


def file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


def open_checked(path: str, st: os.stat_result, what: str, flags: int, dir_fd: int | None = None) -> int:
    """Open `path` (relative to `dir_fd` when given) whose stat is `st` only if it is a
    regular file: a FIFO or a device node is never opened (opening some devices has
    effects); O_NONBLOCK and fstat catch a swap."""
    if not stat.S_ISREG(st.st_mode):
        raise FactError(f"cannot read {what}: {file_kind(st.st_mode)}, not a regular file")
    fd = os.open(path, OPEN_FLAGS | flags, dir_fd=dir_fd)
    if os.fstat(fd).st_ino != st.st_ino:  # swapped since the lstat: check the new one
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise FactError(f"cannot read {what}: {file_kind(mode)}, not a regular file")
    return fd


def read_fd(fd: int, max_bytes: int, what: str, size_hint: int = 0) -> bytes:
    """Up to `max_bytes` from `fd` (closed afterwards); FactError when there is more.
    `size_hint`: the size stat reported; a first read of exactly that many bytes from a
    file that is not a kernel pseudo-file (those report 0 or 4096) ends the read."""
    try:
        chunks, size = [], 0
        first = min(max(size_hint + 1, 1 << 12), 1 << 16)
        while True:  # small reads: procfs and sysfs return a page or a record at a time
            chunk = os.read(fd, 1 << 16 if size else first)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise FactError(f"cannot read {what}: larger than {max_bytes} bytes")
            chunks.append(chunk)
            if size == size_hint and size_hint != 4096 and len(chunks) == 1:
                break  # all stat promised; saves the read that would return nothing
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


_S_IFMT, _S_IFREG = 0o170000, 0o100000
NOT_PLAIN: Any = object()  # read_leaf_at(): a link or not a regular file at the lstat, or another file at the open


def read_leaf_at(dir_fd: int, at: str, what: str, max_bytes: int) -> bytes | None | Any:
    """The bytes of the regular file `at` under `dir_fd` (lstat first, so no device node or
    FIFO is opened; fstat after, so a swap since is caught), None when it is missing,
    NOT_PLAIN for anything else (a link, not a regular file, replaced between the two): the
    caller's general path then follows or refuses it. fs.FS reads proc/<pid>/comm and the
    bdi values with it: 4,000 files cost their system calls, not six Python calls each."""
    try:
        st = os.stat(at, dir_fd=dir_fd, follow_symlinks=False)
        if st.st_mode & _S_IFMT != _S_IFREG:
            return NOT_PLAIN
        fd = os.open(at, OPEN_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise FactError(f"cannot read {what}: {e.strerror or e}") from e
    try:
        swapped = os.fstat(fd).st_ino != st.st_ino
    except OSError as e:
        os.close(fd)
        raise FactError(f"cannot read {what}: {e.strerror or e}") from e
    if swapped:
        os.close(fd)
        return NOT_PLAIN
    return read_opened(fd, st.st_size, what, max_bytes)


def read_opened(fd: int, size: int, what: str, max_bytes: int) -> bytes:
    """All of the open file `fd` (closed afterwards) whose stat said `size`: a small plain
    file in one read, as stat promised; a kernel pseudo-file (size 0 or 4096), a longer one,
    or one that changed since, the long way (read_fd). FactError when it cannot be read."""
    try:
        if 0 < size < 4096 and size < max_bytes:
            data = os.read(fd, size + 1)
            if len(data) == size:
                os.close(fd)
                return data
            os.lseek(fd, 0, os.SEEK_SET)  # it changed since: read it the long way
    except OSError as e:
        os.close(fd)
        raise FactError(f"cannot read {what}: {e.strerror or e}") from e
    try:
        return read_fd(fd, max_bytes, what, size)
    except OSError as e:
        raise FactError(f"cannot read {what}: {e.strerror or e}") from e


def read_regular_file(path: str, max_bytes: int) -> bytes:
    """A user or content file (not under a root; links followed): regular, bounded.
    OSError as os raises it; FactError when not a regular file or too large."""
    return read_fd(open_checked(path, os.stat(path), path, 0), max_bytes, path)


def decode_text(data: bytes) -> str:
    """As open(..., errors="replace") in text mode would: UTF-8, universal newlines."""
    text = data.decode("utf-8", errors="replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text
