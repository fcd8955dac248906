"""/proc/stat: only the boot time is needed (to tell runtime state from a stale snapshot)."""

from __future__ import annotations

from ..errors import ParseError
from ._text import lines, uint

SOURCE = "proc/stat"


def parse_btime(text: str) -> int:
    for n, line in lines(text):
        words = line.split()
        if words and words[0] == "btime":
            if len(words) != 2:
                raise ParseError(SOURCE, "btime line is not `btime <seconds>`", n)
            return uint(words[1], SOURCE, n, "btime")
    raise ParseError(SOURCE, "no btime line")
