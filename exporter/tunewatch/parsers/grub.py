"""GRUB's boot menu as GRUB itself reads it: grub.cfg, the environment block (grubenv) and
Boot Loader Specification entries (boot/loader/entries/*.conf, the grub2 `blscfg` command
of Fedora and RHEL).

Only what picks the kernel is parsed: the top-level `menuentry`/`submenu` blocks in order
(a submenu's own entries nested), each entry's title, id and the path of its `linux`
command, the place of a `blscfg` command and the `set default=` lines. Nothing is executed;
`if` blocks are read through (a menuentry inside one counts as present).
"""

from __future__ import annotations

import re

from .._record import FrozenRecord
from ..errors import ParseError
from ._text import lines

_ALNUM = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")  # grub_isalnum(): ASCII
_HEADS = frozenset(("menuentry", "submenu", "function", "}", "linux", "linuxefi", "linux16", "blscfg", "set"))
_FIRST_ARG_ONLY = frozenset(("linux", "linuxefi", "linux16"))  # a kernel path has no blank
GRUBENV_SIGNATURE = "# GRUB Environment Block"  # grub-core/lib/envblk.c GRUB_ENVBLK_SIGNATURE


class MenuItem(FrozenRecord):
    __slots__ = ("kind", "title", "id", "linux", "version", "children", "line")
    kind: str  # "menuentry", "submenu" or "blscfg" (where grub2's blscfg inserts the BLS entries)
    title: str
    id: str
    linux: str  # the path the `linux`/`linuxefi` command loads, "" when none
    version: str  # a BLS entry's `version` key
    children: tuple
    line: int

    def __init__(self, kind: str, title: str = "", id: str = "", linux: str = "", version: str = "",
                 children: tuple = (), line: int = 0):
        self.kind = kind
        self.title = title
        self.id = id
        self.linux = linux
        self.version = version
        self.children = children
        self.line = line


class GrubCfg(FrozenRecord):
    __slots__ = ("items", "defaults")
    items: tuple  # MenuItem, top level, in file order
    defaults: tuple  # (line, value) of each `set default=...`, in file order

    def __init__(self, items: tuple, defaults: tuple):
        self.items = items
        self.defaults = defaults


def parse_grubenv(text: str, source: str) -> dict[str, str]:
    """grub-editenv's block: the signature line, then `name=value` lines, '#' padding.
    A block without the signature is refused by GRUB's load_env (envblk.c
    grub_envblk_open()), so no variable of it is used: an error here, never "unset"."""
    if not text.startswith(GRUBENV_SIGNATURE + "\n"):
        raise ParseError(source, "not a GRUB environment block (no '# GRUB Environment Block' line)", 1)
    values: dict[str, str] = {}
    for _n, line in lines(text)[1:]:
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if sep:  # envblk.c escapes '\\' and newline in values with a backslash
            values[name] = re.sub(r"\\(.)", r"\1", value)
    return values


def _words(text: str, source: str, n: int) -> list[str]:
    """A grub.cfg command line split into words by GRUB script quoting: '...' literal,
    "..." with backslash escapes, adjacent quoted parts joined ('a'\\''b' is a'b)."""
    words: list[str] = []
    cur: list[str] = []
    started = False
    i = 0
    while i < len(text):
        c = text[i]
        if c in " \t":
            if started:
                words.append("".join(cur))
                cur, started = [], False
        elif c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise ParseError(source, "unterminated ' quote", n)
            cur.append(text[i + 1:end])
            started, i = True, end
        elif c == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                if text[i] == "\\" and i + 1 < len(text):
                    i += 1
                cur.append(text[i])
                i += 1
            if i >= len(text):
                raise ParseError(source, 'unterminated " quote', n)
            started = True
        elif c == "\\" and i + 1 < len(text):
            cur.append(text[i + 1])
            started, i = True, i + 1
        elif c == "#" and not started:
            break
        else:
            cur.append(c)
            started = True
        i += 1
    if started:
        words.append("".join(cur))
    return words


def _header(words: list[str]) -> tuple[str, str]:
    """(title, id) of `menuentry TITLE [options] [$menuentry_id_option ID | --id ID] {`."""
    title, ident = (words[1] if len(words) > 1 else ""), ""
    for k, w in enumerate(words[2:], 2):
        if w in ("--id", "$menuentry_id_option", "${menuentry_id_option}") and k + 1 < len(words):
            ident = words[k + 1]
        elif w.startswith("--id="):  # extcmd's long option with its argument attached
            ident = w[5:]
    return title, ident


