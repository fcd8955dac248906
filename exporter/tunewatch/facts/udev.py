"""What systemd-udevd does for one device's "add" event at the next boot: which rules
match it, which programs `RUN` collects, which `ATTR{}`/`SYSCTL{}` values it writes and
which properties it sets. Sources: udev(7) and systemd src/udev/udev-rules.c (0052418bf8a2,
cited by function), src/libsystemd/sd-device (sysattr values), src/basic/conf-files.c.

Rules files (`udev_rules_load()`, `conf_files_list_strv(".rules")`):
- directories /etc/udev/rules.d, /run/udev/rules.d, /usr/local/lib/udev/rules.d,
  /usr/lib/udev/rules.d, /lib/udev/rules.d, merged by file name (the first directory wins
  for a name), read in lexical order of names. /run is a tmpfs emptied at every boot, so
  its files take no part in the prediction;
- only names ending in `.rules`; names starting with `.` are skipped (hidden);
- a same-name file that is empty or a link to /dev/null masks the name (udev skips it as
  `null_or_empty()`: "Skipping empty file");
- lines udev drops (parsers/udev_rules.py) are not applied; when the valid part of such a
  line matches the device it is reported in `UdevOutcome.ignored` (never an error). Only
  a file that cannot be read raises.

Matching (`udev_rule_apply_line_to_event()`): the tokens of a line are sorted by type as
udev's `sort_tokens()` does (matches first, then assignments; RUN last) and all matches
must hold. Strings (`token_match_string()`): `|` separates alternatives, an empty
alternative matches the empty string, `"?*"` means non-empty, shell globs (fnmatch(3), `i`
prefix: case-insensitive), `!=` is the negation; an unset value is "".
- KERNEL, SUBSYSTEM, DRIVER, DEVPATH, ATTR{}: the event device. A net device has no
  driver (its parent has), so DRIVER=="x" never matches it and DRIVER!="x" always does.
  KERNEL is the kernel's name before any rename; a snapshot knows the current name only,
  which is used (a limitation for interfaces renamed by a .link file or NAME=).
- NAME: the name assigned by an earlier NAME= (udev(7)); for a network interface the
  vendor rule 80-net-setup-link.rules assigns it, so rules files named after it see the
  interface's current name and earlier ones see it unset.
- ATTR{x}/ATTRS{x} (`token_match_attr()`, `sd_device_get_sysattr_value()`): the file's
  content without trailing newlines; a missing file, a directory or a link has no value
  (except the links `driver`, `subsystem`, `module`: the target's basename) and then the
  token fails whatever its operator, `!=` included. Unless the pattern itself ends in
  whitespace, trailing whitespace of the value is removed (MATCH_REMOVE_TRAILING_WHITESPACE).
- KERNELS, SUBSYSTEMS, DRIVERS, ATTRS{}, TAGS (`udev_rule_apply_parent_token_to_event()`):
  all of them must hold at one and the same device, trying the event device itself first
  and then each parent up the sysfs tree.
- ENV{x}: the device's properties: its uevent file (ACTION, DEVPATH, SUBSYSTEM, INTERFACE,
  IFINDEX, DEVTYPE...), what the caller knows from builtins (net devices: ID_NET_DRIVER)
  and what earlier rules set with ENV{x}=/+=. `$env{x}`/`%E{x}` substitute them.
- ACTION: "add" (systemd-udev-trigger.service runs `udevadm trigger --action=add`).
- PROGRAM runs through the device's `program` callback when it has one (nfsrahead);
  otherwise, like TEST, IMPORT, SYSCTL, CONST and RESULT, it cannot be run by a scanner
  and is taken to succeed (named in `assumed`).
GOTO (`rule_resolve_goto()`): jumps to the first later line of the same file with that
LABEL, and that line is then applied; a GOTO without such a label is dropped ("has no
matching label, ignoring") and the rest of its line still applies.
RUN (`TK_A_RUN_*`): `+=` appends (a command already listed is not added twice), `=`
replaces the list, `:=` replaces it and makes it final; `-=` is invalid (the line is
dropped); RUN{builtin} entries share the list with programs. ENV{x}="" unsets x, ENV{x}+=
appends with a blank. ATTR{x}=: the last value written wins.
"""

