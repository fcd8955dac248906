"""autofs file maps in sun format (autofs(5)): the entries, read as the automounter reads them.

autofs 5.1 modules/lookup_file.c `read_one()` (autofs 5.1.1, the Distrotech/autofs mirror at
97b24d8d), a character state machine. A key runs to the
first blank outside `"` quotes and `\\` escapes (both kept in the key: sanitize_key() in
parsers/autofs_entry.py takes them out); the entry runs to the end of the line, kept as
written (parse_entry() there reads it). A backslash before a newline joins the lines. A line
starting with `#` is a comment. A line that is followed by a line starting with a blank is a
bad entry unless that line is blank ("bad map entry"), and a comment swallows such lines
too. An unclosed `"` drops the entry. Keys are at most NAME_MAX (255) bytes.
"""

from __future__ import annotations

from .._record import FrozenRecord

KEY_MAX_LEN = 255  # include/automount.h: NAME_MAX
MAPENT_MAX_LEN = 16384
_SPACE = " \t\n\v\f\r"  # C isspace()
_BLANK = " \t"  # C isblank()
# read_one() states and what it has found (lookup_file.c LOOKUP_STATE, FOUND_STATE, ESCAPES)
_BEGIN, _COMPARE, _STAR, _BADENT, _ENTSPC, _GETENT = range(6)
_NOTHING, _GOT_STAR, _REAL, _PLUS = range(4)
_NONE, _CHAR, _VAL, _ALL = range(4)
_FAST_LINE = 4096  # longer lines take read_one()'s own loop (the length limits apply there)


class MapEntry(FrozenRecord):
    __slots__ = ("key", "entry", "line", "problem")
    key: str  # as read_one() keeps it: quotes and backslashes in (sanitize_key() takes them out)
    entry: str  # the rest of the entry as read_one() keeps it (parse_entry() reads it)
    line: int  # where the key starts
    problem: str | None  # set: read_one() drops the entry after reading its key, and why

    def __init__(self, key: str, entry: str, line: int, problem: str | None = None):
        self.key = key
        self.entry = entry
        self.line = line
        self.problem = problem


def read_map(text: str, fast: bool = True) -> list[MapEntry]:
    """Each entry read_one() returns, in order (a `+map` include has its `+` key and no
    entry), and each it drops after reading a key, with its problem. `fast=False`: every
    line through read_one()'s loop (the tests hold the plain-line shortcut to it)."""
    out: list[MapEntry] = []
    i, n, line = 0, len(text), 1
    while i < n:
        if fast and (i == 0 or text[i - 1] == "\n"):
            end = text.find("\n", i)
            end = n if end < 0 else end
            plain = _simple_line(text, i, end)
            if plain is not None:
                if plain is not _SKIP:
                    out.append(MapEntry(plain[0], plain[1], line))
                i, line = end + 1, line + 1
                continue
        i, line = _read_one(text, i, line, out)
    return out


_SKIP = ("",)  # _simple_line(): a blank or comment line


def _simple_line(text: str, start: int, end: int) -> tuple[str, ...] | None:
    """(key, entry) of a plain line as read_one() reads it, _SKIP for a blank line or a
    comment, or None when the line needs read_one()'s own loop: quotes, escapes, a `*` or
    `+` key, a key alone, a control character, a long line, or a next line starting with
    a blank (which read_one() reads as part of this entry)."""
    line = text[start:end]
    stripped = line.lstrip(_SPACE)
    if not stripped:
        return _SKIP  # read_one() skips blanks and newlines before a key
    if end + 1 < len(text) and text[end + 1] in _BLANK:
        return None
    if "\\" in line:
        return None  # an escape, or a backslash that joins the next line (to a comment too)
    if stripped[0] == "#":
        return _SKIP
    if len(line) > _FAST_LINE or '"' in line or stripped[0] in "*+" or any(c in line for c in "\v\f\r"):
        return None
    key, _, rest = stripped.replace("\t", " ").partition(" ")
    entry = stripped[len(key):].lstrip(_BLANK)
    if not rest.strip(_BLANK) or not entry or len(key) > KEY_MAX_LEN // 4:  # a key of 63 characters is < 255 bytes
        return None
    if end == len(text) and len(entry) == 1 and entry.isascii():
        return None  # a one-byte entry at the end of a map without a last newline: read_one() drops it
    return key, entry


