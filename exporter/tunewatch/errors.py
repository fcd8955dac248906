"""Error types shared by parsers, fact readers, content loading and the engine.

A parser raises ParseError (typed, never a bare exception) so that a check can turn a
garbage file into an `error` result for the objects that depend on it while the rest of
the scan goes on.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable


class TunewatchError(Exception):
    """Base of every error tunewatch raises on purpose."""


class ParseError(TunewatchError, ValueError):
    """A file's text does not have the shape its parser expects."""

    def __init__(self, source: str, message: str, line: int | None = None):
        self.source = source
        self.line = line
        self.reason = message
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")


class FactError(TunewatchError):
    """A fact could not be read (missing required file, permission, unsupported op)."""


class ContentError(TunewatchError):
    """Content (check, profile, tailoring, waiver) is malformed.

    Names the file, the line when known and the JSON pointer into the document.
    """

    def __init__(self, path: str, message: str, line: int | None = None, pointer: str = ""):
        self.path = str(path)
        self.line = line
        self.pointer = pointer
        self.reason = message
        where = self.path + (f":{line}" if line is not None else "")
        at = f" at {pointer}" if pointer else ""
        super().__init__(f"{where}:{at} {message}" if at else f"{where}: {message}")


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """` (did you mean 'nic-queue-count'?)` for a mistyped id, else ``. Here, below content
    and waivers, since both name unknown ids with it."""
    import difflib  # local: the package's start-up imports errors, and few runs misspell

    close = difflib.get_close_matches(word, sorted(known), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