from __future__ import annotations

from .._lazyre import lazy
from .udev_files import RULES_DIRS, RulesFile, read_rules, rules_files
from .udev_records import Ignored, Level, UdevDevice, UdevOutcome

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:  # and the rule engine's modules load only when a rules file exists (evaluate)
    from collections.abc import Sequence

    from ..parsers.udev_rules import UdevRule
    from ..parsers.udev_tokens import UdevToken
    from .udev_index import Kept
    from .udev_plan import Plan, Rule, Token

__all__ = ["RULES_DIRS", "Ignored", "Level", "RulesFile", "UdevDevice", "UdevOutcome", "evaluate", "read_rules",
           "rules_files", "substitute"]

ASSUMED = {"PROGRAM", "RESULT", "TEST", "IMPORT", "SYSCTL", "CONST"}
_DEVICE_KEYS = frozenset(("KERNEL", "SUBSYSTEM", "DRIVER", "DEVPATH"))  # tested on the device's own values
_TAG = lazy(r"^[A-Za-z0-9_-]+$")  # sd-device tag_is_valid()


class _Event:
    """udev's UdevEvent for one evaluation: properties, name, program result, tags."""

    def __init__(self, dev: UdevDevice, out: UdevOutcome, trace: list | None = None):
        self.dev, self.out, self.trace = dev, out, trace
        self.props = {k[4:-1]: v for k, v in dev.values.items() if k.startswith("ENV{") and v is not None}
        self.levels = dev.levels or (Level(dev.values.get("KERNEL"), dev.values.get("SUBSYSTEM"),
                                           dev.values.get("DRIVER"), dev.attr, dev.values.get("DEVPATH")),)
        self.parent: Level | None = None
        self.name: str | None = None
        self.result: str | None = None
        self.result_known = True
        self.tags: list[str] = []
        self.run_final = self.name_final = self.links_final = False

    def tested(self, value: str | None, what: str) -> None:
        """A template evaluation (facts/udev_shared.py; callers test `trace` first, a normal
        evaluation pays nothing) tests a value that may hold the stand-in name: the outcome
        is then this device's own."""
        if value is not None and "\0" in value and self.trace is not None:
            self.trace.append(what)

    def fmt(self, text: str) -> str:
        if "$" not in text and "%" not in text:
            return text  # nothing to substitute (substitute_format()'s own first test)
        value, unknown = _ENGINE[2](text, self)  # imported by evaluate(), which made this event
        if unknown:
            self.out.assumed.add(unknown)
        return value

    def attr_of(self, level: Level | None, name: str) -> str | None:
        if "[" in name or not name:
            return None
        return (level or self.levels[0]).attr(name)


def _match_attr(ev: _Event, tok: Token, level: Level) -> bool:
    name = ev.fmt(tok.attr or "")
    if name.startswith("["):
        ev.out.assumed.add(tok.key)  # [subsystem/kernel]attr names another device
        return True
    value = ev.attr_of(level, name)
    if value is None:
        return False  # no value: the token fails whatever the operator
    if tok.value and not tok.value[-1].isspace():
        value = value.rstrip(" \t\n\r\v\f")
    return tok.test(value)


def _match_level(ev: _Event, tok: Token, level: Level, is_event_device: bool) -> bool:
    if tok.key == "KERNELS":
        return tok.test(level.kernel)
    if tok.key == "SUBSYSTEMS":
        return tok.test(level.subsystem)
    if tok.key == "DRIVERS":
        return tok.test(level.driver)
    if tok.key == "TAGS":
        tags = ev.tags if is_event_device else []
        test = tok.test_eq  # set for the list keys (TAGS, TAG, SYMLINK)
        hit = test is not None and any(test(t) for t in tags)
        return hit == (tok.op == "==")
    return _match_attr(ev, tok, level)


