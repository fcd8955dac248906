"""A udev rules file compiled once per scan for the engine (facts/udev.py): what udevd does
once when it loads its rules (udev-rules.c `udev_rules_parse_file()`, `sort_tokens()`,
`rule_resolve_goto()`), so that evaluating a device costs the lines that can match it,
not every line.

- Each line's tokens sorted as `sort_tokens()` does, split into matches and assignments,
  each match token with its string test decided once (udev_match.compile_match(): `|`
  alternatives split, globs compiled).
- GOTO targets resolved once per file, and the note of a GOTO without its LABEL.
- A pre-filter: a line whose ACTION, SUBSYSTEM or KERNEL match (`==`/`!=`, literal or
  glob) fails for a device does not match it. Such a token is used only when every token
  the engine tests before it has no side effect (CONST, ATTR, PROGRAM, TEST... may note an
  assumption or run a program), so skipping the line changes nothing: the outcome is
  exactly that of testing every token. The lines that pass ACTION and SUBSYSTEM are listed
  once per (action, subsystem) and file; KERNEL is then tested per device on that list.
  A device whose matches are partly unknown (`UdevDevice.unknown_matches`) is tested on
  every line.

RulesFile keeps its plan; read_rules() keeps the RulesFile objects in FS.derived, so a plan
lives as long as its scan.
"""

from __future__ import annotations

from ..parsers.udev_rules import MATCH_OPS, UdevRule, UdevToken
from .udev_match import compile_match

TYPE_CHECKING = False  # typing itself costs ~3 ms of start-up (issue 22); annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Literal

    from .udev_files import RulesFile

    _Test = Callable[[str | None], bool]  # a token's compiled test (udev_match.compile_match)
    # a line's pre-filter: (static tests, ENV tests, KERNEL words), see Plan._line_filters
    _Filters = tuple[list[tuple[str, _Test]], list[tuple[str, _Test]], "tuple[str, ...] | None"]

PARENT_KEYS = ("KERNELS", "SUBSYSTEMS", "DRIVERS", "ATTRS", "TAGS")
# sort_tokens(): UdevRuleTokenType order (udev-rules.c), matches then assignments
_MATCH_ORDER = ["ACTION", "DEVPATH", "KERNEL", "SYMLINK", "NAME", "ENV", "CONST", "TAG", "SUBSYSTEM", "DRIVER",
                "ATTR", "SYSCTL", "KERNELS", "SUBSYSTEMS", "DRIVERS", "ATTRS", "TAGS", "TEST", "PROGRAM", "IMPORT",
                "RESULT"]
_ASSIGN_ORDER = ["OPTIONS", "OWNER", "GROUP", "MODE", "TAG", "SECLABEL", "ENV", "NAME", "SYMLINK", "ATTR", "SYSCTL",
                 "RUN"]
_GLOB_CHARS = "*?["
NET_SETUP_LINK = "80-net-setup-link.rules"


def sort_key(tok: UdevToken) -> int:
    if tok.op in MATCH_OPS:
        return _MATCH_ORDER.index(tok.key) if tok.key in _MATCH_ORDER else len(_MATCH_ORDER)
    base = 100 + (_ASSIGN_ORDER.index(tok.key) if tok.key in _ASSIGN_ORDER else 50) * 2
    return base + (1 if tok.key == "RUN" and tok.attr != "builtin" else 0)  # RUN{builtin} before programs


class Token:
    """A match token with its tests compiled: `test(value)` is match_string(value, op) for
    the token's own key, `test_eq(value)` the same with `==` (TAG, TAGS, SYMLINK: any of a
    list)."""
    __slots__ = ("key", "attr", "op", "value", "nocase", "test", "test_eq", "parent")

    def __init__(self, tok: UdevToken):
        self.key, self.attr, self.op, self.value, self.nocase = tok.key, tok.attr, tok.op, tok.value, tok.nocase
        self.parent = tok.key in PARENT_KEYS
        self.test = compile_match(tok.value, tok.op, tok.nocase, tok.key == "SUBSYSTEM")
        self.test_eq = compile_match(tok.value, "==", tok.nocase, False) if tok.key in _LIST_KEYS else None


