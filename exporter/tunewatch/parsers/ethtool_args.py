"""ethtool invocations found in ifcfg values and boot scripts, as settings in ethtool's
JSON naming ("channels.combined", "rings.rx", "coalesce.rx-usecs",
"features.large-receive-offload"; numbers in decimal, `on`/`off` for booleans).

Only the set options that tuning checks care about are read (-L, -G, -C, -K); any other
invocation (`-s speed 1000`, `-A`, queries) is passed over.

Parameter names are matched exactly, as ethtool does: its `parse_generic_cmdline()`
compares each word with `strcmp()` against the option's table and, on an unknown word,
prints `ethtool (-C): unknown parameter 'rx-usec'` and exits 1 without changing anything
(ethtool 6.1, checked with the real binary). Such a command carries a `problem` and no
settings. Main options are matched exactly too (`--coal` is a bad command line).
"""

from __future__ import annotations

import re
import shlex

from .._lazyre import lazy
from .._record import FrozenRecord
from ..errors import ParseError
from ._text import logical_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

_SECTIONS = {"-L": "channels", "--set-channels": "channels", "-G": "rings", "--set-ring": "rings",
             "-C": "coalesce", "--coalesce": "coalesce", "-K": "features", "--features": "features",
             "--offload": "features"}
# global flags that may precede the option
_FLAGS_WITH_ARG = {"--debug"}
_FLAGS = {"--json", "-I", "--include-statistics"}
# ethtool's short feature names (`off_flag_def[]` in ethtool.c) and the names `-k` shows;
# any other word is a kernel feature string that only the running kernel can confirm.
_FEATURES = {"lro": "large-receive-offload", "gro": "generic-receive-offload",
             "gso": "generic-segmentation-offload", "tso": "tcp-segmentation-offload",
             "ufo": "udp-fragmentation-offload",
             "rx": "rx-checksumming", "tx": "tx-checksumming", "sg": "scatter-gather",
             "rxvlan": "rx-vlan-offload", "txvlan": "tx-vlan-offload", "ntuple": "ntuple-filters",
             "rxhash": "receive-hashing"}
_BOOL_PARAMS = {"adaptive-rx", "adaptive-tx", "cqe-mode-rx", "cqe-mode-tx", "tx-push", "rx-push"}
# Parameter tables of ethtool 6.x (`ethtool -h`; ethtool.c `-C`, `-G`, `-L` argument tables).
PARAMS = {
    "coalesce": ("adaptive-rx", "adaptive-tx", "rx-usecs", "rx-frames", "rx-usecs-irq", "rx-frames-irq",
                 "tx-usecs", "tx-frames", "tx-usecs-irq", "tx-frames-irq", "stats-block-usecs", "pkt-rate-low",
                 "rx-usecs-low", "rx-frames-low", "tx-usecs-low", "tx-frames-low", "pkt-rate-high",
                 "rx-usecs-high", "rx-frames-high", "tx-usecs-high", "tx-frames-high", "sample-interval",
                 "cqe-mode-rx", "cqe-mode-tx", "tx-aggr-max-bytes", "tx-aggr-max-frames", "tx-aggr-time-usecs"),
    "rings": ("rx", "rx-mini", "rx-jumbo", "tx", "rx-buf-len", "cqe-size", "tx-push", "rx-push",
              "tx-push-buf-len", "tcp-data-split", "hds-thresh"),
    "channels": ("rx", "tx", "other", "combined"),
}
_OPTION_OF = {"coalesce": "-C", "rings": "-G", "channels": "-L", "features": "-K"}
# ethtool's netlink parser (netlink/parser.c parse_u32(), what ethtool >= 5.6 uses): "0x"
# then hex digits, else decimal digits, leading zeros allowed ("010" is ten, "096" ninety-six)
# (character tests, not a regular expression: docs/architecture.md#start-up-cost)
_DECIMAL_DIGITS = frozenset("0123456789")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _is_u32_syntax(text: str) -> bool:
    digits, allowed = (text[2:], _HEX_DIGITS) if text[:2] in ("0x", "0X") else (text, _DECIMAL_DIGITS)
    return bool(digits) and all(c in allowed for c in digits)


def _parse_u32(text: str) -> int:
    return int(text[2:], 16) if text[:2] in ("0x", "0X") else int(text, 10)


_VALUE = lazy(r"[0-9]+|on|off")
# ifcfg placeholders for "this interface": RHEL's ${DEVICE}, SUSE's literal `iface`
_PLACEHOLDER = re.compile(r"\$\{?\w+\}?|iface|IFACE|<iface>")
_EXEC_PREFIX = lazy(r"^Exec\w*=[-@:+!|]*")
_SEPARATORS = set(";&|<>()")
# words that may stand before a command: shell keywords, wrappers, `VAR=value`, `sh -c`
_LEADERS = {"then", "do", "else", "if", "while", "until", "!", "{", "exec", "command", "sudo", "nohup", "time", "-c"}
_PREFIX_WORD = lazy(r"(?:Exec\w*=[-@:+!|]*)?(?:\S*/)?(?:ba|da|z)?sh|(?!Exec)[A-Za-z_][A-Za-z0-9_]*=.*")


class EthtoolCommand(FrozenRecord):
    __slots__ = ("interface", "settings", "line", "problem")
    interface: str | None
    settings: tuple[tuple[str, str], ...]
    line: int
    problem: str | None  # why ethtool rejects the whole command (then settings are empty)

    def __init__(self,
                 interface: str | None, settings: tuple[tuple[str, str], ...], line: int, problem: str | None = None):
        self.interface = interface
        self.settings = settings
        self.line = line
        self.problem = problem


