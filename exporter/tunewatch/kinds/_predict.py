"""Boot-prediction helpers shared by the kinds with a `-persistent` form.

Every object of a `-persistent` check carries `predicted` (the value after the next boot,
or UNKNOWN) and `source` (`configured by FILE`, `driver default (...)`, `module default
(...)`, `never applied: WHY`); outputs read these fields, never the message.
"""

from __future__ import annotations

from ..results import UNKNOWN, ObjectResult


def configured_by(source: str) -> str:
    return f"configured by {source}"


def complete(results: list[ObjectResult]) -> list[ObjectResult]:
    """An object the kind could not predict (an unreadable fact, nothing in scope) still
    says so: `unknown`, with the verdict's own message as the reason."""
    for o in results:
        if o.predicted is None:
            o.predicted = UNKNOWN
            o.source = o.source or f"could not predict: {o.message}"
    return results
