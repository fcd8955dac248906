"""One root for every fact (the snapshot contract, SPEC section 2).

Like prometheus/procfs's `FS`, every reader takes paths relative to a root: `/` on a live
host, a snapshot directory otherwise. Symlinks inside a snapshot that point to absolute
paths are resolved against the snapshot root, never against the real `/`, and `..` never
climbs above the root, so a snapshot cannot make tunewatch read the scanning host.
"""

from __future__ import annotations

import fnmatch
import os
from collections import deque

from .errors import FactError

_MAX_LINK_HOPS = 40


class FS:
    def __init__(self, root: str = "/"):
        self.root = os.path.abspath(root)
        self.live = self.root == "/"
        self._resolved: dict[str, tuple[str, ...]] = {}

    def __repr__(self) -> str:
        return f"FS({self.root!r})"

    # -- path resolution -------------------------------------------------------------
    def path(self, rel: str) -> str:
        """Real filesystem path of `rel` with every symlink resolved inside the root."""
        rel = rel.strip("/")
        if self.live:
            return "/" + rel
        return os.path.join(self.root, *self._components(rel))

    def _components(self, rel: str) -> tuple[str, ...]:
        # Parents are resolved (and cached) first, so 3,000 files under proc/irq cost one
        # readlink each, not one per path component.
        hit = self._resolved.get(rel)
        if hit is None:
            parent, _, name = rel.rpartition("/")
            start = self._components(parent) if parent else ()
            hit = self._resolved[rel] = self._resolve(start, name, rel)
        return hit

    def _resolve(self, start: tuple[str, ...], name: str, rel: str) -> tuple[str, ...]:
        pending = deque(name.split("/"))
        done = list(start)
        hops = 0
        while pending:
            part = pending.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            candidate = os.path.join(self.root, *done, part)
            try:
                target = os.readlink(candidate)
            except OSError:  # not a link, or missing: keep the name as it is
                done.append(part)
                continue
            hops += 1
            if hops > _MAX_LINK_HOPS:
                raise FactError(f"{rel}: too many levels of symbolic links")
            if target.startswith("/"):
                done = []
            pending.extendleft(reversed(target.split("/")))
        return tuple(done)

    # -- reading -----------------------------------------------------------------------
    def read_text(self, rel: str) -> str | None:
        """File content, or None when the file does not exist ("unknown", not a crash)."""
        try:
            with open(self.path(rel), encoding="utf-8", errors="replace") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise FactError(f"cannot read {rel}: {e.strerror or e}") from e

    def read_required(self, rel: str) -> str:
        text = self.read_text(rel)
        if text is None:
            raise FactError(f"{rel} does not exist under {self.root}")
        return text

    def read_value(self, rel: str) -> str | None:
        """A one-line sysfs/procfs value, stripped."""
        text = self.read_text(rel)
        return None if text is None else text.strip()

    def exists(self, rel: str) -> bool:
        """Like lexists on a live host: a dangling or /dev/null link exists as a link."""
        parent, _, name = rel.strip("/").rpartition("/")
        return os.path.lexists(os.path.join(self.path(parent), name))

    def is_dir(self, rel: str) -> bool:
        return os.path.isdir(self.path(rel))

    def listdir(self, rel: str) -> list[str]:
        """Sorted entry names; empty when the directory does not exist."""
        try:
            return sorted(os.listdir(self.path(rel)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as e:
            raise FactError(f"cannot list {rel}: {e.strerror or e}") from e

    def readlink(self, rel: str) -> str | None:
        """The raw target of a symlink (the last component is not followed)."""
        parent, _, name = rel.strip("/").rpartition("/")
        try:
            return os.readlink(os.path.join(self.path(parent), name))
        except OSError:
            return None

    def link_basename(self, rel: str) -> str | None:
        target = self.readlink(rel)
        return None if target is None else os.path.basename(target.rstrip("/"))

    def resolves(self, rel: str) -> bool:
        """The path, with every link followed, exists (a dangling link does not)."""
        return os.path.exists(self.path(rel))

    def is_executable(self, rel: str) -> bool:
        try:
            return bool(os.stat(self.path(rel)).st_mode & 0o111)
        except OSError:
            return False

    def config_files(self, dirs: tuple[str, ...], pattern: str) -> list[str]:
        """systemd/udev/modprobe drop-in semantics: files merged by name (the first
        directory wins), in lexical order of names; a link to /dev/null masks the name."""
        chosen: dict[str, str] = {}
        for d in dirs:
            for rel in self.glob(d, pattern):
                chosen.setdefault(rel.rsplit("/", 1)[1], rel)
        return [chosen[n] for n in sorted(chosen) if self.readlink(chosen[n]) != "/dev/null"]

    def glob(self, rel_dir: str, pattern: str = "*") -> list[str]:
        """Relative paths of the entries of `rel_dir` whose names match `pattern`."""
        rel_dir = rel_dir.strip("/")
        return [f"{rel_dir}/{n}" for n in self.listdir(rel_dir) if fnmatch.fnmatchcase(n, pattern)]
