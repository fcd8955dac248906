"""One autofs map entry, read as autofs 5.1 reads it (parsers/autofs_map.py reads the map).

Cited by function name (autofs 5.1.1, the Distrotech/autofs mirror at 97b24d8d):

- `sanitize_key()` is lib/parse_subs.c `sanitize_path()`: quotes and escapes removed,
  repeated slashes made one (a trailing slash stays). A control character outside quotes
  refuses the key, and so does a non-ASCII one (`*scp < 32` of a signed char, as x86
  compilers make it). So does a `/` in an indirect map's key, or a direct map's key that
  does not start with `/`.
- `parse_entry()` is modules/parse_sun.c `parse_mount()`: `expandsunent()` puts the key in
  place of `&` and makes a colon after a `:/` a slash (not inside quotes, not after a
  backslash), then the `-options` groups and the location, each cut by `chunklen()` and
  unquoted by `dequote()`; a `#` where a chunk could start ends the entry (`skipspace()`).
  The entry's options are joined to the master map's as `concat_options()` joins them (a
  string that holds the other is kept alone). A multi-mount entry (`/offset` paths) is not
  one NFS location: None.

`$VAR` macros are left as written: their values come from the automount daemon's `-D`
options and uname, which a snapshot does not have.
"""

from __future__ import annotations

from .._lazyre import lazy
from .._record import FrozenRecord
from .autofs_map import _BLANK, _SPACE  # C isblank(), isspace()

_SKIPPED = _SPACE + "\b"  # skipspace()


class SunEntry(FrozenRecord):
    __slots__ = ("options", "location", "problem")
    options: tuple[str, ...]  # the master map's and the entry's, joined as parse_mount() joins them
    location: str  # unquoted; replicated locations joined by a blank
    problem: str | None  # set: parse_mount() refuses the entry, and why (nothing is mounted)

    def __init__(self, options: tuple[str, ...], location: str, problem: str | None = None):
        self.options = options
        self.location = location
        self.problem = problem


def sanitize_key(key: str, direct: bool) -> str | None:
    """parse_subs.c sanitize_path() of a map key for a direct (`/-`) or indirect map, or
    None where autofs skips the entry."""
    if "/" in key:
        if not direct or not key.startswith("/"):
            return None
    elif direct:
        return None
    out: list[str] = []
    quote = dquote = seen_slash = False
    for c in key:
        if quote and c > "\x7f" and not "\udc80" <= c <= "\udcff":
            return None  # the escape covers its first byte only: the next is a non-ASCII byte unescaped
        if not quote:
            if c == '"':
                dquote = not dquote
                continue
            if not dquote:
                if c < " " or c > "\x7f":
                    return None  # "Badness in string": `*scp < 32` of a signed char (x86), non-ASCII too
                if c == "\\":
                    quote = True
                    continue
            if c == "/":
                if seen_slash:
                    continue
                seen_slash = True
            else:
                seen_slash = False
        quote = False
        out.append(c)
    if dquote:
        return None
    # sanitize_path() means to drop a trailing slash, but tests strlen() of the string's end
    # (always 0): the slash stays
    return "".join(out)


def _skipspace(s: str, k: int) -> int:
    """parse_subs.c skipspace(): blanks and backspaces skipped; a `#` ends the entry (a comment)."""
    while k < len(s) and s[k] in _SKIPPED:
        k += 1
    return len(s) if s[k:k + 1] == "#" else k


