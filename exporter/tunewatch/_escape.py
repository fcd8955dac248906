"""The one quoting layer per target language: host data never becomes code or markup.

Interface names, hostnames, mount points, NFS sources, file names and VM names are what
the scanned host (or whoever can name an interface on it) says they are: any byte the
kernel or the file system accepts. Every generator passes them through the function for
its language here, once, and nowhere builds code from them by string formatting:

* `sh`: a bash/POSIX sh word (shlex.quote: single quotes, nothing expands);
* `comment`: one line of a `#` comment (bash, YAML, goss), control bytes escaped;
* `text`: a terminal line: control bytes as `\\x1b`, undecodable bytes as `\\xff`;
* `xml`: XML 1.0 characters only (the rest as `\\x..` text);
* `label`: a Prometheus label value that is valid UTF-8, shortened with a hash suffix
  so that two long values never collide;
* `goss_yaml`, `no_template`: YAML (by PyYAML's emitter) and comments that goss's Go
  template pass (it renders every gossfile as a template first) copies literally:
  `{{` never appears in them;
* `plain_name`, `fstab_field`: where a mechanism has no quoting at all (udev rule values,
  `.link` globs, systemd unit names, `ETHTOOL_OPTS` split at blanks and `;`, fstab
  fields), a value that would need it is refused (`Unexpressible`) and the caller skips
  the step with that reason, never changes the value silently.

Names read from a file system arrive as Python str with undecodable bytes as lone
surrogates (os.fsdecode, "surrogateescape"); `text`, `xml` and `label` show those bytes as
`\\xNN`, so one bad byte never stops a report or the metrics page.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

# C0 controls, DEL, C1 controls and lone surrogates (undecodable bytes, surrogateescape)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_AUTOFS_SPECIAL = re.compile("[\\s\"\\\\\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_PLAIN = re.compile(r"[A-Za-z0-9_.@+-]+")
_SH_PLAIN = re.compile(r"[\w@%+=:,./-]+", re.ASCII)  # shlex.quote leaves these unquoted


class Unexpressible(ValueError):
    """A value a target cannot carry safely (no quoting there): the step is skipped with
    this reason."""


def _hex(match: re.Match) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text(value: object, keep_lines: bool = False) -> str:
    """For a terminal or a log: no raw control byte (ESC as `\\x1b`), undecodable bytes as
    `\\xff`; `keep_lines` keeps newlines and tabs (a multi-line message)."""
    return (_CONTROL_KEEP_LINES if keep_lines else _CONTROL).sub(_hex, "" if value is None else str(value))


def comment(value: object) -> str:
    """One line of a `#` comment in bash, YAML or a gossfile: nothing in it ends the
    comment (newlines, CR), and no Go template action (`{{`) starts in it."""
    return no_template(text(value))


def xml(value: object) -> str:
    """Only XML 1.0 characters (ElementTree escapes markup; it does not drop these)."""
    return _NOT_XML.sub(_hex, "" if value is None else str(value))


def utf8(value: object) -> str:
    """Encodable as UTF-8: undecodable bytes as `\\xNN`."""
    return _SURROGATE.sub(_hex, "" if value is None else str(value))


def label(value: object, max_chars: int = 100) -> str:
    """A Prometheus label value: valid UTF-8; a longer one is cut and ends with a short hash
    of the whole value, so two values equal in their first `max_chars` stay two series."""
    shown = utf8(value)
    if len(shown) <= max_chars:
        return shown
    import hashlib

    digest = hashlib.sha256(shown.encode("utf-8")).hexdigest()[:8]
    return shown[:max_chars - 10] + "\u2026~" + digest


def no_template(value: str) -> str:
    """Text that Go's text/template (goss renders its gossfile before parsing YAML) copies
    literally: `{{` opens an action, so it is written `{\\x7b` inside double-quoted YAML
    scalars by `goss_yaml`, and `{ {` in comments."""
    return value.replace("{{", "{ {")


def sh(value: object) -> str:
    """One bash/sh word that expands to exactly `value`: itself when it holds only
    characters no shell treats specially, else in single quotes (shlex.quote's rule, without
    importing shlex into every scan that shows a fix command)."""
    word = str(value)
    if not word:
        return "''"
    if _SH_PLAIN.fullmatch(word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def sh_words(values: Iterable[object]) -> str:
    return " ".join(sh(v) for v in values)


def plain_name(value: str, what: str, where: str) -> str:
    """`value` unchanged when it needs no quoting anywhere (letters, digits, `_.@+-`), for a
    mechanism that has none; else Unexpressible naming `what` and `where`."""
    if _PLAIN.fullmatch(value or "") and value not in (".", ".."):
        return value
    raise Unexpressible(f"{what} {text(value)!r} cannot be written into {where} safely (it has no quoting for "
                        "such characters); not automated")


def fstab_field(value: str, what: str) -> str:
    """An fstab field (fstab(5)): blanks as \\040/\\011, a backslash as \\134; a field with a
    newline or another control byte cannot be written (libmount would read a forged line)."""
    if not value or _CONTROL.search(value.replace("\t", "")):
        raise Unexpressible(f"{what} {text(value)!r} cannot be written into /etc/fstab (empty, or it holds a "
                            "newline or another control byte); not automated")
    return value.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")


def autofs_field(value: str, what: str) -> str:
    """A field of an autofs map entry (`key [-options] location`, autofs(5)) as it is: the
    map reader (autofs modules/lookup_file.c `read_one()`) splits at blanks, a `\\` escapes
    the next character and `"` quotes, and a control byte or newline would end the line, so
    a value holding any of them is refused."""
    if not value or _AUTOFS_SPECIAL.search(value):
        raise Unexpressible(f"{what} {text(value)!r} cannot be written into an autofs map line (empty, or it holds "
                            "a blank, a quote, a backslash or a control byte); not automated")
    return value


def unit_setting(value: str, what: str) -> str:
    """A value of a systemd unit setting that expands specifiers (systemd.unit(5): `%%` is
    `%`); a control byte or newline would end the line, and a trailing backslash would
    continue it onto the next, so such a value is refused."""
    if _CONTROL.search(value) or value.endswith("\\"):
        raise Unexpressible(f"{what} {text(value)!r} cannot be written into a unit file setting (it holds a "
                            "newline or another control byte, or ends in a backslash); not automated")
    return value.replace("%", "%%")


# Values goss acts on: a byte that is not UTF-8 cannot be written into YAML as itself.
_GOSS_ACTED_ON = ("path", "mountpoint", "name", "exec", "comm")


def goss_unwritable(spec: dict) -> str | None:
    """Why a goss resource `spec` cannot be written as YAML goss reads back, or None."""
    for key in _GOSS_ACTED_ON:
        value = spec.get(key)
        if isinstance(value, str) and utf8(value) != value:
            return f"{key} {text(value)!r} is not valid UTF-8, which a gossfile cannot carry"
    return None


def goss_yaml(data: object) -> str:
    """YAML by PyYAML's emitter that goss's Go template pass leaves alone: every string
    holding `{{` is double-quoted, where `{\\x7b` writes the same text without the `{{`
    that would open a template action (no other `{{` can occur in block-style YAML)."""
    import yaml  # only when a gossfile is written: `tunewatch scan` must not pay for PyYAML

    class Dumper(yaml.SafeDumper):
        pass

    def _str(dumper, value):
        style = '"' if "{{" in value or "}}" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, _str)
    body = yaml.dump(data, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=1000)
    return body.replace("{{", "{\\x7b")
