"""udev's string matching and `$`/`%` substitutions, as systemd does them.

- `match_string()`: udev-rules.c `rule_line_add_token()` (match type chosen from the
  value: empty, `?*`, plain, glob, `subsystem|bus|class`; the value split into a nulstr at
  `|`, an empty alternative meaning "or empty") and `token_match_string()` (fnmatch(3)
  with flags 0, FNM_CASEFOLD for an `i"..."` value).
- `substitute_format()`: udev-format.c `udev_event_apply_format()`: `$kernel %k`,
  `$number %n`, `$devpath %p`, `$id %b`, `$driver %d`, `$attr{f} %s{f}`, `$env{k} %E{k}`,
  `$result %c`, `$parent %P`, `$name`, `$links`, `$root %r`, `$sys %S`, `$devnode %N`,
  `$major %M`, `$minor %m`, `$$`, `%%`. What cannot be told from a snapshot (the program
  result when the program was not run, major/minor) is left as written and reported.
"""

from __future__ import annotations

import functools
import re

from .._lazyre import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

_GLOB_CHARS = "*?["
_SUBSYSTEM_WORDS = ("subsystem", "bus", "class")


@functools.lru_cache(maxsize=4096)
def _fnmatch_regex(pattern: str, nocase: bool) -> re.Pattern:
    """fnmatch(3) with flags 0 (or FNM_CASEFOLD): `*` and `?` match any character,
    `/` and a leading `.` included; brackets with `!`/`^`; a backslash quotes."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "\\" and i < n:
            out.append(re.escape(pattern[i]))
            i += 1
        elif c == "[":
            j = i
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                end = pattern.find(":]", j + 2) if pattern.startswith("[:", j) else -1
                j = end + 2 if end >= 0 else j + 1
            if j >= n:
                out.append(re.escape(c))  # no closing bracket: a literal '['
                continue
            body = pattern[i:j]
            i = j + 1
            neg = body[:1] in ("!", "^")
            body = body[1:] if neg else body
            body = re.sub(r"\[:(\w+):\]", lambda m: _CLASSES.get(m.group(1), ""), body.replace("\\", "\\\\"))
            out.append(f"[{'^' if neg else ''}{body}]")
        else:
            out.append(re.escape(c))
    return re.compile("".join(out) + r"\Z", re.S | (re.I if nocase else 0))


_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
            "space": r" \t\n\r\f\v", "xdigit": "0-9A-Fa-f", "punct": r"!-/:-@\[-`{-~", "blank": r" \t"}


def fnmatch(pattern: str, text: str, nocase: bool = False) -> bool:
    return _fnmatch_regex(pattern, nocase).match(text) is not None


def match_string(pattern: str, op: str, value: str | None, nocase: bool = False, subsystem_key: bool = False) -> bool:
    """True when the token holds (`op` is `==` or `!=`); an unset value is ""."""
    text = value or ""
    if subsystem_key and pattern in _SUBSYSTEM_WORDS:
        words = _SUBSYSTEM_WORDS
        hit = (text.lower() if nocase else text) in words
        return hit == (op == "==")
    if pattern == "" or pattern == "?*":
        hit = text == ""
        if pattern == "?*":
            op = "!=" if op == "==" else "=="
        return hit == (op == "==")
    alternatives = pattern.split("|")
    with_empty = any(a == "" for a in alternatives)
    alternatives = [a for a in alternatives if a]
    if with_empty and text == "":
        hit = True
    elif any(c in pattern for c in _GLOB_CHARS):
        hit = any(fnmatch(a, text, nocase) for a in alternatives)
    else:
        hit = any((a.lower() == text.lower()) if nocase else a == text for a in alternatives)
    return hit == (op == "==")


@functools.lru_cache(maxsize=8192)  # rule sets repeat their patterns ("add", "block", "?*"...)
def compile_match(pattern: str, op: str, nocase: bool = False,
                  subsystem_key: bool = False) -> Callable[[str | None], bool]:
    """match_string() for one token, decided once: a function of the value alone. The
    engine compiles each token once per scan and calls this per device; the choices
    (subsystem words, empty or `?*`, alternatives split at `|`, glob or plain, case) are
    match_string()'s, in its order."""
    want = op == "=="
    if subsystem_key and pattern in _SUBSYSTEM_WORDS:
        words = _SUBSYSTEM_WORDS
        if nocase:
            return lambda value: ((value or "").lower() in words) == want
        return lambda value: ((value or "") in words) == want
    if pattern == "":
        return lambda value: (not value) == want
    if pattern == "?*":  # non-empty: the operator turned round
        return lambda value: (not value) != want
    alternatives = pattern.split("|")
    with_empty = "" in alternatives
    alternatives = [a for a in alternatives if a]
    if any(c in pattern for c in _GLOB_CHARS):
        tests = tuple(_fnmatch_regex(a, nocase).match for a in alternatives)

        def glob(value: str | None) -> bool:
            text = value or ""
            return ((with_empty and not text) or any(t(text) is not None for t in tests)) == want
        return glob
    if nocase:
        lowered = frozenset(a.lower() for a in alternatives)
        return lambda value: ((with_empty and not value) or (value or "").lower() in lowered) == want
    if len(alternatives) == 1 and not with_empty:
        only = alternatives[0]
        return lambda value: ((value or "") == only) == want
    plain = frozenset(alternatives)
    return lambda value: ((with_empty and not value) or (value or "") in plain) == want