def parse_grub_cfg(text: str, source: str) -> GrubCfg:
    """The menu of a grub.cfg (grub-mkconfig output or hand-written)."""
    stack: list[tuple[str, str, str, int, list, list[str]]] = []  # kind, title, id, line, children, linux
    top: list[MenuItem] = []
    defaults: list[tuple[int, str]] = []
    for n, raw in lines(text):
        line = raw.strip()
        if not line or line.startswith("#") or line.split(None, 1)[0] not in _HEADS:
            continue  # only these commands shape the menu: the rest is never tokenised
        short = line.split(None, 2)
        # a `linux` line matters up to its first argument, the kernel path (its options are long)
        words = _words(" ".join(short[:2]) if short[0] in _FIRST_ARG_ONLY else line, source, n)
        if not words:
            continue
        head = words[0]
        if head in ("menuentry", "submenu"):
            if words[-1] != "{":
                raise ParseError(source, f"{head} without an opening '{{' on its line", n)
            title, ident = _header(words[:-1])
            stack.append((head, title, ident, n, [], []))
        elif head == "function" and words[-1] == "{":
            stack.append(("function", "", "", n, [], []))
        elif head == "}":
            if not stack:
                raise ParseError(source, "'}' without an open block", n)
            kind, title, ident, start, children, linux = stack.pop()
            if kind == "function":
                continue
            item = MenuItem(kind, title, ident, linux[0] if linux else "", "", tuple(children), start)
            (stack[-1][4] if stack else top).append(item)
        elif head in ("linux", "linuxefi", "linux16") and len(words) > 1 and stack and stack[-1][0] == "menuentry":
            stack[-1][5].append(words[1])
        elif head == "blscfg" and not any(s[0] != "function" for s in stack):
            (stack[-1][4] if stack else top).append(MenuItem("blscfg", line=n))
        elif head == "set" and len(words) > 1 and words[1].startswith("default=") and not stack:
            defaults.append((n, words[1].split("=", 1)[1]))
    if stack:
        raise ParseError(source, f"{stack[-1][0]} opened here is never closed", stack[-1][3])
    return GrubCfg(tuple(top), tuple(defaults))


def parse_bls_entry(text: str, source: str, entry_id: str) -> MenuItem | None:
    """One BLS entry as grub2's blscfg reads it (read_entry(): leading blanks dropped, '#'
    lines skipped, key and value split at the first blank); without a `linux` key blscfg
    adds no menu entry (create_entry()), so None."""
    keys: dict[str, str] = {}
    for _n, line in lines(text):
        line = line.lstrip(" \t")
        if not line or line.startswith("#"):
            continue
        m = re.match(r"(\S+)[ \t]+(.*)$", line)
        if m:
            keys.setdefault(m.group(1), m.group(2).strip())
    if "linux" not in keys:
        return None
    return MenuItem("menuentry", keys.get("title") or keys["linux"], entry_id, keys["linux"].split()[0],
                    keys.get("version", ""))


def rpm_vercmp(a: str, b: str) -> int:
    """rpm's version comparison as grub2's blscfg.c vercmp() has it: alternating numeric
    and alphabetic segments, '~' sorts first, numbers beat letters, longer leftover wins."""
    if a == b:
        return 0
    i = j = 0
    while i < len(a) or j < len(b):
        while i < len(a) and a[i] not in _ALNUM and a[i] != "~":
            i += 1
        while j < len(b) and b[j] not in _ALNUM and b[j] != "~":
            j += 1
        if (i < len(a) and a[i] == "~") or (j < len(b) and b[j] == "~"):
            if not (i < len(a) and a[i] == "~"):
                return 1
            if not (j < len(b) and b[j] == "~"):
                return -1
            i, j = i + 1, j + 1
            continue
        if i >= len(a) or j >= len(b):
            break
        pattern = r"[0-9]+" if a[i] in "0123456789" else r"[A-Za-z]+"
        sa = re.match(pattern, a[i:]).group()  # type: ignore[union-attr]
        mb = re.match(pattern, b[j:])
        if mb is None:  # one numeric, the other alphabetic: numeric is newer
            return 1 if pattern == r"[0-9]+" else -1
        sb = mb.group()
        i, j = i + len(sa), j + len(sb)
        if pattern == r"[0-9]+":
            sa, sb = sa.lstrip("0"), sb.lstrip("0")
            if len(sa) != len(sb):
                return 1 if len(sa) > len(sb) else -1
        if sa != sb:
            return 1 if sa > sb else -1
    if i >= len(a) and j >= len(b):
        return 0
    return -1 if i >= len(a) else 1


def _split_nvr(text: str) -> tuple[str, str, str]:
    """blscfg.c split_package_string() with a name: release after the last '-', version
    after the one before, the name the rest; missing parts bubble up."""
    rest, _, release = text.rpartition("-") if "-" in text else ("", "", text)
    if not rest:
        return release, "", ""
    name, _, version = rest.rpartition("-") if "-" in rest else ("", "", rest)
    if not name:
        return version, release, ""
    return name, version, release


def bls_cmp(id0: str, id1: str) -> int:
    """blscfg.c bls_cmp(): the entry ids (file names without .conf) compared as
    name-version-release; 1 when id0 is newer."""
    for x, y in zip(_split_nvr(id0), _split_nvr(id1)):
        r = rpm_vercmp(x, y)
        if r:
            return r
    return 0
