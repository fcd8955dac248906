"""tunewatch command line: scan, collect, serve, checks, profiles, validate-content.

Exit codes: 0 nothing fails, 2 something fails or errors, 1 usage or content error.
"""

from __future__ import annotations

import gc
import os
import sys

from .. import __version__, results
from ..content.catalog import Content
from ..errors import ContentError, TunewatchError, did_you_mean
from ..host.rootcheck import check_root
from ..scan import engine
from .parser import FORMATS, build_parser, command_of, innermost_parser
from .quickscan import common_scan_args

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Callable

    from ..content.catalog import ResolvedProfile
    from ..results import ScanResult

def _load(args):
    content = Content(args.content)
    tailoring = content.load_tailoring(args.tailoring) if getattr(args, "tailoring", None) else None
    waivers = content.load_waivers(args.waivers) if getattr(args, "waivers", None) else []
    profile_id = tailoring.data["profile"] if tailoring is not None else getattr(args, "profile", "auto")
    if profile_id not in content.profiles:
        raise ContentError("--profile", f"unknown profile {profile_id!r}{did_you_mean(profile_id, content.profiles)}"
                                        f" (known: {', '.join(sorted(content.profiles))})")
    profile = content.resolve(profile_id, tailoring)
    return content, _only_rules(content, profile, getattr(args, "rule", []), getattr(args, "skip_rule", [])), waivers


def _only_rules(content: Content, profile: ResolvedProfile, rules: list[str], skips: list[str]) -> ResolvedProfile:
    """--rule narrows the profile to the checks named, --skip-rule leaves checks out."""
    if not rules and not skips:
        return profile
    from ..outputs.xccdf import rule_id_to_check
    selected = [sel.check.id for sel in profile.checks]
    for flag, ids in (("--rule", rules), ("--skip-rule", skips)):
        for cid in map(rule_id_to_check, ids):
            if cid not in content.checks:
                raise ContentError(flag, f"unknown check id {cid!r}{did_you_mean(cid, content.checks)}")
            if cid not in selected:
                raise ContentError(flag, f"check {cid!r} is not in profile {profile.id!r}"
                                         f"{did_you_mean(cid, selected)} (see `tunewatch profiles {profile.base}`)")
    keep = {rule_id_to_check(r) for r in rules} or set(selected)
    keep -= {rule_id_to_check(r) for r in skips}
    return profile.replace(checks=[sel for sel in profile.checks if sel.check.id in keep])


def _write(text: str, output: str | None) -> None:
    if not output:  # standard output, the common case: without host.atomic, whose tempfile
        from ..host.stdout import write_stdout  # (shutil, random, bz2, lzma) is ~4 ms of a scan

        write_stdout(text)
        return
    from ..host.atomic import write_output  # a temp file renamed over FILE: a full disk loses nothing
    write_output(text, output)


def cmd_scan(args: Namespace) -> int:
    content, profile, waivers = _load(args)
    check_root(args)
    reports = [(args.format, args.output)] + [(fmt, None if path == "-" else path) for fmt, path in args.report]
    if sum(path is None for _, path in reports) > 1:
        raise ContentError("--report", "only one report can go to standard output: give --output FILE or FORMAT=FILE")
    if not _names_vsphere(args):  # a plain scan: nothing of vsphere/ to import (docs/architecture.md#start-up-cost)
        result = engine.scan_with_watchdog(content, profile, args.root, waivers, timeout=args.timeout)
    else:
        from ..vsphere.command import scan_many, scan_setup
        fleet = scan_many(args, content, profile, waivers)  # --vsphere.vm GLOB selecting several VMs
        if fleet is not None:
            from .fleet import write_fleet_reports
            return write_fleet_reports(reports, fleet, _write, lambda to_terminal: _colour(args, to_terminal))
        with scan_setup(args, profile) as (root, profile):  # --vsphere.config: VMX/ESXi facts from vSphere
            result = engine.scan_with_watchdog(content, profile, root, waivers, timeout=args.timeout)
    if result.timed_out:
        print(f"tunewatch: error: scan did not finish within {args.timeout:g} s; checks not decided are "
              "reported as error", file=sys.stderr)
    return _write_reports(args, reports, result, content)


def _names_vsphere(args: Namespace) -> bool:
    """Any --vsphere.* option given (without --vsphere.config the others are an error that
    vsphere/command.py reports)."""
    return any(getattr(args, dest, None) for dest in ("vsphere_config", "vsphere_vm", "vsphere_tag"))


def _write_reports(args: Namespace, reports: list[tuple[str, str | None]], result: ScanResult, content: Content) -> int:
    for fmt, path in reports:  # one scan, every report from the same result
        text = _render(fmt, result, content, args, to_terminal=path is None)
        if fmt == "prometheus" and path:
            from ..outputs.prometheus import write_textfile
            write_textfile(path, text)
        else:
            _write(text, path)
    if args.format == "prometheus" and args.output and not args.exit_code:
        return results.EXIT_OK  # the textfile route: the file holds the verdict, the timer succeeded
    return result.exit_code


