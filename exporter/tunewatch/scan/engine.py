"""Run a resolved profile against one root and collect per-object results.

The engine never lets one check break another: a fact that cannot be read becomes an
`error` result for the checks that need it, an unexpected exception inside a kind becomes
an `error` result naming the check, and every selected check is listed, applicable or not.
"""

from __future__ import annotations

import gc
import os
import time

from .. import kinds
from ..content.catalog import Content, ResolvedProfile, SelectedCheck
from ..errors import FactError, ParseError
from ..kinds._predict import complete as complete_prediction
from ..kinds._predict import complete_readd, is_persistent
from ..kinds.base import Target
from ..kinds.selectors import condition_holds, select_interfaces
from ..results import ERROR, NOTAPPLICABLE, CheckResult, NicInfo, ObjectResult, ScanResult, worst

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:  # the fact readers and parsers load in the scan child only (docs/architecture.md#start-up-cost)
    import datetime as dt  # at run time only with waivers (docs/architecture.md#start-up-cost)
    from typing import Callable

    from ..content.waivers import Waiver
    from ..facts.context import Facts
    from ..host.fs import FS


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
        # The kind says so, not a list here. Not for a check that does not apply: its one
        # object "-" is a name the kernel can give, and importing its kind only to ask is
        # a module or six of start-up (docs/architecture.md#start-up-cost).
        if getattr(kinds.KINDS[check.kind], "PER_INTERFACE", False):
            objects = _valid_interfaces(objects, facts)
    if check.runtime_check:  # every object of a -persistent check says what the next boot brings
        complete_prediction(objects)
    return CheckResult(check.id, check.title, check.severity, check.kind,
                       worst(o.status for o in objects), objects, check.runtime_check)


def _runtime_of(check_id: str | None, profile: ResolvedProfile, facts: Facts, done: list[CheckResult],
                early: dict[str, CheckResult]) -> CheckResult | None:
    """The runtime check's result (evaluated now, and kept for its turn, when it comes later)."""
    if not check_id:
        return None
    found = next((r for r in done if r.check == check_id), None) or early.get(check_id)
    if found is None:
        sel = next((s for s in profile.checks if s.check.id == check_id), None)
        if sel is not None:
            found = early[check_id] = evaluate_check(sel, facts, profile.scope)
    return found


def _valid_interfaces(objects: list[ObjectResult], facts: Facts) -> list[ObjectResult]:
    """An interface name the kernel could not have given is a fact error for its objects
    (interface, interface/irqN) only: never judged, never remediated."""
    from ..facts.interfaces import invalid_name
    try:
        bad = {n: why for n in facts.interfaces if (why := invalid_name(n))}
    except (FactError, ParseError):
        return objects
    if not bad:
        return objects
    out = []
    for o in objects:
        why = bad.get(o.object.split("/")[0])
        out.append(o if why is None else ObjectResult(o.object, ERROR, o.expected, "invalid interface name",
                                                      f"interface {o.object!r}: not a name the "
                                                      f"kernel gives an interface ({why}); not judged"))
    return out


def _nic_inventory(facts: Facts, scope: dict) -> list[NicInfo]:
    nics: list[NicInfo] = []
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


def _failed(sel: SelectedCheck, why: str, actual: str = "internal error") -> CheckResult:
    check = sel.check
    obj = ObjectResult("-", ERROR, "", actual, f"{check.id}: {why}")
    if check.runtime_check:
        complete_prediction([obj])
    if is_persistent(check):
        complete_readd(check.kind, [obj])
    return CheckResult(check.id, check.title, check.severity, check.kind, ERROR, [obj], check.runtime_check)


def _timed_out(sel: SelectedCheck, timeout: float) -> CheckResult:
    return _failed(sel, f"not decided within the scan timeout of {timeout:g} s (a read blocked, or the host is "
                        "too slow)", "timeout")


def scan(content: Content, profile: ResolvedProfile, root: str = "/", waivers: list[Waiver] | None = None,
         today: dt.date | None = None, timeout: float | None = None,
         on_result: Callable[[CheckResult], None] | None = None, host_mountinfo: bytes | None = None,
         fs: FS | None = None) -> ScanResult:
    """Evaluate every selected check in this thread. With `timeout` (seconds) no fact is
    read after the deadline: checks that still need one get an `error` result saying the
    scan timed out. `on_result` sees each check's result as soon as it is decided.
    `host_mountinfo`: the scanning host's /proc/self/mountinfo, already read this scan. `fs`:
    the view of `root` to read through, when one scan judges several objects from one root
    (a vSphere fleet: one empty root, its mount guard computed once, not per VM)."""
    # No cyclic garbage collection while the scan runs: a scan allocates a record per mount,
    # IRQ and rule line, and each collection the allocations trigger walks every live
    # object (the content too) for the few cycles a scan leaves: 10-25 % of a scan of a
    # host with 1,000 mounts. Collection resumes when the scan returns.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _scan(content, profile, root, waivers, today, timeout, on_result, host_mountinfo, fs)
    finally:
        if collecting:
            gc.enable()