_LONG = {"devpath": "p", "number": "n", "kernel": "k", "id": "b", "driver": "d", "devnode": "N", "attr": "s",
         "sysfs": "s", "env": "E", "major": "M", "minor": "m", "result": "c", "parent": "P", "name": "D",
         "links": "L", "root": "r", "sys": "S", "tempnode": "N"}
_FORMAT = lazy(r"\$\$|%%|\$(" + "|".join(sorted(_LONG, key=len, reverse=True)) + r")(?:\{([^}]*)\})?"
                     r"|%([pnkbdNsEMmcPrS])(?:\{([^}]*)\})?")


def _attr_value(ev: Any, name: str) -> str | None:
    for level in (ev.levels[0], ev.parent):
        if level is not None:
            value = ev.attr_of(level, name)
            if value is not None:
                return value.rstrip()
    return None


@functools.lru_cache(maxsize=4096)
def _segments(text: str) -> tuple[str | tuple[str, str, str | None], ...]:
    """`text` split once into plain text and its substitutions, each (as written, one-letter
    code, argument or None), in order: a rule's text is substituted for every device."""
    parts: list[str | tuple[str, str, str | None]] = []
    pos = 0
    for m in _FORMAT.finditer(text):
        if m.start() > pos:
            parts.append(text[pos:m.start()])
        whole = m.group(0)
        if whole in ("$$", "%%"):
            parts.append(whole[0])
        elif m.group(1):
            parts.append((whole, _LONG[m.group(1)], m.group(2)))
        else:
            parts.append((whole, m.group(3), m.group(4)))
        pos = m.end()
    if pos < len(text):
        parts.append(text[pos:])
    return tuple(parts)


def substitute_format(text: str, ev: Any) -> tuple[str, str | None]:
    """(substituted text, the first thing that could not be told or None). `ev` is the
    engine's event (dev, levels, parent, props, name, result, out.devlinks). The
    substitutions are made left to right (an attribute is read when its turn comes)."""
    if "$" not in text and "%" not in text:
        return text, None
    unknown: list[str] = []
    kernel = ev.dev.values.get("KERNEL") or ""

    def one(whole: str, code: str, arg: str | None) -> str:
        if code == "k":
            return kernel
        if code == "n":
            if ev.trace is not None:
                ev.trace.append("%n")
            digits = re.search(r"\d+$", kernel)
            return digits.group(0) if digits else ""
        if code == "p":
            return ev.dev.values.get("DEVPATH") or ""
        if code == "b":
            return (ev.parent.kernel or "") if ev.parent else ""
        if code == "d":
            return (ev.parent.driver or "") if ev.parent else ""
        if code == "E":
            return ev.props.get(arg or "", "")
        if code == "s":
            value = _attr_value(ev, arg or "")
            if value is None and (arg or "").startswith("["):
                unknown.append(whole)
                return whole
            return value or ""
        if code == "c":
            if not ev.result_known:
                unknown.append("PROGRAM result")
                return whole
            result = ev.result or ""
            if arg:
                words, idx = result.split(), arg.rstrip("+")
                k = int(idx) - 1 if idx.isdigit() else 0
                return " ".join(words[k:]) if arg.endswith("+") else (words[k] if 0 <= k < len(words) else "")
            return result
        if code == "D":
            return ev.name or kernel
        if code == "P":
            return (ev.levels[1].kernel or "") if len(ev.levels) > 1 else ""
        if code == "L":
            return " ".join(ev.out.devlinks)
        if code == "r":
            return "/dev"
        if code == "S":
            return "/sys"
        if code == "N":
            return f"/dev/{kernel}"
        number = ev.props.get("MAJOR" if code == "M" else "MINOR")  # the uevent's MAJOR/MINOR
        if number is None:
            unknown.append(whole)
            return whole
        return number

    value = "".join([part if part.__class__ is str else one(*part) for part in _segments(text)])
    return value, (unknown[0] if unknown else None)
