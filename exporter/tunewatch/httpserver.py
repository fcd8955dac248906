"""A small HTTP/1.1 server for the exporter: one selector thread, a bounded pool of workers.

Why not http.server.ThreadingHTTPServer: it listens with a backlog of 5, starts one thread
per connection (200 idle connections = 200 threads, and a client that sends one byte a
second holds its thread forever) and trusts the client to finish its request. Here:

* every listening socket is bound with a backlog of at least 128 (the kernel's somaxconn);
* one selector thread accepts, does TLS handshakes and reads requests without blocking.
  A connection costs no thread while idle or while its request trickles in; a request
  (headers and body) must be complete within `request_timeout` seconds of its first byte
  (of the connection, for TLS) or the connection is closed; an idle keep-alive connection
  is closed after `idle_timeout`; at `max_connections` the longest-idle one makes room;
* complete requests go to at most `max_requests` worker threads (node_exporter's
  `--web.max-requests`); as many again may wait for one, up to QUEUE_WAIT seconds; any
  request beyond that is answered 503 at once;
* framing is checked before any parsing: duplicate or conflicting Content-Length is 400,
  Transfer-Encoding is 411 (request bodies are tiny; none need chunking), a body over
  MAX_BODY_BYTES is 413, a header block over MAX_HEADER_BYTES is 431;
* HTTP/1.0 closes after the response unless it sent `Connection: keep-alive`, which is
  then answered with `Connection: keep-alive` and a Content-Length (an HTTP/1.0 client
  without that header waits for the close); HTTP/1.1 keeps alive unless told `close`.

Framing and parsing are httpproto.py.
"""

from __future__ import annotations

import errno
import logging
import queue
import selectors
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .httpproto import (MAX_BODY_BYTES, MAX_HEADER_BYTES, REFUSALS, OneRequest, Request, Response, frame,
                        plain_response)

log = logging.getLogger("tunewatch.web")

QUEUE_WAIT = 5.0  # a request waiting longer than this for a worker gets 503
WRITE_TIMEOUT = 10.0  # a client that does not read its response loses the connection
_RECV = 65536


@dataclass(eq=False)
class _Conn:
    sock: socket.socket
    remote: str
    handshaking: bool
    opened: float
    buf: bytearray = field(default_factory=bytearray)
    request_started: float | None = None  # first byte of the pending request
    last_active: float = 0.0
    busy: bool = False
    eof: bool = False  # the client half-closed: answer what it sent, then close


