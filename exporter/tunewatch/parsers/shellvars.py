"""Shell variable assignments as in ifcfg files and os-release; nothing is executed.

Quoting follows sh: '...' is literal, "..." honours backslash before $ ` " \\ and newline,
an unquoted backslash escapes the next character, and a word ends at a blank or at one of
; & | < > ( ). No `$VAR` expansion is done. Articles pasted into config files bring
typographic quotes (`ETHTOOL_OPTIONS=’-L eth0 combined 16’`): ‘ ’ work as ' and “ ” as ".
A typographic quote may be closed by its ASCII twin (one end retyped by hand), but an ASCII
quote is closed only by ASCII, so an apostrophe inside 'it’s' stays literal.
Lines that are not assignments are skipped.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ._text import lines

_ASSIGN = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=")
_CLOSERS = {"'": "'", '"': '"', "‘": "'‘’", "’": "'‘’", "“": '"“”', "”": '"“”'}
_SINGLE = "'‘’"
_WORD_END = " \t;&|<>()"


def _value(text: str, source: str, n: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(text) and text[i] not in _WORD_END:
        c = text[i]
        if c in _CLOSERS:
            closers, i = _CLOSERS[c], i + 1
            while i < len(text) and text[i] not in closers:
                if c not in _SINGLE and text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\':
                    i += 1
                out.append(text[i])
                i += 1
            if i >= len(text):
                raise ParseError(source, f"unterminated {c} quote", n)
        elif c == "\\":
            i += 1
            if i < len(text):
                out.append(text[i])
        else:
            out.append(c)
        i += 1
    return "".join(out)


def parse_shell_assignments(text: str, source: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for n, line in lines(text):
        m = _ASSIGN.match(line)
        if m:
            values[m.group(1)] = _value(line[m.end():], source, n)
    return values
