"""tunewatch: prove that network and storage tuning is in place and stays in place."""

from __future__ import annotations

__version__ = "0.1.0"
