"""NFS mounts that autofs makes on access, keyed by mount point (auto.master(5), autofs(5)).

The master map is etc/auto.master; a `+dir:DIR` line includes DIR/*.autofs (auto.master(5)
"dir"). Each line names a mount point (or `/-` for a direct map) and a map: a path or
`file:` path is a file map (an executable one is a program map, whose entries only
running it tells), a bare name is looked up through nsswitch, whose `files` source is
etc/<name>. The options on the master line are added to every entry's own (autofs.conf
`append_options = yes`, the default); with `no`, an entry's options replace them. An
indirect map's key `k` mounts at `<mount point>/k`; `*` matches any key, and `&` in its
entry is the key looked up. A map file is read as autofs reads it (parsers/autofs_map.py):
an entry autofs drops or refuses mounts nothing, and says why. autofs mounts nothing
unless autofs.service starts at boot.
"""

from __future__ import annotations

from .._record import FrozenRecord
from ..host.fs import FS
from ..parsers.autofs import parse_master
from ..parsers.autofs_entry import parse_entry, sanitize_key
from ..parsers.autofs_map import MapEntry, read_map
from ..parsers.nfs_conf import lookup, read_conf
from .services import read_unit_state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..parsers.autofs import MasterEntry
    from ..parsers.nfs_conf import ConfEntry

MASTER = "etc/auto.master"


class AutofsMount(FrozenRecord):
    __slots__ = ("mount_point", "location", "options", "map_file", "line", "master", "problem", "key", "enable",
                 "written")
    mount_point: str  # "/sas/data", or "/sas/*" for a wildcard entry
    location: str  # "10.0.2.4:/sasdata" (`&` made the key looked up)
    options: tuple[str, ...]  # master options then the entry's, as autofs passes them to mount
    map_file: str
    line: int
    master: str  # "etc/auto.master:3"
    problem: str | None
    key: str  # the map key: "/sasdata" (direct map), "sasdata" or "*" (indirect)
    enable: str | None  # autofs.service when it does not start at boot
    written: str  # the location as the entry writes it (`&` kept in a `*` entry): what a fix line keeps

    def __init__(self, mount_point: str, location: str, options: tuple[str, ...], map_file: str, line: int,
                 master: str, problem: str | None, key: str = "", enable: str | None = None, written: str = ""):
        self.mount_point = mount_point
        self.location = location
        self.options = options
        self.map_file = map_file
        self.line = line
        self.master = master
        self.problem = problem
        self.key = key
        self.enable = enable
        self.written = written or location


class _Map(FrozenRecord):
    """What one master map line gives each entry of its map: parse_mount()'s context."""
    __slots__ = ("map_file", "master", "options", "append", "problem", "enable")
    map_file: str
    master: str  # "etc/auto.master:3"
    options: str  # the master line's mount options, joined by commas
    append: bool  # autofs.conf append_options
    problem: str | None  # why nothing of this map mounts at boot
    enable: str | None

    def __init__(self, map_file: str, master: str, options: str, append: bool, problem: str | None,
                 enable: str | None):
        self.map_file = map_file
        self.master = master
        self.options = options
        self.append = append
        self.problem = problem
        self.enable = enable

    def mount(self, point: str, key: str, e: MapEntry, lookup: str) -> AutofsMount | None:
        """The mount of entry `e` for the key looked up (`lookup`: `&` stands for it); None
        for a multi-mount entry (not one NFS location)."""
        where = f"/{self.map_file} line {e.line}"
        if e.problem:  # read_one() dropped it: autofs logs the problem and mounts nothing
            return AutofsMount(point, "", (), self.map_file, e.line, self.master,
                               f"autofs drops the entry at {where}: {e.problem}", key, None)
        sun = parse_entry(e.entry, lookup, self.options, self.append)
        if sun is None:
            return None
        problem = f"autofs refuses the entry at {where}: {sun.problem}" if sun.problem else self.problem
        written = sun.location
        if key == "*":  # the entry as a template: `&` in place of the key
            written = (parse_entry(e.entry, "&", self.options, self.append) or sun).location
        return AutofsMount(point, sun.location, sun.options, self.map_file, e.line, self.master, problem, key,
                           self.enable, written)


def _master_lines(fs: FS) -> Iterator[tuple[str, MasterEntry]]:
    text = fs.read_text(MASTER)
    if text is None:
        return
    entries, includes = parse_master(text)
    yield from ((MASTER, e) for e in entries)
    for name, _n in includes:
        if name.startswith("dir:"):
            d = name[4:].strip("/")
            for rel in fs.glob(d, "*.autofs"):
                sub = fs.read_text(rel)
                if sub is not None:
                    yield from ((rel, e) for e in parse_master(sub)[0])


def _map_file(fs: FS, m: MasterEntry, conf: list[ConfEntry]) -> tuple[str | None, str | None]:
    """(the sun-format map file, None) or (None, why its entries are not known here: a map
    from another source, a program map, an amd-format map), or (None, None): no map file,
    nothing is mounted from it."""
    name, map_type = m.map_name, m.map_type
    if map_type not in ("", "file", "program", "exec"):
        spec = f"{map_type}:{name}" if name else f"-{map_type}"
        return None, f"the map of type {map_type} ({m.mount_point} {spec}): its entries are not on this host"
    rel = name.lstrip("/") if name.startswith("/") else f"etc/{name}"
    if not fs.resolves(rel):
        return None, None  # "map not found": autofs mounts nothing from it
    if map_type in ("program", "exec") or (map_type == "" and fs.is_executable(rel)):
        return None, f"{name} is a program map: only running it tells its entries"
    if m.map_format not in ("", "sun") or (not m.map_format and any(e.section == m.mount_point for e in conf)):
        return None, f"{name} is an amd-format map (an autofs.conf section for {m.mount_point}, or `,amd`), " \
                     "which tunewatch does not read"
    return rel, None


