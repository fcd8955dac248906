"""The indexes of a compiled rules file (facts/udev_plan.py): which lines a device visits,
by its KERNEL name and by an attribute its lines test first, so that a device costs the
lines it may match, not every line of a kind (1,000 bdi lines each for one KERNEL, 1,000
`ATTR{address}=="00:0d:3a:01:*"` lines each for one address).

- Index: lines listed under the words their token's value must equal and the literal
  prefixes (the text before a glob's first wildcard) it must start with.
- index_words(), attr_index(): what a KERNEL or ATTR token needs of a value, as words and
  prefixes.
- Group: the lines of a file with the same static and ENV tests, listed by index once;
  merge_lists() puts the groups that pass for one kind of device together.
- Kept: the lines of one file kept for one kind of device (Plan.kept()): free lines,
  the KERNEL index (used at once: the device's name is known), ATTR indexes (used when
  the line loop reaches one of their lines, where udev reads the attribute: `pending`,
  `resolved()`), so no attribute is read that udev would not read.
"""

from __future__ import annotations

from .._lazyre import lazy

TYPE_CHECKING = False  # typing itself costs ~3 ms of start-up (issue 22); annotations are strings
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Callable

    from ..parsers.udev_tokens import UdevToken

    Test = Callable[[str | None], bool]  # a token's compiled test (udev_match.compile_match)
    # a line's index token: (source: None for KERNEL or an ATTR name, words, ((length, prefixes), ...))
    IndexKey = tuple[str | None, tuple[str, ...], tuple[tuple[int, tuple[str, ...]], ...]]
    # index source -> ({word: lines}, {length: {prefix: lines}}, all lines): an Index's parts
    IndexLists = dict[str | None, tuple[dict[str, list[int]], dict[int, dict[str, list[int]]], list[int]]]

_BLANKS = " \t\n\r\v\f"  # what _match_attr() strips from a value (an index holds no pattern ending in one)


class Index:
    """Lines (or files) by the value one token reads (`source`: None for KERNEL, else an ATTR
    name): {word: lines}, {length: {prefix: lines}}, and all of them (`lines`)."""
    __slots__ = ("source", "exact", "starts", "lines")

    def __init__(self, source: str | None, exact: dict[str, list[int]], starts: dict[int, dict[str, list[int]]],
                 lines: list[int], skipped: frozenset[int] = frozenset()):
        self.source = source
        self.exact = {w: v for w, v in ((w, _sorted_without(v, skipped)) for w, v in exact.items()) if v}
        self.starts = {n: {h: v for h, v in ((h, _sorted_without(v, skipped)) for h, v in table.items()) if v}
                       for n, table in starts.items()}
        self.lines = frozenset(lines) - skipped

    def picks(self, value: str) -> list[list[int]]:
        """The lists of lines whose token the value may match (within one list a line
        stands once; across lists it may stand again)."""
        picked = []
        lines = self.exact.get(value)
        if lines:
            picked.append(lines)
        for n, table in self.starts.items():
            lines = table.get(value[:n])
            if lines:
                picked.append(lines)
        return picked


def _sorted_without(lines: list[int], skipped: frozenset[int]) -> list[int]:
    return sorted(i for i in lines if i not in skipped) if skipped else sorted(lines)


class Kept:
    """Plan.kept() of one file: `free` (lines for any device), `kernel` (the Index of
    KERNEL tokens or None) with each of its lines' KERNEL tests (`kernel_tests`), `attrs`
    (an Index per ATTR name), `pending` (each ATTR-indexed line -> its Index),
    `with_pending` (free and ATTR-indexed lines, in file order). Lines no such device can
    reach (`skipped`: Plan._skipped()) are in none of them."""
    __slots__ = ("free", "kernel", "kernel_tests", "attrs", "pending", "with_pending")

    def __init__(self, free: list[int], indexes: dict, kernel_tests: dict[int, tuple[Test, ...]],
                 skipped: frozenset[int]):
        self.free = tuple(_sorted_without(free, skipped))
        found = [x for x in (Index(source, exact, starts, every, skipped)
                             for source, (exact, starts, every) in indexes.items()) if x.lines]
        self.kernel = next((x for x in found if x.source is None), None)
        self.kernel_tests = kernel_tests
        self.attrs = tuple(x for x in found if x.source is not None)
        self.pending = {i: x for x in self.attrs for i in x.lines}
        self.with_pending = tuple(sorted(self.free + tuple(self.pending))) if self.pending else self.free

    def __bool__(self) -> bool:
        return bool(self.free or self.kernel or self.attrs)

    def order(self, kernel: str | None, held: dict) -> Sequence[int]:
        """The lines for a device of that KERNEL name, in file order: the free ones, the
        KERNEL-indexed ones whose KERNEL tests all hold (those the engine would test first
        and fail on, with nothing tested before them but ACTION and DEVPATH), and the
        ATTR-indexed ones, still pending. `held`: the device's results of the tests so far
        (test -> bool): files repeat their patterns (a compiled test is shared)."""
        if self.kernel is None:
            return self.with_pending
        picked = self.kernel.picks(kernel or "")
        if not picked:
            return self.with_pending
        tests = self.kernel_tests
        hits = set()
        for lines in picked:
            for i in lines:
                for test in tests[i]:
                    ok = held.get(test)
                    if ok is None:
                        ok = held[test] = test(kernel)
                    if not ok:
                        break
                else:
                    hits.add(i)
        if not hits:
            return self.with_pending
        return sorted(hits.union(self.with_pending))


