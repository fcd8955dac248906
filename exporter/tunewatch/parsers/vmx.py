"""VMware .vmx files: `key = "value"` lines.

VMware reads keys case-insensitively, so entries are indexed by the lower-cased key while
`VmxEntry.key` keeps the spelling of the file. Values written in articles are often
unquoted (`ethernet1.ctxPerDev = 1`) or in typographic quotes (“1”); both are read as
VMware-style quoted values. Inside quotes VMware writes special characters as `|XX` hex
(`|22` is a quote), which is decoded.
"""

from __future__ import annotations

import re

from .._record import FrozenRecord
from ..errors import ParseError
from ._text import lines

_KEY = re.compile(r"[^\s\"“”=#]+")
_QUOTES = "\"“”"
_HEX = re.compile(r"\|([0-9A-Fa-f]{2})")


class VmxEntry(FrozenRecord):
    __slots__ = ("key", "value", "line")
    key: str
    value: str
    line: int

    def __init__(self, key: str, value: str, line: int):
        self.key = key
        self.value = value
        self.line = line


def _unquote(value: str, source: str, n: int) -> str:
    if not value or value[0] not in _QUOTES:
        return value
    if len(value) < 2 or value[-1] not in _QUOTES:
        raise ParseError(source, "unterminated quoted value", n)
    return _HEX.sub(lambda m: chr(int(m.group(1), 16)), value[1:-1])


def parse_vmx(text: str, source: str) -> dict[str, VmxEntry]:
    entries: dict[str, VmxEntry] = {}
    for n, line in lines(text):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not _KEY.fullmatch(key):
            raise ParseError(source, f"not a `key = \"value\"` line: {line[:60]!r}", n)
        entries[key.lower()] = VmxEntry(key, _unquote(value.strip(), source, n), n)
    return entries
