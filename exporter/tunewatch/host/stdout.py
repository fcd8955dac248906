"""A report to standard output, as host.atomic writes one to a file: whole, never lost to
an encoding error.

The bytes of undecodable host names (surrogateescape, as os.fsdecode gives them) go out as
they came in. Kept apart from host.atomic so that a report to standard output does not load
tempfile (shutil, random, bz2, lzma: ~4 ms of a CLI scan, docs/architecture.md#start-up-cost).
"""

from __future__ import annotations

import sys


def write_stdout(text: str) -> None:
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (tests capturing with StringIO)
        sys.stdout.write(text)
    else:
        buffer.write(text.encode("utf-8", "surrogateescape"))
        buffer.flush()