def chunklen(s: str, k: int, expect_colon: bool) -> int:
    """parse_subs.c chunklen(): the length of the chunk at `k`. Blanks end it, except before
    the `:/` of a location (`expect_colon`); `"` quotes and `\\` escapes hold it together."""
    start, n, quote = k, len(s), False
    while k < n:
        c = s[k]
        if c == "\\":
            if not quote:
                quote = True
                k += 1
                continue
        elif c == '"':
            if not quote:
                while k + 1 < n:
                    k += 1
                    if s[k] == '"':
                        break
                    if s.startswith(":/", k):
                        expect_colon = False
                else:
                    return n - start  # no closing quote: the rest of the entry
        elif c == ":":
            if expect_colon and s.startswith(":/", k):
                expect_colon = False
            k += 1
            continue  # the escape state carries past a colon, as in chunklen()
        elif c in _BLANK and expect_colon:
            k += 1
            continue
        elif c in _SPACE or c == "\b":
            if not quote:
                return k - start
        quote = False
        k += 1
    return k - start


def dequote(s: str) -> str | None:
    """parse_subs.c dequote(): trailing whitespace dropped (unless escaped or quoted), `"`
    quotes and `\\` escapes removed; None for an unmatched quote."""
    end = len(s)
    while end > 0 and s[end - 1] in _SPACE:
        j = end - 2
        if j > 0 and s[j] in '\\"':
            break
        end -= 1
    out: list[str] = []
    quote = dquote = False
    for c in s[:end]:
        if not quote:
            if c == '"':
                dquote = not dquote
                continue
            if not dquote and c == "\\":
                quote = True
                continue
        quote = False
        out.append(c)
    return None if dquote else "".join(out)


def expand(entry: str, key: str) -> str:
    """parse_sun.c expandsunent() but for `$` macros: `&` becomes the key (blanks in it
    escaped), and a colon after a `:/` in the same word becomes a slash (slashify_colons,
    on by default); neither inside quotes nor after a backslash."""
    if "&" not in entry and entry.count(":") < 2:
        return entry
    escaped_key = "".join("\\" + c if c in _SPACE else c for c in key)
    out: list[str] = []
    k, n, seen_colons = 0, len(entry), False
    while k < n:
        c = entry[k]
        if c == "&":
            out.append(escaped_key)
        elif c == "\\":
            out.append(entry[k:k + 2])
            k += 1
        elif c == '"':
            close = entry.find('"', k + 1)
            close = n - 1 if close < 0 else close
            out.append(entry[k:close + 1])
            k = close
        elif c == ":":
            out.append("/" if seen_colons else ":")
            if entry[k + 1:k + 2] == "/":
                seen_colons = True
        else:
            if c in _SPACE:
                seen_colons = False
            out.append(c)
        k += 1
    return "".join(out)


def _concat(left: str | None, right: str | None) -> str | None:
    """parse_sun.c concat_options()."""
    if not left:
        return right
    if not right:
        return left
    return f"{left},{right}"


def _is_multi(s: str) -> bool:
    """parse_sun.c check_is_multi(): an entry of `/offset` paths (a multi-mount)."""
    k = 1 if s.startswith('"') else 0
    if s[k:k + 1] == "/":
        return True
    first, n = True, len(s)
    while k < n:
        k = _skipspace(s, k)
        if not first:
            if s[k:k + 1] == '"':
                k += 1
            if s[k:k + 1] in ("/", "-") and k < n:
                return True
        while s[k:k + 1] == "-":
            k += max(chunklen(s, k, False), 1)
            k = _skipspace(s, k)
        k += max(chunklen(s, k, ":/" in s[k:]), 1)  # autofs would spin on a lone \b: step over it
        first = False
    return False


