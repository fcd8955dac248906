"""`--format text`: the report for a terminal.

Lines wrap at the terminal width (shutil.get_terminal_size, which honours COLUMNS) at word
boundaries only, continuation lines indented under their text. Failing objects that share
one fix (36 IRQs of a NIC, one command) are shown once, with the objects the fix covers;
objects without a `fix` show their message. Checks that do not apply fold into one line.
`quiet` keeps fail and error only; `brief` prints one line per check. The summary line is
always last, so `tail -1` is the verdict.
"""

from __future__ import annotations

import json

from ..results import ScanResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable
    from collections.abc import Iterable
    from ..results import Fix, ObjectResult
    from ..results import CheckResult

MAX_GROUPS = 8  # per check, without verbose
MAX_NAMES = 12  # object names listed for one fix
_COLOURS = {"pass": "32", "fail": "31", "error": "35", "waived": "36", "notapplicable": "90"}
_ORDER = ("fail", "error", "waived", "pass", "notapplicable")
_STATUS_WIDTH = 14  # "NOTAPPLICABLE" + a space
_OBJ_INDENT = " " * 4
_OBJ_STATUS = _STATUS_WIDTH - 4  # object text under its check's title; "notapplicable" (--verbose) pushes it right


def terminal_width() -> int:
    import shutil  # here: json and prometheus reports import this module too (docs/architecture.md#start-up-cost)

    return max(40, shutil.get_terminal_size((100, 24)).columns)


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    import textwrap  # cached after the first call

    return textwrap.wrap(" ".join(text.split()), width, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def _fix_text(fix: Fix) -> str:
    if fix is None:
        return ""
    parts = []
    if fix.command:
        parts.append(fix.command)
    if fix.file:
        parts.append(f"in {fix.file}: {fix.change}" if fix.change else f"edit {fix.file}")
    elif fix.change:
        parts.append(fix.change)
    if fix.note:
        parts.append(fix.note)
    return "; ".join(parts)


def _names(objects: Iterable[ObjectResult]) -> str:
    """eth1/irq45, eth1/irq46 ... as "eth1: irq45, irq46" (the NIC once)."""
    by_base: dict[str, list[str]] = {}
    for o in objects:
        base, sep, leaf = o.object.partition("/")
        by_base.setdefault(base if sep else "", []).append(leaf if sep else o.object)
    shown, parts = 0, []
    for base, leaves in by_base.items():
        take = leaves[:max(1, MAX_NAMES - shown)]
        shown += len(take)
        more = f" and {len(leaves) - len(take)} more" if len(leaves) > len(take) else ""
        parts.append((f"{base}: " if base else "") + ", ".join(take) + more)
    return "; ".join(parts)


def _groups(objects):
    """(status, fix text, objects) in first-seen order; objects without a fix stay alone."""
    groups: dict[tuple, list] = {}
    for n, o in enumerate(objects):
        fix = _fix_text(o.fix)
        key = (o.status, json.dumps(o.fix.to_dict(), sort_keys=True)) if fix else (o.status, n)
        groups.setdefault(key, []).append(o)
    return [(key[0], _fix_text(objs[0].fix), objs) for key, objs in groups.items()]


def _object_lines(r: CheckResult, width: int, verbose: bool, paint: Callable[[str, str], str]) -> list[str]:
    shown = [o for o in r.objects if verbose or o.status != "pass"]
    groups = _groups(shown)
    lines = []
    detail = _OBJ_INDENT + " " * _OBJ_STATUS
    for status, fix, objs in groups if verbose else groups[:MAX_GROUPS]:
        label = status.ljust(_OBJ_STATUS - 1) + " "
        first = _OBJ_INDENT + label
        text = objs[0].message if len(objs) == 1 else f"{len(objs)} objects ({_names(objs)}), e.g. {objs[0].message}"
        body = _wrap(text, width, first, detail)
        body[0] = _OBJ_INDENT + paint(label.rstrip(), status) + body[0][len(_OBJ_INDENT) + len(status):]
        lines += body
        if fix:
            lines += _wrap(f"fix: {fix}", width, detail, detail + "     ")
    if not verbose and len(groups) > MAX_GROUPS:
        rest = sum(len(objs) for _s, _f, objs in groups[MAX_GROUPS:])
        lines += _wrap(f"... and {rest} more object(s) (--verbose or --format json lists all)", width,
                       detail, detail)
    return lines


def _headed(status: str, text: str, width: int, paint: Callable[[str, str], str]) -> list[str]:
    """A check line: the status in its column, the text wrapped and indented under itself."""
    pad = " " * _STATUS_WIDTH
    wrapped = _wrap(text, width, pad, pad)
    wrapped[0] = paint(status.upper(), status) + " " * (_STATUS_WIDTH - len(status)) + wrapped[0][len(pad):]
    return wrapped


def render_text(result: ScanResult, colour: bool = False, verbose: bool = False, quiet: bool = False,
                brief: bool = False, width: int | None = None) -> str:
    width = width or terminal_width()
    paint = (lambda s, st: f"\033[{_COLOURS[st]}m{s}\033[0m") if colour else (lambda s, st: s)
    host = result.host
    lines = _wrap(f"tunewatch {result.version}  profile {result.profile}  root {result.root}", width, "", "    ")
    lines += _wrap(f"host {host.hostname} ({host.platform}, {host.os_name}, kernel {host.kernel})" if host
                   else "host unknown", width, "", "    ") + [""]
    statuses = ("fail", "error") if quiet else _ORDER
    for status in statuses:
        checks = [r for r in result.results if r.status == status]
        if status == "notapplicable" and not verbose and checks:  # one line, not one per check
            text = f"{len(checks)} checks do not apply to this host: " + ", ".join(r.check for r in checks)
            lines += _headed(status, text, width, paint)
            continue
        for r in checks:
            head = f"{r.check} [{r.severity}] {r.title}"
            if brief:
                bad = sum(o.status == status for o in r.objects)
                head += f" ({bad} of {len(r.objects)} objects)" if status in ("fail", "error", "waived") else ""
            lines += _headed(status, head, width, paint)
            if not brief:
                lines += _object_lines(r, width, verbose, paint)
    s = result.summary
    lines += ["", "summary: " + ", ".join(f"{s[k]} {k}" for k in _ORDER)
              + f" ({len(result.results)} checks, {result.duration_seconds * 1000:.0f} ms)"]
    return "\n".join(lines) + "\n"
