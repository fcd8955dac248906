"""`tunewatch remediate --format bash|ansible`: a fix for the failed checks of one scan.

It prints (or writes) a script; it never runs it and never changes the host it scans.
"""

from __future__ import annotations

from .hostview import scan_host

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace, _SubParsersAction
    from typing import Callable

    from ..content.catalog import Content, ResolvedProfile
    from ..content.waivers import Waiver


def add_parser(subparsers: _SubParsersAction, scan_args: Callable[[ArgumentParser], None]) -> None:
    p = subparsers.add_parser("remediate", help="write a bash script or Ansible playbook that fixes the failed checks")
    scan_args(p)
    p.add_argument("--format", choices=("bash", "ansible"), default="bash", help="output format (default: bash)")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout (bash: mode 0755)")
    p.set_defaults(run=run)


def run(args: Namespace, load: Callable[[Namespace], tuple[Content, ResolvedProfile, list[Waiver]]]) -> int:
    from ..host.rootcheck import check_root
    from .ansible import render_ansible
    from .bash import render_bash
    from .plan import build_plan
    content, profile, waivers = load(args)
    check_root(args)
    plan = build_plan(scan_host(content, profile, args.root, waivers))
    text = render_bash(plan) if args.format == "bash" else render_ansible(plan)
    from ..host.atomic import write_output  # a temp file renamed over FILE: never a half script
    write_output(text, args.output, 0o755 if args.format == "bash" else None)
    return 0
