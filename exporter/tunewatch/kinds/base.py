"""What a check kind receives and returns.

A kind is a module with `VARS_SCHEMA` (JSON Schema of its variables) and
`evaluate(target) -> list[ObjectResult]`. It raises FactError/ParseError for a fact that
the whole check depends on (the engine turns that into one `error` result) and returns an
`error` object for a fact that only one object depends on.
"""

from __future__ import annotations

import math

from .._record import FrozenRecord, Record
from ..errors import FactError, ParseError
from ..selectors import select_interfaces, select_mounts

TYPE_CHECKING = False  # typing itself costs ~3 ms of start-up (issue 22); annotations are strings
if TYPE_CHECKING:  # the fact readers load in the scan child, not in every process (issue 22)
    from ..facts.context import Facts

PASS, FAIL, ERROR, NOTAPPLICABLE, WAIVED = "pass", "fail", "error", "notapplicable", "waived"
STATUSES = (PASS, FAIL, ERROR, NOTAPPLICABLE, WAIVED)
_RANK = {FAIL: 4, ERROR: 3, WAIVED: 2, PASS: 1, NOTAPPLICABLE: 0}


def worst(statuses) -> str:
    return max(statuses, key=_RANK.__getitem__, default=NOTAPPLICABLE)


class Setting(Record):
    """A numeric observed/expected pair, exported for drift panels."""
    __slots__ = ("name", "observed", "expected")
    name: str
    observed: float | None
    expected: float | None

    def __init__(self, name: str, observed: float | None, expected: float | None):
        self.name = name
        self.observed = observed
        self.expected = expected


UNKNOWN = "unknown"  # `predicted` when no consumer sets the value and content knows no default


class Fix(Record):
    """How to fix one failing object, as data (outputs never parse message text).

    `command`: a shell command that fixes it now (runtime form); `file` + `change`: the
    file to create or edit and the line(s) it must hold (persistent form); `note`: what to
    do where neither is mechanical. Any combination may be set; at least one is."""
    __slots__ = ("command", "file", "change", "note")
    command: str | None
    file: str | None
    change: str | None
    note: str | None

    def __init__(self,
                 command: str | None = None, file: str | None = None, change: str | None = None,
                 note: str | None = None):
        self.command = command
        self.file = file
        self.change = change
        self.note = note

    def to_dict(self) -> dict:
        return {k: v for k, v in (("command", self.command), ("file", self.file), ("change", self.change),
                                  ("note", self.note)) if v}


class IrqPlacement(FrozenRecord):
    """Where one data IRQ of a NIC may run, as data (the placement metrics read this, never
    the object's name or text): `cpus` is its smp_affinity_list, `node` the NUMA node that
    holds every one of those CPUs (None when they span nodes)."""
    __slots__ = ("interface", "irq", "cpus", "node")
    interface: str
    irq: int
    cpus: tuple[int, ...]
    node: int | None

    def __init__(self, interface: str, irq: int, cpus: tuple[int, ...], node: int | None):
        self.interface = interface
        self.irq = irq
        self.cpus = cpus
        self.node = node


class ObjectResult(Record):
    """One object's verdict. `predicted`/`source` are set by every `-persistent` check:
    the value after the next boot (or UNKNOWN) and where it comes from (`configured by
    FILE`, `driver default (hv_netvsc, Linux 5.14: 8)`, `module default`, `never applied:
    WHY`). `fix` is set on every failing object. `irq` is set by the kinds that judge one
    data IRQ's placement."""
    __slots__ = ("object", "status", "expected", "actual", "message", "settings", "waiver", "predicted", "source",
                 "fix", "irq")
    object: str
    status: str
    expected: str
    actual: str
    message: str
    settings: list[Setting]
    waiver: str | None
    predicted: str | None
    source: str | None
    fix: Fix | None
    irq: IrqPlacement | None

    def __init__(self, object: str, status: str, expected: str, actual: str, message: str,  # noqa: A002
                 settings: list[Setting] | None = None, waiver: str | None = None, predicted: str | None = None,
                 source: str | None = None, fix: Fix | None = None, irq: IrqPlacement | None = None):
        self.object = object
        self.status = status
        self.expected = expected
        self.actual = actual
        self.message = message
        self.settings = [] if settings is None else settings  # a new list each, as field(default_factory=list)
        self.waiver = waiver
        self.predicted = predicted
        self.source = source
        self.fix = fix
        self.irq = irq


def error_result(obj: str, exc: Exception, expected: str = "") -> ObjectResult:
    return ObjectResult(obj, ERROR, expected, "unreadable", f"{obj}: could not decide: {exc}")


def as_number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


class Target(Record):
    """One selected check about to be evaluated on one host."""
    __slots__ = ("check_id", "vars", "facts", "scope", "objects")
    check_id: str
    vars: dict
    facts: Facts
    scope: dict  # the profile's (tailored) scope
    objects: dict  # the check's own object filter

    def __init__(self, check_id: str, vars: dict, facts: Facts, scope: dict, objects: dict):
        self.check_id = check_id
        self.vars = vars
        self.facts = facts
        self.scope = scope
        self.objects = objects

    def interfaces(self):
        return select_interfaces(self.facts, self.scope.get("interfaces"), self.objects.get("interfaces"))

    def mounts(self):
        return select_mounts(self.facts, self.scope.get("mounts"), self.objects.get("mounts"))


def per_object(items, name, evaluate_one) -> list[ObjectResult]:
    """Evaluate objects one by one; an unreadable fact costs only that object."""
    results = []
    for item in items:
        try:
            results.append(evaluate_one(item))
        except (FactError, ParseError) as e:
            results.append(error_result(name(item), e))
    return results
