"""Run a resolved profile against one root and collect per-object results.

The engine never lets one check break another: a fact that cannot be read becomes an
`error` result for the checks that need it, an unexpected exception inside a kind becomes
an `error` result naming the check, and every selected check is listed, applicable or not.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass, field

from . import __version__, kinds
from .content import Content, ResolvedProfile, SelectedCheck, Waiver
from .errors import FactError, ParseError
from .facts.context import Facts
from .facts.host import Host
from .fs import FS
from .kinds.base import ERROR, FAIL, NOTAPPLICABLE, STATUSES, WAIVED, ObjectResult, Target, worst
from .selectors import condition_holds, select_interfaces

EXIT_OK, EXIT_CONTENT, EXIT_FAILED = 0, 1, 2


@dataclass
class CheckResult:
    check: str
    title: str
    severity: str
    kind: str
    status: str
    objects: list[ObjectResult]
    runtime_check: str | None = None


@dataclass(frozen=True)
class NicInfo:
    """Driver identity of an in-scope NIC; a change means a driver or firmware update."""
    interface: str
    driver: str
    version: str
    firmware: str
    bus: str


@dataclass
class ScanResult:
    profile: str
    root: str
    host: Host | None
    results: list[CheckResult]
    started_at: float
    duration_seconds: float
    content_digest: str
    nics: list[NicInfo] = field(default_factory=list)
    numa_node_cpus: dict[int, int] = field(default_factory=dict)
    cpu_node: dict[int, int] = field(default_factory=dict)  # online CPU -> its NUMA node
    tool: str = "tunewatch"
    version: str = __version__
    timed_out: bool = False  # a read still blocks in an abandoned thread: exit, don't wait for it

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


def _module_params(profile: ResolvedProfile) -> dict[str, str]:
    params: dict[str, str] = {}
    for sel in profile.checks:
        params.update(sel.vars.get("module_params", {}))
    return params


def evaluate_check(sel: SelectedCheck, facts: Facts, scope: dict) -> CheckResult:
    check = sel.check
    objects: list[ObjectResult]
    if check.applicability and not condition_holds(check.applicability, facts, scope):
        objects = [ObjectResult("-", NOTAPPLICABLE, "", "", f"{check.id} does not apply to this host")]
    else:
        target = Target(check.id, sel.vars, facts, scope, check.objects)
        try:
            objects = kinds.KINDS[check.kind].evaluate(target)
        except (FactError, ParseError) as e:
            objects = [ObjectResult("-", ERROR, "", "unreadable", f"{check.id}: could not decide: {e}")]
        except Exception as e:  # noqa: BLE001 - a bug in one kind must not cost the other checks
            objects = [ObjectResult("-", ERROR, "", "internal error",
                                    f"{check.id}: internal error in kind {check.kind}: {type(e).__name__}: {e}")]
        if not objects:
            objects = [ObjectResult("-", NOTAPPLICABLE, "", "", f"{check.id}: nothing in scope on this host")]
    return CheckResult(check.id, check.title, check.severity, check.kind,
                       worst(o.status for o in objects), objects, check.runtime_check)


def apply_waivers(result: CheckResult, waivers: list[Waiver], today: dt.date) -> None:
    """A matching active waiver turns a failure into `waived`; an expired one says so."""
    mine = [w for w in waivers if w.check == result.check]
    if not mine:
        return
    for obj in result.objects:
        if obj.status != FAIL:
            continue
        for w in (w for w in mine if w.object in (None, obj.object)):
            if w.active(today):
                obj.status, obj.waiver = WAIVED, w.source
                obj.message += f" [waived until {w.expires}: {w.justification}]"
                break
            obj.message += f" [waiver expired on {w.expires} ({w.source})]"
    result.status = worst(o.status for o in result.objects)


def _nic_inventory(facts: Facts, scope: dict) -> list[NicInfo]:
    nics = []
    try:
        interfaces = select_interfaces(facts, scope.get("interfaces"))
    except (FactError, ParseError):
        return nics
    for iface in interfaces:
        try:
            drv = facts.ethtool(iface.name).get("driver") or {}
        except (FactError, ParseError):
            drv = {}
        nics.append(NicInfo(iface.name, drv.get("driver") or iface.driver or "", drv.get("version", ""),
                            drv.get("firmware-version", ""), drv.get("bus-info") or iface.bus_info or ""))
    return nics


DEFAULT_TIMEOUT_S = 60.0


def _timed_out(sel: SelectedCheck, timeout: float, blocked_on: str) -> CheckResult:
    check = sel.check
    where = f" (a read blocked: {blocked_on})" if blocked_on else ""
    obj = ObjectResult("-", ERROR, "", "timeout", f"{check.id}: not decided within the scan timeout of {timeout:g} s{where}")
    return CheckResult(check.id, check.title, check.severity, check.kind, ERROR, [obj], check.runtime_check)


def _known(facts: Facts, name: str):
    """A fact only if it was already read (after a timeout nothing new is read)."""
    ok, value = facts._facts.get(name, (False, None))
    return value if ok else None


def scan(content: Content, profile: ResolvedProfile, root: str = "/", waivers: list[Waiver] | None = None,
         today: dt.date | None = None, timeout: float | None = None) -> ScanResult:
    """Evaluate every selected check. With `timeout` (seconds) the scan has a wall-clock
    limit enforced twice: no fact is read after the deadline (checks not finished get an
    `error` result naming the timeout), and, because one read can block forever in the
    kernel (a hung network file system reached some way we did not foresee), the checks run
    in a daemon thread the caller stops waiting for at the deadline plus a grace second;
    the result then says `timed_out` and the process should exit rather than join it."""
    started, t0 = time.time(), time.perf_counter()
    deadline = None if timeout is None else time.monotonic() + timeout
    facts = Facts(FS(root), _module_params(profile), deadline)
    today = today or dt.datetime.now(dt.timezone.utc).date()
    results: list[CheckResult] = []
    extras: dict = {}

    def body() -> None:
        for sel in profile.checks:
            result = evaluate_check(sel, facts, profile.scope)  # a ScanTimeout makes it `error`
            apply_waivers(result, waivers or [], today)
            results.append(result)
        extras["nics"] = _nic_inventory(facts, profile.scope)

    timed_out = False
    if timeout is None:
        body()
    else:
        worker = threading.Thread(target=body, name="tunewatch-scan", daemon=True)
        worker.start()
        worker.join(timeout + 1.0)
        timed_out = worker.is_alive()
    done = list(results)
    if timed_out:
        blocked = facts.fs.current
        done += [_timed_out(sel, timeout, blocked) for sel in profile.checks[len(done):]]
        facts.deadline = 0.0  # nothing more is read below
    host = _known(facts, "host") if timed_out else None
    topology = _known(facts, "topology") if timed_out else None
    if not timed_out:
        try:
            host = facts.host
        except (FactError, ParseError):
            host = None
        try:
            topology = facts.topology
        except (FactError, ParseError):
            topology = None
    nodes = topology.nodes if topology is not None else {}
    return ScanResult(profile.id, facts.fs.root, host, done, started, time.perf_counter() - t0, content.digest,
                      extras.get("nics", []), {n: len(cpus) for n, cpus in nodes.items()},
                      {cpu: n for n, cpus in nodes.items() for cpu in cpus}, timed_out=timed_out)
