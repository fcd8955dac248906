"""The writing half of `tunewatch collect` (scan/collect.py decides what to copy): one
regular file, link or directory of the source root at a time into the snapshot, with the
caps, the skips and the owner and mode records (filestat.json) of docs/snapshot-contract.md."""

from __future__ import annotations

import fnmatch
import os
import sys

from ..errors import TunewatchError
from ..facts import boot, filestat
from ..host.fs import FS, INTERRUPTS_MAX_BYTES, TEXT_MAX_BYTES
from .destdir import Dest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

SMALL_MAX_BYTES = boot._MAX_SCRIPT_BYTES  # config files, unit files and scripts: what a scan reads
# The kernel's own tables grow with the machine: proc/interrupts is 5 MB at 416 CPUs.
LARGE_MAX_BYTES = {"proc/interrupts": INTERRUPTS_MAX_BYTES, "proc/stat": TEXT_MAX_BYTES,
                   "proc/self/mountinfo": TEXT_MAX_BYTES, "proc/1/mountinfo": TEXT_MAX_BYTES,
                   "proc/cpuinfo": TEXT_MAX_BYTES}  # tuned matches a unit's cpuinfo_regex against it
# filestat.json records owner and mode of the configuration copied from these trees
STAT_TREES = ("etc/", "usr/lib/", "lib/", "run/", "var/spool/")


class SnapshotWriter:
    """Copies files of the source root into the snapshot directory, each read through the
    source's FS and written through the destination's directory fds (destdir.py); a file
    that cannot be copied is a warning with its reason (`skipped`), never an abort."""


    def __init__(self, fs: FS, dest: Dest, verbose: bool = False, progress: Callable[[str], None] | None = None):
        self.fs, self.out, self.dest, self.written, self.verbose = fs, dest, dest.path, 0, verbose
        self.progress = progress
        self.skipped: list[tuple[str, str]] = []
        self.walked: set[str] = set()
        self.stats: dict[str, dict] | None = {}  # filestat.json; None: the source's is broken, copied as is

    def record_stat(self, rel: str) -> None:
        """Owner and mode of a configuration file as the scan of the source sees them."""
        if self.stats is None or not rel.startswith(STAT_TREES):
            return
        try:
            st = filestat.file_stat(self.fs, rel)
        except TunewatchError as e:
            self.warn(rel, f"owner and mode unknown: {e}")
            return
        if st is not None:
            self.stats[rel] = {"mode": f"{st.mode:04o}", "uid": st.uid}

    def warn(self, rel: str, why: str) -> None:
        self.skipped.append((rel, why))
        if self.verbose:
            print(f"tunewatch collect: skipped {rel}: {why}", file=sys.stderr)

    def write(self, rel: str, data: bytes | str, mode: int | None = None) -> None:
        """First writer wins (a unit's content before its empty name); through dir fds (destdir)."""
        if self.out.write(rel, data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data, mode):
            self._count(rel)

    def symlink(self, rel: str, target: str) -> None:
        if self.out.symlink(rel, target):
            self._count(rel)

    def _count(self, rel: str) -> None:
        self.written += 1
        if self.progress is not None:  # the top directory only: collect's own names, no host data
            self.progress(f"tunewatch collect: {self.written} files written ({rel.split('/', 1)[0]}/)")

    def copy(self, rel: str, script: bool = False) -> bool:
        """Copy one regular file's bytes; False when it is missing, on a network file
        system, not a regular file, unreadable, too large or (`script`) a binary."""
        rel = rel.strip("/")
        cap = LARGE_MAX_BYTES.get(rel, SMALL_MAX_BYTES)
        try:
            data = self.fs.read_bytes(rel, cap)
        except TunewatchError as e:
            self.warn(rel, str(e).replace(f"cannot read {rel}: ", "").replace(f"{rel}: ", ""))
            return False
        if data is None:
            return False
        if script and (b"\x00" in data or data.startswith(b"\x7fELF")):
            self.warn(rel, "a binary, not a script (the scan reads scripts only)")
            return False
        try:  # NetworkManager only runs executable dispatcher scripts: keep the mode
            mode = os.stat(self.fs.path(rel)).st_mode & 0o777
        except (OSError, TunewatchError):
            mode = None
        self.write(rel, data, mode)  # the mode is set on the file written, never through a path
        self.record_stat(rel)
        return True

    def copy_or_link(self, rel: str, script: bool = False) -> None:
        """A link stays a link with the same target text (a `/dev/null` mask, `99-sysctl.conf
        -> ../sysctl.conf`), and the file it leads to inside the root is copied as well."""
        try:
            target = self.fs.readlink(rel)
            if target is None:
                self.copy(rel, script)
                return
            self.symlink(rel, target)
            self.record_stat(rel)
            if target == "/dev/null" or not self.fs.resolves(rel):
                return
            real = os.path.relpath(self.fs.path(rel), self.fs.root)
        except TunewatchError as e:
            self.warn(rel, str(e))
            return
        if not self.is_dir(real):
            self.copy(real, script)

    def listdir(self, rel: str) -> list[str]:
        try:
            return self.fs.listdir(rel)
        except TunewatchError as e:
            self.warn(rel, str(e))
            return []

    def is_dir(self, rel: str) -> bool:
        try:
            return self.fs.is_dir(rel)
        except TunewatchError as e:
            self.warn(rel, str(e))
            return False

    def copy_dir(self, rel: str, pattern: str | None) -> None:
        try:
            real = self.fs.path(rel)
        except TunewatchError as e:
            self.warn(rel, str(e))
            return
        if real in self.walked:  # a link loop, or a directory reached twice
            return
        self.walked.add(real)
        for name in self.listdir(rel):
            sub = f"{rel}/{name}"
            if pattern is None and self.is_dir(sub):
                self.copy_dir(sub, None)
            elif pattern is None or fnmatch.fnmatchcase(name, pattern):
                self.copy_or_link(sub, script=pattern is None)