def _match_parents(ev: _Event, toks: tuple[Token, ...]) -> bool:
    if ev.trace is not None:
        ev.trace.append("a parent token")
    for i, level in enumerate(ev.levels):
        if all(_match_level(ev, t, level, i == 0) for t in toks):
            ev.parent = level
            return True
    ev.parent = None
    return False


def _match_token(ev: _Event, tok: Token) -> bool:
    dev, key = ev.dev, tok.key
    if key == "ACTION":
        return tok.test(dev.action)
    if dev.unknown_matches and key != "SUBSYSTEM":
        ev.out.assumed.add(key)
        return True
    # the keys rules test most first (each branch is one key's: their order matters not)
    if key in _DEVICE_KEYS:
        value = dev.values.get(key)
        if ev.trace is not None and key in ("KERNEL", "DEVPATH"):
            ev.trace.append((key, tok.test, tok.test(value)))  # a question about the name: asked again per device
        return tok.test(value)
    if key == "ENV":
        value = ev.props.get(tok.attr or "")
        if ev.trace is not None:
            ev.tested(value, "ENV")
        return tok.test(value)
    if key == "ATTR":
        return _match_attr(ev, tok, ev.levels[0])
    if key == "NAME":
        if ev.trace is not None:
            ev.tested(ev.name, "NAME")
        return tok.test(ev.name)
    if key == "PROGRAM":
        got = dev.program(ev.fmt(tok.value))
        if got is None:
            ev.out.assumed.add(key)
            ev.result, ev.result_known = None, False
            return tok.op == "=="
        ok, ev.result = got
        ev.result = None if ev.result is None else ev.result.rstrip("\n")
        return ok == (tok.op == "==")
    if key == "RESULT":
        if not ev.result_known:
            ev.out.assumed.add(key)
            return True
        if ev.trace is not None:
            ev.tested(ev.result, "RESULT")
        return tok.test(ev.result)
    if key == "TEST" and not tok.attr:
        exists = dev.test(ev.fmt(tok.value))
        if exists is not None:
            return exists == (tok.op == "==")
    if key == "SYMLINK":  # TK_M_DEVLINK: any of the links assigned so far
        test = tok.test_eq
        if ev.trace is not None:
            ev.tested("".join(ev.out.devlinks), "SYMLINK")
        hit = test is not None and any(test(link) for link in ev.out.devlinks)
        return hit == (tok.op == "==")
    if key in ASSUMED:
        ev.out.assumed.add(key)
        return True
    if key == "TAG":
        test = tok.test_eq
        if ev.trace is not None:
            ev.tested("".join(ev.tags), "TAG")
        hit = test is not None and any(test(t) for t in ev.tags)
        return hit == (tok.op == "==")
    ev.out.assumed.add(key)
    return True


def _matches(ev: _Event, rule: Rule, tokens: tuple[Token, ...] | None = None) -> bool:
    """All of the line's match tokens hold (`tokens`: those left to test, Rule.unsettled)."""
    ev.parent = None
    for tok in rule.matches if tokens is None else tokens:  # the parent group stands once, at its first token
        if tok.parent:
            if not _match_parents(ev, rule.parents):
                return False
        elif not _match_token(ev, tok):
            return False
    return True


def _run(ev: _Event, tok: UdevToken, where: tuple[str, int]) -> None:
    if ev.run_final:
        return
    ev.run_final = tok.op == ":="
    if tok.op in ("=", ":="):
        ev.out.run.clear()
        ev.out.builtins.clear()
    entry = (ev.fmt(tok.value), *where)
    target = ev.out.builtins if tok.attr == "builtin" else ev.out.run
    if all(e[0] != entry[0] for e in target):
        target.append(entry)


