"""Run a scan in the background on an interval and on demand; never make a reader wait.

Scheduling rules (what the exporter promises):

* The first scan starts as soon as `start()` is called, then one every `interval` seconds
  (measured from the start of the previous scan; a scan longer than the interval is
  followed immediately by the next one, never overlapped).
* `request_scan()` is single-flight. With no scan running it starts one now. While a scan
  runs, the request is NOT merged into that scan (it may already have read the value the
  caller just changed); instead exactly one rerun starts right after it. Any number of
  requests during one scan collapse into that one rerun, so at most two scans result.
* A scan that raises keeps the last good result and counts reason "exception".
* A scan still running after `timeout` seconds counts reason "timeout" at that moment.
  If the scan callable has a `cancel()` method (scanjob.ChildScan: the scan runs in a
  child process), it is called and kills the scan, which then ends at once. Otherwise
  (an in-process scan: threads cannot be killed) it is abandoned: it keeps running, and
  if it ever returns its result is discarded (it was reported as failed; it may be older
  than what we show). At most one abandoned scan exists: while it is still stuck, every
  due or requested scan is skipped and counted in `scans_skipped_total` (a second scan
  would most likely hang on the same stuck read). Scanning resumes by itself as soon as
  the stuck scan returns. Meanwhile `state()` keeps answering, so scrapes show the
  timeout and the stale result.
* Ready means "has a result to show": a first scan that failed or timed out leaves
  `result` None, and serve's /-/ready says 503 until some scan succeeds.
* Scans therefore never run concurrently: the only other thread that may still be inside
  `scan()` is the abandoned one, and nothing new starts while it lives.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from dataclasses import replace as _replace
from typing import Callable, Generic, TypeVar

T = TypeVar("T")
log = logging.getLogger("tunewatch.scanloop")

ERROR_REASONS = ("exception", "timeout")


@dataclass(frozen=True)
class ScanState(Generic[T]):
    """A consistent snapshot; times are Unix seconds, durations seconds."""

    result: T | None = None  # last good result, kept across failures
    result_completed_at: float | None = None
    result_duration_seconds: float | None = None
    scans_total: int = 0  # scans started (skips excluded)
    scan_errors_total: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(ERROR_REASONS, 0))
    scans_skipped_total: int = 0  # due/requested scans not started because one is hung
    last_success: bool = False  # did the most recent finished scan attempt succeed
    last_error: str | None = None  # error of the most recent attempt, None if it succeeded
    scan_in_progress: bool = False  # a (non-abandoned) scan is running now
    first_scan_done: bool = False  # some attempt has concluded (success, exception, timeout)
    running_since_monotonic: float | None = None  # start of the running (or stuck) scan

    def running_seconds(self, now: float | None = None) -> float:
        """How long the running or stuck scan has run so far; 0 when none runs."""
        if self.running_since_monotonic is None:
            return 0.0
        return max(0.0, (time.monotonic() if now is None else now) - self.running_since_monotonic)


@dataclass(eq=False)
class _Run:
    started_monotonic: float
    started_at: float
    done: bool = False
    abandoned: bool = False


class ScanLoop(Generic[T]):
    def __init__(self, scan: Callable[[], T], interval: float, timeout: float):
        if interval <= 0 or timeout <= 0:
            raise ValueError("interval and timeout must be positive")
        self._scan, self.interval, self.timeout = scan, float(interval), float(timeout)
        # One condition guards everything below; it is never held while scan() runs.
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._rescan_requested = False
        self._current: _Run | None = None
        self._hung: _Run | None = None
        self._state: ScanState[T] = ScanState()

    def start(self) -> ScanLoop[T]:
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._schedule, name="tunewatch-scanloop", daemon=True)
                self._thread.start()
        return self

    def stop(self, wait: float = 5.0) -> None:
        """Stop scheduling and cancel a scan in flight (an in-process one is not waited for)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._cancel_scan()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(wait)

    def request_scan(self) -> None:
        with self._cond:
            self._rescan_requested = True
            self._cond.notify_all()

    def state(self) -> ScanState[T]:
        with self._cond:  # held only for bookkeeping, never across a scan
            running = self._current or self._hung
            return _replace(self._state, scan_in_progress=self._current is not None,
                            running_since_monotonic=running.started_monotonic if running else None)

    def wait_first_scan(self, timeout: float | None = None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._state.first_scan_done, timeout)

    def _schedule(self) -> None:
        next_due = time.monotonic()  # first scan right away
        with self._cond:
            while not self._stopping:
                now = time.monotonic()
                if not self._rescan_requested and now < next_due:
                    self._cond.wait(next_due - now)
                    continue
                self._rescan_requested = False
                next_due = now + self.interval
                if self._hung is not None:
                    self._state = _replace(self._state, scans_skipped_total=self._state.scans_skipped_total + 1)
                    log.warning("scan skipped: a timed-out scan is still running",
                                extra={"hung_for_seconds": round(now - self._hung.started_monotonic, 3)})
                    continue
                self._run_one(now)

    def _run_one(self, now: float) -> None:
        """Start one scan and wait (releasing the lock) until it ends, times out or we stop."""
        run = _Run(started_monotonic=now, started_at=time.time())
        self._current = run
        self._state = _replace(self._state, scans_total=self._state.scans_total + 1)
        threading.Thread(target=self._execute, args=(run,), name="tunewatch-scan", daemon=True).start()
        deadline = now + self.timeout
        while not run.done and not self._stopping and time.monotonic() < deadline:
            self._cond.wait(deadline - time.monotonic())
        if run.done or self._stopping:
            return
        run.abandoned = True
        self._current, self._hung = None, run
        self._record_failure("timeout", f"scan did not finish within {self.timeout:g}s")
        self._cancel_scan()  # a child-process scan dies now and `_hung` clears when it returns

    def _cancel_scan(self) -> None:
        cancel = getattr(self._scan, "cancel", None)
        if cancel is not None:
            cancel()  # only signals a pid: safe while holding the lock

    def _execute(self, run: _Run) -> None:
        error: BaseException | None = None
        try:
            result = self._scan()
        except BaseException as e:  # noqa: BLE001 - whatever it was, the loop must survive it
            error, result = e, None
        duration = time.monotonic() - run.started_monotonic
        with self._cond:
            run.done = True
            if self._current is run:
                self._current = None
            if run.abandoned:
                self._hung = None
                log.warning("timed-out scan ended; result discarded",
                            extra={"duration_seconds": round(duration, 3)})
            elif error is not None and self._stopping:
                log.debug("scan cancelled at shutdown", extra={"err": str(error)})
            elif error is not None:
                log.debug("scan traceback", exc_info=error)
                self._record_failure("exception", f"{type(error).__name__}: {error}")
            else:
                self._state = _replace(self._state, result=result, result_completed_at=time.time(),
                                       result_duration_seconds=duration, last_success=True,
                                       last_error=None, first_scan_done=True)
                log.debug("scan finished", extra={"duration_seconds": round(duration, 3)})
            self._cond.notify_all()

    def _record_failure(self, reason: str, message: str) -> None:
        errors = dict(self._state.scan_errors_total)
        errors[reason] += 1
        self._state = _replace(self._state, scan_errors_total=errors, last_success=False,
                               last_error=message, first_scan_done=True)
        self._cond.notify_all()  # wake wait_first_scan() after a timeout too
        log.error("scan failed", extra={"reason": reason, "err": message})

