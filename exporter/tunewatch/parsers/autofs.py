"""autofs master maps (auto.master(5)).

Line based: `#` starts a comment, a trailing backslash continues the line, fields are
separated by blanks. A master map line is `mount-point [type[,format]:]map [options]`
or an include, `+dir:/etc/auto.master.d` (files named `*.autofs` in it) or `+name` (a map
from another source, not on this host). Options that start with `--` are the daemon's
(`--timeout=60`); `-opt,opt` are mount options, passed to the maps' entries. The maps
themselves (autofs(5)) are read as autofs reads them: parsers/autofs_map.py.
"""

from __future__ import annotations

import re

from .._record import FrozenRecord
from ._text import logical_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator


class MasterEntry(FrozenRecord):
    __slots__ = ("mount_point", "map_type", "map_name", "options", "line", "map_format")
    mount_point: str  # "/-" for a direct map
    map_type: str  # "file", "program", "yp", "ldap", "hosts", "null", "" (nsswitch decides)
    map_name: str
    options: tuple[str, ...]  # mount options, daemon options (`--...`) dropped
    line: int
    map_format: str  # "sun", "amd", "hesiod" or "" (sun, unless amd.conf names the mount point)

    def __init__(self, mount_point: str, map_type: str, map_name: str, options: tuple[str, ...], line: int,
                 map_format: str = ""):
        self.mount_point = mount_point
        self.map_type = map_type
        self.map_name = map_name
        self.options = options
        self.line = line
        self.map_format = map_format


def _fields(text: str) -> Iterator[tuple[int, list[str]]]:
    for n, line in logical_lines(text, strip_continued=False):
        line = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            yield n, fields


def _mount_options(tokens: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for token in tokens:
        if token.startswith("--") or not token.startswith("-"):
            continue  # daemon options (--timeout=60) and stray words are not mount options
        out += [o for o in token[1:].split(",") if o]
    return tuple(out)


def parse_master(text: str) -> tuple[list[MasterEntry], list[tuple[str, int]]]:
    """(entries, includes): includes are (`dir:/path` or `name`, line) of `+` lines."""
    entries, includes = [], []
    for n, fields in _fields(text):
        if fields[0].startswith("+"):
            includes.append((fields[0][1:], n))
            continue
        if len(fields) < 2:
            continue
        spec = fields[1]
        map_type = map_format = ""
        if spec in ("-hosts", "-null"):
            map_type, spec = spec[1:], ""
        else:
            m = re.match(r"^([a-z]+)(,[a-z]+)?:(.*)$", spec)
            if m and not spec.startswith("/"):
                map_type, spec, map_format = m.group(1), m.group(3), (m.group(2) or ",")[1:]
        entries.append(MasterEntry(fields[0], map_type, spec, _mount_options(fields[2:]), n, map_format))
    return entries, includes
