"""tunewatch command line: scan, collect, serve, checks, profiles, validate-content.

Exit codes: 0 nothing fails, 2 something fails or errors, 1 usage or content error.
"""

from __future__ import annotations

import gc
import os
import sys

from .. import __version__, results
from ..content.catalog import SHIPPED, Content
from ..errors import ContentError, TunewatchError, did_you_mean
from ..host.rootcheck import check_root
from ..scan import engine
from .quickscan import common_scan_args

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from argparse import Namespace, _SubParsersAction
    from typing import Callable

    from ..content.catalog import ResolvedProfile
    from ..results import ScanResult

FORMATS = ("text", "json", "junit", "prometheus", "html", "xccdf", "arf")
FILE = {"bash": "_shtab_compgen_files", "zsh": "_files", "tcsh": "f"}  # shtab's file completion
DIRECTORY = {"bash": "_shtab_compgen_dirs", "zsh": "_files -/", "tcsh": "d"}
# Debian's node_exporter textfile directory (prometheus-node-exporter package default).
TEXTFILE_PATH = "/var/lib/prometheus/node-exporter/tunewatch.prom"

# The main help's epilog (RawDescriptionHelpFormatter prints it as is).
EPILOG = (
    'examples:\n'
    '  tunewatch scan                                   scan this host with the auto profile\n'
    '  tunewatch scan --root tests/snapshots/examples/azure-m-rebooted --profile azure-sap-hana\n'
    '  tunewatch scan --format prometheus --output /var/lib/prometheus/node-exporter/tunewatch.prom\n'
    '  tunewatch serve --profile vmware-sap-hana        Prometheus exporter on :19847\n'
    '  tunewatch collect /tmp/snap                      snapshot this host for a later scan --root\n'
    '  tunewatch checks -v nic-irq-affinity             explain a check\n'
    '\n'
    'exit codes: 0 nothing fails, 2 a check fails or errors, 1 usage or content error'
)


def _detail_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metrics.detail", dest="metrics_detail", action="store_true",
                   help="prometheus: also export one series per object, data IRQ and numeric setting "
                        "(docs/metrics.md: about 10x the series on a large host)")


def _seconds(text: str) -> float:
    """argparse type for durations: the same Prometheus-style syntax as the serve flags."""
    import argparse

    from ..serve.options import parse_duration  # light: argparse and re only
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _content_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--content", metavar="DIR", help="content directory (default: the checks/ shipped with tunewatch)")


