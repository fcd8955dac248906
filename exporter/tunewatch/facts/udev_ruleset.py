"""The rules files of one evaluate() call taken together (facts/udev.py): their plans
(facts/udev_plan.py), the ENV names any line assigns, and per kind of device (action,
subsystem, ENV names) the files that keep a line for it, with a KERNEL index of their
positions. A device visits only those files; one RuleSet is made per list of files a
scan passes (`rule_set()`).
"""

from __future__ import annotations

from .udev_index import Index
from .udev_plan import NET_SETUP_LINK, CompileMemo, plan_of

TYPE_CHECKING = False  # typing itself costs ~3 ms of start-up (issue 22); annotations are strings
if TYPE_CHECKING:
    from collections.abc import Sequence

    from .udev_files import RulesFile
    from .udev_index import Kept
    from .udev_plan import Plan


class RuleSet:
    """The files of an evaluate() call taken together: their plans, the ENV names any line
    assigns, and per (action, subsystem, ENV names) the files that keep a line, with their
    kept lines: a device visits only those files."""
    __slots__ = ("files", "plans", "env_assigned", "past_link", "_active")

    def __init__(self, files: list[RulesFile]):
        self.files = tuple(files)  # held: the ids that find this set stay theirs
        memo = CompileMemo()
        self.plans = tuple(plan_of(f, memo) for f in files)
        # per file: is it, or a file before it, named after 80-net-setup-link.rules (which
        # names a network interface): from there on a net device has its NAME
        past, self.past_link = False, {}
        for f in files:
            past = past or f.source.rsplit("/", 1)[-1] > NET_SETUP_LINK
            self.past_link[id(f)] = past
        self.env_assigned = frozenset().union(*(p.env_assigned for p in self.plans))
        self._active: dict[tuple, Active] = {}

    def active(self, action: str, subsystem: str | None, env: frozenset[str]) -> Active:
        """The files with a line kept (Plan.kept()) for that kind of device (a file left out
        could apply nothing: its place in the order matters only to NAME, which `past_link`
        keeps)."""
        key = (action, subsystem, env)
        found = self._active.get(key)
        if found is None:
            found = self._active[key] = Active(tuple(
                (f, plan, kept) for f, plan in zip(self.files, self.plans)
                for kept in (plan.kept(action, subsystem, env),) if kept))
        return found


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
