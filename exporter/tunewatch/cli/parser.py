"""The tunewatch command line's parser: every subcommand's options, built for the one
subcommand a command line names (a scan does not build serve's, export's or remediate's
options, nor import their modules: docs/architecture.md#start-up-cost). cli/main.py runs
the commands; a scan of the common shape needs no parser at all (cli/quickscan.py)."""

from __future__ import annotations

import os

from .. import __version__
from ..content.catalog import SHIPPED
from ..scan import engine

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from argparse import _SubParsersAction

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
        if only not in COMMAND_NAMES or only == name:
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


def command_of(argv: list[str]) -> str | None:
    """The subcommand argv names (the first word: tunewatch has no global option that takes
    a value), or None for help, --version or a mistyped command (the full parser says so)."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMAND_NAMES else None
    return None


def innermost_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
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

COMMAND_NAMES = frozenset(name for name, _add in _SUBPARSERS)  # cli/main.py COMMANDS has a command for each
