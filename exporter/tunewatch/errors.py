"""Error types shared by parsers, fact readers, content loading and the engine.

A parser raises ParseError (typed, never a bare exception) so that a check can turn a
garbage file into an `error` result for the objects that depend on it while the rest of
the scan goes on.
"""

from __future__ import annotations


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