_LIST_KEYS = ("TAG", "TAGS", "SYMLINK")


class Rule:
    """One line as the engine applies it: `matches` in the order udev tests them,
    `parents` (tested together at one device level), `assigns` (UdevTokens) in the order
    udev applies them, `kernel` the KERNEL tests, `note` for a GOTO without its LABEL."""
    __slots__ = ("source", "line", "problem", "goto", "matches", "parents", "assigns", "kernel", "note")

    def __init__(self, rule: UdevRule, note: str | None):
        self.source = rule  # the parsed line: the tokens as written (what a dropped line would do)
        self.line, self.problem, self.goto, self.note = rule.line, rule.problem, rule.goto, note
        tokens = sorted(rule.tokens, key=sort_key)
        self.matches = tuple(Token(t) for t in tokens if t.op in MATCH_OPS)
        self.parents = tuple(t for t in self.matches if t.parent)
        self.assigns = tuple(t for t in tokens if t.op not in MATCH_OPS)
        self.kernel = tuple(t.test for t in self.matches if t.key == "KERNEL")


def _goto_targets(rules: tuple[UdevRule, ...]) -> dict[int, int]:
    """rule_resolve_goto(): index of a GOTO line -> index of the first later LABEL line."""
    kept = [i for i, r in enumerate(rules) if r.problem is None]
    first_label: dict[str, int] = {}
    out = {}
    for pos in range(len(kept) - 1, -1, -1):  # backwards: the first later label is the last seen
        i = kept[pos]
        goto = rules[i].goto
        if goto is not None and goto in first_label:
            out[i] = first_label[goto]
        label = rules[i].label
        if label is not None:
            first_label[label] = i
    return out


def _kernel_literals(tok: UdevToken) -> tuple[str, ...] | None:
    """The names a KERNEL=="a|b" token takes when it is plain words (no glob, no case
    folding, no empty alternative), else None."""
    value = tok.value
    if tok.op != "==" or tok.nocase or value in ("", "?*") or any(c in value for c in _GLOB_CHARS):
        return None
    words = value.split("|")
    return None if "" in words else tuple(words)


class Plan:
    """A rules file compiled: GOTO targets, the ENV names its lines assign, each line's
    pre-filter tokens, and each line compiled (`rule(i)`) when a device first reaches it."""
    __slots__ = ("parsed", "source", "gotos", "notes", "env_assigned", "_filters", "_rules", "_kept")

    def __init__(self, f: RulesFile):
        rules = self.parsed = f.rules
        self.source = f.source
        self.gotos = _goto_targets(rules)
        self.notes = {i: f'{f.source}:{r.line}: GOTO="{r.goto}" has no matching label, ignoring'
                      for i, r in enumerate(rules)
                      if r.problem is None and r.goto is not None and i not in self.gotos}
        self.env_assigned = frozenset(t.attr or "" for r in rules for t in r.tokens
                                      if t.key == "ENV" and t.op not in MATCH_OPS)
        self._filters = [self._line_filters(i, r) for i, r in enumerate(rules)]
        self._rules: list[Rule | None] = [None] * len(rules)
        self._kept: dict[tuple, tuple[tuple[int, ...], dict[str, tuple[int, ...]]]] = {}

    def _line_filters(self, i: int, r: UdevRule) -> _Filters | Literal[False] | None:
        """(static tests, ENV tests, KERNEL words) of a line, or None: keep it for every
        device (a GOTO note to give). False: a line that does nothing (LABEL alone)."""
        if i in self.notes:
            return None
        if not r.tokens and r.goto is None:
            return False
        const = any(t.key == "CONST" and t.op in MATCH_OPS for t in r.tokens)
        static: list[tuple[str, _Test]] = []
        env: list[tuple[str, _Test]] = []
        words = None
        for t in r.tokens:
            if t.op not in MATCH_OPS:
                continue
            if t.key == "ACTION" or (t.key == "SUBSYSTEM" and not const):
                static.append((t.key, compile_match(t.value, t.op, t.nocase, t.key == "SUBSYSTEM")))
            elif t.key == "ENV":
                env.append((t.attr or "", compile_match(t.value, t.op, t.nocase, False)))
            elif t.key == "KERNEL" and words is None:
                words = _kernel_literals(t)
        return static, env, words

    def rule(self, i: int) -> Rule:
        rule = self._rules[i]
        if rule is None:
            rule = self._rules[i] = Rule(self.parsed[i], self.notes.get(i))
        return rule

    def kept(self, action: str, subsystem: str | None,
             env: frozenset[str]) -> tuple[tuple[int, ...], dict[str, tuple[int, ...]]]:
        """The lines a device may match, made once per (action, subsystem, ENV names it can
        have): (lines for any KERNEL, {kernel name: lines only for that name}). A line is
        left out when its ACTION or SUBSYSTEM token fails, or an ENV token fails on a name
        that neither the device nor any rule gives a value (`env`), or it does nothing."""
        key = (action, subsystem, env)
        found = self._kept.get(key)
        if found is None:
            values = {"ACTION": action, "SUBSYSTEM": subsystem}
            free: list[int] = []
            named: dict[str, list[int]] = {}
            for i, filters in enumerate(self._filters):
                if filters is False:
                    continue
                if filters is not None:
                    static, envs, words = filters
                    if not all(test(values[k]) for k, test in static) or \
                            not all(name in env or test(None) for name, test in envs):
                        continue
                    if words is not None:
                        for w in dict.fromkeys(words):
                            named.setdefault(w, []).append(i)
                        continue
                free.append(i)
            found = self._kept[key] = (tuple(free), {w: tuple(v) for w, v in named.items()})
        return found


