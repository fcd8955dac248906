"""The records a scan produces: per-object and per-check results and the scan as a whole.

Kinds build them, the engine collects them, outputs and remediation read them. Statuses
are strings (`pass`, `fail`, ...) because they become metric label values and JSON.
"""

from __future__ import annotations

from . import __version__
from ._record import FrozenRecord, Record

TYPE_CHECKING = False  # typing costs start-up; annotations are strings (docs/architecture.md)
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .facts.host import Host

PASS, FAIL, ERROR, NOTAPPLICABLE, WAIVED = "pass", "fail", "error", "notapplicable", "waived"
STATUSES = (PASS, FAIL, ERROR, NOTAPPLICABLE, WAIVED)
_RANK = {FAIL: 4, ERROR: 3, WAIVED: 2, PASS: 1, NOTAPPLICABLE: 0}


def worst(statuses: Iterable[str]) -> str:
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


class AfterReadd(Record):
    """One object's value after its device is re-added without a reboot (an Azure VF
    hot-remove/re-add, a driver reload or update): `predicted` (the value, or UNKNOWN),
    `source` (what re-applies it, `driver default ...`, `not affected by a re-add`) and
    `status` (that value judged by the object's own requirement)."""
    __slots__ = ("predicted", "source", "status")
    predicted: str
    source: str
    status: str

    def __init__(self, predicted: str, source: str, status: str):
        self.predicted = predicted
        self.source = source
        self.status = status

    def to_dict(self) -> dict:
        return {"predicted": self.predicted, "source": self.source, "status": self.status}


class ObjectResult(Record):
    """One object's verdict. `predicted`/`source` are set by every `-persistent` check:
    the value after the next boot (or UNKNOWN) and where it comes from (`configured by
    FILE`, `driver default (hv_netvsc, Linux 5.14: 8)`, `module default`, `never applied:
    WHY`). `fix` is set on every failing object. `irq` is set by the kinds that judge one
    data IRQ's placement. `after_readd` is set on every object of a `-persistent` check:
    the value after a re-add of the device (the object's `status` stays the next-boot verdict)."""
    __slots__ = ("object", "status", "expected", "actual", "message", "settings", "waiver", "predicted", "source",
                 "fix", "irq", "after_readd")
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
    after_readd: AfterReadd | None

    def __init__(self, object: str, status: str, expected: str, actual: str, message: str,  # noqa: A002
                 settings: list[Setting] | None = None, waiver: str | None = None, predicted: str | None = None,
                 source: str | None = None, fix: Fix | None = None, irq: IrqPlacement | None = None,
                 after_readd: AfterReadd | None = None):
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
        self.after_readd = after_readd


def error_result(obj: str, exc: Exception, expected: str = "") -> ObjectResult:
    return ObjectResult(obj, ERROR, expected, "unreadable", f"{obj}: could not decide: {exc}")



EXIT_OK, EXIT_CONTENT, EXIT_FAILED = 0, 1, 2


class CheckResult(Record):
    __slots__ = ("check", "title", "severity", "kind", "status", "objects", "runtime_check")
    check: str
    title: str
    severity: str
    kind: str
    status: str
    objects: list[ObjectResult]
    runtime_check: str | None

    def __init__(self,
                 check: str, title: str, severity: str, kind: str, status: str, objects: list[ObjectResult],
                 runtime_check: str | None = None):
        self.check = check
        self.title = title
        self.severity = severity
        self.kind = kind
        self.status = status
        self.objects = objects
        self.runtime_check = runtime_check


class NicInfo(FrozenRecord):
    """Driver identity of an in-scope NIC; a change means a driver or firmware update."""
    __slots__ = ("interface", "driver", "version", "firmware", "bus")
    interface: str
    driver: str
    version: str
    firmware: str
    bus: str

    def __init__(self, interface: str, driver: str, version: str, firmware: str, bus: str):
        self.interface = interface
        self.driver = driver
        self.version = version
        self.firmware = firmware
        self.bus = bus


class ScanResult(Record):
    __slots__ = ("profile", "root", "host", "results", "started_at", "duration_seconds", "content_digest", "nics",
                 "numa_node_cpus", "cpu_node", "tool", "version", "timed_out")
    profile: str
    root: str
    host: Host | None
    results: list[CheckResult]
    started_at: float
    duration_seconds: float
    content_digest: str
    nics: list[NicInfo]
    numa_node_cpus: dict[int, int]
    cpu_node: dict[int, int]  # online CPU -> its NUMA node
    tool: str
    version: str
    timed_out: bool  # the scan was abandoned at its timeout (see scan_with_watchdog)

    def __init__(self,
                 profile: str, root: str, host: Host | None, results: list[CheckResult], started_at: float,
                 duration_seconds: float, content_digest: str, nics: list[NicInfo] | None = None,
                 numa_node_cpus: dict[int, int] | None = None, cpu_node: dict[int, int] | None = None,
                 tool: str = "tunewatch", version: str = __version__, timed_out: bool = False):
        self.profile = profile
        self.root = root
        self.host = host
        self.results = results
        self.started_at = started_at
        self.duration_seconds = duration_seconds
        self.content_digest = content_digest
        self.nics = [] if nics is None else nics
        self.numa_node_cpus = {} if numa_node_cpus is None else numa_node_cpus
        self.cpu_node = {} if cpu_node is None else cpu_node
        self.tool = tool
        self.version = version
        self.timed_out = timed_out

    @property
    def summary(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for r in self.results:
            counts[r.status] += 1
        return counts

    @property
    def compliant(self) -> bool:
        return not any(r.status in (FAIL, ERROR) for r in self.results)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.compliant else EXIT_FAILED