def _scan(content: Content, profile: ResolvedProfile, root: str, waivers: list[Waiver] | None, today: dt.date | None,
          timeout: float | None, on_result: Callable[[CheckResult], None] | None, host_mountinfo: bytes | None,
          fs: FS | None) -> ScanResult:
    from ..facts.context import Facts  # here, not at import: every fact reader and parser comes with it

    started, t0 = time.time(), time.perf_counter()
    deadline = None if timeout is None else time.monotonic() + timeout
    if fs is None:
        from ..host.fs import FS
        fs = FS(root, host_mountinfo)
    facts = Facts(fs, _module_params(profile), deadline, content.defaults)
    results: list[CheckResult] = []
    early: dict[str, CheckResult] = {}  # runtime checks decided ahead of their turn for a -persistent one
    for sel in profile.checks:
        result = early.pop(sel.check.id, None) or evaluate_check(sel, facts, profile.scope)
        if is_persistent(sel.check):
            complete_readd(sel.check.kind, result.objects, _runtime_of(sel.check.runtime_check, profile, facts,
                                                                       results, early), sel.check.runtime_check)
        if waivers:
            from ..content.waivers import apply_waivers

            if today is None:
                import datetime as dt

                today = dt.datetime.now(dt.timezone.utc).date()
            apply_waivers(result, waivers, today)
        results.append(result)
        if on_result is not None:
            on_result(result)
    try:
        host = facts.host
    except (FactError, ParseError):
        host = None
    try:
        nodes = facts.topology.nodes
    except (FactError, ParseError):
        nodes = {}
    nics = _nic_inventory(facts, profile.scope)
    return ScanResult(profile.id, facts.fs.root, host, results, started, time.perf_counter() - t0, content.digest,
                      nics, {n: len(cpus) for n, cpus in nodes.items()},
                      {cpu: n for n, cpus in nodes.items() for cpu in cpus})


def _send(fd: int, item: object) -> None:
    import pickle
    import struct

    data = pickle.dumps(item, pickle.HIGHEST_PROTOCOL)
    view = memoryview(struct.pack("!I", len(data)) + data)  # one write per result: one wake-up of the parent
    while view:
        view = view[os.write(fd, view):]


def _scan_here(content: Content, profile: ResolvedProfile, root: str, waivers: list[Waiver] | None,
               today: dt.date | None, timeout: float, host_mountinfo: bytes | None = None) -> ScanResult:
    """scan() in this process, a crash reported as the watchdog's child reports one."""
    started, t0 = time.time(), time.perf_counter()
    results: list[CheckResult] = []
    try:
        return scan(content, profile, root, waivers, today, timeout, on_result=results.append,
                    host_mountinfo=host_mountinfo)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - as the child's exit: what is missing says why
        why = f"the scan ended without deciding it ({type(e).__name__}: {e})"
        results += [_failed(sel, why) for sel in profile.checks[len(results):]]
    return ScanResult(profile.id, os.path.abspath(root), None, results, started, time.perf_counter() - t0,
                      content.digest)


def scan_with_watchdog(content: Content, profile: ResolvedProfile, root: str = "/",
                       waivers: list[Waiver] | None = None, today: dt.date | None = None,
                       timeout: float = DEFAULT_TIMEOUT_S) -> ScanResult:
    """scan() in a forked child that streams each result back; the parent stops waiting
    at the deadline plus a grace second. A read that blocks in the kernel (a hung network
    file system reached some way nobody foresaw) cannot be interrupted: a FUSE or NFS
    request already sent is waited out even by SIGKILL. So the child, not this process,
    is the one left waiting; it has no stdout/stderr of ours, so whoever reads our output
    sees it end. Checks not decided in time are `error` with the reason; `timed_out` says
    the child was abandoned.

    Without a mount the scan could hang on (`hangsafe.needs_watchdog`: the mounts at and
    above the root are all local in-kernel file systems, as on most hosts) scan() runs
    here, with the same deadline, the same results and `timed_out` False: the fork, the
    pickling and the reaping cost ~20 ms of a CLI scan (docs/architecture.md#start-up-cost)."""
    from . import hangsafe

    mountinfo = hangsafe.read_host_mountinfo()
    if not hangsafe.needs_watchdog(root, mountinfo):
        return _scan_here(content, profile, root, waivers, today, timeout, mountinfo)
    import pickle  # the fork path only
    import select
    import signal
    import struct

    started, t0 = time.time(), time.perf_counter()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read_fd)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            result = scan(content, profile, root, waivers, today, timeout,
                          on_result=lambda r: _send(write_fd, ("check", r)))
            _send(write_fd, ("done", result.host, result.nics, result.numa_node_cpus, result.cpu_node))
        except BaseException:  # noqa: BLE001 - the parent reports what is missing
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    results: list[CheckResult] = []
    done = None
    ended = False  # the child closed the pipe: it exited (or crashed) without waiting on anything
    deadline = time.monotonic() + timeout + 1.0
    buffer = b""
    try:
        while done is None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_fd], [], [], left)[0]:
                break
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                ended = True
                break
            buffer += chunk
            while len(buffer) >= 4 and len(buffer) >= 4 + struct.unpack("!I", buffer[:4])[0]:
                size = struct.unpack("!I", buffer[:4])[0]
                item, buffer = pickle.loads(buffer[4:4 + size]), buffer[4 + size:]
                if item[0] == "check":
                    results.append(item[1])
                else:
                    done = item[1:]
    finally:
        os.close(read_fd)
    timed_out = done is None and not ended
    if timed_out:
        os.kill(pid, signal.SIGKILL)  # ends it unless it waits in the kernel; never waited for here
        results += [_timed_out(sel, timeout) for sel in profile.checks[len(results):]]
    else:
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if done is None:  # a crash, not a hang: say so rather than blame the clock
            results += [_failed(sel, f"the scan process ended without deciding it (exit status {status})")
                        for sel in profile.checks[len(results):]]
    host, nics, numa, cpu_node = done if done is not None else (None, [], {}, {})
    return ScanResult(profile.id, os.path.abspath(root), host, results, started, time.perf_counter() - t0,
                      content.digest, nics, numa, cpu_node, timed_out=timed_out)
