"""Hostile-network clients on 127.0.0.1, shared by tests/exporter/test_hostile_network.py
(which asserts) and benchmarks/bench_hostile.py (which prints the table beside
node_exporter). Every flood is bounded in connections and time and closes what it opened.

* Flood: N connections of one kind held open ("idle": connect and say nothing; "half": half
  a request line; "hello": a partial TLS ClientHello), every one re-opened each `period`
  seconds when given (the attacker of issue 18 re-opens every 10 s);
* HandshakeFlood: threads doing full TLS handshakes and hanging up, as fast as they can;
* scrape(): a well-behaved scraper, a fresh connection per scrape, with its latencies.
"""

from __future__ import annotations

import base64
import http.client
import os
import resource
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any

LOOPBACK = "127.0.0.1"
KINDS = {"idle": b"", "half": b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Ag",
         # a TLS record header announcing 512 bytes, then only the start of a ClientHello
         "hello": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 16}


def raise_own_nofile(need: int) -> None:
    """The attacker (this process) needs more descriptors than its victim may have."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))


class Flood:
    """Hold `count` connections of `kind` to port; re-open them all every `period` s."""

    def __init__(self, port: int, count: int, kind: str = "idle", period: float | None = None):
        self.port, self.count, self.payload, self.period = port, count, KINDS[kind], period
        self._stop = threading.Event()
        self._socks: list[socket.socket] = []
        self._thread = threading.Thread(target=self._run, name=f"flood-{kind}", daemon=True)
        self.opened = self.failed = 0

    def _open_all(self) -> None:
        for _ in range(self.count):
            if self._stop.is_set():
                return
            sock = socket.socket()
            sock.settimeout(2)
            try:
                sock.connect((LOOPBACK, self.port))
                if self.payload:
                    sock.send(self.payload)
                self._socks.append(sock)
                self.opened += 1
            except OSError:
                sock.close()
                self.failed += 1

    def _close_all(self) -> None:
        for sock in self._socks:
            sock.close()
        self._socks.clear()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._close_all()
            self._open_all()
            if self.period is None:
                self._stop.wait()
            else:
                self._stop.wait(self.period)
        self._close_all()

    def __enter__(self) -> "Flood":
        self._thread.start()
        deadline = time.monotonic() + 30
        while self.opened + self.failed < self.count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(30)


class HandshakeFlood:
    """`threads` clients doing full TLS handshakes (then hanging up) until stopped."""

    def __init__(self, port: int, threads: int = 8):
        self.port = port
        self.context = ssl.create_default_context()
        self.context.check_hostname, self.context.verify_mode = False, ssl.CERT_NONE
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]
        self.handshakes = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with socket.create_connection((LOOPBACK, self.port), timeout=5) as raw:
                    with self.context.wrap_socket(raw) as tls:
                        tls.do_handshake()
                self.handshakes += 1
            except OSError:
                time.sleep(0.01)

    def __enter__(self) -> "HandshakeFlood":
        for thread in self._threads:
            thread.start()
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(10)


@dataclass
class Scrapes:
    ok: int = 0
    failed: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.ok / max(1, self.ok + self.failed)

    def percentile(self, q: float) -> float:
        values = sorted(self.latencies)
        if not values:
            return float("nan")
        return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def scrape(port: int, count: int, path: str = "/metrics", tls: bool = False, auth: tuple[str, str] | None = None,
           interval: float = 0.05, timeout: float = 5.0, budget: float | None = None) -> Scrapes:
    """`count` GETs, each on a fresh connection (the worst case for a server under a flood:
    every scrape needs an accept, a slot and, with TLS, a handshake). Those not started
    within `budget` seconds count as failed ("budget"): a server that times every scrape
    out must not stretch a benchmark to count x timeout."""
    out = Scrapes()
    give_up = time.monotonic() + budget if budget is not None else float("inf")
    headers = {"Authorization": "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()} if auth else {}
    context = None
    if tls:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    for i in range(count):
        started = time.monotonic()
        if started > give_up:
            out.failed += count - i
            out.errors["budget"] = count - i
            break
        conn = (http.client.HTTPSConnection(LOOPBACK, port, timeout=timeout, context=context) if tls
                else http.client.HTTPConnection(LOOPBACK, port, timeout=timeout))
        try:
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            body = response.read()
            if response.status == 200 and body:
                out.ok += 1
                out.latencies.append(time.monotonic() - started)
            else:
                out.failed += 1
                out.errors[str(response.status)] = out.errors.get(str(response.status), 0) + 1
        except (OSError, http.client.HTTPException) as e:
            out.failed += 1
            out.errors[type(e).__name__] = out.errors.get(type(e).__name__, 0) + 1
        finally:
            conn.close()
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
    return out


def metric(text: str, name: str) -> float | None:
    """The value of an unlabelled sample `name` in a text exposition (None: absent)."""
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{}"):
            return float(line.rsplit(" ", 1)[1])
    return None


def fetch(port: int, path: str = "/metrics", timeout: float = 5.0) -> str:
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=timeout)
    try:
        conn.request("GET", path)
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def prlimit_argv(argv: list[str], soft: int, hard: int | None = None) -> list[str]:
    """argv started under RLIMIT_NOFILE soft[:hard] (util-linux prlimit; hard kept if None)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1] if hard is None else hard
    return ["prlimit", f"--nofile={soft}:{hard}", "--", *argv]