def plan_of(f: RulesFile) -> Plan:
    """The file's plan, compiled at its first evaluation and kept with it."""
    plan = f.plan
    if not isinstance(plan, Plan) or plan.parsed is not f.rules:  # None, or replace() copied the slot: recompile
        plan = f.plan = Plan(f)
    return plan


class RuleSet:
    """The files of an evaluate() call taken together: their plans, the ENV names any line
    assigns, and per (action, subsystem, ENV names) the files that keep a line, with their
    kept lines: a device visits only those files."""
    __slots__ = ("files", "plans", "env_assigned", "past_link", "_active")

    def __init__(self, files: list[RulesFile]):
        self.files = tuple(files)  # held: the ids that find this set stay theirs
        self.plans = tuple(plan_of(f) for f in files)
        # per file: is it, or a file before it, named after 80-net-setup-link.rules (which
        # names a network interface): from there on a net device has its NAME
        past, self.past_link = False, {}
        for f in files:
            past = past or f.source.rsplit("/", 1)[-1] > NET_SETUP_LINK
            self.past_link[id(f)] = past
        self.env_assigned = frozenset().union(*(p.env_assigned for p in self.plans))
        self._active: dict[tuple, tuple] = {}

    def active(self, action: str, subsystem: str | None, env: frozenset[str]) -> tuple:
        """(file, plan, lines for any KERNEL, {kernel: lines}) of each file with a line kept
        (a file left out could apply nothing: its place in the order matters only to NAME,
        which `past_link` keeps)."""
        key = (action, subsystem, env)
        found = self._active.get(key)
        if found is None:
            found = self._active[key] = tuple(
                (f, plan, free, named) for f, plan in zip(self.files, self.plans)
                for free, named in (plan.kept(action, subsystem, env),) if free or named)
        return found


_LAST: tuple = (None, None)  # (ids of the files, their RuleSet): a scan evaluates one list many times


def rule_set(files: list[RulesFile]) -> RuleSet:
    """The RuleSet of `files`, made once for the list a scan passes for every device."""
    global _LAST
    ids = tuple(map(id, files))
    last_ids, found = _LAST
    if last_ids != ids:
        found = RuleSet(files)
        _LAST = (ids, found)  # one assignment: a scan in another thread sees the old or the new pair
    return found
