"""udev rules files, read and validated the way systemd-udevd does (udev(7); systemd
src/udev/udev-rules.c at 0052418bf8a2, cited by function name).

Reading (`udev_rules_parse_file()`):
- lines end at `\\n`, `\\r`, `\\r\\n` or NUL (`read_line()`); a physical line of UDEV_LINE_SIZE
  (16384) bytes or more makes `read_line()` fail and udev ignores the whole file;
- leading whitespace is skipped; a line starting with `#` is ignored "regardless of line
  continuation": inside a continuation it is skipped and the continuation goes on;
- a line ending in a backslash continues on the next one (the backslash is removed, the
  next line is appended without its leading whitespace); an empty line ends it; a
  continued line reaching UDEV_LINE_SIZE is ignored ("Line is too long, ignored."), as is
  a continuation left open at the end of the file;
- a rule's line number is that of its last physical line (udev's `line_nr`).

Tokens (`parse_line()`, `udev_rule_parse_value()`): `KEY[{attr}] OP "value"` separated by
blanks and/or commas (a missing separator is only a style notice); OP one of `==`, `!=`,
`+=`, `-=`, `=`, `:=`; the value must be double-quoted, optionally prefixed by `e` (C
escapes, cunescape()) and/or `i` (case-insensitive match), each at most once. In a plain
value only `\\"` is an escape. A lexical error drops the whole line ("Invalid key/value
pair, ignoring.").

Validation (`parse_token()`, parsers/udev_tokens.py): an invalid token drops the whole
line; a second GOTO on a line is ignored, a second LABEL replaces the first. A dropped line
is kept here with its `problem` and the tokens that were valid, so
the engine can name it on the devices it would have configured.
"""

from __future__ import annotations

import re

from .._lazyre import lazy
from .._record import FrozenRecord
from .udev_tokens import RuleError, UdevToken, check_token

LINE_SIZE = 16384  # UDEV_LINE_SIZE, src/udev/udev-def.h
_EOL = lazy(r"\r\n|\r|\n|\x00")
_WS = " \t\n\r"
_SKIPPED = _WS + ","  # between tokens
_OPS = ("==", "!=", "+=", "-=", ":=", "=")


class UdevRule(FrozenRecord):
    __slots__ = ("line", "tokens", "problem", "label", "goto")
    line: int
    tokens: tuple[UdevToken, ...]
    problem: str | None  # set: udev drops this line; `tokens` are the valid ones
    label: str | None
    goto: str | None

    def __init__(self,
                 line: int, tokens: tuple[UdevToken, ...], problem: str | None = None, label: str | None = None,
                 goto: str | None = None):
        self.line = line
        self.tokens = tokens
        self.problem = problem
        self.label = label
        self.goto = goto


class ParsedRules(FrozenRecord):
    __slots__ = ("rules", "file_problem")
    rules: tuple[UdevRule, ...]  # every rule line, dropped ones with their `problem`
    file_problem: str | None  # set: udev ignores the whole file

    def __init__(self, rules: tuple[UdevRule, ...], file_problem: str | None = None):
        self.rules = rules
        self.file_problem = file_problem


_C_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"',
              "'": "'", "s": " "}


