"""/etc/fstab (fstab(5)): `spec file vfstype options [freq [passno]]`.

Blanks inside the first two fields are written as `\\040`; comments start a line with `#`.
More than six fields means an unescaped blank split a path, so the line is rejected
rather than read with its fields shifted.
"""

from __future__ import annotations

from .._record import FrozenRecord
from ..errors import ParseError
from ._text import lines, options_splitter, uint, unescape_octal


class FstabEntry(FrozenRecord):
    __slots__ = ("spec", "file", "vfstype", "options", "freq", "passno", "line")
    spec: str
    file: str
    vfstype: str
    options: tuple[tuple[str, str | None], ...]
    freq: int
    passno: int
    line: int

    def __init__(self,
                 spec: str, file: str, vfstype: str, options: tuple[tuple[str, str | None], ...], freq: int,
                 passno: int, line: int):
        self.spec = spec
        self.file = file
        self.vfstype = vfstype
        self.options = options
        self.freq = freq
        self.passno = passno
        self.line = line


def parse_fstab(text: str, source: str) -> list[FstabEntry]:
    entries = []
    split_options = options_splitter()
    for n, line in lines(text):
        fields = line.replace("\t", " ").split(" ")  # libmount splits on blanks only
        if "" in fields:
            fields = [f for f in fields if f]
        if not fields or fields[0].startswith("#"):
            continue
        count = len(fields)
        if count < 4:
            raise ParseError(source, f"expected at least 4 fields, found {count}", n)
        if count > 6:
            raise ParseError(source, f"expected at most 6 fields, found {count} (unescaped blank?)", n)
        # `0 0`, the usual tail, without a call per field; anything else as uint() says
        freq = 0 if count < 5 or fields[4] == "0" else uint(fields[4], source, n, "dump frequency")
        passno = 0 if count < 6 or fields[5] == "0" else uint(fields[5], source, n, "fsck pass")
        spec, file = (unescape_octal(fields[0]), unescape_octal(fields[1])) if "\\" in line else fields[:2]
        entries.append(FstabEntry(spec, file, fields[2], split_options(fields[3]), freq, passno, n))
    return entries
