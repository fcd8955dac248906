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
from .._record import FrozenRecord, Record
from ..parsers.udev_rules import MATCH_OPS, UdevRule, UdevToken
from .udev_files import RULES_DIRS, RulesFile, read_rules, rules_files
from .udev_match import match_string, substitute_format

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:
    from typing import Callable

__all__ = ["RULES_DIRS", "Ignored", "Level", "RulesFile", "UdevDevice", "UdevOutcome", "evaluate", "read_rules",
           "rules_files", "substitute"]

ASSUMED = {"PROGRAM", "RESULT", "TEST", "IMPORT", "SYSCTL", "CONST"}
NET_SETUP_LINK = "80-net-setup-link.rules"
_TAG = lazy(r"^[A-Za-z0-9_-]+$")  # sd-device tag_is_valid()
PARENT_KEYS = ("KERNELS", "SUBSYSTEMS", "DRIVERS", "ATTRS", "TAGS")
# sort_tokens(): UdevRuleTokenType order (udev-rules.c), matches then assignments
_MATCH_ORDER = ["ACTION", "DEVPATH", "KERNEL", "SYMLINK", "NAME", "ENV", "CONST", "TAG", "SUBSYSTEM", "DRIVER",
                "ATTR", "SYSCTL", "KERNELS", "SUBSYSTEMS", "DRIVERS", "ATTRS", "TAGS", "TEST", "PROGRAM", "IMPORT",
                "RESULT"]
_ASSIGN_ORDER = ["OPTIONS", "OWNER", "GROUP", "MODE", "TAG", "SECLABEL", "ENV", "NAME", "SYMLINK", "ATTR", "SYSCTL",
                 "RUN"]
if TYPE_CHECKING:
    ProgramResult = tuple[bool, str | None] | None  # (succeeded, stdout); None: cannot be told


def _sort_key(tok: UdevToken) -> int:
    if tok.op in MATCH_OPS:
        return _MATCH_ORDER.index(tok.key) if tok.key in _MATCH_ORDER else len(_MATCH_ORDER)
    base = 100 + (_ASSIGN_ORDER.index(tok.key) if tok.key in _ASSIGN_ORDER else 50) * 2
    return base + (1 if tok.key == "RUN" and tok.attr != "builtin" else 0)  # RUN{builtin} before programs


def _no_attr(_name: str) -> str | None:
    return None


def _no_program(_cmd: str) -> ProgramResult:
    return None


def _no_test(_path: str) -> bool | None:
    return None


class Level(FrozenRecord):
    """The event device or one of its parents, as KERNELS/SUBSYSTEMS/DRIVERS/ATTRS see it.
    `attr` returns a sysfs attribute's value as sd_device_get_sysattr_value() does (None:
    no value: missing, a directory or a link other than driver/subsystem/module)."""
    __slots__ = ("kernel", "subsystem", "driver", "attr", "devpath")
    kernel: str | None
    subsystem: str | None
    driver: str | None
    attr: Callable[[str], str | None]
    devpath: str | None

    def __init__(self,
                 kernel: str | None, subsystem: str | None, driver: str | None,
                 attr: Callable[[str], str | None] = _no_attr, devpath: str | None = None):
        self.kernel = kernel
        self.subsystem = subsystem
        self.driver = driver
        self.attr = attr
        self.devpath = devpath


class UdevDevice(FrozenRecord):
    """`values`: KERNEL, NAME (the interface name for a net device), SUBSYSTEM, DRIVER,
    DEVPATH and the properties as ENV{x}; `attr` reads its ATTR{x}; `levels`: the device
    itself, then its parents (default: the device alone, from `values`)."""
    __slots__ = ("values", "attr", "levels", "unknown_matches", "action", "program", "test", "has_devnode")
    values: dict[str, str | None]
    attr: Callable[[str], str | None]
    levels: tuple[Level, ...]
    unknown_matches: bool  # a device known only by its subsystem: other keys match
    action: str
    program: Callable[[str], ProgramResult]
    test: Callable[[str], bool | None]  # TEST: does the path exist (None: cannot tell)
    has_devnode: bool  # SYMLINK assignments apply only to a device with a node

    def __init__(self,
                 values: dict[str, str | None], attr: Callable[[str], str | None] = _no_attr,
                 levels: tuple[Level, ...] = (), unknown_matches: bool = False, action: str = "add",
                 program: Callable[[str], ProgramResult] = _no_program,
                 test: Callable[[str], bool | None] = _no_test, has_devnode: bool = False):
        self.values = values
        self.attr = attr
        self.levels = levels
        self.unknown_matches = unknown_matches
        self.action = action
        self.program = program
        self.test = test
        self.has_devnode = has_devnode


