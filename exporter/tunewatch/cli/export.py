"""`tunewatch export goss`: the command line of the goss export (outputs/goss.py renders it).
Here in cli/, since it reaches vsphere/ for --vsphere.config and outputs/ must not."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace, _SubParsersAction
    from typing import Callable

    from ..content.catalog import Content, ResolvedProfile
    from ..content.waivers import Waiver


def add_parser(subparsers: _SubParsersAction, scan_args: Callable[[ArgumentParser], None]) -> None:
    p = subparsers.add_parser("export", help="export the profile for another tool (goss)")
    p.add_argument("target", choices=("goss",), help="goss: a gossfile of what goss can express")
    scan_args(p)
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--allow-command", action="store_true",
                   help="also export `command` tests (ethtool) for NIC driver state")
    p.add_argument("--files-in-root", action="store_true",
                   help="point file tests into --root and skip runtime tests, to run goss here against a snapshot")
    from ..vsphere.command import add_arguments as vsphere_arguments  # light: no pyVmomi
    vsphere_arguments(p, "export")
    p.set_defaults(run=run)


def run(args: Namespace, load: Callable[[Namespace], tuple[Content, ResolvedProfile, list[Waiver]]]) -> int:
    from ..host.atomic import write_output
    from ..host.rootcheck import check_complete
    from ..outputs.goss import render
    from ..remediate.hostview import scan_host
    from ..vsphere.command import scan_setup
    content, profile, waivers = load(args)
    check_complete(args.root)  # a snapshot collect did not finish is refused
    with scan_setup(args, profile) as (root, profile):  # --vsphere.config: the VM's facts from vCenter
        view = scan_host(content, profile, root, waivers)
        text = render(view, args.files_in_root, args.allow_command, getattr(args, "vsphere_config", None))
    write_output(text, args.output)  # atomically: a full disk never leaves half a gossfile
    return 0
