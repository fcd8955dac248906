"""`--format text`: the report for a terminal.

Lines wrap at the terminal width (shutil.get_terminal_size, which honours COLUMNS) at word
boundaries only, continuation lines indented under their text. Failing objects that share
one fix (36 IRQs of a NIC, one command) are one line naming them ("36 IRQs of eth1:
59-94") with the finding from the result's data (actual, or predicted and source) and the
fix once (a multi-line change, a tuned profile or a .mount section, line by line as it goes
in the file); `verbose` shows every object with its whole message and fix. Checks that do not apply fold into one line.
`quiet` keeps fail and error only; `brief` prints one line per check. The summary line is
always last, so `tail -1` is the verdict.
"""

from __future__ import annotations

from ..results import ScanResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from ..results import CheckResult, Fix, ObjectResult

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
    """Every line of the report passes here: host data in it has no raw control byte (ESC
    as `\\x1b`, escape.text); blanks and newlines fold into one space."""
    import textwrap  # cached after the first call

    from .._escape import text as shown
    return textwrap.wrap(" ".join(shown(text, keep_lines=True).split()), width, initial_indent=first,
                         subsequent_indent=rest, break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def _fix_text(fix: Fix | None, note: bool = True) -> str:
    if fix is None:
        return ""
    parts = []
    if fix.command:
        parts.append(fix.command)
    if fix.file and fix.change and "\n" in fix.change:  # a file's lines, each shown as it goes in (_fix_lines)
        parts.append(f"in {fix.file}:\n{fix.change}\n")
    elif fix.file:
        parts.append(f"in {fix.file}: {fix.change}" if fix.change else f"edit {fix.file}")
    elif fix.change:
        parts.append(fix.change)
    if fix.note and (note or not parts):
        parts.append(fix.note)
    return "; ".join(parts)


def _fix_lines(fix: str, width: int, indent: str) -> list[str]:
    """`fix: ...` wrapped; the lines of a multi-line change (a tuned profile, a .mount
    section: _fix_text puts them between newlines) one per line as they go in the file,
    never folded into one (a profile read as one line means something else), each escaped
    as every line is; what follows them (the note) wrapped again."""
    head, *block = fix.split("\n")
    tail = block.pop() if block else ""
    lines = _wrap(f"fix: {head}", width, indent[:-5], indent)
    from .._escape import text as shown

    lines += [f"{indent}  {shown(line)}".rstrip() for line in block]
    if tail.strip("; "):
        lines += _wrap(tail.lstrip("; "), width, indent, indent)
    return lines


def _span(numbers: list[int]) -> str:
    """59, 61, 63 ... 94 as "59-94"; one number alone."""
    low, high = min(numbers), max(numbers)
    return str(low) if low == high else f"{low}-{high}"


def _names(objects: list[ObjectResult]) -> str:
    """Which objects a line stands for. IRQs (their `irq` placement data) read "19 IRQs of
    eth1 (59-94)"; other objects eth1/irq45, eth1/irq46 as "eth1: irq45, irq46"."""
    if len(objects) > 1 and all(o.irq is not None for o in objects):
        by_nic: dict[str, list[int]] = {}
        for o in objects:
            if o.irq is not None:  # every one: tested above
                by_nic.setdefault(o.irq.interface, []).append(o.irq.irq)
        return "; ".join(f"{len(irqs)} IRQs of {nic} ({_span(irqs)})" for nic, irqs in by_nic.items())
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


def _finding(o: ObjectResult) -> str:
    """One object's finding from its data: the value now or, for a `-persistent` check,
    after the next boot and where it comes from; then what was expected."""
    found = f"after boot {o.predicted} ({o.source})" if o.predicted is not None and o.source else o.actual
    return f"{found}; expected {o.expected}" if o.expected else found


def _owner(o: ObjectResult) -> str:
    """The name a fix spells for this object: its NIC for an IRQ, else the object's first part."""
    return o.irq.interface if o.irq is not None else o.object.partition("/")[0]


def _short_fix(o: ObjectResult) -> str:
    """The fix without its note, but with it where the note is the fix: a boot-predicted
    (`-persistent`) object whose fix names no file says in its note how to make it persist."""
    return _fix_text(o.fix, note=o.predicted is not None and o.fix is not None and not o.fix.file)


def _groups(objects: list[ObjectResult], verbose: bool) -> list[tuple[str, list[ObjectResult]]]:
    """(status, objects) in first-seen order. With verbose, objects that share one whole fix
    (the IRQs of one NIC) are one group and any other object stays alone. Without it,
    objects are one group when their fixes differ only in the name of the object they fix
    (`ethtool -L eth1 ...`, `ethtool -L eth2 ...`), or, without a fix, when their messages
    are the same."""
    groups: dict[tuple, list] = {}
    for n, o in enumerate(objects):
        fix = _fix_text(o.fix) if verbose else _short_fix(o)
        if verbose:
            key: tuple = (o.status, fix) if fix else (o.status, n)
        elif fix:
            owner = _owner(o)
            key = (o.status, fix.replace(owner, "\0") if owner else fix)
        else:
            key = (o.status, o.message)
        groups.setdefault(key, []).append(o)
    return [(key[0], objs) for key, objs in groups.items()]


def _group_text(objs: list[ObjectResult], verbose: bool) -> tuple[str, str]:
    """The line for a group and its fix line."""
    first = objs[0]
    if verbose:  # every object's whole message, as the JSON report has it
        text = first.message if len(objs) == 1 else f"{len(objs)} objects ({_names(objs)}), e.g. {first.message}"
        return text, _fix_text(first.fix)
    fix = _short_fix(first)
    if not fix:  # nothing repeats it: the message says what was found and why (an error's cause)
        return (first.message if len(objs) == 1 else f"{_names(objs)}: {first.message}"), ""
    same = len({_finding(o) for o in objs}) == 1
    text = f"{_names(objs)}: {_finding(first)}" if same else \
        f"{_names(objs)}, e.g. {first.object}: {_finding(first)}"
    others = list(dict.fromkeys(_owner(o) for o in objs if _owner(o) != _owner(first)))
    if fix and others and _owner(first) in fix:
        fix += f" (likewise for {', '.join(others)})"
    return text, fix


def _object_lines(r: CheckResult, width: int, verbose: bool, paint: Callable[[str, str], str]) -> list[str]:
    shown = [o for o in r.objects if verbose or o.status != "pass"]
    groups = _groups(shown, verbose)
    lines = []
    detail = _OBJ_INDENT + " " * _OBJ_STATUS
    for status, objs in groups if verbose else groups[:MAX_GROUPS]:
        label = status.ljust(_OBJ_STATUS - 1) + " "
        text, fix = _group_text(objs, verbose)
        body = _wrap(text, width, _OBJ_INDENT + label, detail)
        body[0] = _OBJ_INDENT + paint(label.rstrip(), status) + body[0][len(_OBJ_INDENT) + len(status):]
        lines += body
        if fix:
            lines += _fix_lines(fix, width, detail + "     ")
    if not verbose and len(groups) > MAX_GROUPS:
        rest = sum(len(objs) for _s, objs in groups[MAX_GROUPS:])
        lines += _wrap(f"... and {rest} more object(s) (--verbose or --format json lists all)", width,
                       detail, detail)
    return lines


def _readd_line(r: CheckResult, width: int) -> list[str]:
    """One line when an object's verdict after a re-add of its device (an Azure VF
    re-added during host servicing, a driver reload) is not its next-boot verdict."""
    differ = [o for o in r.objects if o.after_readd is not None and o.after_readd.status != o.status
              and o.status not in ("notapplicable", "waived")]
    if not differ:
        return []
    first = differ[0].after_readd
    if first is None:  # never: differ holds objects with after_readd
        return []
    detail = _OBJ_INDENT + " " * _OBJ_STATUS
    text = f"after a re-add of the device (not a reboot): {first.status} for {_names(differ)}: {first.source}"
    return _wrap(text, width, _OBJ_INDENT + "re-add".ljust(_OBJ_STATUS - 1) + " ", detail)


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
                lines += _object_lines(r, width, verbose, paint) + _readd_line(r, width)
    s = result.summary
    lines += ["", "summary: " + ", ".join(f"{s[k]} {k}" for k in _ORDER)
              + f" ({len(result.results)} checks, {result.duration_seconds * 1000:.0f} ms)"]
    return "\n".join(lines) + "\n"
