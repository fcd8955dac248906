"""Line and field helpers shared by the parsers (private to the package)."""

from __future__ import annotations

from .._lazyre import lazy
from ..errors import ParseError

_OCTAL = lazy(r"\\([0-3][0-7]{2})")


def lines(text: str) -> list[tuple[int, str]]:
    """(1-based number, line) pairs with CR of CRLF endings and a leading BOM removed.

    Splits on "\\n" only: str.splitlines() also breaks on form feeds and U+2028, which would
    shift line numbers away from what an editor or the kernel shows.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    return [(n, line.rstrip("\r")) for n, line in enumerate(text.split("\n"), 1)]


def logical_lines(text: str, strip_continued: bool) -> list[tuple[int, str]]:
    """Lines with backslash-newline continuations joined, numbered by their first line.

    The backslash and newline vanish without adding a space, as in libkmod and udev;
    udev also drops the continued line's leading whitespace (`strip_continued`).
    """
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for n, line in lines(text):
        if pending is not None:
            line = pending[1] + (line.lstrip() if strip_continued else line)
            n = pending[0]
            pending = None
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            pending = (n, stripped[:-1])
            continue
        out.append((n, line))
    if pending is not None:
        out.append(pending)
    return out


def uint(text: str, source: str, line: int | None, what: str) -> int:
    # ASCII digits only (int() would accept other scripts' digits), as [0-9]{1,20}
    if len(text) <= 20 and text.isascii() and text.isdigit():
        return int(text)
    raise ParseError(source, f"{what} is not a number: {text[:40]!r}", line)


def unescape_octal(text: str) -> str:
    """Decode the kernel's `\\040`-style escapes (space, tab, newline, backslash)."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), text) if "\\" in text else text


class _OptionPairs(dict):
    """option text -> (key, value or None), each computed on first use."""

    def __missing__(self, item: str) -> tuple[str, str | None]:
        key, sep, value = item.partition("=")
        pair = self[item] = (key, value if sep else None)
        return pair


def options_splitter():
    """split_options() for one table: each distinct field, and each distinct option, is
    split once. A table of 1,000 NFS mounts repeats a few fields and options (`vers=3`,
    `hard`; the pairs are immutable, so sharing them is safe), and the lookups run in C."""
    fields: dict[str, tuple[tuple[str, str | None], ...]] = {}
    pair_of = _OptionPairs().__getitem__

    def split(field: str) -> tuple[tuple[str, str | None], ...]:
        hit = fields.get(field)
        if hit is None:
            items = field.split(",")
            if "" in items:
                items = [item for item in items if item]
            hit = fields[field] = tuple(map(pair_of, items))
        return hit

    return split


def option_value(pairs: tuple[tuple[str, str | None], ...], key: str) -> str | None:
    """The value of the last `key=` in split_options() pairs (the kernel and mount take the
    last), or None: absent, or a flag without `=`."""
    for name, value in reversed(pairs):
        if name == key:
            return value
    return None


def split_options(field: str) -> tuple[tuple[str, str | None], ...]:
    pairs = []
    for item in field.split(","):
        if item:
            key, sep, value = item.partition("=")
            pairs.append((key, value if sep else None))
    return tuple(pairs)