def _read_one(text: str, i: int, line: int, out: list[MapEntry]) -> tuple[int, int]:
    """lookup_file.c read_one() from `i` (a fresh call: its `next:` label is a fresh call
    too). Appends what it returns, or a dropped entry whose key it read, to `out`; returns
    where the next call starts and its line number."""
    n = len(text)
    key: list[str] = []
    ent: list[str] | None = None
    state, getting, gotten, escape = _BEGIN, _NOTHING, _NOTHING, _NONE
    val_done = False
    key_line = line
    while i < n:
        ch = text[i]
        i += 1
        if ch == "\n":
            line += 1
        if val_done:  # the escaped character's later bytes ended the escape in read_one()
            escape, val_done = _NONE, False
        if escape == _NONE:
            if ch == "\\":
                if i < n and text[i] == "\n":  # a continued line
                    i += 1
                    line += 1
                    continue
                escape = _CHAR
            elif ch == '"':
                escape = _ALL
        elif escape == _CHAR:
            escape = _VAL
            val_done = ch > "\x7f" and not "\udc80" <= ch <= "\udcff"  # more than one byte in UTF-8
        elif escape == _VAL:
            escape = _NONE  # read_one() does not look at this character: `\x\y` escapes x only
        elif ch == '"':
            escape = _NONE

        if state == _BEGIN:
            if escape == _NONE:
                if ch in _SPACE:
                    continue
                key_line = line
                if ch == "#":
                    state = _BADENT
                elif ch == "*":
                    state = _STAR
                    key.append(ch)
                else:
                    if ch == "+":
                        gotten = _PLUS
                    state = _COMPARE
                    key.append(ch)
            elif escape == _ALL:
                key_line = line
                state = _COMPARE
                key.append(ch)
            elif escape == _VAL:
                state = _BADENT
        elif state == _COMPARE:
            if ch == "\n":
                state = _BEGIN
                if gotten == _PLUS:
                    return _got(out, key, ent, gotten, key_line, i, line)
                if escape == _ALL:
                    return _dropped(out, key, ent, key_line, 'unmatched " in the map key', i, line)
                if escape != _VAL:
                    return _got(out, key, ent, gotten, key_line, i, line)  # a key alone: found nothing
            elif ch in _SPACE and escape == _NONE:
                getting = _REAL
                state = _ENTSPC
                if gotten == _PLUS:
                    return _got(out, key, ent, gotten, key_line, i, line)
            elif escape != _CHAR:
                if _byte_len("".join(key)) >= KEY_MAX_LEN:
                    state, gotten = _BADENT, _NOTHING
                    key.append(" (too long)")  # warned "map key ... is too long"
                else:
                    if escape == _VAL:
                        key.append("\\")
                    key.append(ch)
        elif state == _STAR:
            if ch == "\n":
                state = _BEGIN
            elif ch in _SPACE and gotten < _GOT_STAR and escape == _NONE:
                getting = _GOT_STAR
                state = _ENTSPC
            elif escape != _CHAR:
                state = _BADENT
        elif state == _BADENT:
            if ch == "\n":
                if i < n and text[i] in _BLANK:
                    continue  # the next line starting with a blank is more of this entry
                state = _BEGIN
                if gotten == _REAL or gotten == getting:
                    return _got(out, key, ent, gotten, key_line, i, line)
                return _dropped(out, key, ent, key_line, "bad map entry (a line after it starts with a blank)",
                                i, line)
            if ch not in _BLANK:
                gotten = _NOTHING
        elif state == _ENTSPC:
            if ch == "\n":
                state = _BEGIN  # the key is kept: read_one() goes on with the next line
            elif ch not in _SPACE or escape != _NONE:
                if escape != _NONE:
                    if escape == _CHAR:
                        continue
                    if ord(ch) <= 32:
                        getting, state = _NOTHING, _BADENT
                        continue
                    ent = ["\\", ch] if escape == _VAL else [ch]
                else:
                    ent = [ch]
                state = _GETENT
                gotten = getting
                if i >= n and ch > "\x7f":  # read_one() reads bytes: the rest of this one's come in _GETENT, then EOF
                    return _got(out, key, ent, gotten, key_line, i, line)
        elif state == _GETENT:
            if ch == "\n":
                if escape == _ALL:
                    return _dropped(out, key, ent, key_line, 'unmatched " in the map entry', i, line)
                if i < n and text[i] in _BLANK:
                    state = _BADENT
                    continue
                state = _BEGIN
                if gotten == _REAL or gotten == getting:
                    return _got(out, key, ent, gotten, key_line, i, line)
            elif ent is not None and len(ent) < MAPENT_MAX_LEN:
                ent.append(ch)
                if i >= n and (gotten == _REAL or gotten == getting):
                    return _got(out, key, ent, gotten, key_line, i, line)
            elif ent is not None:
                state = _BADENT  # warned "map entry ... is too long": the entry read so far is kept
    return n, line  # the end of the map: what was read is dropped


def _got(out: list[MapEntry], key: list[str], ent: list[str] | None, gotten: int, key_line: int, i: int,
         line: int) -> tuple[int, int]:
    """read_one()'s got_it: an entry, unless nothing was found (then its next:)."""
    if gotten != _NOTHING:
        out.append(MapEntry("".join(key), "".join(ent or ()), key_line))
    return i, line


def _dropped(out: list[MapEntry], key: list[str], ent: list[str] | None, key_line: int, why: str, i: int,
             line: int) -> tuple[int, int]:
    """read_one()'s warning and next: the entry is dropped; kept here, with why, when it has a key."""
    if key:
        out.append(MapEntry("".join(key), "".join(ent or ()), key_line, why))
    return i, line


def _byte_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape")) if not text.isascii() else len(text)