def parse_entry(entry: str, key: str, master_options: str, append: bool, fast: bool = True) -> SunEntry | None:
    """parse_mount() of one entry for `key`, with the master map's options (`-` removed,
    groups joined by commas) and autofs.conf `append_options`; None for a multi-mount.
    `fast=False`: every entry through parse_mount()'s own steps (the tests hold the
    shortcut for plain entries to them)."""
    cut = _plain_cut(entry, key) if fast else None
    if cut is None:
        cut = _cut(expand(entry, key))
        if cut is None:
            return None
    groups, chunks = cut
    options = master_options
    if groups:
        mnt: str | None = None
        for group in groups:  # None (an unmatched quote) adds nothing
            mnt = group if mnt and group and mnt in group else _concat(mnt, group)
        if append:
            options = mnt if options and mnt and options in mnt else (_concat(options, mnt) or "")
        else:
            options = mnt or ""
    split = tuple(o for o in options.split(",") if o)
    locations: list[str] = []
    for loc in chunks:
        if loc is None:
            return SunEntry(split, " ".join(locations), "an unmatched quote in the location")
        why = _invalid_location(loc)
        if why:
            return SunEntry(split, loc, why)
        locations.append(loc)
    location = " ".join(locations)
    if not location:
        return SunEntry(split, "", "the entry is empty")
    return SunEntry(split, location)


def _cut(p: str) -> tuple[list[str | None], list[str | None]] | None:
    """The option groups and location chunks of an expanded entry, each dequoted (None: an
    unmatched quote), as parse_mount() cuts them; None for a multi-mount."""
    k = _skipspace(p, 0)
    groups: list[str | None] = []
    while p[k:k + 1] == "-":
        size = chunklen(p, k + 1, False)
        groups.append(dequote(p[k + 1:k + 1 + size]))
        k = _skipspace(p, k + 1 + size)
    if _is_multi(p[k:]):
        return None
    chunks: list[str | None] = []
    while k < len(p):
        size = chunklen(p, k, ":/" in p[k:])
        chunks.append(dequote(p[k:k + size]))
        if chunks[-1] is None:
            break
        k = _skipspace(p, k + max(size, 1))  # never 0: skipspace() passes what ends a chunk
    return groups, chunks


# Blanks and printable ASCII but `"`, `#`, `&` and `\` (what quotes, ends, expands or
# escapes): such an entry's chunks are its words (most maps: `-opts server:/path`)
_PLAIN = lazy(r"[ \t!$%'-\[\]-~]*")
_PLAIN_KEY = lazy(r"[A-Za-z0-9._+,=@%-]*")


def _plain_cut(entry: str, key: str) -> tuple[list[str | None], list[str | None]] | None:
    """_cut(expand(entry, key)) of a plain entry, from its words; None when the entry is not
    plain (or may be a multi-mount): then _cut() reads it."""
    if "&" in entry:
        if not _PLAIN_KEY.fullmatch(key):
            return None
        entry = entry.replace("&", key)
    if not _PLAIN.fullmatch(entry):
        return None
    words = entry.split()
    at = 0
    while at < len(words) and words[at][0] == "-":
        at += 1
    locations = words[at:]
    with_colon = sum(":" in w for w in words)
    if (any(w.count(":") > 1 for w in words) or any(w[0] in "/-" for w in locations)
            or (with_colon and not all(":/" in w for w in locations))):
        return None  # slashify_colons, a multi-mount, or a chunk that runs over blanks to its `:/`
    return [w[1:] for w in words[:at]], list(locations)


_HOST = lazy(r"[A-Za-z0-9\-._,()#@:\[\]%]*")  # validate_location(): isalnum() and these before the `:/`
_FILE_MAP_PREFIXES = ("file:", "yp:", "nis:", "nisplus:", "ldap:", "ldaps:", "sss:", "dir:")


def _invalid_location(loc: str) -> str | None:
    """parse_sun.c validate_location(): why autofs refuses it, or None."""
    if loc.startswith(":"):
        return None
    if ":/" not in loc:
        esc = loc.find("\\")
        if (":" not in loc or (esc >= 0 and loc[esc + 1:esc + 2] == ":") or loc.startswith(_FILE_MAP_PREFIXES)):
            return None
        return f"expected colon delimiter not found in location {loc}"
    host = loc[:loc.index(":/")]
    good = _HOST.match(host).end()  # the class matches the empty string: never None
    if good < len(host):
        return f'invalid character "{host[good]}" found in location {loc}'
    if not loc[len(host) + 1:]:
        return f"invalid location {loc}"
    return None
