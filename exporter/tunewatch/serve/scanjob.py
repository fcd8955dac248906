"""One serve scan in a child process: killed on timeout, returns only rendered bytes.

Threads cannot be killed, so a scan stuck on a hung read (or burning CPU on a hostile
input) would keep running forever inside serve. Here each scan runs in a forked child:
the scan function (a closure over the loaded content, however it was built) needs no
pickling, the child renders everything serve will ever show of this scan, sends the bytes
back through a pipe and exits. On timeout the ScanLoop calls `cancel()`, which SIGKILLs
the child by pid. The parent never holds a ScanResult: the old scan's bytes are replaced
by the new scan's bytes, so memory stays near the size of the exposition.
"""

from __future__ import annotations

import gzip
import os
import pickle
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

OPENMETRICS_EOF = b"# EOF\n"


@dataclass(frozen=True, eq=False)
class ScanOutput:
    """What serve keeps of one finished scan (compared and hashed by identity: caches key on it)."""

    text: bytes  # per-scan families, Prometheus text format 0.0.4
    openmetrics: bytes  # the same families in OpenMetrics 1.0.0, without the final "# EOF"
    report_gz: bytes  # outputs.report.render_json, gzip-compressed (it is only ever sent)


def render_output(result: Any, detail: bool = False) -> ScanOutput:
    """Render one ScanResult for serve. The only place serve calls the metrics renderer.

    `detail` is the opt-in per-object/per-IRQ detail flag of the metrics renderer; it is
    passed through when the renderer takes it.
    """
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

    from ..outputs import prometheus as prom
    from ..outputs.report import render_json
    try:
        families = prom.scan_families(result, detail=detail)
    except TypeError:  # a renderer without the detail flag
        families = prom.scan_families(result)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(families))
    openmetrics = generate_openmetrics(registry)
    if openmetrics.endswith(OPENMETRICS_EOF):
        openmetrics = openmetrics[:-len(OPENMETRICS_EOF)]
    return ScanOutput(generate_latest(registry), openmetrics,
                      gzip.compress(render_json(result).encode("utf-8"), compresslevel=6, mtime=0))


def preload_child_imports() -> None:
    """Import, in the calling thread, what render_output() imports in the scan's child. Call
    it before any other thread starts. An import another thread is in the middle of when the
    child is forked leaves that module's import lock held in the child, by a thread the child
    does not have, and the child's own import of the module then waits for ever (until the
    scan deadline kills it): serve's first scan raced the first scrape's import of the same
    renderer. A module already imported takes no lock."""
    import prometheus_client  # noqa: F401
    import prometheus_client.openmetrics.exposition  # noqa: F401

    from ..outputs import prometheus, report  # noqa: F401


class _Families:
    def __init__(self, families: list):
        self._families = families

    def collect(self):
        return iter(self._families)


class ScanCancelled(Exception):
    """The scan's child was killed (timeout or shutdown)."""


class ChildScan:
    """Callable for ScanLoop: run `prepare(scan())` in a forked child, return its value.

    Single-flight is the ScanLoop's job; this class only guarantees that `cancel()` kills
    the running child (SIGKILL by pid) and that the call then returns at once. The child is
    a plain os.fork(), not a multiprocessing.Process: multiprocessing joins its children at
    interpreter exit, and a child stuck in the kernel (a read on a hung NFS or FUSE mount is
    not even killable until the mount answers) would then hold `serve` after SIGTERM. Such a
    child is abandoned instead: the kernel re-parents it and it dies when the mount recovers
    (PR_SET_PDEATHSIG has already sent its SIGKILL).
    """

    def __init__(self, scan: Callable[[], Any], prepare: Callable[[Any], ScanOutput] = render_output):
        self._scan, self._prepare = scan, prepare
        self._lock = threading.Lock()
        self._pid: int | None = None
        self.last_pid: int | None = None  # for tests and logs: the most recent child

    @property
    def running_pid(self) -> int | None:
        with self._lock:
            return self._pid

    def __call__(self) -> ScanOutput:
        parent = os.getpid()
        receiver, sender = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the parent's code
            try:
                os.close(receiver)
                _child_main(self._scan, self._prepare, sender, parent)
            finally:
                os._exit(0)
        os.close(sender)  # ours: the child holds the only writer, so its death is our EOF
        with self._lock:
            self._pid = self.last_pid = pid
        try:
            with os.fdopen(receiver, "rb") as f:
                data = f.read()
        finally:
            with self._lock:
                self._pid = None
            code = _reap(pid)
        if not data:
            raise ScanCancelled(f"scan process {pid} ended without a result (exit code {code})")
        kind, payload = pickle.loads(data)
        if kind == "error":
            raise RuntimeError(payload)
        return ScanOutput(payload.text, payload.openmetrics, payload.report_gz)

    def cancel(self) -> None:
        """SIGKILL the running child, if any; the pending call then raises ScanCancelled."""
        with self._lock:
            pid = self._pid
        if pid is not None:
            _kill(pid)


def _reap(pid: int, wait: float = 10.0) -> int | None:
    """Exit code of the child (negative: killed by that signal); SIGKILL after `wait` s."""
    deadline = time.monotonic() + wait
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            _kill(pid)  # closed its pipe but does not exit: not our problem for long
            deadline = float("inf")
        time.sleep(0.01)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _child_main(scan: Callable[[], Any], prepare: Callable[[Any], ScanOutput], sender: int, parent: int) -> None:
    # Terminal signals are the parent's business; and die with the parent (no orphan scan
    # holding the listening socket or burning CPU after serve is gone).
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    _die_with_parent(parent)
    try:
        output = prepare(scan())
        message: tuple[str, Any] = ("ok", output)
    except BaseException as e:  # noqa: BLE001 - reported to the parent as the scan's error
        message = ("error", f"{type(e).__name__}: {e}")
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    with os.fdopen(sender, "wb") as f:
        f.write(data)


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux glibc: the parent still kills us on stop
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
