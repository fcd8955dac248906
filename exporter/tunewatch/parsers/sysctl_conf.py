"""sysctl.d(5) files and sysctl key to /proc/sys path.

Keys are written with `.` or `/` separators. As in sysctl.d(5), when the first separator
is `/` then `/` separates and dots are literal (`net/ipv4/conf/eth0.100/rp_filter`); such
keys are turned into the dotted form sysctl(8) prints, where a literal dot shows as `/`
(`net.ipv4.conf.eth0/100.rp_filter`), so both spellings of one sysctl compare equal.
"""

from __future__ import annotations

from .._record import FrozenRecord
from ..errors import ParseError
from ._text import lines

_SWAP = str.maketrans("./", "/.")


class SysctlSetting(FrozenRecord):
    __slots__ = ("key", "value", "line", "ignore_failure")
    key: str
    value: str
    line: int
    ignore_failure: bool

    def __init__(self, key: str, value: str, line: int, ignore_failure: bool):
        self.key = key
        self.value = value
        self.line = line
        self.ignore_failure = ignore_failure


def normalise_key(key: str) -> str:
    """`/` separates the key's words when it comes before any `.` (sysctl.d(5)); string tests,
    not a regular expression (docs/architecture.md#start-up-cost)."""
    slash, dot = key.find("/"), key.find(".")
    return key.translate(_SWAP) if slash != -1 and (dot == -1 or slash < dot) else key


def parse_sysctl_conf(text: str, source: str) -> list[SysctlSetting]:
    settings = []
    for n, line in lines(text):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ParseError(source, f"not a `key = value` line: {line[:60]!r}", n)
        key = key.strip()
        ignore_failure = key.startswith("-")
        key = key[1:].strip() if ignore_failure else key
        if not key:
            raise ParseError(source, "empty key", n)
        settings.append(SysctlSetting(normalise_key(key), " ".join(value.split()), n, ignore_failure))
    return settings


def sysctl_key_to_path(key: str) -> str:
    """`vm.dirty_bytes` -> `proc/sys/vm/dirty_bytes`, relative to the scanned root."""
    if not key or key[0] in "./" or "\0" in key:
        raise ParseError("sysctl key", f"not a sysctl key: {key[:60]!r}")
    path = normalise_key(key).translate(_SWAP)
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise ParseError("sysctl key", f"sysctl key {key[:60]!r} has an empty or relative component")
    return "proc/sys/" + path