def _assign(ev: _Event, tok: UdevToken, where: tuple[str, int]) -> None:
    key, out = tok.key, ev.out
    if key == "RUN":
        _run(ev, tok, where)
    elif key == "ENV":
        value, name = ev.fmt(tok.value), tok.attr or ""
        if not value:
            if tok.op != "+=":
                ev.props.pop(name, None)
                out.env.pop(name, None)
            return
        if tok.op == "+=" and ev.props.get(name):
            value = f"{ev.props[name]} {value}"
        ev.props[name] = out.env[name] = value
    elif key == "ATTR":
        out.attrs[ev.fmt(tok.attr or "")] = (ev.fmt(tok.value), *where)
    elif key == "SYSCTL":
        out.sysctls[ev.fmt(tok.attr or "").replace("/", ".")] = (ev.fmt(tok.value), *where)
    elif key == "TAG":
        value = ev.fmt(tok.value)
        if ev.trace is not None:
            ev.tested(value, "TAG")
        if tok.op == "-=":
            ev.tags = [t for t in ev.tags if t != value]
        elif not _TAG.match(value):
            out.notes.append(f"{where[0]}:{where[1]}: invalid tag {value!r} refused")  # device_add_tag(): -EINVAL
        else:
            ev.tags = ([] if tok.op == "=" else ev.tags) + ([value] if value not in ev.tags else [])
        out.tags = list(ev.tags)
    elif key == "NAME" and not ev.name_final and "IFINDEX" in ev.props:
        ev.name_final = tok.op == ":="
        ev.name = out.name = ev.fmt(tok.value)
    elif key == "SYMLINK" and ev.dev.has_devnode and not ev.links_final:
        ev.links_final = tok.op == ":="
        links = ev.fmt(tok.value).split()
        if tok.op == "-=":
            if ev.trace is not None:
                ev.tested("".join(links), "SYMLINK")
            out.devlinks[:] = [x for x in out.devlinks if x not in links]
            return
        if tok.op in ("=", ":="):
            out.devlinks.clear()
        out.devlinks.extend(x for x in links if x not in out.devlinks)


def _would_do(ev: _Event, rule: UdevRule) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    from ..parsers.udev_tokens import MATCH_OPS

    run = tuple(ev.fmt(t.value) for t in rule.tokens if t.key == "RUN" and t.op not in MATCH_OPS)
    attrs = tuple((t.attr or "", ev.fmt(t.value)) for t in rule.tokens if t.key == "ATTR" and t.op not in MATCH_OPS)
    return run, attrs


def _ignored(ev: _Event, source: str, rule: Rule) -> None:
    """A dropped line: reported when its valid keys match the device (no side effects)."""
    saved = (dict(ev.props), ev.name, ev.result, ev.result_known, set(ev.out.assumed))
    if _matches(ev, rule) and rule.assigns:
        run, attrs = _would_do(ev, rule.source)
        ev.out.ignored.append(Ignored(source, rule.line, rule.problem or "", run, attrs))
    ev.props, ev.name, ev.result, ev.result_known, ev.out.assumed = saved


