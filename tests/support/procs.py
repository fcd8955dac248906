"""Start a real binary on a free 127.0.0.1 port, wait for it, stop it by PID.

Every helper here is bounded (timeouts everywhere) and cleans up after itself: a
ManagedProcess is a context manager whose exit sends SIGTERM to *its own* PID, waits, and
SIGKILLs that PID if it does not go. Output goes to log files in the process's work dir
so a failing test can show the tail.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

T = TypeVar("T")
LOOPBACK = "127.0.0.1"


class OnLoopback:
    """Mixin of a started server: it listens on LOOPBACK:self.port."""
    port: int

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


_handed_out: set[int] = set()
_next_port = [0]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now, that nothing else on this host is about to take.

    The port comes from just below the kernel's ephemeral range: bind(0) and every outgoing
    connection draw from that range, so a port picked by bind(0) could be taken, between this
    check and the caller's bind, by a connection some other server of the suite opens (CI saw
    "address already in use" that way). A port below it is only ever taken by an explicit
    bind. Ports are handed out once per process, in turn from a start that depends on the pid.
    """
    low = _ephemeral_range()[0]
    first, count = max(1024, low - 8192), min(8192, low - 1024)
    if count < 256:  # an unusual range with no room below it: let the OS pick
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((LOOPBACK, 0))
            return s.getsockname()[1]
    if not _next_port[0]:
        _next_port[0] = os.getpid() * 7919 % count
    for _ in range(count):
        port = first + _next_port[0] % count
        _next_port[0] += 1
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((LOOPBACK, port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free TCP port in {first}..{first + count - 1} on {LOOPBACK}")


def wait_until(probe: Callable[[], T], timeout: float, interval: float = 0.1,
               message: str | Callable[[], str] = "condition not met") -> T:
    """Call `probe` until it returns something truthy (returned) or `timeout` s pass (AssertionError).

    Exceptions raised by `probe` count as "not yet"; the last one is chained.
    """
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            value = probe()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - not ready yet
            last_exc = e
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout:g}s: {text}"
                                 + (f" (last error: {last_exc!r})" if last_exc else "")) from last_exc
        time.sleep(interval)


@dataclass
class HTTPResult:
    status: int
    body: bytes
    headers: Mapping[str, str]

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)


def http_request(url: str, method: str = "GET", data: bytes | None = None, timeout: float = 5.0,
                 auth: tuple[str, str] | None = None, headers: Mapping[str, str] | None = None,
                 insecure: bool = False) -> HTTPResult:
    """One request; HTTP error statuses are returned, not raised (connection errors raise)."""
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if auth is not None:
        import base64
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    context = None
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    # No proxies: loopback traffic only, whatever the environment says.
    handlers: list[Any] = [urllib.request.ProxyHandler({})]
    if context is not None:
        handlers.append(urllib.request.HTTPSHandler(context=context))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(request, timeout=timeout) as response:
            return HTTPResult(response.status, response.read(), dict(response.headers))
    except urllib.error.HTTPError as e:
        return HTTPResult(e.code, e.read(), dict(e.headers))


def http_get(url: str, **kwargs: Any) -> HTTPResult:
    return http_request(url, "GET", **kwargs)


@dataclass
class ManagedProcess:
    """A child process with log files in `workdir`; stop() kills only this PID."""

    argv: Sequence[str]
    workdir: Path
    name: str = "proc"
    env: Mapping[str, str] | None = None
    proc: subprocess.Popen | None = field(default=None, init=False)

    @property
    def stdout_path(self) -> Path:
        return self.workdir / f"{self.name}.stdout.log"

    @property
    def stderr_path(self) -> Path:
        return self.workdir / f"{self.name}.stderr.log"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return self.proc.pid

    def start(self) -> "ManagedProcess":
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(list(self.argv), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         cwd=self.workdir, env=dict(self.env) if self.env is not None else None,
                                         start_new_session=True)  # no terminal signals from the test runner
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def logs(self, limit: int = 4000) -> str:
        parts = []
        for path in (self.stdout_path, self.stderr_path):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if text:
                parts.append(f"--- {path.name} (tail) ---\n{text[-limit:]}")
        return "\n".join(parts) or "(no output)"

    def describe(self) -> str:
        code = None if self.proc is None else self.proc.poll()
        state = "running" if code is None else f"exited with {code}"
        return f"{self.name} (pid {self.proc.pid if self.proc else '-'}, {state}): {' '.join(self.argv)}\n{self.logs()}"

    def signal(self, signum: int) -> None:
        if self.alive():
            os.kill(self.pid, signum)

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM this PID, wait up to `timeout`, then SIGKILL it. Returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        return self.proc.returncode

    def wait_http(self, url: str, timeout: float = 20.0, expect: int = 200, **kwargs: Any) -> HTTPResult:
        """Poll `url` until it answers `expect`; fail early (with logs) if the process died."""
        def probe() -> HTTPResult | None:
            if not self.alive():
                raise AssertionError(f"process died while waiting for {url}:\n{self.describe()}")
            result = http_get(url, timeout=2.0, **kwargs)
            return result if result.status == expect else None
        try:
            return wait_until(probe, timeout, 0.1, lambda: f"{url} never answered {expect}\n{self.describe()}")
        except AssertionError as e:
            if not self.alive():
                raise AssertionError(f"process died while waiting for {url}:\n{self.describe()}") from None
            raise e

    def __enter__(self) -> "ManagedProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@contextlib.contextmanager
def managed(argv: Sequence[str], workdir: Path, name: str = "proc",
            env: Mapping[str, str] | None = None) -> Iterator[ManagedProcess]:
    """Start `argv`; always stop it (by PID) when the block ends."""
    process = ManagedProcess(argv, Path(workdir), name, env)
    try:
        process.start()
        yield process
    finally:
        process.stop()