def log_bytes(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


# (request, the status RFC 9110/9112 asks for); answered with a status line, then closed
MALFORMED = [
    (b"GET /-/healthy HTTP/9.9\r\nHost: x\r\n\r\n", 505),
    (b"GET /-/healthy HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
    (b"GET\r\n\r\n", 400),  # a bare method
    (b"GET /-/healthy\r\n\r\n", 400),  # HTTP/0.9
    (b"GET  /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n", 400),  # two spaces
    (b"GET /-/healthy HTTP/1.1 \r\nHost: x\r\n\r\n", 400),
    (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n" + b"X-A: " + b"b" * 33000 + b"\r\n\r\n", 431),
    (b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 101 + b"\r\n", 431),
    (b"BREW /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n", 501),
    (b"POST /-/rescan HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n 2\r\n\r\nab", 400),  # obs-fold
    (b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\n\r\n", 400),  # obs-fold of a value
    (b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400),  # NUL
    (b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400),  # bare CR
    (b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nX A: b\r\n\r\n", 400),  # space in a name
    (b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400),
    (b"GET /-/healthy HTTP/1.1\r\n\r\n", 400),  # no Host
    (b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400),  # two
    (b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n", 417),
    (b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411),
    (b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nab", 400),
]


def read_status(sock: socket.socket) -> tuple[bytes, bytes]:
    """The status line and everything the server sent until it closed."""
    data = b""
    sock.settimeout(5)
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return data.split(b"\r\n", 1)[0], data


def malformed_answered(port: int) -> tuple[int, list[str]]:
    """How many MALFORMED requests get their RFC status line; the others as 'expected: got'."""
    wrong = []
    for request, status in MALFORMED:
        try:
            with socket.create_connection((LOOPBACK, port), timeout=5) as sock:
                sock.sendall(request)
                line = read_status(sock)[0]
        except OSError as e:
            line = repr(e).encode()
        if not line.startswith(b"HTTP/1.1 %d " % status) and not line.startswith(b"HTTP/1.0 %d " % status):
            text = line[:40].decode(errors="replace").splitlines()
            wrong.append(f"{status}: {text[0] if text else '(closed, nothing)'}")
    return len(MALFORMED) - len(wrong), wrong


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def sigterm_probe(root: str, profile: str, hung_for: float = 2.0) -> dict:
    """Run inside hazards' namespace (a hung FUSE mount under `root`): start `serve`, wait
    until its scan has been stuck `hung_for` s, SIGTERM it, time the exit. Stops its serve
    by pid whatever happens."""
    import json
    import signal
    import subprocess
    import sys
    import tempfile
    port = free_port()
    argv = [sys.executable, "-m", "tunewatch.cli.main", "serve", "--root", root, "--profile", profile,
            "--web.listen-address", f"{LOOPBACK}:{port}", "--scan.timeout", "60s"]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
        out: dict = {"rc": None, "exit_seconds": None, "running_seconds": None}
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    out["running_seconds"] = metric(fetch(port), "tunewatch_scan_running_seconds")
                except (OSError, http.client.HTTPException):
                    pass
                if (out["running_seconds"] or 0) >= hung_for:
                    break
                time.sleep(0.1)
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            try:
                out["rc"] = proc.wait(10)
                out["exit_seconds"] = round(time.monotonic() - started, 3)
            except subprocess.TimeoutExpired:
                pass
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            err.seek(0)
            out["stderr"] = err.read().decode(errors="replace")[-3000:]
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    import sys
    if sys.argv[1:2] == ["sigterm"]:
        sigterm_probe(sys.argv[2], sys.argv[3])