def somaxconn() -> int:
    try:
        with open("/proc/sys/net/core/somaxconn") as f:
            return max(128, int(f.read()))
    except (OSError, ValueError):
        return max(128, socket.SOMAXCONN)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket for host:port; host '' or '::' is every interface (IPv6 and IPv4)."""
    if host in ("", "::"):
        families = [(socket.AF_INET6, ("::", port)), (socket.AF_INET, ("0.0.0.0", port))]
    else:
        info = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)[0]
        families = [(info[0], info[4][:2])]
    for i, (family, address) in enumerate(families):
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and address[0] == "::":
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind(address)
            sock.listen(somaxconn())
            sock.setblocking(False)
            return sock
        except OSError as e:
            sock.close()
            # IPv6 disabled in the kernel (common in containers): all IPv4 interfaces.
            if i + 1 == len(families) or e.errno not in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
                raise
    raise AssertionError("unreachable")


class HTTPServer:
    """Serve `app(Request) -> Response` on one or more bound sockets until shutdown()."""

    def __init__(self, listeners: list[socket.socket], app: Callable[[Request], Response],
                 tls: ssl.SSLContext | None = None, *, max_requests: int = 40, request_timeout: float = 10.0,
                 idle_timeout: float = 120.0, max_connections: int = 1024,
                 accept_tls: Callable[[ssl.SSLSocket], bool] | None = None):
        self.listeners = listeners
        self.app, self.tls, self.accept_tls = app, tls, accept_tls
        self.max_requests, self.request_timeout = max_requests, request_timeout
        self.idle_timeout, self.max_connections = idle_timeout, max_connections
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._returned: queue.SimpleQueue[tuple[_Conn, bool]] = queue.SimpleQueue()
        self._work: queue.Queue[Any] = queue.Queue()
        self._workers: list[threading.Thread] = []
        self._inflight = 0
        self._lock = threading.Lock()  # guards _inflight/_workers/rejected_total (loop and workers)
        self._conns: set[_Conn] = set()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.rejected_total = 0  # 503 because every worker was busy and the queue full

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [s.getsockname()[:2] for s in self.listeners]

    @property
    def server_address(self) -> tuple[str, int]:
        return self.addresses[0]

    @property
    def port(self) -> int:
        return self.addresses[0][1]

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    @property
    def urls(self) -> list[str]:
        out = []
        for host, port in self.addresses:
            host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
            out.append(f"{self.scheme}://{f'[{host}]' if ':' in host else host}:{port}")
        return out

    @property
    def url(self) -> str:
        return self.urls[0]

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    def start(self) -> "HTTPServer":
        self._thread = threading.Thread(target=self._loop, name="tunewatch-http", daemon=True)
        self._thread.start()
        return self

    def shutdown(self, wait: float = 5.0) -> None:
        self._stopping.set()
        self._wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(wait)
        for _ in self._workers:
            self._work.put(None)
        for worker in self._workers:
            worker.join(1.0)

    # --- selector thread ------------------------------------------------------------

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except (BlockingIOError, OSError):
            pass  # a wake-up is already pending (buffer full) or we are closing

    def _loop(self) -> None:
        sel = self._selector
        for lsock in self.listeners:
            sel.register(lsock, selectors.EVENT_READ, "listen")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        next_sweep = time.monotonic() + 0.5
        try:
            while not self._stopping.is_set():
                for key, _mask in sel.select(0.5):
                    if key.data == "listen":
                        self._accept(key.fileobj)  # type: ignore[arg-type]
                    elif key.data == "wake":
                        self._drain_wake()
                    else:
                        self._on_ready(key.data)
                now = time.monotonic()
                if now >= next_sweep:
                    self._sweep(now)
                    next_sweep = now + 0.5
        finally:
            for conn in list(self._conns):
                self._close(conn)
            for lsock in self.listeners:
                lsock.close()
            sel.close()
            self._wake_r.close()
            self._wake_w.close()
            self._stopped.set()

    def _accept(self, lsock: socket.socket) -> None:
        for _ in range(256):  # bounded: let other sockets have a turn under a connect storm
            try:
                sock, address = lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # EMFILE and friends: drop this one, keep serving
                log.warning("accept failed", extra={"err": str(e)})
                return
            now = time.monotonic()
            if len(self._conns) >= self.max_connections and not self._evict_idle():
                sock.close()
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            handshaking = False
            if self.tls is not None:
                try:
                    sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
                except (OSError, ssl.SSLError):
                    sock.close()
                    continue
                handshaking = True
            conn = _Conn(sock, str(address[0]), handshaking, now, last_active=now,
                         request_started=now if handshaking else None)
            self._conns.add(conn)
            self._selector.register(sock, selectors.EVENT_READ, conn)
            if handshaking:
                self._on_ready(conn)  # the ClientHello is often there already

    def _evict_idle(self) -> bool:
        idle = [c for c in self._conns if not c.busy and not c.buf and not c.handshaking]
        if not idle:
            return False
        self._close(min(idle, key=lambda c: c.last_active))
        return True

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass
        while True:
            try:
                conn, keep = self._returned.get_nowait()
            except queue.Empty:
                return
            if not keep or self._stopping.is_set() or (conn.eof and not conn.buf):
                self._close(conn)
                continue
            conn.busy = False
            conn.last_active = time.monotonic()
            conn.request_started = conn.last_active if conn.buf else None
            if conn.eof:
                self._dispatch(conn)  # the next request the client sent before closing
                continue
            try:
                conn.sock.setblocking(False)
                self._selector.register(conn.sock, selectors.EVENT_READ, conn)
            except (OSError, ValueError, KeyError):
                self._close(conn)
                continue
            if conn.buf or (isinstance(conn.sock, ssl.SSLSocket) and conn.sock.pending()):
                self._on_ready(conn)  # a pipelined request is already here

    def _on_ready(self, conn: _Conn) -> None:
        now = time.monotonic()
        if conn.handshaking and not self._handshake(conn):
            return
        while True:
            try:
                data = conn.sock.recv(_RECV)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            except OSError:
                self._close(conn)
                return
            if not data:
                if not conn.buf:
                    self._close(conn)
                    return
                conn.eof = True  # e.g. `printf 'GET / ...' | nc`: the request came before the FIN
                self._selector.unregister(conn.sock)
                break
            if not conn.buf:
                conn.request_started = now
            conn.buf += data
            conn.last_active = now
            if len(conn.buf) > MAX_HEADER_BYTES + MAX_BODY_BYTES:
                break
            if len(data) < _RECV and not isinstance(conn.sock, ssl.SSLSocket):
                break
        self._dispatch(conn)

    def _handshake(self, conn: _Conn) -> bool:
        try:
            conn.sock.do_handshake()  # type: ignore[attr-defined]
        except ssl.SSLWantReadError:
            self._selector.modify(conn.sock, selectors.EVENT_READ, conn)
            return False
        except ssl.SSLWantWriteError:
            self._selector.modify(conn.sock, selectors.EVENT_WRITE, conn)
            return False
        except (OSError, ssl.SSLError, ValueError) as e:  # plain HTTP, scanners, wrong CA: expected
            log.debug("TLS handshake failed", extra={"remote": conn.remote, "err": str(e)})
            self._close(conn)
            return False
        conn.handshaking = False
        conn.request_started = None
        self._selector.modify(conn.sock, selectors.EVENT_READ, conn)
        if self.accept_tls is not None and not self.accept_tls(conn.sock):  # type: ignore[arg-type]
            log.debug("client certificate SAN not allowed", extra={"remote": conn.remote})
            self._close(conn)
            return False
        return True

    def _dispatch(self, conn: _Conn) -> None:
        framed = frame(conn.buf)
        if framed is None:
            if conn.eof:
                self._close(conn)
            return  # incomplete: wait for more (the sweep enforces request_timeout)
        status, total = framed
        if status != 200:
            self._reject(conn, status, REFUSALS[status])
            return
        raw = bytes(conn.buf[:total])
        del conn.buf[:total]
        with self._lock:
            # in flight = being handled or waiting for a worker; at most max_requests of each
            reject = self._inflight >= 2 * self.max_requests
            if reject:
                self.rejected_total += 1
            else:
                self._inflight += 1
                if self._inflight > len(self._workers) and len(self._workers) < self.max_requests:
                    worker = threading.Thread(target=self._work_loop, name="tunewatch-http-worker", daemon=True)
                    self._workers.append(worker)
                    worker.start()
        if reject:
            self._reject(conn, 503, "Service Unavailable: too many requests in flight", {"Retry-After": "1"})
            return
        conn.busy = True
        if not conn.eof:  # (at EOF it is unregistered already)
            self._selector.unregister(conn.sock)
        self._work.put((conn, raw, time.monotonic()))

    def _reject(self, conn: _Conn, status: int, reason: str, headers: dict[str, str] | None = None) -> None:
        """Answer from the selector thread (best effort, never blocks) and close."""
        body = f"{reason}\n".encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        head = (f"HTTP/1.1 {status} {reason.split(':')[0]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n").encode()
        try:
            conn.sock.send(head + body)
        except (OSError, ssl.SSLError, ValueError):
            pass
        self._close(conn)

    def _sweep(self, now: float) -> None:
        for conn in list(self._conns):
            if conn.busy:
                continue
            if conn.request_started is not None and now - conn.request_started > self.request_timeout:
                log.debug("request not complete in time; closing", extra={"remote": conn.remote})
                self._close(conn)
            elif conn.request_started is None and now - conn.last_active > self.idle_timeout:
                self._close(conn)

    def _close(self, conn: _Conn) -> None:
        self._conns.discard(conn)
        try:
            self._selector.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        try:
            # shutdown, not just close: a forked scan child may hold a copy of this fd
            conn.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, ValueError):
            pass
        try:
            conn.sock.close()
        except OSError:
            pass

    # --- workers ----------------------------------------------------------------------

    def _work_loop(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            conn, raw, queued_at = item
            keep = False
            try:
                if time.monotonic() - queued_at > QUEUE_WAIT:
                    with self._lock:
                        self.rejected_total += 1
                    data, keep = plain_response(503, "Service Unavailable: too many requests in flight"), False
                else:
                    data, keep = self._handle(conn, raw)
                conn.sock.settimeout(WRITE_TIMEOUT)
                conn.sock.sendall(data)
            except (OSError, ssl.SSLError, ValueError):
                keep = False
            except Exception:  # noqa: BLE001 - never lose a worker
                log.exception("request handling failed", extra={"remote": conn.remote})
                keep = False
            with self._lock:
                self._inflight -= 1
            self._returned.put((conn, keep))
            self._wake()

    def _handle(self, conn: _Conn, raw: bytes) -> tuple[bytes, bool]:
        handler = OneRequest(raw, conn.remote, self.app)
        handler.handle_one_request()
        return handler.wfile.getvalue(), not handler.close_connection  # type: ignore[attr-defined]


