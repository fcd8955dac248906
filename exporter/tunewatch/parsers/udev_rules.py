"""udev rules files (udev(7)): one rule per line of comma-separated `KEY{attr}OP"value"`.

Values must be double-quoted; inside them only `\\"` is an escape, as in udev, except in
`e"..."` strings which take C escapes (`i"..."`, case-insensitive match, is read as plain).
A backslash at the end of a line continues the rule on the next one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ParseError
from ._text import logical_lines

_KEY = re.compile(r"[ \t,]*([A-Za-z_][A-Za-z0-9_]*)(?:\{([^}]*)\})?[ \t]*(==|!=|\+=|-=|:=|=)?[ \t]*")
_PREFIX = re.compile(r"(?:ei|ie|e|i)?\"")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
            "\\": "\\", '"': '"', "'": "'"}


@dataclass(frozen=True)
class UdevToken:
    key: str
    attr: str | None
    op: str
    value: str


@dataclass(frozen=True)
class UdevRule:
    line: int
    tokens: tuple[UdevToken, ...]


def _c_unescape(text: str) -> str:
    def one(m: re.Match) -> str:
        if m.group(1):
            return chr(int(m.group(1), 16))
        return _ESCAPES.get(m.group(2), m.group(0))
    return re.sub(r"\\(?:x([0-9A-Fa-f]{2})|(.))", one, text)


def _value(line: str, pos: int, source: str, n: int) -> tuple[str, int]:
    prefix = _PREFIX.match(line, pos)
    if not prefix:
        raise ParseError(source, f"value at column {pos + 1} is not double-quoted", n)
    i, out, escaped = prefix.end(), [], "e" in prefix.group()
    while i < len(line) and line[i] != '"':
        if line[i] == "\\" and i + 1 < len(line) and (escaped or line[i + 1] == '"'):
            out.append(line[i:i + 2] if escaped else '"')
            i += 2
            continue
        out.append(line[i])
        i += 1
    if i >= len(line):
        raise ParseError(source, "unterminated quoted value", n)
    value = "".join(out)
    return (_c_unescape(value) if escaped else value), i + 1


def _parse_rule(line: str, source: str, n: int) -> UdevRule:
    tokens, pos = [], 0
    while line[pos:].strip(" \t,"):
        m = _KEY.match(line, pos)
        if not m or not m.group(1):
            raise ParseError(source, f"expected a key at column {pos + 1}", n)
        if not m.group(3):
            raise ParseError(source, f"{m.group(1)}: missing operator", n)
        value, pos = _value(line, m.end(), source, n)
        if pos < len(line) and line[pos] not in " \t,":
            raise ParseError(source, f"unexpected {line[pos]!r} after the value of {m.group(1)}", n)
        tokens.append(UdevToken(m.group(1), m.group(2), m.group(3), value))
    return UdevRule(n, tuple(tokens))


def parse_udev_rules(text: str, source: str) -> list[UdevRule]:
    rules = []
    for n, line in logical_lines(text, strip_continued=True):
        if line.strip() and not line.lstrip().startswith("#"):
            rules.append(_parse_rule(line.rstrip(), source, n))
    return rules
