"""`options` and `install` lines of modprobe.d(5); every other command is irrelevant to
tuning and skipped.

Module and parameter names treat `-` and `_` alike (modprobe and the kernel's parameq()
do), so both are normalised to `_`. A parameter given without `=` is a boolean the kernel
sets to true; it is reported as "1" so it compares equal to `param=1`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ParseError
from ._text import logical_lines

# The kernel's parse_args() lets a value be double-quoted to hold blanks: p="a b".
_PARAM = re.compile(r'([^\s=]+)(?:=((?:"[^"]*"?|[^\s"])*))?')


@dataclass(frozen=True)
class ModprobeOptions:
    module: str
    params: dict[str, str]
    line: int


def _params(text: str) -> dict[str, str]:
    params = {}
    for m in _PARAM.finditer(text):
        value = "1" if m.group(2) is None else m.group(2).replace('"', "")
        params[m.group(1).replace("-", "_")] = value
    return params


def parse_modprobe_conf(text: str, source: str) -> list[ModprobeOptions]:
    found = []
    for n, line in logical_lines(text, strip_continued=False):
        words = line.split(None, 2)
        if not words or words[0] != "options":
            continue
        if len(words) < 2:
            raise ParseError(source, "`options` without a module name", n)
        module = words[1].replace("-", "_")
        found.append(ModprobeOptions(module, _params(words[2] if len(words) > 2 else ""), n))
    return found


@dataclass(frozen=True)
class ModprobeInstall:
    """`install MODULE COMMAND...`: modprobe runs COMMAND (with /bin/sh) instead of loading."""
    module: str
    command: str
    line: int


def parse_modprobe_install(text: str, source: str) -> list[ModprobeInstall]:
    found = []
    for n, line in logical_lines(text, strip_continued=False):
        words = line.split(None, 2)
        if not words or words[0] != "install":
            continue
        if len(words) < 3:
            raise ParseError(source, "`install` needs a module name and a command", n)
        found.append(ModprobeInstall(words[1].replace("-", "_"), words[2].strip(), n))
    return found