def autofs_map_files(fs: FS) -> list[str]:
    """Every map file the master maps name (for `collect`)."""
    out = []
    for _rel, m in _master_lines(fs):
        if m.map_type in ("", "file", "program") and m.map_name:
            out.append(m.map_name.lstrip("/") if m.map_name.startswith("/") else f"etc/{m.map_name}")
    return out


def read_autofs(fs: FS) -> dict[str, AutofsMount]:
    """Mount point -> the map entry that mounts it, once per FS (a `*` entry under
    "<mount point>/*"; autofs_for() reads it for a key)."""
    return _read_autofs(fs).mounts


class _Autofs(FrozenRecord):
    __slots__ = ("mounts", "wildcards", "unread")
    mounts: dict[str, AutofsMount]  # mount point -> its entry ("/sas/*" for a `*` entry)
    wildcards: dict[str, tuple[_Map, MapEntry]]  # "/sas" -> its map's `*` entry, read for each key looked up
    unread: list[tuple[str, str]]  # (mount point, or "/-": any path; why its map's entries are not known)

    def __init__(self, mounts: dict[str, AutofsMount], wildcards: dict[str, tuple[_Map, MapEntry]],
                 unread: list[tuple[str, str]]):
        self.mounts = mounts
        self.wildcards = wildcards
        self.unread = unread


def _read_autofs(fs: FS) -> _Autofs:
    return fs.derived(_read_autofs, lambda: _load(fs))


def _load(fs: FS) -> _Autofs:
    conf = read_conf(fs, "etc/autofs.conf")
    append = lookup(conf, "autofs", "append_options") or None
    appending = append is None or append.value.strip().lower() in ("yes", "1", "true", "y")
    running = read_unit_state(fs, "autofs.service").enabled
    mounts: dict[str, AutofsMount] = {}
    wildcards: dict[str, tuple[_Map, MapEntry]] = {}
    taken: set[str] = set()  # mount points with an entry autofs reads
    unread: list[tuple[str, str]] = []
    indirect: set[str] = set()
    nulled: set[str] = set()
    for master_rel, m in _master_lines(fs):
        top = m.mount_point.rstrip("/") or "/"
        where = f"{master_rel}:{m.line}"
        # master_parse.y: a -null map makes autofs ignore the entries for its mount point
        # that follow; a second entry for an indirect mount point is ignored ("ignoring
        # duplicate indirect mount"); direct maps (`/-`) are all read, in order
        if m.map_type == "null":
            nulled.add(top)
            continue
        if top in nulled or top in indirect:
            continue
        if top != "/-":
            indirect.add(top)
        rel, why = _map_file(fs, m, conf)
        if rel is None:
            if why:
                unread.append((top, f"{why} ({where})"))
            continue
        context = _Map(rel, where, ",".join(m.options), appending,
                       None if running else "autofs.service does not start at boot",
                       None if running else "autofs.service")
        direct = top == "/-"
        for e in read_map(fs.read_text(rel) or ""):
            if e.key.startswith("+"):  # lookup_file.c: a map included from another source (nsswitch)
                unread.append((top, f"/{rel} line {e.line} includes the map {e.key[1:]} from another source "
                                    f"({where})"))
                continue
            key = sanitize_key(e.key, direct)
            if key is None:
                continue  # a key autofs never matches (lookup_file.c)
            point = key if direct else f"{top.rstrip('/')}/{key}"
            # the first entry of a key counts: lookup_one() stops at it, and cache_update()
            # keeps it over a later one of the same read (lib/cache.c "Already seen one of
            # these"); a dropped entry is never seen, so it is only said where nothing else is
            if point in taken or (e.problem and point in mounts):
                continue
            if not e.problem:
                taken.add(point)
                if key == "*":
                    wildcards[top.rstrip("/")] = (context, e)
            found = context.mount(point, key, e, key)
            if found is not None:
                mounts[point] = found
            else:  # a multi-mount: not one NFS location
                mounts.pop(point, None)
    return _Autofs(mounts, wildcards, unread)


def autofs_for(fs: FS, mount_point: str) -> AutofsMount | None:
    """The entry that mounts `mount_point`: its own key, else its map's `*`, read for the
    key looked up (`&` stands for it)."""
    autofs = _read_autofs(fs)
    if mount_point in autofs.mounts:
        return autofs.mounts[mount_point]
    parent, _, key = mount_point.rpartition("/")
    wild = autofs.wildcards.get(parent)
    if wild is None:
        return None
    context, e = wild
    return context.mount(mount_point, "*", e, key)


def autofs_unread(fs: FS, mount_point: str) -> str | None:
    """Why an autofs map tunewatch cannot read may mount `mount_point` (a map from another
    source, a program or amd map, an include), or None."""
    for top, why in _read_autofs(fs).unread:
        if top == "/-" or mount_point.startswith(top.rstrip("/") + "/"):
            return why
    return None


__all__ = ["AutofsMount", "MapEntry", "autofs_for", "autofs_unread", "read_autofs"]
