"""tunewatch command line: scan, collect, serve, checks, profiles, validate-content.

Exit codes (SPEC §4): 0 nothing fails, 2 something fails or errors, 1 usage or content error.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap

from . import __version__, engine
from .content import Content
from .errors import ContentError, TunewatchError

FORMATS = ("text", "json", "junit", "prometheus", "html")


def _seconds(text: str) -> float:
    """`60`, `60s`, `1.5m`: a positive duration in seconds (argparse type)."""
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    unit = next((u for u in ("ms", "s", "m", "h") if text.endswith(u)), "")
    try:
        value = float(text[:len(text) - len(unit)]) * scale.get(unit, 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 60s, 2m)") from None
    if not 0 < value < 86400 * 365:
        raise argparse.ArgumentTypeError(f"not a positive duration: {text!r}")
    return value


def _content_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--content", metavar="DIR", help="content directory (default: the checks/ shipped with tunewatch)")


def _scan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", default="/", metavar="DIR",
                   help="read facts under DIR instead of / (a snapshot written by `tunewatch collect`)")
    p.add_argument("--profile", default="auto", help="profile id (default: auto, detects what applies)")
    p.add_argument("--tailoring", metavar="FILE", help="tailoring file: select/unselect checks, override parameters")
    p.add_argument("--waivers", metavar="FILE", help="waivers file: accepted failures with an expiry date")
    _content_args(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tunewatch",
        description="Prove that network and storage tuning is in place now and survives the next reboot.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent("""\
            examples:
              tunewatch scan                                   scan this host with the auto profile
              tunewatch scan --root tests/snapshots/examples/azure-m-rebooted --profile azure-sap-hana
              tunewatch scan --format prometheus --output /var/lib/node_exporter/textfile/tunewatch.prom
              tunewatch serve --profile vmware-sap-hana        Prometheus exporter on :19847
              tunewatch collect /tmp/snap                      snapshot this host for a later scan --root
              tunewatch checks -v nic-irq-affinity             explain a check

            exit codes: 0 nothing fails, 2 a check fails or errors, 1 usage or content error"""))
    parser.add_argument("--version", action="version", version=f"tunewatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("scan", help="scan this host (or a snapshot) and report per check and object")
    _scan_args(p)
    p.add_argument("--format", choices=FORMATS, default="text", help="report format (default: text)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE (prometheus: atomically)")
    p.add_argument("--verbose", "-v", action="store_true", help="text: list passing objects too")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="text colours (default: auto)")
    p.add_argument("--timeout", type=_seconds, default=engine.DEFAULT_TIMEOUT_S, metavar="DURATION",
                   help="wall-clock limit of the scan, e.g. 60s or 2m (default: 60s); checks not decided by "
                        "then are `error`")

    p = sub.add_parser("collect", help="write a snapshot of this host's facts to DIR")
    p.add_argument("directory", metavar="DIR")
    p.add_argument("--root", default="/", help=argparse.SUPPRESS)
    _content_args(p)

    p = sub.add_parser("serve", help="Prometheus exporter: scan in the background, serve /metrics")
    _scan_args(p)
    # default filled in by cmd_serve: importing serve here would load the web stack for every scan
    p.add_argument("--web.listen-address", dest="listen_address", default=None,
                   help="address to listen on (default: :19847)")
    p.add_argument("--web.config.file", dest="web_config", metavar="FILE",
                   help="exporter-toolkit web config: TLS and basic auth")
    p.add_argument("--scan.interval", dest="scan_interval", default="5m", help="time between scans (default: 5m)")
    p.add_argument("--scan.timeout", dest="scan_timeout", default="60s",
                   help="a scan running longer is reported as failed (default: 60s)")
    p.add_argument("--log.level", dest="log_level", default="info", choices=("debug", "info", "warn", "error"))
    p.add_argument("--log.format", dest="log_format", default="logfmt", choices=("logfmt", "json"))

    p = sub.add_parser("checks", help="list checks, or explain the ones named")
    p.add_argument("ids", nargs="*", metavar="CHECK")
    p.add_argument("--verbose", "-v", action="store_true", help="show rationale, parameters and references")
    _content_args(p)

    p = sub.add_parser("profiles", help="list profiles, or show the checks and parameters of one")
    p.add_argument("ids", nargs="*", metavar="PROFILE")
    _content_args(p)

    p = sub.add_parser("validate-content", help="load and validate all content (and tailoring/waiver files)")
    p.add_argument("--tailoring", metavar="FILE")
    p.add_argument("--waivers", metavar="FILE")
    _content_args(p)
    return parser


def _load(args):
    content = Content(args.content)
    tailoring = content.load_tailoring(args.tailoring) if getattr(args, "tailoring", None) else None
    waivers = content.load_waivers(args.waivers) if getattr(args, "waivers", None) else []
    profile_id = tailoring.data["profile"] if tailoring is not None else getattr(args, "profile", "auto")
    profile = content.resolve(profile_id, tailoring)
    return content, profile, waivers


def _write(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def cmd_scan(args) -> int:
    content, profile, waivers = _load(args)
    if not os.path.isdir(args.root):
        raise ContentError(args.root, "--root is not a directory")
    result = engine.scan_with_watchdog(content, profile, args.root, waivers, timeout=args.timeout)
    if result.timed_out:
        print(f"tunewatch: error: scan did not finish within {args.timeout:g} s; checks not decided are "
              "reported as error", file=sys.stderr)
    if args.format == "prometheus":
        from .outputs.prometheus import render, write_textfile
        text = render(result)
        write_textfile(args.output, text) if args.output else sys.stdout.write(text)
    elif args.format == "json":
        from .outputs.report import render_json
        _write(render_json(result), args.output)
    elif args.format == "junit":
        from .outputs.report import render_junit
        _write(render_junit(result), args.output)
    elif args.format == "html":
        from .outputs.html import render_html
        _write(render_html(result), args.output)
    else:
        from .outputs.report import render_text
        colour = args.color == "always" or (args.color == "auto" and not args.output and sys.stdout.isatty()
                                            and not os.environ.get("NO_COLOR"))
        _write(render_text(result, colour, args.verbose), args.output)
    return result.exit_code


def cmd_serve(args) -> int:
    from .outputs.prometheus import make_renderer
    from .serve import DEFAULT_LISTEN_ADDRESS, parse_duration, run_exporter
    args.listen_address = args.listen_address or DEFAULT_LISTEN_ADDRESS
    content, profile, waivers = _load(args)
    info = {"version": __version__, "profile": profile.id, "root": os.path.abspath(args.root),
            "content digest": content.digest}
    return run_exporter(args.listen_address, args.web_config,
                        scan=lambda: engine.scan(content, profile, args.root, waivers),
                        render=make_renderer(), interval=parse_duration(args.scan_interval),
                        timeout=parse_duration(args.scan_timeout), landing_info=info,
                        log_level=args.log_level, log_format=args.log_format)


def cmd_collect(args) -> int:
    from .collect import collect
    content = Content(args.content)
    written = collect(args.root, args.directory, content)
    print(f"wrote {written} files to {args.directory}; scan it with: tunewatch scan --root {args.directory}")
    return 0


def cmd_checks(args) -> int:
    content = Content(args.content)
    for cid in args.ids:
        if cid not in content.checks:
            raise ContentError("checks", f"unknown check id {cid!r} (see `tunewatch checks`)")
    if not args.ids:
        for c in content.checks.values():
            print(f"{c.id:32} {c.severity:6} {c.title}")
        return 0
    for cid in args.ids:
        c = content.checks[cid]
        print(f"{c.id}: {c.title}\n  severity: {c.severity}   kind: {c.kind}   file: {c.doc.path}")
        print(textwrap.indent(textwrap.fill(c.description, 88), "  "))
        if args.verbose:
            print("  rationale:\n" + textwrap.indent(textwrap.fill(c.rationale, 86), "    "))
            if c.vars:
                print("  default parameters:")
                for k, v in c.vars.items():
                    print(f"    {k}: {v}")
            print("  references:")
            for ref in c.references:
                print(f"    - {ref.get('seed') and 'seed ' + ref['seed'] + ': ' or ''}{ref['title']}"
                      f"{' ' + ref['url'] if ref.get('url') else ''}")
        print()
    return 0


def cmd_profiles(args) -> int:
    content = Content(args.content)
    if not args.ids:
        for p in content.profiles.values():
            resolved = content.resolve(p.id)
            print(f"{p.id:22} {len(resolved.checks):3} checks  {p.title}")
        return 0
    for pid in args.ids:
        resolved = content.resolve(pid)
        p = content.profiles[pid]
        print(f"{pid}: {p.title}" + (f" (extends {p.extends})" if p.extends else ""))
        print(textwrap.indent(textwrap.fill(p.description, 88), "  "))
        for sel in resolved.checks:
            own = content.checks[sel.check.id].vars
            changed = {k: v for k, v in sel.vars.items() if own.get(k) != v}
            print(f"  - {sel.check.id}" + (f"  {changed}" if changed else ""))
        print()
    return 0


def cmd_validate(args) -> int:
    content = Content(args.content)
    if args.tailoring:
        content.load_tailoring(args.tailoring)
    if args.waivers:
        content.load_waivers(args.waivers)
    print(f"content OK: {len(content.checks)} checks, {len(content.profiles)} profiles ({content.directory}, "
          f"digest {content.digest})")
    return 0


COMMANDS = {"scan": cmd_scan, "serve": cmd_serve, "collect": cmd_collect, "checks": cmd_checks,
            "profiles": cmd_profiles, "validate-content": cmd_validate}


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # argparse: usage errors are 1 here, 2 means "a check fails"
        return 1 if e.code else 0
    try:
        return COMMANDS[args.command](args)
    except TunewatchError as e:
        print(f"tunewatch: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except (ValueError, OSError) as e:  # bad listen address, bind failure, unwritable output
        print(f"tunewatch: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
