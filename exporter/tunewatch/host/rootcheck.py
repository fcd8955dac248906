"""`--root` sanity: a directory that looks like no host is refused before a scan."""

from __future__ import annotations

import os
import sys

from ..errors import ContentError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

HOST_MARKERS = ("proc", "sys", "etc/os-release")
# `tunewatch collect` writes INCOMPLETE before anything else and COMPLETE after everything,
# then removes INCOMPLETE: a snapshot cut short (a full disk, a kill) keeps INCOMPLETE.
INCOMPLETE = ".tunewatch-collect-incomplete"
COMPLETE = ".tunewatch-collect-complete"


def check_complete(root: str) -> None:
    """Refuse a snapshot `collect` did not finish: its missing files would read as "not
    configured" and pass persistent checks."""
    if os.path.lexists(os.path.join(root, INCOMPLETE)):
        raise ContentError(root, f"--root is a snapshot `tunewatch collect` did not finish ({INCOMPLETE} is there: "
                                 "it was interrupted or ran out of space); collect it again")


def check_root(args: Namespace) -> None:
    """A --root with none of proc/, sys/ and etc/os-release is no host: every runtime check
    would be unreadable and "nothing configured" would pass persistent checks. Refuse it
    (exit 1) unless --allow-partial-root; warn when only some are missing."""
    if not os.path.isdir(args.root):
        raise ContentError(args.root, "--root is not a directory")
    check_complete(args.root)
    missing = [m for m in HOST_MARKERS if not os.path.exists(os.path.join(args.root, m))]
    if not missing or getattr(args, "allow_partial_root", False):
        return
    if len(missing) == len(HOST_MARKERS):
        raise ContentError(args.root, "--root looks like no host: it has none of proc/, sys/ and etc/os-release "
                                      "(a snapshot from `tunewatch collect` has all three); give "
                                      "--allow-partial-root to scan it anyway")
    print(f"tunewatch: warning: --root {args.root} has no {' or '.join(missing)}: checks that read them are "
          "unreadable (error), not passing", file=sys.stderr)