def suggest(word: str, names: Iterable[str]) -> str | None:
    """The table name a misspelt word was meant to be (`rx-usec` -> `rx-usecs`)."""
    import difflib  # here: only a misspelt word needs it, and every scan imports this module
    close = difflib.get_close_matches(word, list(names), n=1, cutoff=0.75)
    return close[0] if close else None


def _unknown(section: str, key: str) -> str:
    right = suggest(key, PARAMS[section])
    hint = f"; the parameter is spelt '{right}'" if right else ""
    return f"ethtool ({_OPTION_OF[section]}) rejects unknown parameter '{key}'{hint}, so it applies nothing"


def _value(section: str, key: str, value: str) -> tuple[str | None, str | None]:
    """(normalised value, problem) as ethtool parses it: u32 numbers, on/off booleans."""
    if section == "features" or key in _BOOL_PARAMS:
        if value in ("on", "off"):
            return value, None
        return None, f"ethtool ({_OPTION_OF[section]}) rejects '{key} {value}': on or off expected"
    if _is_u32_syntax(value) and _parse_u32(value) <= 0xFFFFFFFF:
        return str(_parse_u32(value)), None
    return None, f"ethtool ({_OPTION_OF[section]}) rejects '{key} {value}': a number expected"


def _settings(section: str, words: list[str]) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """key/value pairs, or a problem that makes ethtool reject the whole command. A trailing
    key without a value (`2>` left over by the word splitter) is dropped."""
    pairs: list[tuple[str, str]] = []
    for key, value in zip(words[0::2], words[1::2]):
        if section == "features":
            key = _FEATURES.get(key, key)
        elif key not in PARAMS[section]:
            return (), _unknown(section, key)
        norm, problem = _value(section, key, value)
        if problem or norm is None:
            return (), problem
        pairs.append((f"{section}.{key}", norm))
    return tuple(pairs), None


def _iface_omitted(args: list[str]) -> bool:
    """`-L combined 16`: pairs from the first word on mean no interface was named."""
    return (len(args) >= 2 and len(args) % 2 == 0 and _VALUE.fullmatch(args[1]) is not None
            and not _PLACEHOLDER.fullmatch(args[0]))


def _command(words: list[str], line: int, default_iface: str | None) -> EthtoolCommand | None:
    """One invocation's arguments (after `ethtool`); None when it sets nothing we read."""
    i = 0
    while i < len(words) and words[i] not in _SECTIONS:
        if words[i] in _FLAGS_WITH_ARG:
            i += 2
        elif words[i] in _FLAGS:
            i += 1
        else:
            return None
    if i >= len(words):
        return None
    section, args = _SECTIONS[words[i]], words[i + 1:]
    if default_iface is not None and _iface_omitted(args):
        iface: str | None = default_iface
    else:
        iface, args = (args[0], args[1:]) if args else (None, [])
        if default_iface is not None and iface is not None and _PLACEHOLDER.fullmatch(iface):
            iface = default_iface
    settings, problem = _settings(section, args)
    return EthtoolCommand(iface, settings, line, problem) if settings or problem else None


def parse_ethtool_options(value: str, default_iface: str, source: str) -> list[EthtoolCommand]:
    """RHEL ETHTOOL_OPTS: `;`-separated `-X [iface] args`; SUSE callers pass one wicked variable, which is one command.

    A value not starting with an option is the legacy `-s` form (`autoneg off speed 1000`).
    """
    commands = []
    for part in value.split(";"):
        try:
            words = shlex.split(part)
        except ValueError as e:
            raise ParseError(source, f"cannot split ethtool options {part.strip()[:60]!r}: {e}") from None
        if words and words[0].startswith("-"):
            cmd = _command(words, 0, default_iface)
            if cmd:
                commands.append(cmd)
    return commands


def _words(line: str) -> list[str] | None:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return None


def _scan(line: str, n: int, depth: int) -> list[EthtoolCommand]:
    words = _words(line)
    if words is None:
        return []  # free-form script text shlex cannot split: not ours to judge
    found, segment = [], []
    for word in words + [";"]:
        if not (word and set(word) <= _SEPARATORS):
            segment.append(word)
            continue
        for k, w in enumerate(segment):
            name = _EXEC_PREFIX.sub("", w)
            if name == "ethtool" or name.endswith("/ethtool"):
                cmd = _command(segment[k + 1:], n, None)
                found += [cmd] if cmd else []
                break
            if k and segment[k - 1] == "-c":  # sh -c "ethtool ...; ethtool ..."
                found += _scan(w, n, depth + 1) if depth < 3 and "ethtool" in w else []
                break
            if w not in _LEADERS and not _PREFIX_WORD.fullmatch(w):
                break  # `ethtool` further on is an argument (echo, logger), not a command
        segment = []
    return found


def find_ethtool_commands(text: str, source: str) -> list[EthtoolCommand]:
    """ethtool invocations in a script, unit file or udev RUN value; `line` is 1-based.

    Interface arguments are kept verbatim (`$IFACE`, `%k`); callers tell literals apart.
    """
    found = []
    for n, line in logical_lines(text, strip_continued=False):
        if "ethtool" in line and not line.lstrip().startswith(("#", ";")):
            found += _scan(line, n, 0)
    return found
