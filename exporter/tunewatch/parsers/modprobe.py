"""`options` and `install` lines of modprobe.d(5); every other command is irrelevant to
tuning and skipped.

Module and parameter names treat `-` and `_` alike (modprobe and the kernel's parameq()
do), so both are normalised to `_`. A parameter given without `=` is a boolean the kernel
sets to true; it is reported as "1" so it compares equal to `param=1`.
"""

from __future__ import annotations

from .._lazyre import lazy
from .._record import FrozenRecord
from ..errors import ParseError
from ._text import logical_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

# The kernel's parse_args() lets a value be double-quoted to hold blanks: p="a b".
_PARAM = lazy(r'([^\s=]+)(?:=((?:"[^"]*"?|[^\s"])*))?')


class ModprobeOptions(FrozenRecord):
    __slots__ = ("module", "params", "line")
    module: str
    params: dict[str, str]
    line: int

    def __init__(self, module: str, params: dict[str, str], line: int):
        self.module = module
        self.params = params
        self.line = line


def _params(text: str) -> dict[str, str]:
    params = {}
    for m in _PARAM.finditer(text):
        value = "1" if m.group(2) is None else m.group(2).replace('"', "")
        params[m.group(1).replace("-", "_")] = value
    return params


def _lines_of(text: str, command: str, source: str, min_words: int, what: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, words split in three) of each `command` line with at least `min_words`."""
    for n, line in logical_lines(text, strip_continued=False):
        words = line.split(None, 2)
        if not words or words[0] != command:
            continue
        if len(words) < min_words:
            raise ParseError(source, what, n)
        yield n, words


def parse_modprobe_conf(text: str, source: str) -> list[ModprobeOptions]:
    return [ModprobeOptions(words[1].replace("-", "_"), _params(words[2] if len(words) > 2 else ""), n)
            for n, words in _lines_of(text, "options", source, 2, "`options` without a module name")]


class ModprobeInstall(FrozenRecord):
    """`install MODULE COMMAND...`: modprobe runs COMMAND (with /bin/sh) instead of loading."""
    __slots__ = ("module", "command", "line")
    module: str
    command: str
    line: int

    def __init__(self, module: str, command: str, line: int):
        self.module = module
        self.command = command
        self.line = line


def parse_modprobe_install(text: str, source: str) -> list[ModprobeInstall]:
    return [ModprobeInstall(words[1].replace("-", "_"), words[2].strip(), n)
            for n, words in _lines_of(text, "install", source, 3, "`install` needs a module name and a command")]