def resolved(order: Sequence[int], pending: dict[int, Index], index: Index,
             value: str | None) -> tuple[Sequence[int], dict[int, Index]]:
    """(order, pending) once the device's value of `index`'s attribute is read (None: no
    value, its tokens all fail): its lines stay only where the value picks them."""
    keep: set[int] = set()
    if value is not None:
        for lines in index.picks(value.rstrip(_BLANKS)):
            keep.update(lines)
    drop = index.lines
    return [i for i in order if i not in drop or i in keep], {i: x for i, x in pending.items() if x is not index}


_LITERAL_END = lazy(r"[*?[\\]")  # where a glob alternative stops being literal text


def index_words(tok: UdevToken) -> tuple[tuple[str, ...], tuple[tuple[int, tuple[str, ...]], ...]] | None:
    """What an `==` KERNEL or ATTR token needs of the value, for an index: (words the value
    must equal, ((length, prefixes the value must start with), ...)), one per `|`
    alternative; None when some alternative is not of those kinds (empty, `?*`, case
    folded, a glob starting with a wildcard), or an ATTR value keeps its trailing blanks."""
    value = tok.value
    if tok.op != "==" or tok.nocase or value in ("", "?*") or (tok.key == "ATTR" and value[-1].isspace()):
        return None
    alternatives = value.split("|")
    if "" in alternatives:
        return None
    if "*" not in value and "?" not in value and "[" not in value:  # plain: compared as written (compile_match)
        return tuple(dict.fromkeys(alternatives)), ()
    words: list[str] = []
    prefixes: dict[int, list[str]] = {}
    for a in alternatives:
        wild = _LITERAL_END.search(a)
        if wild is None:
            words.append(a)
        elif wild.start() == 0:
            return None
        else:
            prefixes.setdefault(wild.start(), []).append(a[:wild.start()])
    return tuple(dict.fromkeys(words)), tuple((n, tuple(dict.fromkeys(p))) for n, p in prefixes.items())


def attr_index(t: UdevToken) -> IndexKey | None:
    """The index key of a plain ATTR{name} token (index_words()), or None."""
    words = index_words(t)
    return None if words is None else (t.attr, *words)


def merge_lists(into: IndexLists, more: IndexLists) -> None:
    """`more`'s lines added to `into`'s (new lists: neither group's lists change)."""
    for source, (exact, starts, every) in more.items():
        to_exact, to_starts, to_every = into.setdefault(source, ({}, {}, []))
        to_every.extend(every)
        for w, lines in exact.items():
            to_exact.setdefault(w, []).extend(lines)
        for n, table in starts.items():
            to_table = to_starts.setdefault(n, {})
            for head, lines in table.items():
                to_table.setdefault(head, []).extend(lines)


class Group:
    """The lines of a file with the same static and ENV tests (Plan.kept() tests them once
    per kind of device): `free` (no index), `jumps` (GOTO lines that only test), `indexes`
    (source -> ({word: lines}, {length: {prefix: lines}}, all lines)) and the KERNEL tests
    of the KERNEL-indexed lines."""
    __slots__ = ("static", "envs", "free", "jumps", "indexes", "kernel_tests")

    def __init__(self, static: tuple[tuple[str, Test], ...], envs: tuple[tuple[str, Test], ...]):
        self.static, self.envs = static, envs
        self.free: list[int] = []
        self.jumps: list[int] = []
        self.indexes: IndexLists = {}
        self.kernel_tests: dict[int, tuple[Test, ...]] = {}

    def add(self, lines: list[int], index: IndexKey | None, tests: tuple[Test, ...], jumps: bool) -> None:
        if index is None:
            (self.jumps if jumps else self.free).extend(lines)
            return
        source, words, prefixes = index
        exact, starts, every = self.indexes.setdefault(source, ({}, {}, []))
        every.extend(lines)
        if source is None:
            self.kernel_tests.update(dict.fromkeys(lines, tests))
        for w in words:
            exact.setdefault(w, []).extend(lines)
        for n, heads in prefixes:
            table = starts.setdefault(n, {})
            for head in heads:
                table.setdefault(head, []).extend(lines)

    def passes(self, values: dict[str, str | None], env: frozenset[str]) -> bool:
        """Its ACTION/SUBSYSTEM tests hold for `values`, and its ENV tests for names no
        device of the kind or rule gives a value (`env`)."""
        for key, test in self.static:
            if not test(values[key]):
                return False
        for name, test in self.envs:
            if name not in env and not test(None):
                return False
        return True
