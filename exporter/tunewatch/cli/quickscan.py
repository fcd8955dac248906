"""`tunewatch scan` command lines of the common shape, read without argparse.

Importing argparse (with gettext, locale and warnings) and building the scan parser is
~4 ms of a ~45 ms scan of an example (docs/architecture.md#start-up-cost), while timers and
scripts run a handful of shapes: `scan --root DIR --format json`, `scan --profile P
--format prometheus --output FILE`. Such a command line gets here the namespace argparse
would give it: `scan`, then only the options of VALUED, each once, spelt out in full and
followed by its value, and no value argparse could read as an option (one starting with
`-`). Everything else (flags, `--option=value`, abbreviations, a value argparse would refuse,
help, any error) returns None and goes to argparse as before. tests/test_cli.py holds the
namespaces to argparse's.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

from ..scan.engine import DEFAULT_TIMEOUT_S

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

# option -> its dest; each is a plain `--option VALUE` of the scan parser (cli/main.py _add_scan)
VALUED = {"--root": "root", "--profile": "profile", "--format": "format", "--output": "output",
          "--content": "content", "--tailoring": "tailoring", "--waivers": "waivers"}


def scan_defaults() -> dict:
    """What argparse sets for `tunewatch scan` with no option (cli/main.py _add_scan)."""
    return {"command": "scan", "root": "/", "profile": "auto", "tailoring": None, "waivers": None, "rule": [],
            "skip_rule": [], "allow_partial_root": False, "content": None, "format": "text", "output": None,
            "exit_code": False, "metrics_detail": False, "report": [],
            "runbook_url": os.environ.get("TUNEWATCH_RUNBOOK_URL") or None, "verbose": False, "quiet": False,
            "brief": False, "color": "auto", "timeout": DEFAULT_TIMEOUT_S, "vsphere_config": None,
            "vsphere_vm": None, "vsphere_tag": []}


def common_scan_args(argv: list[str], formats: tuple[str, ...]) -> Namespace | None:
    """argparse's namespace for a scan command line of the common shape, else None (a
    SimpleNamespace: the commands read a namespace's attributes only)."""
    if not argv or argv[0] != "scan" or len(argv) % 2 == 0:
        return None
    given: dict[str, str] = {}
    for option, value in zip(argv[1::2], argv[2::2]):
        dest = VALUED.get(option)
        if dest is None or dest in given or value.startswith("-"):
            return None
        given[dest] = value
    if given.get("format", "text") not in formats:
        return None  # argparse's "invalid choice" message
    return SimpleNamespace(**{**scan_defaults(), **given})  # type: ignore[return-value]  # attributes only
