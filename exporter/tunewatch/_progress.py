"""A progress line for long work on a terminal: rewritten in place on stderr, silent elsewhere.

`collect`, a vSphere fleet scan and `serve`'s first scan take seconds to minutes; a person
at a terminal sees what is going on, while a pipe, a log file or the journal get nothing
(no carriage returns in logs). The text is built by tunewatch from counts and phase names,
never from host data, so it needs no escaping.
"""

from __future__ import annotations

import sys
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO


class Progress:
    """`progress(text)` shows `text` (throttled to `min_interval`); `done()` clears it."""

    def __init__(self, stream: TextIO | None = None, min_interval: float = 0.2):
        self.stream = sys.stderr if stream is None else stream
        try:
            self.enabled = self.stream.isatty()
        except (AttributeError, ValueError):  # a closed or odd stream: nothing to show
            self.enabled = False
        self.min_interval = min_interval
        self._last = 0.0
        self._shown = False
        self._lock = threading.Lock()

    def __call__(self, text: str, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        with self._lock:
            if not force and now - self._last < self.min_interval:
                return
            self._last = now
            import shutil  # only on a terminal
            columns = shutil.get_terminal_size((80, 24)).columns
            width = (columns if columns > 20 else 80) - 1  # a new pty reports 0 columns: not a width
            self.stream.write("\r\x1b[K" + text[:width])
            self.stream.flush()
            self._shown = True

    def done(self) -> None:
        with self._lock:
            if self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._shown = False
