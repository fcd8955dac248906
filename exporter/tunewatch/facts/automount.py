"""NFS mounts that autofs makes on access, keyed by mount point (auto.master(5), autofs(5)).

The master map is etc/auto.master; a `+dir:DIR` line includes DIR/*.autofs (auto.master(5)
"dir"). Each line names a mount point (or `/-` for a direct map) and a map: a path or
`file:` path is a file map (an executable one is a program map, whose entries only
running it tells), a bare name is looked up through nsswitch, whose `files` source is
etc/<name>. The options on the master line are added to every entry's own (autofs.conf
`append_options = yes`, the default); with `no`, an entry's options replace them. An
indirect map's key `k` mounts at `<mount point>/k`; `*` matches any key. autofs mounts
nothing unless autofs.service starts at boot.
"""

from __future__ import annotations

from .._record import FrozenRecord
from ..host.fs import FS
from ..parsers.autofs import MapEntry, parse_map, parse_master
from ..parsers.nfs_conf import lookup, read_conf
from .services import read_unit_state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..parsers.autofs import MasterEntry

MASTER = "etc/auto.master"


class AutofsMount(FrozenRecord):
    __slots__ = ("mount_point", "location", "options", "map_file", "line", "master", "problem", "key", "enable")
    mount_point: str  # "/sas/data", or "/sas/*" for a wildcard entry
    location: str  # "10.0.2.4:/sasdata"
    options: tuple[str, ...]  # master options then the entry's, as autofs passes them to mount
    map_file: str
    line: int
    master: str  # "etc/auto.master:3"
    problem: str | None
    key: str  # the map key: "/sasdata" (direct map), "sasdata" or "*" (indirect)
    enable: str | None  # autofs.service when it does not start at boot

    def __init__(self, mount_point: str, location: str, options: tuple[str, ...], map_file: str, line: int,
                 master: str, problem: str | None, key: str = "", enable: str | None = None):
        self.mount_point = mount_point
        self.location = location
        self.options = options
        self.map_file = map_file
        self.line = line
        self.master = master
        self.problem = problem
        self.key = key
        self.enable = enable


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


def _map_file(fs: FS, map_type: str, name: str) -> tuple[str | None, str | None]:
    """(the map file, why it cannot be read here)."""
    if map_type not in ("", "file", "program"):
        return None, f"a {map_type} map: its entries are not on this host"
    rel = name.lstrip("/") if name.startswith("/") else f"etc/{name}"
    if not fs.resolves(rel):
        return None, f"map {name} not found"
    if map_type == "program" or (map_type == "" and fs.is_executable(rel)):
        return None, f"{name} is a program map: only running it tells its entries"
    return rel, None


def autofs_map_files(fs: FS) -> list[str]:
    """Every map file the master maps name (for `collect`)."""
    out = []
    for _rel, m in _master_lines(fs):
        if m.map_type in ("", "file", "program") and m.map_name:
            out.append(m.map_name.lstrip("/") if m.map_name.startswith("/") else f"etc/{m.map_name}")
    return out


def read_autofs(fs: FS) -> dict[str, AutofsMount]:
    append = (lookup(read_conf(fs, "etc/autofs.conf"), "autofs", "append_options") or None)
    appending = append is None or append.value.strip().lower() in ("yes", "1", "true", "y")
    running = read_unit_state(fs, "autofs.service").enabled
    out: dict[str, AutofsMount] = {}
    for master_rel, m in _master_lines(fs):
        rel, why = _map_file(fs, m.map_type, m.map_name)
        if rel is None:
            continue
        problem = why or (None if running else "autofs.service does not start at boot")
        for e in parse_map(fs.read_text(rel) or ""):
            options = (m.options + e.options) if appending or not e.options else e.options
            point = e.key if m.mount_point == "/-" else f"{m.mount_point.rstrip('/')}/{e.key}"
            out[point] = AutofsMount(point, e.location, options, rel, e.line, f"{master_rel}:{m.line}", problem,
                                     e.key, None if running else "autofs.service")
    return out


def autofs_for(mounts: dict[str, AutofsMount], mount_point: str) -> AutofsMount | None:
    """The entry that mounts `mount_point`: its own key, else its map's `*` (`&` = the key)."""
    if mount_point in mounts:
        return mounts[mount_point]
    parent, _, key = mount_point.rpartition("/")
    wild = mounts.get(f"{parent}/*")
    if wild is None:
        return None
    return AutofsMount(mount_point, wild.location.replace("&", key), wild.options, wild.map_file, wild.line,
                       wild.master, wild.problem, "*", wild.enable)


__all__ = ["AutofsMount", "MapEntry", "autofs_for", "read_autofs"]
