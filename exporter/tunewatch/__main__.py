"""`python -m tunewatch ...` runs the same command line as the `tunewatch` script."""

from __future__ import annotations

import sys

from .cli.main import main

sys.exit(main())  # main() without argv flushes and ends the process itself