class Ignored(FrozenRecord):
    """A line udev drops whose valid keys match the device: what it would have done."""
    __slots__ = ("source", "line", "problem", "run", "attrs")
    source: str
    line: int
    problem: str
    run: tuple[str, ...]
    attrs: tuple[tuple[str, str], ...]

    def __init__(self,
                 source: str, line: int, problem: str, run: tuple[str, ...] = (),
                 attrs: tuple[tuple[str, str], ...] = ()):
        self.source = source
        self.line = line
        self.problem = problem
        self.run = run
        self.attrs = attrs


class UdevOutcome(Record):
    __slots__ = ("run", "attrs", "env", "assumed", "builtins", "sysctls", "tags", "devlinks",
                 "name", "ignored", "notes")
    run: list[tuple[str, str, int]]  # (program, source, line), substituted
    attrs: dict[str, tuple[str, str, int]]  # attr -> (value, source, line)
    env: dict[str, str]  # ENV{x}= assignments (NM_UNMANAGED...)
    assumed: set[str]
    builtins: list[tuple[str, str, int]]  # RUN{builtin}
    sysctls: dict[str, tuple[str, str, int]]
    tags: list[str]
    devlinks: list[str]
    name: str | None
    ignored: list[Ignored]
    notes: list[str]  # e.g. GOTO without a label

    def __init__(self,
                 run: list[tuple[str, str, int]] | None = None, attrs: dict[str, tuple[str, str, int]] | None = None,
                 env: dict[str, str] | None = None, assumed: set[str] | None = None,
                 builtins: list[tuple[str, str, int]] | None = None,
                 sysctls: dict[str, tuple[str, str, int]] | None = None, tags: list[str] | None = None,
                 devlinks: list[str] | None = None, name: str | None = None, ignored: list[Ignored] | None = None,
                 notes: list[str] | None = None):
        self.run = [] if run is None else run
        self.attrs = {} if attrs is None else attrs
        self.env = {} if env is None else env
        self.assumed = set() if assumed is None else assumed
        self.builtins = [] if builtins is None else builtins
        self.sysctls = {} if sysctls is None else sysctls
        self.tags = [] if tags is None else tags
        self.devlinks = [] if devlinks is None else devlinks
        self.name = name
        self.ignored = [] if ignored is None else ignored
        self.notes = [] if notes is None else notes


class _Event:
    """udev's UdevEvent for one evaluation: properties, name, program result, tags."""

    def __init__(self, dev: UdevDevice, out: UdevOutcome):
        self.dev, self.out = dev, out
        self.props = {k[4:-1]: v for k, v in dev.values.items() if k.startswith("ENV{") and v is not None}
        self.levels = dev.levels or (Level(dev.values.get("KERNEL"), dev.values.get("SUBSYSTEM"),
                                           dev.values.get("DRIVER"), dev.attr, dev.values.get("DEVPATH")),)
        self.parent: Level | None = None
        self.name: str | None = None
        self.result: str | None = None
        self.result_known = True
        self.tags: list[str] = []
        self.run_final = self.name_final = self.links_final = False

    def fmt(self, text: str) -> str:
        value, unknown = substitute_format(text, self)
        if unknown:
            self.out.assumed.add(unknown)
        return value

    def attr_of(self, level: Level | None, name: str) -> str | None:
        if "[" in name or not name:
            return None
        return (level or self.levels[0]).attr(name)


def _match(tok: UdevToken, value: str | None) -> bool:
    return match_string(tok.value, tok.op, value, tok.nocase, tok.key == "SUBSYSTEM")


def _match_attr(ev: _Event, tok: UdevToken, level: Level) -> bool:
    name = ev.fmt(tok.attr or "")
    if name.startswith("["):
        ev.out.assumed.add(tok.key)  # [subsystem/kernel]attr names another device
        return True
    value = ev.attr_of(level, name)
    if value is None:
        return False  # no value: the token fails whatever the operator
    if tok.value and not tok.value[-1].isspace():
        value = value.rstrip(" \t\n\r\v\f")
    return _match(tok, value)


def _match_level(ev: _Event, tok: UdevToken, level: Level, is_event_device: bool) -> bool:
    if tok.key == "KERNELS":
        return _match(tok, level.kernel)
    if tok.key == "SUBSYSTEMS":
        return _match(tok, level.subsystem)
    if tok.key == "DRIVERS":
        return _match(tok, level.driver)
    if tok.key == "TAGS":
        tags = ev.tags if is_event_device else []
        hit = any(match_string(tok.value, "==", t, tok.nocase) for t in tags)
        return hit == (tok.op == "==")
    return _match_attr(ev, tok, level)


def _match_parents(ev: _Event, toks: list[UdevToken]) -> bool:
    for i, level in enumerate(ev.levels):
        if all(_match_level(ev, t, level, i == 0) for t in toks):
            ev.parent = level
            return True
    ev.parent = None
    return False


