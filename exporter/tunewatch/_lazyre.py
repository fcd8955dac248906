"""Regular expressions compiled on first use, not at import.

Compiling costs 50-350 us a pattern; a scan imports ~50 of them and a host without udev
rules, systemd .link files, NetworkManager dispatcher scripts or modprobe options never
uses a dozen (~1.7 ms of a ~50 ms CLI scan, docs/architecture.md#start-up-cost). Only for patterns used through
their methods (match, sub, ...): a LazyPattern is not an re.Pattern.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_METHODS = ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer", "pattern", "flags",
            "groups", "groupindex")


class LazyPattern:
    def __init__(self, pattern: str, flags: int = 0):
        self._args = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        """First use: compile, then keep the bound methods here (later look-ups are plain
        instance attributes, as fast as on the pattern itself)."""
        if name.startswith("__") or name == "_args":
            raise AttributeError(name)
        compiled = re.compile(*self._args)
        for attr in _METHODS:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self._args[0]!r})"


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    return LazyPattern(pattern, flags)
