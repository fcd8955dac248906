"""INI files: systemd units and .link files, NetworkManager keyfiles, tuned.conf.

Values are kept verbatim apart from surrounding blanks: no quote removal, no inline
comments (systemd has none), and tuned's `${f:...}` macros are left for tuned to expand.
A line ending in a backslash continues on the next, joined by a space as systemd does;
a line indented deeper than the key above continues its value, as in Python's
configparser (tuned).
"""

from __future__ import annotations

from ..errors import ParseError
from ._text import lines


def _joined(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for n, line in lines(text):
        if pending is not None:
            n, line = pending[0], pending[1] + " " + line.strip()
            pending = None
        if line.rstrip().endswith("\\") and not line.lstrip().startswith(("#", ";")):
            pending = (n, line.rstrip()[:-1].rstrip())
            continue
        out.append((n, line))
    if pending is not None:
        out.append(pending)
    return out


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_ini(text: str, source: str) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    section = ""
    last_key: str | None = None
    key_indent = 0
    for n, raw in _joined(text):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if last_key is not None and _indent(raw) > key_indent:
            current = sections[section][last_key]
            sections[section][last_key] = f"{current} {line}" if current else line
            continue
        if line.startswith("["):
            name, close, after = line[1:].partition("]")
            if not close or (after.strip() and after.strip()[0] not in "#;"):
                raise ParseError(source, f"bad section header {line[:60]!r}", n)
            section, last_key = name.strip(), None
            sections.setdefault(section, {})
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ParseError(source, f"neither [section] nor key=value: {line[:60]!r}", n)
        last_key, key_indent = key.strip(), _indent(raw)
        sections.setdefault(section, {})[last_key] = value.strip()
    return sections


def parse_ini_items(text: str, source: str) -> list[tuple[str, str, str, int]]:
    """(section, key, value, line) in file order, repeated keys kept: systemd's own reading
    (no indented continuation lines; a trailing backslash joins lines)."""
    items, section = [], ""
    for n, raw in _joined(text):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            name, close, after = line[1:].partition("]")
            if not close or (after.strip() and after.strip()[0] not in "#;"):
                raise ParseError(source, f"bad section header {line[:60]!r}", n)
            section = name.strip()
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ParseError(source, f"neither [section] nor key=value: {line[:60]!r}", n)
        items.append((section, key.strip(), value.strip(), n))
    return items
