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

from ..errors import ParseError
from ._text import lines

_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")
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


def _name_before_equals(line: str, at: int) -> str | None:
    """The `NAME` of `NAME=` starting at `at` ([A-Za-z_][A-Za-z0-9_]*), else None."""
    end = at
    while end < len(line) and line[end] in _NAME_CHARS:
        end += 1
    if end == at or line[at] not in _NAME_START or line[end:end + 1] != "=":
        return None
    return line[at:end]


def _assignment(line: str) -> tuple[str, int] | None:
    """(name, where its value starts) when `line` is `\\s*(?:export\\s+)?NAME=...`, by string
    tests rather than that pattern (docs/architecture.md#start-up-cost)."""
    at = len(line) - len(line.lstrip())
    if line.startswith("export", at):
        after = at + len("export")
        words_at = len(line) - len(line[after:].lstrip())
        if words_at > after:  # `export` and at least one blank
            name = _name_before_equals(line, words_at)
            if name is not None:
                return name, words_at + len(name) + 1
    name = _name_before_equals(line, at)
    return None if name is None else (name, at + len(name) + 1)


def parse_shell_assignments(text: str, source: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for n, line in lines(text):
        found = _assignment(line)
        if found is not None:
            name, value_at = found
            values[name] = _value(line[value_at:], source, n)
    return values