def _scan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", default="/", metavar="DIR",
                   help="read facts under DIR instead of / (a snapshot written by `tunewatch collect`)"
                   ).complete = DIRECTORY  # type: ignore[attr-defined]
    p.add_argument("--profile", default="auto", help="profile id (default: auto, detects what applies)")
    p.add_argument("--tailoring", metavar="FILE", help="tailoring file: select/unselect checks, override parameters"
                   ).complete = FILE  # type: ignore[attr-defined]
    p.add_argument("--waivers", metavar="FILE", help="waivers file: accepted failures with an expiry date"
                   ).complete = FILE  # type: ignore[attr-defined]
    p.add_argument("--rule", action="append", default=[], metavar="CHECK",
                   help="run only this check of the profile (repeatable; a check id or its XCCDF rule id)")
    p.add_argument("--skip-rule", action="append", default=[], metavar="CHECK",
                   help="leave this check of the profile out (repeatable)")
    p.add_argument("--allow-partial-root", dest="allow_partial_root", action="store_true",
                   help="scan a --root that has none of proc/, sys/ and etc/os-release (a partial snapshot): "
                        "without it such a root is refused with exit code 1, since it looks like no host")
    _content_args(p)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with `only` (a subcommand name) that subcommand's parser
    alone: each ArgumentParser costs its formatter and gettext look-ups, and the serve flags
    and the export/remediate modules are imports a scan does not need (docs/architecture.md#start-up-cost). Parsing a
    valid command line gives the same result either way; an unknown command (only=None)
    gets the whole parser and its "invalid choice" message."""
    import argparse  # here: a scan of the common shape needs none (cli/quickscan.py)

    from .helpformat import ArgumentParser  # argparse's, without importing shutil for every add_argument

    parser = ArgumentParser(
        prog="tunewatch",
        description="Prove that network and storage tuning is in place now and survives the next reboot.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"tunewatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, add in _SUBPARSERS:
        if only not in COMMANDS or only == name:
            add(sub)
    return parser


def _add_scan(sub: _SubParsersAction) -> None:
    p = sub.add_parser("scan", help="scan this host (or a snapshot) and report per check and object")
    _scan_args(p)
    p.add_argument("--format", choices=FORMATS, default="text", help="report format (default: text)")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write the report to FILE (prometheus: atomically, for node_exporter's textfile collector, "
                        f"e.g. {TEXTFILE_PATH})").complete = FILE
    p.add_argument("--exit-code", dest="exit_code", action="store_true",
                   help="prometheus with --output: exit 2 when a check fails or errors, as the other formats do "
                        "(default: exit 0 once the file is written, so a systemd timer does not report a failure)")
    _detail_arg(p)
    p.add_argument("--report", action="append", default=[], metavar="FORMAT=FILE", type=_report_spec,
                   help="also write FORMAT to FILE from the same scan (repeatable), e.g. --report xccdf=r.xml")
    for fmt in FORMATS:
        p.add_argument(f"--output-{fmt}", dest="report", action="append", metavar="FILE",
                       type=lambda path, fmt=fmt: (fmt, path), help=f"same as --report {fmt}=FILE"
                       ).complete = FILE
    p.add_argument("--runbook-url", metavar="URL", default=os.environ.get("TUNEWATCH_RUNBOOK_URL") or None,
                   help="html: link each check to URL#<check id>, the published runbook (default: "
                        "$TUNEWATCH_RUNBOOK_URL; without either the report embeds each check's runbook section)")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="text: list passing objects and every not-applicable check too")
    p.add_argument("--quiet", "-q", action="store_true", help="text: only checks that fail or error")
    p.add_argument("--brief", action="store_true", help="text: one line per check, no objects")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="text colours (default: auto)")
    p.add_argument("--timeout", type=_seconds, default=engine.DEFAULT_TIMEOUT_S, metavar="DURATION",
                   help="wall-clock limit of the scan, e.g. 60s or 2m (default: 60s); checks not decided by "
                        "then are `error`")
    from ..vsphere.command import add_arguments as vsphere_arguments  # light: no pyVmomi
    vsphere_arguments(p, "scan")


def _add_collect(sub: _SubParsersAction) -> None:
    import argparse

    p = sub.add_parser("collect", help="write a snapshot of this host's facts to DIR")
    p.add_argument("directory", metavar="DIR")
    p.add_argument("--verbose", "-v", action="store_true", help="list every file skipped (default: one summary line)")
    p.add_argument("--root", default="/", help=argparse.SUPPRESS)
    _content_args(p)
    from ..vsphere.command import add_arguments as vsphere_arguments  # light: no pyVmomi
    vsphere_arguments(p, "collect")


def _add_serve(sub: _SubParsersAction) -> None:
    p = sub.add_parser("serve", help="Prometheus exporter: scan in the background, serve /metrics")
    _scan_args(p)
    from ..serve.options import add_serve_arguments  # light: no web stack for the other commands
    add_serve_arguments(p)
    _detail_arg(p)
    from ..vsphere.command import add_arguments as vsphere_arguments  # light: no pyVmomi
    vsphere_arguments(p, "serve")


def _add_checks(sub: _SubParsersAction) -> None:
    p = sub.add_parser("checks", help="list checks, or explain the ones named")
    p.add_argument("ids", nargs="*", metavar="CHECK")
    p.add_argument("--verbose", "-v", action="store_true", help="show rationale, parameters and references")
    _content_args(p)


def _add_profiles(sub: _SubParsersAction) -> None:
    p = sub.add_parser("profiles", help="list profiles, or show the checks and parameters of one")
    p.add_argument("ids", nargs="*", metavar="PROFILE")
    _content_args(p)


def _add_validate_content(sub: _SubParsersAction) -> None:
    p = sub.add_parser("validate-content", help="load and validate all content (and tailoring/waiver files)")
    p.add_argument("--tailoring", metavar="FILE")
    p.add_argument("--waivers", metavar="FILE")
    _content_args(p)


def _add_paths(sub: _SubParsersAction) -> None:
    p = sub.add_parser("paths", help="print where the shipped checks, rules, dashboards and docs are")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help=f"print only these paths, one a line ({', '.join(SHIPPED)})")


def _add_completion(sub: _SubParsersAction) -> None:
    import argparse

    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh or tcsh)",
                       epilog="bash: tunewatch completion bash > /etc/bash_completion.d/tunewatch\n"
                              "zsh:  tunewatch completion zsh > \"${fpath[1]}/_tunewatch\"",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shell", choices=("bash", "zsh", "tcsh"))
    _content_args(p)
    p.set_defaults(build_parser=build_parser)  # info.py's cmd_completion: info imports nothing of main


def _add_export(sub: _SubParsersAction) -> None:
    from . import export
    export.add_parser(sub, _scan_args)


def _add_remediate(sub: _SubParsersAction) -> None:
    from ..remediate import command as remediate
    remediate.add_parser(sub, _scan_args)


_SUBPARSERS = (("scan", _add_scan), ("collect", _add_collect), ("serve", _add_serve), ("checks", _add_checks),
               ("profiles", _add_profiles), ("validate-content", _add_validate_content), ("paths", _add_paths),
               ("completion", _add_completion), ("export", _add_export), ("remediate", _add_remediate))


def _command_of(argv: list[str]) -> str | None:
    """The subcommand argv names (the first word: tunewatch has no global option that takes
    a value), or None for help, --version or a mistyped command (the full parser says so)."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser that parsed the chosen (sub)command: `export goss`'s, not tunewatch's."""
    import argparse

    while True:
        chosen = next((a.choices.get(getattr(args, a.dest, None) or "") for a in parser._actions
                       if isinstance(a, argparse._SubParsersAction)), None)
        if chosen is None:
            return parser
        parser = chosen


def _report_spec(value: str) -> tuple[str, str]:
    import argparse

    fmt, sep, path = value.partition("=")
    if not sep or not path or fmt not in FORMATS:
        raise argparse.ArgumentTypeError(f"expected FORMAT=FILE with FORMAT one of {', '.join(FORMATS)}, got {value!r}")
    return fmt, path


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
            parser = build_parser(_command_of(argv))
            args, unknown = parser.parse_known_args(argv)
            if unknown:  # argparse would blame the top-level parser; the subcommand's usage helps
                _innermost(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
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
