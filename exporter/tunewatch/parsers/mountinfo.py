"""/proc/<pid>/mountinfo (proc(5)).

    36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue

The optional fields (`shared:75`, `master:1`) run up to a lone `-`. The kernel escapes
space, tab, newline and backslash as `\\040`, `\\011`, `\\012`, `\\134` in paths and the
source, so every field is free of blanks and a line splits on spaces unambiguously.
"""

from __future__ import annotations

from .._record import FrozenRecord
from ..errors import ParseError
from ._text import lines, options_splitter, uint, unescape_octal

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:
    from typing import Callable

    Options = tuple[tuple[str, str | None], ...]  # never run: TYPE_CHECKING is False


class MountInfo(FrozenRecord):
    __slots__ = ("mount_id", "parent_id", "major", "minor", "root", "mount_point", "mount_options", "optional_fields",
                 "fstype", "source", "super_options", "line")
    mount_id: int
    parent_id: int
    major: int
    minor: int
    root: str
    mount_point: str
    mount_options: Options
    optional_fields: tuple[str, ...]
    fstype: str
    source: str
    super_options: Options
    line: int

    def __init__(self,
                 mount_id: int, parent_id: int, major: int, minor: int, root: str, mount_point: str,
                 mount_options: Options, optional_fields: tuple[str, ...], fstype: str, source: str,
                 super_options: Options, line: int):
        self.mount_id = mount_id
        self.parent_id = parent_id
        self.major = major
        self.minor = minor
        self.root = root
        self.mount_point = mount_point
        self.mount_options = mount_options
        self.optional_fields = optional_fields
        self.fstype = fstype
        self.source = source
        self.super_options = super_options
        self.line = line


def _parse_line(line: str, source: str, n: int, split_options: Callable[[str], Options]) -> MountInfo:
    fields = line.replace("\t", " ").split(" ")
    if "" in fields:  # runs of blanks
        fields = [f for f in fields if f]
    if len(fields) < 10:
        raise ParseError(source, f"expected at least 10 fields, found {len(fields)}", n)
    try:
        sep = fields.index("-", 6)
    except ValueError:
        raise ParseError(source, "no ' - ' separator after the optional fields", n) from None
    tail = fields[sep + 1:]
    if len(tail) != 3:
        raise ParseError(source, f"expected fstype, source and super options after ' - ', found {len(tail)} fields", n)
    major, colon, minor = fields[2].partition(":")
    if not colon:
        raise ParseError(source, f"device {fields[2][:40]!r} is not major:minor", n)
    numbers = (fields[0], fields[1], major, minor)
    digits = "".join(numbers)
    if len(digits) <= 20 and digits.isdigit() and digits.isascii() and "" not in numbers:  # uint()'s test at once
        mount_id, parent_id, major_n, minor_n = map(int, numbers)
    else:  # uint() says which field is wrong
        mount_id, parent_id, major_n, minor_n = (uint(x, source, n, what) for x, what in
                                                 zip(numbers, ("mount id", "parent id", "major", "minor")))
    root, point, source_name = fields[3], fields[4], tail[1]
    if "\\" in line:
        root, point, source_name = unescape_octal(root), unescape_octal(point), unescape_octal(source_name)
    return MountInfo(mount_id, parent_id, major_n, minor_n, root, point, split_options(fields[5]),
                     tuple(fields[6:sep]), tail[0], source_name, split_options(tail[2]), n)


def parse_mountinfo(text: str, source: str) -> list[MountInfo]:
    split_options = options_splitter()
    stripped = ((n, line.strip(" \t")) for n, line in lines(text))
    return [_parse_line(line, source, n, split_options) for n, line in stripped if line]
