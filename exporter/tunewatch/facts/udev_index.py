"""The indexes of a compiled rules file (facts/udev_plan.py): which lines a device visits,
by its KERNEL name and by an attribute its lines test first, so that a device costs the
lines it may match, not every line of a kind (1,000 bdi lines each for one KERNEL, 1,000
`ATTR{address}=="00:0d:3a:01:*"` lines each for one address).

- Index: lines listed under the words their token's value must equal and the literal
  prefixes (the text before a glob's first wildcard) it must start with.
- Kept: the lines of one file kept for one kind of device (Plan.kept()): free lines,
  the KERNEL index (used at once: the device's name is known), ATTR indexes (used when
  the line loop reaches one of their lines, where udev reads the attribute: `pending`,
  `resolved()`), so no attribute is read that udev would not read.
- Active: the files kept for one kind of device, and which of them a KERNEL name visits.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs ~3 ms of start-up (issue 22); annotations are strings
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Callable

    from .udev_files import RulesFile
    from .udev_plan import Plan

    _Test = Callable[[str | None], bool]

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

    def __init__(self, free: list[int], indexes: dict, kernel_tests: dict[int, tuple[_Test, ...]],
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

    def order(self, kernel: str | None) -> Sequence[int]:
        """The lines for a device of that KERNEL name, in file order: the free ones, the
        KERNEL-indexed ones whose KERNEL tests all hold (those the engine would test first
        and fail on, with nothing tested before them but ACTION and DEVPATH), and the
        ATTR-indexed ones, still pending."""
        if self.kernel is None:
            return self.with_pending
        picked = self.kernel.picks(kernel or "")
        if not picked:
            return self.with_pending
        tests = self.kernel_tests
        hits = {i for lines in picked for i in lines if all(test(kernel) for test in tests[i])}
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


class Active:
    """The files kept for one kind of device (RuleSet.active()): (file, plan, Kept) in
    file order, and a KERNEL Index of their positions: a file whose only kept lines are
    KERNEL-indexed is visited by the names its index may pick."""
    __slots__ = ("entries", "_always", "_always_at", "_by_kernel")

    def __init__(self, entries: tuple[tuple[RulesFile, Plan, Kept], ...]):
        self.entries = entries
        self._always_at = [p for p, (_, _, kept) in enumerate(entries) if kept.with_pending]
        self._always = tuple(entries[p] for p in self._always_at)
        exact: dict[str, list[int]] = {}
        starts: dict[int, dict[str, list[int]]] = {}
        for p, (_, _, kept) in enumerate(entries):
            if kept.kernel is not None:
                for w in kept.kernel.exact:
                    exact.setdefault(w, []).append(p)
                for n, table in kept.kernel.starts.items():
                    for head in table:
                        starts.setdefault(n, {}).setdefault(head, []).append(p)
        self._by_kernel = Index(None, exact, starts, [])

    def visit(self, kernel: str | None) -> Sequence[tuple[RulesFile, Plan, Kept]]:
        picked = self._by_kernel.picks(kernel or "")
        if not picked:
            return self._always
        return [self.entries[p] for p in sorted(set(self._always_at).union(*picked))]
