"""`python -m tunewatch ...` runs the same command line as the `tunewatch` script."""

import sys

from .cli import main

sys.exit(main())
