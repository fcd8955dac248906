"""nfs-utils configuration files (nfs.conf(5), nfsmount.conf(5)), read as
`support/nfs/conffile.c` reads them.

- `conf_parse()`: lines end at "\\n"; a backslash before the newline joins the next line
  (both become blanks); a last line without a newline is ignored ("last line
  non-terminated, ignored").
- `conf_parse_line()`: leading blanks are skipped; a line starting with `#` or `;` is a
  comment; `[section]` or `[section "arg"]` (everything after `]` ignored); `tag = value`
  outside a section is ignored; a value in "..." or '...' is taken up to the closing
  quote, any other value is cut at the first `#`, then at the first `;` (inline
  comments), and trailing blanks dropped; `include = [-]path` reads another file in place
  (relative to the including file; `-`: optional).
- `conf_set(..., override=1)`: a later assignment replaces an earlier one; section, arg
  and tag compare case-insensitively (`conf_get_section()`).
- `conf_init_file()`: the file, then `<file>.d/*.conf` in versionsort order, which
  override it (`conf_init_dir()`).
"""

from __future__ import annotations

import posixpath
import re

from .._record import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Protocol

    class _FS(Protocol):
        """What read_conf reads of host.fs.FS (parsers sit below host)."""
        def read_text(self, rel: str) -> str | None: ...
        def listdir(self, rel: str) -> list[str]: ...

_MAX_INCLUDE_DEPTH = 8  # conffile.c has none; a loop would recurse until it crashed


class ConfEntry(FrozenRecord):
    __slots__ = ("section", "arg", "tag", "value", "source")
    section: str
    arg: str | None
    tag: str
    value: str
    source: str  # "etc/nfs.conf:12"

    def __init__(self, section: str, arg: str | None, tag: str, value: str, source: str):
        self.section = section
        self.arg = arg
        self.tag = tag
        self.value = value
        self.source = source


def _value(raw: str) -> str | None:
    raw = raw.lstrip(" \t")
    if raw[:1] in ("'", '"'):
        end = raw.find(raw[0], 1)
        return None if end < 0 else raw[1:end]  # unmatched quotes: the line is ignored
    raw = raw.split("#", 1)[0].split(";", 1)[0]
    return raw.rstrip()


def parse_conf(text: str, source: str, read: Callable[[str], str | None] | None = None, depth: int = 0,
               section: list | None = None) -> list[ConfEntry]:
    """Every assignment in file order. `read(rel)` returns an included file's text (or
    None); `section` carries [section, arg] into an included file, as conffile.c does."""
    state = section if section is not None else [None, None]
    out: list[ConfEntry] = []
    if text.startswith("\ufeff"):
        text = text[1:]
    text = re.sub(r"\\\n", "  ", text)
    lines = text.split("\n")[:-1]  # the part after the last newline is not a line
    for n, line in enumerate(lines, 1):
        line = line.lstrip()
        if not line or line[0] in "#;":
            continue
        if line[0] == "[":
            close = line.find("]")
            state[0] = state[1] = None
            if close < 0:
                continue
            head = line[1:close].strip(" \t")
            name, quote, rest = head.partition('"')
            if quote and '"' not in rest:
                state[0] = name.rstrip(" \t")  # non-matched '"': section set, arg not
                continue
            state[0], state[1] = name.rstrip(" \t"), (rest.split('"', 1)[0] if quote else None)
            continue
        tag, eq, raw = line.partition("=")
        if not eq or state[0] is None:
            continue
        tag, value = tag.rstrip(" \t"), _value(raw)
        if not tag or value is None:
            continue
        if tag.lower() == "include":
            if read is None or depth >= _MAX_INCLUDE_DEPTH:
                continue
            path = value[1:] if value.startswith("-") else value
            rel = posixpath.normpath(path.lstrip("/") if path.startswith("/")
                                     else posixpath.join(posixpath.dirname(source.split(":")[0]), path))
            sub = read(rel)
            if sub is not None:
                out += parse_conf(sub, rel, read, depth + 1, list(state))
            continue
        out.append(ConfEntry(state[0], state[1], tag, value, f"{source}:{n}"))
    return out


def version_key(name: str) -> list:
    """glibc versionsort(): digit runs compare as numbers."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def read_conf(fs: _FS, rel: str) -> list[ConfEntry]:
    """`rel` then `rel.d/*.conf` (conffile.c `conf_init_file()`), in the order they apply."""
    def read(path: str) -> str | None:
        return fs.read_text(path)

    entries = []
    text = fs.read_text(rel)
    if text is not None:
        entries += parse_conf(text, rel, read)
    for name in sorted((n for n in fs.listdir(f"{rel}.d") if n.endswith(".conf") and len(n) > 5
                        and not n.startswith(".")), key=version_key):
        sub = fs.read_text(f"{rel}.d/{name}")
        if sub is not None:
            entries += parse_conf(sub, f"{rel}.d/{name}", read)
    return entries


def lookup(entries: list[ConfEntry], section: str, tag: str, arg: str | None = None) -> ConfEntry | None:
    """conf_get_section(): the last assignment of `tag` in `section` with `arg` (none: no arg)."""
    found = None
    for e in entries:
        if e.section.lower() == section.lower() and e.tag.lower() == tag.lower() and \
                ((e.arg is None) if arg is None else (e.arg is not None and e.arg.lower() == arg.lower())):
            found = e
    return found
