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
  once per (action, subsystem) and file, lines with the same pre-filter in one group (a
  filter is tested once per group); KERNEL is then tested per device on that list.
- Indexes (Kept, Index): a line's KERNEL token, or its first ATTR token when only ACTION
  and SUBSYSTEM come before it, lists it under the words (`==`, plain) and literal
  prefixes (globs: the text before the first wildcard) its value must equal or start
  with, so a device visits the lines its name or attribute picks (1,000 `ATTR{address}==
  "00:0d:3a:01:*"` lines: the one or two of its address). An ATTR index is consulted when
  the loop reaches its first line, where udev reads that attribute: no attribute is read
  that udev would not read.
- Repeated tokens (shared objects, parsers.udev_rules.ParseMemo) are classified and
  compiled once per RuleSet (CompileMemo).
  A device whose matches are partly unknown (`UdevDevice.unknown_matches`) is tested on
  every line, as is every device with `evaluate(every_line=True)`, the reference
  tests/test_udev_perf_differential.py holds all of this to.

RulesFile keeps its plan; read_rules() keeps the RulesFile objects in FS.derived, so a plan
lives as long as its scan.
"""

from __future__ import annotations

from ..parsers.udev_rules import UdevRule
from ..parsers.udev_tokens import MATCH_OPS, UdevToken
from .udev_index import Group, Kept, attr_index, index_words, merge_lists
from .udev_match import compile_match

TYPE_CHECKING = False  # typing itself costs ~3 ms of start-up (issue 22); annotations are strings
if TYPE_CHECKING:

    from .udev_files import RulesFile
    from .udev_index import IndexKey, Test

    # a line's pre-filter: (static tests, ENV tests, index, KERNEL tests, decidable), see _line_filters()
    _Filters = tuple[tuple[tuple[str, Test], ...], tuple[tuple[str, Test], ...], "IndexKey | None",
                     tuple[Test, ...], bool]

PARENT_KEYS = ("KERNELS", "SUBSYSTEMS", "DRIVERS", "ATTRS", "TAGS")
# sort_tokens(): UdevRuleTokenType order (udev-rules.c), matches then assignments
_MATCH_ORDER = ["ACTION", "DEVPATH", "KERNEL", "SYMLINK", "NAME", "ENV", "CONST", "TAG", "SUBSYSTEM", "DRIVER",
                "ATTR", "SYSCTL", "KERNELS", "SUBSYSTEMS", "DRIVERS", "ATTRS", "TAGS", "TEST", "PROGRAM", "IMPORT",
                "RESULT"]
_ASSIGN_ORDER = ["OPTIONS", "OWNER", "GROUP", "MODE", "TAG", "SECLABEL", "ENV", "NAME", "SYMLINK", "ATTR", "SYSCTL",
                 "RUN"]
NET_SETUP_LINK = "80-net-setup-link.rules"


_MATCH_RANK = {key: n for n, key in enumerate(_MATCH_ORDER)}
_ASSIGN_RANK = {key: 100 + n * 2 for n, key in enumerate(_ASSIGN_ORDER)}


def sort_key(tok: UdevToken) -> int:
    if tok.op in MATCH_OPS:
        return _MATCH_RANK.get(tok.key, len(_MATCH_ORDER))
    base = _ASSIGN_RANK.get(tok.key, 200)
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
    """One line as the engine applies it: `matches` in the order udev tests them, the
    parent group (`parents`, tested together at one device level) once, where its first
    token is; `assigns` (UdevTokens) in the order udev applies them, `kernel` the KERNEL
    tests, `note` for a GOTO without its LABEL. `unsettled`: the matches left to test on a
    line kept for a device's kind (Plan.kept()), whose KERNEL tests the engine has just
    made (evaluate()): without its ACTION and KERNEL tokens, nor a SUBSYSTEM token that only
    side-effect free tokens precede (the kind's pre-filter tested those: _line_filters())."""
    __slots__ = ("source", "line", "problem", "goto", "matches", "parents", "assigns", "kernel", "note", "unsettled")

    def __init__(self, rule: UdevRule, note: str | None, compiled: dict[int, tuple[UdevToken, Token]]):
        self.source = rule  # the parsed line: the tokens as written (what a dropped line would do)
        self.line, self.problem, self.goto, self.note = rule.line, rule.problem, rule.goto, note
        matches, assigns, parents, kernel, unsettled = [], [], [], [], []
        pure = True  # every match token so far is free of side effects
        for t in sorted(rule.tokens, key=sort_key):
            if t.op in MATCH_OPS:
                found = compiled.get(id(t))
                if found is None:  # the token object pinned with its compiled form: its id stays its own
                    found = compiled[id(t)] = (t, Token(t))
                token, key = found[1], t.key
                settled = key == "ACTION" or key == "KERNEL" or (key == "SUBSYSTEM" and pure)
                pure = pure and _side_effect_free(t)
                if token.parent:
                    parents.append(token)
                    if len(parents) > 1:
                        continue  # the parent group stands once, at its first token
                elif key == "KERNEL":
                    kernel.append(token.test)
                matches.append(token)
                if not settled:
                    unsettled.append(token)
            else:
                assigns.append(t)
        self.matches, self.parents, self.assigns, self.kernel = tuple(matches), tuple(parents), tuple(assigns), \
            tuple(kernel)
        self.unsettled = tuple(unsettled)


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


_PURE_KEYS = frozenset(("ACTION", "DEVPATH", "KERNEL", "SYMLINK", "NAME", "ENV", "TAG", "SUBSYSTEM", "DRIVER"))


def _plain_attr(tok: UdevToken) -> bool:
    """An ATTR{name} the engine reads as written: no substitution, no other device."""
    name = tok.attr or ""
    return "$" not in name and "%" not in name and not name.startswith("[")


def _side_effect_free(t: UdevToken) -> bool:
    """Testing the match token notes no assumption and runs nothing (CONST, PROGRAM, TEST,
    an ATTR naming another device... do)."""
    return t.key in _PURE_KEYS or (t.key == "ATTR" and _plain_attr(t))


def _role(t: UdevToken) -> tuple:
    """What a match token is to the pre-filter: (sort key, kind, side-effect free, detail,
    the token): kind "static" (ACTION, SUBSYSTEM: detail (key, test)), "env" (detail
    (name, test)), "kernel" (detail (index or None, test)), "attr" (a plain ATTR: detail
    nothing), "" (none of those)."""
    key = t.key
    pure = _side_effect_free(t)
    if key in ("ACTION", "SUBSYSTEM"):
        return sort_key(t), "static", pure, (key, compile_match(t.value, t.op, t.nocase, key == "SUBSYSTEM")), t
    if key == "ENV":
        return sort_key(t), "env", pure, (t.attr or "", compile_match(t.value, t.op, t.nocase, False)), t
    if key == "KERNEL":
        words = index_words(t)
        return sort_key(t), "kernel", pure, (None if words is None else (None, *words),
                                             compile_match(t.value, t.op, t.nocase, False)), t
    if key == "ATTR" and pure:
        return sort_key(t), "attr", pure, None, t  # its index made when a line can use it (attr_index())
    return sort_key(t), "", pure, None, t


def _line_filters(matches: list[UdevToken], roles: dict[int, tuple]) -> _Filters:
    """(static tests, ENV tests, index, KERNEL tests, decidable) of a line's match tokens
    (`matches`, as written). A token is used
    only when every token the engine tests before it (in sort_tokens() order) has no side
    effect; the index is the first such KERNEL token that index_words() takes, else the
    line's first ATTR token when only ACTION and SUBSYSTEM tokens come before it (then a
    device whose ACTION and SUBSYSTEM pass reads that attribute at whichever line of the
    index udev reaches first, and the engine reads it then: Kept): (source, words,
    ((length, prefixes), ...)), source None for KERNEL, else the ATTR name. `decidable`:
    all the tests are static or ENV ones, which kept() may decide for a kind of device (a
    GOTO line with nothing else is then one it certainly takes or not). `roles`: each
    token's _role(), by id (the token pinned with it)."""
    mine = []
    for t in matches:
        found = roles.get(id(t))
        if found is None:
            found = roles[id(t)] = _role(t)
        mine.append(found)
    if len(mine) > 1:
        mine.sort(key=_first)  # stable, as sort_tokens()
    static: list[tuple[str, Test]] = []
    env: list[tuple[str, Test]] = []
    kernel: list[Test] = []
    index = None
    pure = only_static = decidable = True
    for _, kind, token_pure, detail, t in mine:
        if kind == "static":
            if pure or t.key == "ACTION":
                static.append(detail)
        elif kind == "env":
            env.append(detail)
        else:
            decidable = False
            if kind == "kernel":
                kernel.append(detail[1])
                index = index or detail[0]  # the first indexable KERNEL token
            elif kind == "attr" and only_static and index is None:
                index = attr_index(t)
        pure = pure and token_pure  # CONST, PROGRAM...: what follows is tested only after a side effect
        only_static = only_static and kind == "static" and pure
    return tuple(static), tuple(env), index, tuple(kernel), decidable


def _first(item: tuple) -> int:
    return item[0]


class Plan:
    """A rules file compiled: GOTO targets, the ENV names its lines assign, its lines grouped
    by pre-filter (_line_filters()), and each line compiled (`rule(i)`) when a device first
    reaches it."""
    __slots__ = ("parsed", "source", "gotos", "notes", "env_assigned", "_groups", "compiled", "_kept", "_by_groups",
                 "_tokens")

    def __init__(self, f: RulesFile, memo: CompileMemo):
        rules = self.parsed = f.rules
        self.source = f.source
        self.gotos = _goto_targets(rules)
        self.notes = {i: f'{f.source}:{r.line}: GOTO="{r.goto}" has no matching label, ignoring'
                      for i, r in enumerate(rules)
                      if r.problem is None and r.goto is not None and i not in self.gotos}
        # lines with the same static and ENV tests are kept or left out together: each
        # test is made once per (action, subsystem, ENV names), not once per line; within
        # a group, lines by index and KERNEL tests
        assigned: set[str] = set()
        known: dict[int, _Filters] = {}  # id -> the pre-filter (shared by the lines that share their tests)
        lines_of: tuple[dict[int, list[int]], dict[int, list[int]]] = ({}, {})  # by id of the pre-filter: lines,
        # and GOTO lines that only test (their tests decided per kind of device: a jump certainly taken or not)
        notes, gotos, of_line = self.notes, self.gotos, memo.lines
        for i, r in enumerate(rules):
            found = of_line.get(id(r))
            if found is None:  # a line the scan's files repeat is one object (ParseMemo): its tokens sorted out once
                found = of_line[id(r)] = _line_of(r, memo)
            _, filters, only_tests, names = found
            if names:
                assigned.update(names)
            if filters is None or i in notes:
                continue  # a LABEL alone does nothing; a GOTO note is kept for every device (kept())
            known[id(filters)] = filters
            lines_of[filters[4] and only_tests and i in gotos].setdefault(id(filters), []).append(i)
        self.env_assigned = frozenset(assigned)
        # lines with the same static and ENV tests are kept or left out together: each
        # test is made once per (action, subsystem, ENV names), not once per line
        groups: dict[tuple, Group] = {}
        for jumps, by_filters in zip((False, True), lines_of):
            for fid, lines in by_filters.items():
                static, envs, index, tests, _ = known[fid]
                group = groups.get((static, envs))
                if group is None:
                    group = groups[(static, envs)] = Group(static, envs)
                group.add(lines, index, tests, jumps)
        self._groups = tuple(groups.values())
        self.compiled: list[Rule | None] = [None] * len(rules)  # each line once a device reaches it (rule())
        self._kept: dict[tuple, Kept] = {}
        self._by_groups: dict[tuple, Kept] = {}
        self._tokens = memo.tokens  # compiled match tokens, shared

    def rule(self, i: int) -> Rule:
        rule = self.compiled[i]
        if rule is None:
            rule = self.compiled[i] = Rule(self.parsed[i], self.notes.get(i), self._tokens)
        return rule

    def kept(self, action: str, subsystem: str | None, env: frozenset[str]) -> Kept:
        """The lines a device may match, made once per (action, subsystem, ENV names it can
        have). A line is left out when its ACTION or SUBSYSTEM token fails, or an ENV token
        fails on a name that neither the device nor any rule gives a value (`env`), or it
        does nothing; a line with an index token is listed under its words and prefixes."""
        key = (action, subsystem, env)
        found = self._kept.get(key)
        if found is None:
            values = {"ACTION": action, "SUBSYSTEM": subsystem}
            passed = []
            for group in self._groups:
                if group.passes(values, env):
                    passed.append(group)
            # kinds of device that keep the same groups, their GOTO lines decided alike, keep the same lines
            same = (*map(id, passed), *(not any(name in env for name, _ in g.envs) for g in passed if g.jumps))
            found = self._by_groups.get(same)
            if found is None:
                found = self._by_groups[same] = self._keep(passed, env)
            self._kept[key] = found
        return found

    def _keep(self, passed: list[Group], env: frozenset[str]) -> Kept:
        """The Kept of the groups that pass (their GOTO lines taken when no ENV name they test can have a value)."""
        free: list[int] = list(self.notes)
        taken: list[int] = []  # GOTO lines every such device takes
        for group in passed:
            free += group.free
            if group.jumps:
                free += group.jumps
                if not any(name in env for name, _ in group.envs):  # the ENV tests hold whatever rules do
                    taken += group.jumps
        if len(passed) == 1:
            indexes, kernel_tests = passed[0].indexes, passed[0].kernel_tests
        else:
            indexes, kernel_tests = {}, {}
            for group in passed:
                merge_lists(indexes, group.indexes)
                kernel_tests.update(group.kernel_tests)
        skipped = self._skipped(taken, free, indexes) if taken else frozenset()
        return Kept(free, indexes, kernel_tests, skipped)

    def _skipped(self, taken: list[int], free: list[int], indexes: dict) -> frozenset[int]:
        """The lines no device of the kind can reach: from a GOTO line it certainly takes
        (it only tests, and its tests hold) up to its LABEL, the GOTO line included (it does
        nothing but jump: the loop goes on at the first line kept from the LABEL on, as
        after the jump), unless another line before it jumps into that range."""
        skipped: set[int] = set()
        kept_lines = sorted(set(free).union(*(every for _, _, every in indexes.values())))
        sources = [(j, self.gotos[j]) for j in kept_lines if j in self.gotos]
        for i in sorted(taken):
            target = self.gotos[i]
            if any(j < i and i < t < target for j, t in sources):
                continue
            skipped.update(j for j in kept_lines if i <= j < target)
        return frozenset(skipped)



class CompileMemo:
    """What the files of a RuleSet share (the tokens and lines a scan's files repeat are
    shared objects, parsers.udev_rules.ParseMemo): each match token's _role() and its
    compiled Token, by id, each with the token itself, so that its id stays its own; the
    pre-filter of each combination of match tokens (theirs pinned in `roles`); and each
    line's _line_of(), by id, with the line."""
    __slots__ = ("roles", "tokens", "filters", "lines")

    def __init__(self) -> None:
        self.roles: dict[int, tuple] = {}
        self.filters: dict[tuple[int, ...], _Filters] = {}  # by the ids of a line's match tokens
        self.tokens: dict[int, tuple[UdevToken, Token]] = {}
        self.lines: dict[int, tuple[UdevRule, _Filters | None, bool, tuple[str, ...]]] = {}


def _line_of(r: UdevRule, memo: CompileMemo) -> tuple[UdevRule, _Filters | None, bool, tuple[str, ...]]:
    """(the line, its pre-filter or None for a line with neither token nor GOTO, whether it
    only tests, the ENV names it assigns)."""
    matches, names = [], []
    for t in r.tokens:
        if t.op in MATCH_OPS:
            matches.append(t)
        elif t.key == "ENV":
            names.append(t.attr or "")
    if not r.tokens and r.goto is None:
        return r, None, False, tuple(names)
    key = tuple(map(id, matches))  # lines often share their tests (their tokens: ParseMemo)
    filters = memo.filters.get(key)
    if filters is None:
        filters = memo.filters[key] = _line_filters(matches, memo.roles)
    return r, filters, len(matches) == len(r.tokens), tuple(names)


def plan_of(f: RulesFile, memo: CompileMemo) -> Plan:
    """The file's plan, compiled at its first evaluation and kept with it."""
    plan = f.plan
    if not isinstance(plan, Plan) or plan.parsed is not f.rules:  # None, or replace() copied the slot: recompile
        plan = f.plan = Plan(f, memo)
    return plan
