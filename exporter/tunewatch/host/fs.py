"""One root for every fact (the snapshot contract, docs/snapshot-contract.md), read safely.

Like prometheus/procfs's `FS`, every reader takes paths relative to a root: `/` on a live
host, a snapshot directory otherwise. Three promises hold for every path, live or snapshot:

- Resolved before use. Each component is looked at in turn (`.`, `..`, `//` and every
  symlink, absolute targets against the root, `..` never above it), so a snapshot cannot
  make tunewatch read the scanning host and no spelling of a path gets around the checks.
  Directories are resolved once per scan (cached); a file's own name costs no extra call
  (its directory's listing, or its lstat, tells whether it is a link). One view per scan:
  each directory is listed once, and a name its listing lacks is absent for the rest of
  the scan (no lstat, no readlink, no open); each file is opened once (small ones kept).
- Never on a network file system. The mount table is the root's own proc/self/mountinfo
  (plus, for a snapshot, the scanning host's network mounts below the snapshot directory);
  a path that reaches a mount point of a type in NETWORK_FSTYPES raises FactError before
  anything under it is opened, stat'ed or listed: a hung NFS or sshfs server must not
  hang a scan. The root mount itself is never refused (a diskless host boots from NFS).
- Only regular files are read, up to a size cap that fits the kind of file: a FIFO, a
  device node or a socket is an error, never opened (opening some devices has effects),
  and nothing is read without a bound (fileio.py).
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections import deque

from ..errors import FactError
from .fileio import (
    INTERRUPTS_MAX_BYTES,
    NOT_PLAIN,
    OPEN_FLAGS,
    TEXT_MAX_BYTES,
    VALUE_MAX_BYTES,
    decode_text,
    file_kind,
    open_checked,
    read_fd,
    read_leaf_at,
    read_opened,
    read_regular_file,
)
from .netmounts import NETWORK_FSTYPES, is_network_fstype, network_mount_points

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["FS", "NETWORK_FSTYPES", "is_network_fstype", "INTERRUPTS_MAX_BYTES", "TEXT_MAX_BYTES", "VALUE_MAX_BYTES",
           "SMALL_FILE_BYTES", "decode_text", "read_fd", "read_regular_file"]

_MAX_LINK_HOPS = 40

LINK, REGULAR, OTHER = 1, 2, 3  # entry types a directory listing keeps
ABSENT = 0  # a name the listing of its directory, taken earlier in this scan, lacks
_UNREAD: Any = object()  # not in FS._small: not read yet in this scan
SMALL_FILE_BYTES = 64 << 10  # files up to this size are kept for the scan once read


def _entry_type(entry: os.DirEntry) -> int:
    """From d_type (no stat where the file system fills it in, as sysfs, procfs, ext4 and xfs do)."""
    if entry.is_dir(follow_symlinks=False):  # the most entries (proc/<pid>, sys/class/*): one test
        return OTHER
    if entry.is_symlink():
        return LINK
    return REGULAR if entry.is_file(follow_symlinks=False) else OTHER


class FS:
    def __init__(self, root: str = "/", host_mountinfo: bytes | None = None):
        """`host_mountinfo`: the bytes of this host's /proc/self/mountinfo when the caller
        has read them already (hangsafe): taken as read, not read again."""
        self.root = os.path.abspath(root)
        self.live = self.root == "/"
        self._host_mountinfo = host_mountinfo
        self._prefix = self.root.rstrip("/") + "/"
        self._resolved: dict[str, tuple[str, ...]] = {}
        # directory -> {entry: LINK, REGULAR or OTHER} from one scandir, or the OSError it
        # raised: each directory is listed once per FS (once per scan), whoever asks
        self._listings: dict[tuple[str, ...], dict[str, int] | OSError] = {}
        # small files read once per scan (rel -> bytes, None when missing): a value that two
        # facts need (numa_node, operstate, mountinfo) is opened once
        self._small: dict[str, bytes | None] = {}
        if self.live and host_mountinfo is not None:
            self._small["proc/self/mountinfo"] = host_mountinfo
        self._derived: dict = {}  # derived(): values computed from several files, once per scan
        self._network: dict[str, str] | None = None  # root-relative mount point -> fstype
        self._network_names: frozenset[str] | None = None  # last components of those mount points

    def __repr__(self) -> str:
        return f"FS({self.root!r})"

    def derived(self, key, compute):
        """`compute()` once per FS (once per scan) under `key`: a value several readers derive
        from the same files (a unit's boot state, the .wants directories). An exception is
        not kept: the next caller computes again and gets it too."""
        try:
            return self._derived[key]
        except KeyError:
            value = self._derived[key] = compute()
            return value

    # -- network mounts ----------------------------------------------------------------
    @property
    def network_mounts(self) -> dict[str, str]:
        """Root-relative mount points of network file systems (e.g. {"opt/sas": "nfs"})."""
        if self._network is None:
            self._network, self._network_names = {}, frozenset()  # while loading: mountinfo is read unchecked
            self._network = self._load_network_mounts()
            self._network_names = frozenset(p.rsplit("/", 1)[-1] for p in self._network)
        return self._network

    def mount_table(self) -> list:
        """The root's mount table (proc/self/mountinfo, else proc/1/mountinfo) as
        parsers.mountinfo parses it, once per FS; [] when the root has neither. The
        network-mount guard and the mount facts share it. ParseError when garbled."""
        return self.derived("mount_table", self._parse_mount_table)

    def _parse_mount_table(self) -> list:
        from ..parsers.mountinfo import parse_mountinfo  # here: parsers import errors only

        for rel in ("proc/self/mountinfo", "proc/1/mountinfo"):
            text = self.read_text(rel)
            if text is not None:
                return parse_mountinfo(text, rel)
        return []

    def _load_network_mounts(self) -> dict[str, str]:
        host = None
        if not self.live:  # a snapshot directory may itself hold a live host's network mounts
            host = FS("/", self._host_mountinfo)
            host._network = {}
        return network_mount_points(self, host)

    # -- path resolution -------------------------------------------------------------
    def path(self, rel: str) -> str:
        """Real filesystem path of `rel` with every symlink resolved inside the root."""
        parts = self._components(rel.strip("/"))
        return self._prefix + "/".join(parts) if parts else self.root

    def _components(self, rel: str) -> tuple[str, ...]:
        # Parents are resolved (and cached) first, so 3,000 files under proc/irq cost one
        # readlink each, not one per path component.
        hit = self._resolved.get(rel)
        if hit is None:
            parent, _, name = rel.rpartition("/")
            start = self._components(parent) if parent else ()
            if name and name != "." and name != "..":  # the usual case, without the general loop
                names = self._network_names
                if names is None or name in names:
                    self._refuse_network((*start, name), rel)
                listing = self._listings.get(start) or self._listing(start)
                if listing.__class__ is dict and listing.get(name, LINK) != LINK:  # listed, not a link
                    hit = self._resolved[rel] = (*start, name)
                    return hit
            hit = self._resolved[rel] = self._resolve(start, name, rel)
        return hit

    def _refuse_network(self, parts: list[str] | tuple[str, ...], rel: str) -> None:
        network = self.network_mounts
        if network and parts[-1] in self._network_names:  # type: ignore[operator]  # set with network_mounts  # cheap test first: a name of a mount point
            key = "/".join(parts)
            if key in network:
                raise FactError(f"{rel}: on a network file system ({network[key]} at mount point /{key}); "
                                "tunewatch never reads there")

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
            done.append(part)
            self._refuse_network(done, rel)
            target = self._link_target(done)
            if target is None:  # not a link, or missing: keep the name as it is
                continue
            done.pop()
            hops += 1
            if hops > _MAX_LINK_HOPS:
                raise FactError(f"{rel}: too many levels of symbolic links")
            if target.startswith("/"):
                done = []
            pending.extendleft(reversed(target.split("/")))
        return tuple(done)

    def _link_target(self, parts: list[str]) -> str | None:
        """readlink of root/parts, or None; a directory's entries are listed once (the
        listing says which are links), so 3,000 proc/<pid> cost one scandir, not 3,000
        readlinks. A name the listing lacks (it appeared since) is asked directly."""
        links = self._list_links(tuple(parts[:-1]))
        if links is not None and links.get(parts[-1], LINK) != LINK:
            return None
        try:
            return os.readlink(self._prefix + "/".join(parts))
        except OSError:
            return None

    def _list_links(self, parent: tuple[str, ...]) -> dict[str, int] | None:
        listing = self._listing(parent)
        return None if isinstance(listing, OSError) else listing

    def _listing(self, parent: tuple[str, ...]) -> dict[str, int] | OSError:
        listing = self._listings.get(parent)
        if listing is None:
            try:  # names and d_type only: nothing below the entries is touched
                with os.scandir(self._prefix + "/".join(parent) if parent else self.root) as entries:
                    listing = {e.name: _entry_type(e) for e in entries}
            except OSError as e:
                listing = e
            self._listings[parent] = listing
        return listing

    def _leaf_kind(self, rel: str) -> tuple[int | None, str]:
        """_locate() of `rel`: what its parent's listing says of it, and its path with the
        directory resolved and its own name not followed."""
        rel = rel.strip("/")
        parent, _, name = rel.rpartition("/")
        if name in ("", ".", ".."):
            return None, self.path(rel)
        return self._locate(parent, name, rel)

    # -- reading -----------------------------------------------------------------------
    def _open(self, rel: str) -> int | None:
        """fd of the regular file `rel` (links followed inside the root); None if missing."""
        opened = self._open_sized(rel)
        return None if opened is None else opened[0]

    def _open_sized(self, rel: str) -> tuple[int, int] | None:
        """(fd, size) of the regular file `rel`; None if missing."""
        rel = rel.strip("/")
        parent, _, name = rel.rpartition("/")
        if name in ("", ".", ".."):
            return self._open_followed(rel)
        return self._open_located(*self._locate(parent, name, rel), rel)

    def _open_located(self, kind: int | None, path: str, rel: str) -> tuple[int, int] | None:
        """Open what _locate() found: nothing when the listing lacks it, a listed regular
        file without an lstat, anything else (a link, not listed) after one."""
        if kind == ABSENT:
            return None
        return self._open_plain(path, rel) if kind == REGULAR else self._open_followed(rel, path)

    def _locate(self, parent: str, name: str, rel: str) -> tuple[int | None, str]:
        """What the parent's listing says `name` is (LINK, REGULAR, OTHER or ABSENT; None
        when the parent was not listed) and its path, the parent resolved and `name` itself
        not followed; refused on a network mount. A scan sees one view of a directory: a
        name its listing lacks is not looked up again (no lstat, no readlink)."""
        parts = self._components(parent) if parent else ()
        names = self._network_names
        if names is None or name in names:
            self._refuse_network((*parts, name), rel)
        listing = self._listings.get(parts)
        kind = listing.get(name, ABSENT) if listing.__class__ is dict else None
        return kind, (self._prefix + "/".join(parts) + "/" + name if parts else self._prefix + name)

    @staticmethod
    def _open_plain(path: str, rel: str) -> tuple[int, int] | None:
        """Open a file the listing saw as regular (d_type): no lstat; the fstat after the
        open catches a swap since, and O_NONBLOCK keeps a FIFO from blocking."""
        try:
            fd = os.open(path, OPEN_FLAGS | os.O_NOFOLLOW)
            st = os.fstat(fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise FactError(f"cannot read {rel}: {e.strerror or e}") from e
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise FactError(f"cannot read {rel}: {file_kind(st.st_mode)}, not a regular file")
        return fd, st.st_size

    def _open_followed(self, rel: str, path: str | None = None) -> tuple[int, int] | None:
        """Open `rel` (at `path` when its parent is already resolved) after an lstat: a link
        is followed inside the root and a device node or FIFO is never opened."""
        try:
            if path is None:
                path = self.path(rel)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):  # follow it here, inside the root and checked
                path = self.path(rel)
                st = os.lstat(path)
            return open_checked(path, st, rel, os.O_NOFOLLOW), st.st_size
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise FactError(f"cannot read {rel}: {e.strerror or e}") from e

    def read_bytes(self, rel: str, max_bytes: int = TEXT_MAX_BYTES) -> bytes | None:
        data = self._small.get(rel, _UNREAD)
        if data is _UNREAD:
            return self._read_first(rel, max_bytes)
        if data is not None and len(data) > max_bytes:  # kept under a larger cap: as a read would say
            raise FactError(f"cannot read {rel}: larger than {max_bytes} bytes")
        return data

    def _read_first(self, rel: str, max_bytes: int) -> bytes | None:
        """The first read of `rel` in this scan. A link is kept under the root-relative path
        it resolves to as well, so a file read by its own name and through a link
        (sysctl.d/99-sysctl.conf -> ../sysctl.conf) is opened once."""
        parent, _, name = rel.strip("/").rpartition("/")
        if name in ("", ".", ".."):
            opened, key = self._open_followed(rel.strip("/")), rel
        else:
            kind, path = self._locate(parent, name, rel)
            key = self._link_key(rel) if kind == LINK else rel
            if key != rel and key in self._small:  # read already through its own name
                self._small[rel] = self._small[key]
                return self.read_bytes(rel, max_bytes)
            opened = self._open_located(kind, path, rel)
        data = None if opened is None else read_opened(*opened, rel, max_bytes)
        if data is None or len(data) <= SMALL_FILE_BYTES:  # what is kept stays small
            self._small[rel] = self._small[key] = data
        return data

    def _link_key(self, rel: str) -> str:
        """The root-relative path the link `rel` resolves to, or `rel` when it cannot."""
        try:
            resolved = self.path(rel)
        except (FactError, OSError):
            return rel
        return resolved[len(self._prefix):] if resolved.startswith(self._prefix) else rel

    def read_text(self, rel: str, max_bytes: int = TEXT_MAX_BYTES) -> str | None:
        """File content, or None when the file does not exist ("unknown", not a crash)."""
        data = self.read_bytes(rel, max_bytes)
        return None if data is None else decode_text(data)

    def iter_chunks(self, rel: str, max_bytes: int) -> Iterator[bytes] | None:
        """A big file as a stream of chunks of up to 1 MiB (never held whole, never decoded
        here); None if missing. FactError from the iterator past `max_bytes`."""
        fd = self._open(rel)
        if fd is None:
            return None
        return self._chunks(fd, rel, max_bytes)

    @staticmethod
    def _chunks(fd: int, rel: str, max_bytes: int) -> Iterator[bytes]:
        try:
            size = 0
            while chunk := os.read(fd, 1 << 20):
                size += len(chunk)
                if size > max_bytes:
                    raise FactError(f"cannot read {rel}: larger than {max_bytes} bytes")
                yield chunk
        except OSError as e:
            raise FactError(f"cannot read {rel}: {e.strerror or e}") from e
        finally:
            os.close(fd)

    def read_required(self, rel: str, max_bytes: int = TEXT_MAX_BYTES) -> str:
        text = self.read_text(rel, max_bytes)
        if text is None:
            raise FactError(f"{rel} does not exist under {self.root}")
        return text

    def read_value(self, rel: str) -> str | None:
        """A one-line sysfs/procfs value, stripped."""
        text = self.read_text(rel, VALUE_MAX_BYTES)
        return None if text is None else text.strip()

    def read_each(self, rel_dir: str, names: list[str], leaf: str) -> dict[str, str | None]:
        """read_value(f"{rel_dir}/{name}/{leaf}") for each of `names` (proc/<pid>/comm for
        3,000 pids): the same checks in one loop (_each_leaf). A name that is neither a plain
        directory nor a link to one, or that names a mount point, takes the general path."""
        out: dict[str, str | None] = {}
        for name, rel, data in self._each_leaf(rel_dir, names, (leaf,)):
            if data is _UNREAD:
                out[name] = self.read_value(rel)
            else:
                out[name] = None if data is None else decode_text(data).strip()
        return out

    def prefetch(self, rel_dir: str, names: list[str], leaves: tuple[str, ...]) -> None:
        """Read `rel_dir/<name>/<leaf>` for each name and leaf in one pass (`rel_dir` opened
        once), kept as a first read keeps a small file: the checks that then read them one by
        one (proc/irq/<irq>/smp_affinity_list, sys/class/bdi/<bdi>/read_ahead_kb) are served
        from memory. Names that are neither plain directories nor links to one are left to
        those reads, and so is everything from a file that cannot be read on: its own read
        says why."""
        small = self._small
        try:
            for _name, rel, data in self._each_leaf(rel_dir, [n for n in names if n], leaves):
                if data is not _UNREAD and rel not in small and (data is None or len(data) <= SMALL_FILE_BYTES):
                    small[rel] = data
        except FactError:
            return

    def _each_leaf(self, rel_dir: str, names: list[str], leaves: tuple[str, ...]
                   ) -> Iterator[tuple[str, str, Any]]:
        """(name, rel, bytes or None when missing) of each `rel_dir/<name>/<leaf>`, each
        looked up from an open directory: `rel_dir` for a plain directory, and for a link
        (sys/class/bdi/<bdi> -> ../../devices/virtual/bdi/<bdi>, as sysfs makes them) the
        directory it leads to, resolved once per target directory. The bytes are _UNREAD
        (the caller takes the general path, which says why) for a name that is neither, that
        names a mount point, or whose leaf is not a plain regular file."""
        parts = self._components(rel_dir.strip("/"))
        listing = self._listing(parts)
        if listing.__class__ is not dict:
            for name in names:
                for leaf in leaves:
                    yield name, f"{rel_dir}/{name}/{leaf}", _UNREAD
            return
        mounted = self.network_mounts and self._network_names
        opened: dict[tuple[str, ...], int | None] = {}  # resolved directory -> its fd, opened once
        targets: dict[tuple[bool, str], tuple[tuple[str, ...], dict] | None] = {}  # a link target's directory
        try:
            dir_fd = self._dir_fd(parts, opened)
            for name in names:
                kind = listing.get(name)
                if mounted and name in mounted:
                    fd, under = None, name
                elif kind == LINK:
                    fd, under = self._through_link(parts, name, dir_fd, opened, targets)
                else:
                    fd, under = (dir_fd if kind == OTHER else None), name
                for leaf in leaves:
                    rel = f"{rel_dir}/{name}/{leaf}"
                    if fd is None or (mounted and leaf in mounted):
                        yield name, rel, _UNREAD
                        continue
                    data = read_leaf_at(fd, f"{under}/{leaf}", rel, VALUE_MAX_BYTES)
                    yield name, rel, _UNREAD if data is NOT_PLAIN else data
        finally:
            for fd in opened.values():
                if fd is not None:
                    os.close(fd)

    def _dir_fd(self, parts: tuple[str, ...], opened: dict[tuple[str, ...], int | None]) -> int | None:
        """The resolved directory `parts` opened (once per `opened`), or None when it cannot be."""
        if parts not in opened:
            try:
                opened[parts] = os.open(self._prefix + "/".join(parts) if parts else self.root,
                                        os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                opened[parts] = None
        return opened[parts]

    def _through_link(self, parts: tuple[str, ...], name: str, dir_fd: int | None,
                      opened: dict[tuple[str, ...], int | None],
                      targets: dict[tuple[bool, str], tuple[tuple[str, ...], dict] | None]) -> tuple[int | None, str]:
        """(fd of the directory the link `parts/name` leads into, the name there) when the link
        ends in a plain directory: its target's directory resolved as any path is (inside the
        root, links followed, network mounts refused) once per distinct target text
        (`targets`), its last component listed there as a directory, the directory opened
        once (`opened`, closed with _each_leaf's). (None, name) otherwise: the general path."""
        try:
            target = os.readlink(name, dir_fd=dir_fd) if dir_fd is not None else \
                os.readlink(self._prefix + "/".join((*parts, name)))
        except OSError:
            return None, name
        head, _, last = target.rpartition("/")
        if last in ("", ".", ".."):
            return None, name
        key = (target.startswith("/"), head)
        if key not in targets:
            targets[key] = self._target_dir(parts, key)
        found = targets[key]
        if found is None or found[1].get(last) != OTHER or last in (self._network_names or ()):
            return None, name
        return self._dir_fd(found[0], opened), last

    def _target_dir(self, parts: tuple[str, ...], key: tuple[bool, str]) -> tuple[tuple[str, ...], dict] | None:
        """(resolved parts, listing) of a link target's directory (`key`: absolute?, its text)
        seen from `parts`; None when it cannot be resolved or listed."""
        absolute, head = key
        try:
            if absolute:  # against the root, as every absolute target is
                where = self._components(head.strip("/"))
            else:
                where = self._components("/".join((*parts, head)) if head else "/".join(parts))
        except (OSError, FactError):
            return None
        listing = self._listing(where)
        return (where, listing) if isinstance(listing, dict) else None

    def exists(self, rel: str) -> bool:
        """Like lexists on a live host: a dangling or /dev/null link exists as a link."""
        kind, path = self._leaf_kind(rel)
        return os.path.lexists(path) if kind is None else kind != ABSENT

    def is_dir(self, rel: str) -> bool:
        return os.path.isdir(self.path(rel))

    def listdir(self, rel: str) -> list[str]:
        """Sorted entry names; empty when the directory does not exist. Listed once per FS."""
        listing = self._listing(self._components(rel.strip("/")))
        if isinstance(listing, (FileNotFoundError, NotADirectoryError)):
            self._dangling(rel)
            return []
        if isinstance(listing, OSError):
            raise FactError(f"cannot list {rel}: {listing.strerror or listing}")
        return sorted(listing)

    def _dangling(self, rel: str) -> None:
        """A snapshot directory missing because a link on its way leads nowhere inside the
        root (`vmware -> ../../../elsewhere`) is unreadable, never empty: FactError."""
        parts = rel.strip("/").split("/")
        for n in range(1, 0 if self.live else len(parts) + 1):
            target = self.readlink("/".join(parts[:n]))
            if target is not None and target != "/dev/null" and not os.path.exists(self.path("/".join(parts[:n]))):
                raise FactError(f"{'/'.join(parts[:n])} is a link to {target}, which leads nowhere inside the root: "
                                "what is under it cannot be read")

    def readlink(self, rel: str) -> str | None:
        """The raw target of a symlink (the last component is not followed)."""
        kind, path = self._leaf_kind(rel)
        if kind is not None and kind != LINK:  # the listing says: no link (or nothing) there
            return None
        try:
            return os.readlink(path)
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
        prefix = pattern[:-1]
        if pattern.endswith("*") and not any(c in prefix for c in "*?["):  # `ifcfg-*`: as fnmatch matches,
            return [f"{rel_dir}/{n}" for n in self.listdir(rel_dir) if n.startswith(prefix)]  # without a regex
        return [f"{rel_dir}/{n}" for n in self.listdir(rel_dir) if fnmatch.fnmatchcase(n, pattern)]