def _match_token(ev: _Event, tok: UdevToken) -> bool:
    dev, key = ev.dev, tok.key
    if key == "ACTION":
        return _match(tok, dev.action)
    if dev.unknown_matches and key != "SUBSYSTEM":
        ev.out.assumed.add(key)
        return True
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
        return _match(tok, ev.result)
    if key == "TEST" and not tok.attr:
        exists = dev.test(ev.fmt(tok.value))
        if exists is not None:
            return exists == (tok.op == "==")
    if key == "SYMLINK":  # TK_M_DEVLINK: any of the links assigned so far
        hit = any(match_string(tok.value, "==", link, tok.nocase) for link in ev.out.devlinks)
        return hit == (tok.op == "==")
    if key in ASSUMED:
        ev.out.assumed.add(key)
        return True
    if key in ("KERNEL", "SUBSYSTEM", "DRIVER", "DEVPATH"):
        return _match(tok, dev.values.get(key))
    if key == "NAME":
        return _match(tok, ev.name)
    if key == "ENV":
        return _match(tok, ev.props.get(tok.attr or ""))
    if key == "TAG":
        hit = any(match_string(tok.value, "==", t, tok.nocase) for t in ev.tags)
        return hit == (tok.op == "==")
    if key == "ATTR":
        return _match_attr(ev, tok, ev.levels[0])
    ev.out.assumed.add(key)
    return True


def _matches(ev: _Event, tokens: list[UdevToken]) -> bool:
    parents = [t for t in tokens if t.key in PARENT_KEYS and t.op in MATCH_OPS]
    ev.parent = None
    for tok in tokens:
        if tok.op not in MATCH_OPS:
            continue
        if tok.key in PARENT_KEYS:
            if tok is parents[0] and not _match_parents(ev, parents):
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
            out.devlinks[:] = [x for x in out.devlinks if x not in links]
            return
        if tok.op in ("=", ":="):
            out.devlinks.clear()
        out.devlinks.extend(x for x in links if x not in out.devlinks)


def _would_do(ev: _Event, rule: UdevRule) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    run = tuple(ev.fmt(t.value) for t in rule.tokens if t.key == "RUN" and t.op not in MATCH_OPS)
    attrs = tuple((t.attr or "", ev.fmt(t.value)) for t in rule.tokens if t.key == "ATTR" and t.op not in MATCH_OPS)
    return run, attrs


def _ignored(ev: _Event, f: RulesFile, rule: UdevRule, tokens: list[UdevToken]) -> None:
    """A dropped line: reported when its valid keys match the device (no side effects)."""
    saved = (dict(ev.props), ev.name, ev.result, ev.result_known, set(ev.out.assumed))
    if _matches(ev, tokens) and any(t.op not in MATCH_OPS for t in tokens):
        run, attrs = _would_do(ev, rule)
        ev.out.ignored.append(Ignored(f.source, rule.line, rule.problem or "", run, attrs))
    ev.props, ev.name, ev.result, ev.result_known, ev.out.assumed = saved


def _goto_targets(f: RulesFile) -> dict[int, int]:
    """rule_resolve_goto(): index of a GOTO line -> index of the first later LABEL line."""
    kept = [i for i, r in enumerate(f.rules) if r.problem is None]
    out = {}
    for pos, i in enumerate(kept):
        goto = f.rules[i].goto
        if goto is not None:
            target = next((j for j in kept[pos + 1:] if f.rules[j].label == goto), None)
            if target is not None:
                out[i] = target
    return out


def evaluate(files: list[RulesFile], dev: UdevDevice) -> UdevOutcome:
    out = UdevOutcome()
    ev = _Event(dev, out)
    is_net = dev.values.get("SUBSYSTEM") == "net" and "IFINDEX" in ev.props
    for f in files:
        if is_net and ev.name is None and f.source.rsplit("/", 1)[1] > NET_SETUP_LINK:
            ev.name = dev.values.get("NAME")  # what 80-net-setup-link.rules assigned
        gotos = _goto_targets(f)
        i = 0
        while i < len(f.rules):
            rule = f.rules[i]
            tokens = sorted(rule.tokens, key=_sort_key)
            if rule.problem is not None:
                _ignored(ev, f, rule, tokens)
                i += 1
                continue
            if rule.goto is not None and i not in gotos:
                note = f'{f.source}:{rule.line}: GOTO="{rule.goto}" has no matching label, ignoring'
                if note not in out.notes:
                    out.notes.append(note)
            if not _matches(ev, tokens):
                i += 1
                continue
            for tok in tokens:
                if tok.op not in MATCH_OPS:
                    _assign(ev, tok, (f.source, rule.line))
            i = gotos.get(i, i + 1)
    return out


def substitute(program: str, name: str) -> str:
    """udev's substitutions that stand for the interface name (`%k`, `$kernel`, `$name`...),
    for programs taken from elsewhere than evaluate() (which substitutes itself)."""
    for token in ("%k", "$kernel", "$name", "$env{INTERFACE}", "%E{INTERFACE}"):
        program = program.replace(token, name)
    return program