def _cunescape(text: str) -> str:
    """systemd cunescape_length(): C escapes; an unknown or truncated escape is an error."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1:i + 2]
        if nxt in _C_ESCAPES:
            out.append(_C_ESCAPES[nxt])
            i += 2
        elif nxt == "x" and re.match(r"[0-9A-Fa-f]{2}", text[i + 2:i + 4]):
            out.append(chr(int(text[i + 2:i + 4], 16)))
            i += 4
        elif nxt in ("u", "U") and re.match(f"[0-9A-Fa-f]{{{4 if nxt == 'u' else 8}}}",
                                            text[i + 2:i + (6 if nxt == "u" else 10)]):
            n = 4 if nxt == "u" else 8
            code = int(text[i + 2:i + 2 + n], 16)
            if not 0 < code <= 0x10FFFF:  # cunescape_one(): not a valid Unicode character
                raise RuleError(f"invalid escape sequence in e\"...\" value at {text[i:i + 2 + n]!r}")
            out.append(chr(code))
            i += 2 + n
        elif re.match(r"[0-7]{3}", text[i + 1:i + 4]):
            out.append(chr(int(text[i + 1:i + 4], 8)))
            i += 4
        else:
            raise RuleError(f"invalid escape sequence in e\"...\" value at {text[i:i + 2]!r}")
    return "".join(out)


def _value(line: str, pos: int) -> tuple[str, bool, int]:
    """udev_rule_parse_value(): (value, case-insensitive, end position)."""
    escaped = nocase = False
    k = pos
    while k < len(line) and line[k] != '"' and k < pos + 2:
        if line[k] == "e" and not escaped:
            escaped = True
        elif line[k] == "i" and not nocase:
            nocase = True
        else:
            raise RuleError("Invalid key/value pair, ignoring. (value is not double-quoted)")
        k += 1
    if k >= len(line) or line[k] != '"':
        raise RuleError("Invalid key/value pair, ignoring. (value is not double-quoted)")
    i, out = k + 1, []
    while True:
        if i >= len(line):
            raise RuleError("Invalid key/value pair, ignoring. (unterminated quoted value)")
        c = line[i]
        if c == '"':
            break
        if c == "\\" and (escaped or line[i + 1:i + 2] == '"'):
            if i + 1 >= len(line):
                raise RuleError("Invalid key/value pair, ignoring. (unterminated quoted value)")
            out.append(line[i:i + 2] if escaped else '"')
            i += 2
            continue
        out.append(c)
        i += 1
    value = "".join(out)
    return (_cunescape(value) if escaped else value), nocase, i + 1


# The common token in one regular expression: blanks and commas skipped, then a key as
# _lex() ends it (blank, `=`, `{`, or an operator's first character followed by `=`; its
# first character no comma, so the skip cannot give one back), an optional {attr}, the operator, an
# optional `i` prefix and a quoted value without a backslash. A token it does not take
# (escapes, `e` prefix, errors, the end of the line) goes through _lex()'s own loop, which
# gives the same token for what the expression takes: a distribution's thousands of lines
# are read at regular-expression speed.
_TOKEN_RE = (r'[ \t\n\r,]*((?:[^ \t\n\r,={+\-!:]|[+\-!:](?!=))(?:[^ \t\n\r={+\-!:]|[+\-!:](?!=))*)'
             r'(\{[^}]*\})?[ \t\n\r]*(==|!=|\+=|-=|:=|=)[ \t\n\r]*(i?)"([^"\\]*)"')
_TOKEN = lazy(_TOKEN_RE)
# A whole line in one findall(): such tokens, or else a run of other characters (a run
# at a time, so a failed try is not repeated at each of its characters). A line whose
# other characters are only blanks and commas (those at its end) is read as _lex() reads
# it, token after token (each part of a token ends where nothing else could follow it, so
# the line splits into tokens one way only); any other line takes _lex(). Lines longer
# than _FAST_LINE take _lex() too: a failed try may scan to the end of the line.
_LINE = lazy(f"{_TOKEN_RE}|([^ \\t\\n\\r]+|[ \\t\\n\\r]+)")
_FAST_LINE = 1024


def _lex(line: str, pos: int) -> tuple[UdevToken | None, int]:
    """parse_line(): the next token from `pos`, or None at the end of the line."""
    m = _TOKEN.match(line, pos)
    if m is not None:
        key, attr, op, prefix, value = m.groups()
        return UdevToken(key, attr[1:-1] if attr else None, op, value, prefix == "i"), m.end()
    while pos < len(line) and line[pos] in _WS + ",":
        pos += 1
    if pos >= len(line):
        return None, pos
    end = pos
    while True:
        if end >= len(line):
            raise RuleError("Invalid key/value pair, ignoring.")
        if line[end] in _WS + "={" or (line[end] in "+-!:" and line[end + 1:end + 2] == "="):
            break
        end += 1
    key, attr, tmp = line[pos:end], None, end
    if line[end] == "{":
        close = line.find("}", end + 1)
        if close < 0:
            raise RuleError("Invalid key/value pair, ignoring. (no closing '}')")
        attr, tmp = line[end + 1:close], close + 1
    while tmp < len(line) and line[tmp] in _WS:
        tmp += 1
    op = next((o for o in _OPS if line.startswith(o, tmp)), None)
    if op is None:
        raise RuleError(f"Invalid key/value pair, ignoring. (no operator after {key})")
    tmp += len(op)
    while tmp < len(line) and line[tmp] in _WS:
        tmp += 1
    value, nocase, end = _value(line, tmp)
    return UdevToken(key, attr, op, value, nocase), end


class ParseMemo:
    """What one scan's parsing has already decided, shared by its files: a logical line's
    rule (all but its line number: parse_rule() is a function of the text) and a common
    token's validation (check_token() of the same key, attribute, operator and value).
    Rules files repeat both (`ACTION=="add"`, a site's generated lines), and the records
    are immutable, so sharing them changes no result."""
    __slots__ = ("lines", "tokens")

    def __init__(self) -> None:
        self.lines: dict[str, UdevRule] = {}
        self.tokens: dict[tuple[str, ...], tuple[UdevToken | None, str | None]] = {}


def _checked(tok: UdevToken) -> tuple[UdevToken | None, str | None]:
    """(the token as udev keeps it or None, why udev drops the line or None)."""
    try:
        return check_token(tok), None
    except RuleError as e:
        return None, f"{tok.key}{{{tok.attr}}}{tok.op}: {e}" if tok.attr else f"{tok.key}{tok.op}: {e}"


def parse_rule(line: str, n: int, memo: ParseMemo | None = None) -> UdevRule:
    """rule_add_line() for one logical line."""
    if memo is not None:
        seen = memo.lines.get(line)
        if seen is not None:
            return seen if seen.line == n else UdevRule(n, seen.tokens, seen.problem, seen.label, seen.goto)
    found = _LINE.findall(line) if len(line) <= _FAST_LINE else [("",) * 5 + ("x",)]
    known = memo.tokens if memo is not None else {}
    checked: list[tuple[UdevToken | None, str | None]] = []
    for raw in found:
        if raw[5]:
            if raw[5].strip(_SKIPPED):
                break  # not only tokens of the common kind: _lex() reads the line
            continue
        entry = known.get(raw)
        if entry is None:
            key, attr, op, prefix, value, _ = raw
            entry = known[raw] = _checked(UdevToken(key, attr[1:-1] if attr else None, op, value, prefix == "i"))
        checked.append(entry)
    else:
        rule = _rule_of(checked, None, n)
        if memo is not None:
            memo.lines[line] = rule
        return rule
    tokens, pos, lex_problem = [], 0, None
    while True:
        try:
            tok, pos = _lex(line, pos)
        except RuleError as e:
            lex_problem = str(e)
            break  # udev cannot tell where the next token starts
        if tok is None:
            break
        tokens.append(tok)
    rule = _rule_of([_checked(t) for t in tokens], lex_problem, n)
    if memo is not None:
        memo.lines[line] = rule
    return rule


def _rule_of(checked: list[tuple[UdevToken | None, str | None]], lex_problem: str | None, n: int) -> UdevRule:
    tokens: list[UdevToken] = []
    problem = label = goto = None
    for kept, error in checked:
        if kept is None:
            problem = problem or error  # keep reading: the valid tokens tell which devices the line was meant for
            continue
        key = kept.key
        if key == "GOTO":
            if goto is None:
                goto = kept.value
            continue  # "Contains multiple GOTO keys, ignoring GOTO=..."
        if key == "LABEL":
            label = kept.value  # a second LABEL replaces the first
            continue
        tokens.append(kept)
    return UdevRule(n, tuple(tokens), problem or lex_problem, label, goto)


def _physical_lines(text: str) -> list[str]:
    if "\r" not in text and "\x00" not in text:  # then "\n" is the only end of line _EOL finds
        lines = text.split("\n")
    else:
        lines = _EOL.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # the text ended with an end of line
    return lines


def _byte_len(text: str) -> int:
    """Length in bytes as udev reads the file (undecodable bytes kept as surrogates count 1)."""
    try:
        return len(text.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return len(text.encode("utf-8", "surrogatepass"))


def parse_udev_rules_file(text: str, memo: ParseMemo | None = None) -> ParsedRules:
    """The file's rules; `memo` (one per scan) lets its files share what they repeat."""
    rules: list[UdevRule] = []
    continuation: str | None = None
    too_long = False
    physical = _physical_lines(text)
    maybe_too_long = LINE_SIZE // 4  # a line shorter than this in characters is shorter in bytes too
    for n, raw in enumerate(physical, 1):
        if len(raw) >= maybe_too_long and _byte_len(raw) >= LINE_SIZE:
            lenient = parse_udev_rules_file("\n".join(physical[:n - 1] + [""] + physical[n:])).rules
            why = f"line {n} is {len(raw)} bytes long (udev reads lines shorter than {LINE_SIZE} bytes) and " \
                  f"udev ignores the whole file"
            return ParsedRules(tuple(UdevRule(r.line, r.tokens, r.problem or why, r.label, r.goto)
                                     for r in lenient), why)
        line = raw.lstrip(_WS)
        if not line and continuation is None:
            continue  # a blank line between rules
        if line.startswith("#"):
            continue  # ignored even inside a continuation
        if continuation is not None and not too_long:
            if len(continuation) + len(line) >= LINE_SIZE:
                too_long = True
            continuation += line
            if not too_long:
                line = continuation
        if line.endswith("\\"):
            if too_long:
                continue
            if continuation is None:
                continuation = line[:-1]
            else:
                continuation = continuation[:-1]
            continue
        if too_long:
            rules.append(UdevRule(n, parse_rule(continuation or "", n).tokens,
                                  f"Line is too long, ignored (a continued line of {LINE_SIZE} bytes or more)"))
        elif line:
            rules.append(parse_rule(line, n, memo))
        continuation, too_long = None, False
    if continuation is not None:
        rule = parse_rule(continuation, len(physical))
        rules.append(UdevRule(rule.line, rule.tokens, "Unexpected EOF after line continuation, line ignored.",
                              rule.label, rule.goto))
    return ParsedRules(tuple(rules))


def parse_udev_rules(text: str, source: str = "") -> list[UdevRule]:
    """The rules udev keeps (dropped lines left out)."""
    return [r for r in parse_udev_rules_file(text).rules if r.problem is None]