def _first_at(order: Sequence[int], target: int) -> int:
    """The position of the first index >= target in the sorted `order` (bisect_left; the
    bisect module is a shared library a CLI scan would load for this alone)."""
    lo, hi = 0, len(order)
    while lo < hi:
        mid = (lo + hi) // 2
        if order[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


_ENGINE: tuple = ()  # (udev_ruleset.rule_set, udev_index.resolved, udev_match.substitute_format)


def _load_engine() -> tuple:
    """The rule engine's modules, imported at the first evaluation with rules files (a host
    without any never loads them: start-up cost), then kept: an import statement in
    evaluate() cost ~1 us per device."""
    global _ENGINE
    from .udev_index import resolved
    from .udev_match import substitute_format
    from .udev_ruleset import rule_set
    _ENGINE = (rule_set, resolved, substitute_format)
    return _ENGINE


def evaluate(files: list[RulesFile], dev: UdevDevice, every_line: bool = False,
             trace: list | None = None) -> UdevOutcome:
    """The device's "add" event through the rules. Each file's plan (facts/udev_plan.py,
    compiled once per scan) gives the lines this kind of device may match, by ACTION,
    SUBSYSTEM, ENV names and KERNEL; a file without such a line is not visited (nothing
    in it could apply); the rest is udev's own line loop over them. `every_line`: udev's
    loop over every line of every file, no line left out (the reference the differential
    tests hold the plans to). `trace`: given by a template evaluation (facts/udev_shared.py):
    why the outcome depends on the device's name (a text), or a question about the name
    that decided the path, ("KERNEL" or "DEVPATH", test, its answer), which each device
    sharing the outcome must answer alike."""
    out = UdevOutcome()
    if not files:  # no rules, no outcome: and the rule engine's modules are not imported (start-up cost)
        return out
    rule_set, resolved, _ = _ENGINE or _load_engine()
    ev = _Event(dev, out, trace)
    values = dev.values
    is_net = values.get("SUBSYSTEM") == "net" and "IFINDEX" in ev.props
    kernel = values.get("KERNEL")
    filtered = not (dev.unknown_matches or every_line)  # unknown matches: every line is tested
    rules = rule_set(files)
    work: Sequence[tuple[RulesFile, Plan, Kept | None]]
    if filtered:
        # names that may ever have a value (the rules' own set when the device has none: its hash is kept)
        env = frozenset(ev.props) | rules.env_assigned if ev.props else rules.env_assigned
        active = rules.active(dev.action, values.get("SUBSYSTEM"), env)
        work = active.visit(kernel)
        if trace is not None:
            trace.append(("KERNEL", lambda name, a=active: tuple(a.visit(name)), tuple(work)))
    else:
        work = [(f, plan, None) for f, plan in zip(rules.files, rules.plans)]
    held: dict = {}  # KERNEL test -> its result for this device (Kept.order())
    for f, plan, kept in work:
        if is_net and ev.name is None and rules.past_link[id(f)]:
            ev.name = values.get("NAME")  # what 80-net-setup-link.rules assigned
        gotos = plan.gotos
        order: Sequence[int] = range(len(plan.parsed)) if kept is None else kept.order(kernel, held)
        if trace is not None and kept is not None:
            trace.append(("KERNEL", lambda name, k=kept: tuple(k.order(name, {})), tuple(order)))
        pending = {} if kept is None else kept.pending
        pos, end = 0, len(order)
        compiled = plan.compiled
        while pos < end:
            i = order[pos]
            if pending and i in pending:  # the first line of an ATTR index udev reaches: it reads the attribute
                index = pending[i]
                order, pending = resolved(order, pending, index, ev.attr_of(None, index.source or ""))
                pos, end = _first_at(order, i), len(order)
                continue
            rule = compiled[i] or plan.rule(i)
            pos += 1
            if filtered and rule.note is None and rule.kernel:
                passed = all(test(kernel) for test in rule.kernel)
                if trace is not None:
                    trace.append(("KERNEL", lambda name, tests=rule.kernel: all(t(name) for t in tests), passed))
                if not passed:
                    continue
            if rule.problem is not None:
                _ignored(ev, f.source, rule)
                continue
            if rule.note is not None and rule.note not in out.notes:
                out.notes.append(rule.note)
            if not _matches(ev, rule, rule.unsettled if filtered and rule.note is None else None):
                continue
            where = (f.source, rule.line)
            for tok in rule.assigns:
                _assign(ev, tok, where)
            target = gotos.get(i)
            if target is not None:
                pos = _first_at(order, target)  # the label line, or the first line kept after it
    return out


def substitute(program: str, name: str) -> str:
    """udev's substitutions that stand for the interface name (`%k`, `$kernel`, `$name`...),
    for programs taken from elsewhere than evaluate() (which substitutes itself)."""
    for token in ("%k", "$kernel", "$name", "$env{INTERFACE}", "%E{INTERFACE}"):
        program = program.replace(token, name)
    return program