def _render(fmt: str, result: ScanResult, content: Content, args: Namespace, to_terminal: bool) -> str:
    if fmt == "prometheus":
        from ..outputs.prometheus import render
        return render(result, detail=args.metrics_detail)
    if fmt == "json":
        from ..outputs.report import render_json
        return render_json(result)
    if fmt == "junit":
        from ..outputs.report import render_junit
        return render_junit(result)
    if fmt == "html":
        from ..outputs.html import render_html
        return render_html(result, content, args.runbook_url)
    if fmt in ("xccdf", "arf"):
        from ..outputs import xccdf
        return xccdf.render_xccdf(result, content) if fmt == "xccdf" else xccdf.render_arf(result, content)
    from ..outputs.text import render_text
    return render_text(result, _colour(args, to_terminal), args.verbose, quiet=args.quiet, brief=args.brief)


def _colour(args: Namespace, to_terminal: bool) -> bool:
    return args.color == "always" or (args.color == "auto" and to_terminal and sys.stdout.isatty()
                                      and not os.environ.get("NO_COLOR"))


def cmd_serve(args: Namespace) -> int:
    from ..serve.exporter import run_exporter
    from ..serve.options import options_from_args
    options = options_from_args(args)  # flag errors before the content is loaded
    content, profile, waivers = _load(args)
    if not os.path.isdir(args.root):
        raise ContentError(args.root, "--root is not a directory")
    from ..host.rootcheck import check_complete
    check_complete(args.root)
    info = {"version": __version__, "profile": profile.id, "root": os.path.abspath(args.root),
            "content digest": content.digest}
    # Each scan runs in a forked child (killed on --scan.timeout) that renders it; serve
    # keeps only the rendered bytes (scanjob.render_output).
    from ..vsphere.command import serve_setup
    scan, prepare = serve_setup(args, content, profile, waivers, lambda: engine.scan(content, profile, args.root,
                                                                                      waivers))
    return run_exporter(list(options.listen_addresses), options.web_config, scan=scan,
                        landing_info=info, log_level=args.log_level, log_format=args.log_format,
                        options=options, detail=args.metrics_detail, prepare=prepare)


def cmd_collect(args: Namespace) -> int:
    from ..scan.collect import collect
    content = Content(args.content)
    from ..vsphere.command import collect_files
    vsphere, complete = collect_files(args, args.root)  # --vsphere.config: vmware/ from vSphere
    from .._progress import Progress
    progress = Progress()  # a status line on a terminal's stderr; nothing in a pipe or a log
    try:
        written = collect(args.root, args.directory, content, vsphere, verbose=args.verbose, progress=progress)
    finally:
        progress.done()
    if not complete:
        print(f"wrote {written} files to {args.directory} without (some of) the vSphere facts", file=sys.stderr)
        return 1
    print(f"wrote {written} files to {args.directory}; scan it with: tunewatch scan --root {args.directory}")
    return 0


def _described(name: str) -> Callable[[Namespace], int]:
    """A command that describes content or the installation (cliinfo.py, loaded for it only)."""
    def run(args: Namespace) -> int:
        from . import info as cliinfo

        return getattr(cliinfo, name)(args)
    return run


COMMANDS = {"scan": cmd_scan, "serve": cmd_serve, "collect": cmd_collect, "checks": _described("cmd_checks"),
            "profiles": _described("cmd_profiles"), "validate-content": _described("cmd_validate"),
            "paths": _described("cmd_paths"), "completion": _described("cmd_completion"),
            "export": lambda args: args.run(args, _load), "remediate": lambda args: args.run(args, _load)}


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the console script: nothing runs after us, so skip the interpreter's teardown
        gc.disable()  # and, for a one-shot command, the cyclic collector (_collects_garbage)
        return _exit_now(_main(sys.argv[1:], console=True))
    return _main(argv)


def _collects_garbage(args: Namespace) -> bool:
    """Whether the console script's command needs the cyclic garbage collector back.

    A one-shot command reads bounded data once and ends with os._exit: the few reference
    cycles it leaves are freed with the process, while each collection walks every live
    object (the content, the imported modules): ~12 collections, ~2.5 ms of a ~55 ms scan
    of an example (docs/architecture.md#start-up-cost). The engine turns it off for a
    scan's duration anyway. `serve` runs for days, and vSphere sessions (pyVmomi, TLS, a
    fleet of VMs in one process) allocate without a bound we know: both collect."""
    return args.command == "serve" or bool(getattr(args, "vsphere_config", None))


def _exit_now(code: int) -> int:
    """Flush what we wrote and end the process without tearing the interpreter down (module
    and object clean-up is ~10 % of a scan's wall time, docs/architecture.md#start-up-cost). serve returns only once its
    own shutdown is done; every file we write is closed by then."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away (| head): as main() treats it
        code = 0
    except (OSError, ValueError):
        return code  # let the interpreter report it as it would
    os._exit(code)


def _main(argv: list[str], console: bool = False) -> int:
    args = common_scan_args(argv, FORMATS)  # most timers and scripts: argparse's result without argparse
    if args is None:
        try:
            parser = build_parser(command_of(argv))
            args, unknown = parser.parse_known_args(argv)
            if unknown:  # argparse would blame the top-level parser; the subcommand's usage helps
                innermost_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
        except SystemExit as e:  # argparse: usage errors are 1 here, 2 means "a check fails"
            return 1 if e.code else 0
    if console and _collects_garbage(args):
        gc.enable()
    try:
        return COMMANDS[args.command](args)
    except TunewatchError as e:
        print(f"tunewatch: error: {e}", file=sys.stderr)
        return results.EXIT_CONTENT
    except BrokenPipeError:
        return 0
    except (ValueError, OSError) as e:  # bad listen address, bind failure, unwritable output
        print(f"tunewatch: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
