"""A small HTTP/1.1 server for the exporter: one selector thread, bounded pools of workers.

Why not http.server.ThreadingHTTPServer: a backlog of 5, a thread per connection (a client
sending one byte a second holds it forever), and it trusts the client to finish. Here (the
user-facing account with figures is docs/serve.md "How it holds up"):

* the selector thread accepts and reads without blocking: an idle or trickling connection
  costs no thread; a request must be complete within `request_timeout` of its first byte
  (of the connection, for TLS), an idle keep-alive connection goes after `idle_timeout`;
* TLS handshake steps run non-blocking on `handshake_workers` threads (OpenSSL releases
  the GIL), never on the selector thread, so a handshake flood does not delay requests;
* at most `max_connections` (default derived from the fd limit) and
  `max_connections_per_peer`; when full, listen.rank_evictable() picks who makes room;
  when nothing may go, the newcomer is closed;
* accept() failing for lack of descriptors pauses accepting 5 ms, doubling up to 1 s (Go's
  net/http back-off), with one log line per 10 s at most and `accept_errors_total`;
* complete requests go to at most `max_requests` worker threads; as many again may wait
  up to QUEUE_WAIT seconds; beyond that the answer is 503 at once;
* parsing, framing and every refusal's status line are httpproto.py (RFC 9110/9112).
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

from .listen import EVICT_GRACE, Throttled, bind, connection_cap, rank_evictable  # noqa: F401 - re-exported: serve and the tests import them from here
from .protocol import (
    CONTINUE,
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    Refusal,
    Request,
    Response,
    frame,
    handle,
    refusal_response,
)

log = logging.getLogger("tunewatch.web")

QUEUE_WAIT = 5.0  # a request waiting longer than this for a worker gets 503
WRITE_TIMEOUT = 10.0  # a client that does not read its response loses the connection
ACCEPT_PAUSE = (0.005, 1.0)  # back-off after EMFILE: first and longest pause
LOG_EVERY = 10.0  # at most one accept-error line per this many seconds
_NO_FDS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
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
    busy: bool = False  # with a worker (request or handshake step): the loop does not touch it
    eof: bool = False  # the client half-closed: answer what it sent, then close
    requests: int = 0  # requests taken from this connection: who has done the least is evicted first
    continued: bool = False  # 100 Continue sent for the pending request


class HTTPServer:
    """Serve `app(Request) -> Response` on one or more bound sockets until shutdown()."""

    def __init__(self, listeners: list[socket.socket], app: Callable[[Request], Response],
                 tls: ssl.SSLContext | None = None, *, max_requests: int = 40, request_timeout: float = 10.0,
                 idle_timeout: float = 120.0, max_connections: int | None = None,
                 max_connections_per_peer: int | None = None, handshake_workers: int = 2,
                 accept_tls: Callable[[ssl.SSLSocket], bool] | None = None):
        self.listeners = listeners
        self.app, self.tls, self.accept_tls = app, tls, accept_tls
        self.max_requests, self.request_timeout = max_requests, request_timeout
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections or connection_cap()
        self.max_connections_per_peer = max_connections_per_peer or max(1, self.max_connections // 2)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._returned: queue.SimpleQueue[tuple[_Conn, bool]] = queue.SimpleQueue()
        self._handshakes: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._handshaken: queue.SimpleQueue[tuple[_Conn, str]] = queue.SimpleQueue()
        self._work: queue.Queue[Any] = queue.Queue()
        self._workers: list[threading.Thread] = []
        self._handshakers = [threading.Thread(target=self._handshake_loop, name="tunewatch-tls", daemon=True)
                             for _ in range(handshake_workers if tls is not None else 0)]
        self._inflight = 0
        self._lock = threading.Lock()  # guards _inflight/_workers/rejected_total (loop and workers)
        self._conns: set[_Conn] = set()
        self._by_peer: dict[str, set[_Conn]] = {}
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._paused_until: float | None = None  # accepting paused after EMFILE until then
        self._pause = ACCEPT_PAUSE[0]
        self._accept_log = Throttled(log, LOG_EVERY)
        self.rejected_total = 0  # 503 because every worker was busy and the queue full
        self.accept_errors_total = 0  # accept() failed for lack of descriptors or memory
        self.evicted_total = 0  # connections closed to make room for a new one
        self.refused_total = 0  # connections closed at once: no room and nothing evictable

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

    def start(self) -> HTTPServer:
        for thread in self._handshakers:
            thread.start()
        self._thread = threading.Thread(target=self._loop, name="tunewatch-http", daemon=True)
        self._thread.start()
        return self

    def shutdown(self, wait: float = 5.0) -> None:
        """Stop serving; threads still busy after `wait` seconds (a worker writing to a
        client that does not read) are daemons and are abandoned, never waited for longer."""
        deadline = time.monotonic() + wait
        self._stopping.set()
        self._wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(max(0.0, deadline - time.monotonic()))
        for _ in self._workers:
            self._work.put(None)
        for _ in self._handshakers:
            self._handshakes.put(None)
        for thread in self._workers + self._handshakers:
            if thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))

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
                timeout = 0.5
                if self._paused_until is not None:
                    timeout = max(0.0, min(timeout, self._paused_until - time.monotonic()))
                for key, _mask in sel.select(timeout):
                    if key.data == "listen":
                        self._accept(key.fileobj)  # type: ignore[arg-type]
                    elif key.data == "wake":
                        self._drain_wake()
                    else:
                        self._on_ready(key.data)
                now = time.monotonic()
                if self._paused_until is not None and now >= self._paused_until:
                    self._paused_until = None
                    for lsock in self.listeners:
                        sel.register(lsock, selectors.EVENT_READ, "listen")
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
        victims: dict[str | None, list[_Conn]] = {}  # ranked once per batch (None: the whole table)
        fresh = 0  # admitted since: young strangers the rankings do not list yet
        for _ in range(256):  # bounded: let other sockets have a turn under a connect storm
            if self._paused_until is not None:
                return
            try:
                sock, address = lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in _NO_FDS:
                    self._pause_accepting(e)
                    return
                continue  # ECONNABORTED and friends: that client is gone, the next may not be
            self._pause = ACCEPT_PAUSE[0]
            now = time.monotonic()
            remote = str(address[0])
            peers = self._by_peer.get(remote, ())
            full = (remote if len(peers) >= self.max_connections_per_peer
                    else None if len(self._conns) >= self.max_connections else "")
            if full != "" and not self._make_room(victims, full, self._conns if full is None else peers, now, fresh):
                self._refuse(sock)
                continue
            fresh += 1
            self._admit(sock, remote, now)

    def _admit(self, sock: socket.socket, remote: str, now: float) -> None:
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        except (OSError, ssl.SSLError):
            sock.close()
            return
        handshaking = self.tls is not None
        conn = _Conn(sock, remote, handshaking, now, last_active=now, request_started=now if handshaking else None)
        self._conns.add(conn)
        self._by_peer.setdefault(remote, set()).add(conn)
        self._selector.register(sock, selectors.EVENT_READ, conn)

    def _pause_accepting(self, error: OSError) -> None:
        now = time.monotonic()
        self.accept_errors_total += 1
        self._paused_until = now + self._pause
        for lsock in self.listeners:
            try:
                self._selector.unregister(lsock)
            except (KeyError, ValueError):
                pass
        self._accept_log.warning(now, "accept failed; pausing accepts", err=str(error),
                                 pause_seconds=self._pause, open_connections=len(self._conns))
        self._pause = min(ACCEPT_PAUSE[1], self._pause * 2)

    def _make_room(self, victims: dict[str | None, list[_Conn]], key: str | None, pool: Any, now: float,
                   fresh: int) -> bool:
        """Close one connection of `pool` to admit another. The batch's ranking is redone
        when it is spent, or when it would next take a served client while connections
        admitted since it was made (young strangers) should go first."""
        for rerank in (False, True):
            if rerank or key not in victims:
                victims[key] = rank_evictable(pool, now)
            ranked = victims[key]
            while ranked and (ranked[-1] not in self._conns or ranked[-1].busy):
                ranked.pop()
            if ranked and (rerank or not (ranked[-1].requests and fresh)):
                self._close(ranked.pop())
                self.evicted_total += 1
                return True
        return False

    def _refuse(self, sock: socket.socket) -> None:
        self.refused_total += 1
        sock.close()

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass
        while True:
            try:
                conn, outcome = self._handshaken.get_nowait()
            except queue.Empty:
                break
            self._handshake_done(conn, outcome)
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
        if conn.handshaking:  # one step on a handshake worker; back here when it needs the client
            conn.busy = True
            self._selector.unregister(conn.sock)
            self._handshakes.put(conn)
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

    def _handshake_done(self, conn: _Conn, outcome: str) -> None:
        conn.busy = False
        if conn not in self._conns or self._stopping.is_set():
            self._close(conn)
        elif outcome in ("read", "write"):
            events = selectors.EVENT_READ if outcome == "read" else selectors.EVENT_WRITE
            self._selector.register(conn.sock, events, conn)
        elif outcome == "done":
            conn.handshaking, conn.request_started = False, None
            self._selector.register(conn.sock, selectors.EVENT_READ, conn)
            self._on_ready(conn)  # the request often came with the last handshake flight
        else:
            self._close(conn)

    def _dispatch(self, conn: _Conn) -> None:
        head = frame(conn.buf)
        if isinstance(head, Refusal):
            log.debug("request refused", extra={"remote": conn.remote, "status": head.status, "err": head.reason})
            self._reject(conn, head.status, head.reason)
            return
        if head is None or len(conn.buf) < head.total:
            if head is not None and head.expect_continue and not conn.continued:
                conn.continued = True  # RFC 9110 10.1.1: the client may wait for this before the body
                self._send_nowait(conn, CONTINUE)
            if conn.eof:
                self._close(conn)
            return  # incomplete: wait for more (the sweep enforces request_timeout)
        body = bytes(conn.buf[head.body_at:head.total])
        del conn.buf[:head.total]
        conn.continued = False
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
        conn.requests += 1
        if not conn.eof:  # (at EOF it is unregistered already)
            self._selector.unregister(conn.sock)
        self._work.put((conn, head, body, time.monotonic()))

    def _send_nowait(self, conn: _Conn, data: bytes) -> None:
        try:
            conn.sock.send(data)
        except (OSError, ssl.SSLError, ValueError):
            pass  # best effort: a client that cannot take a few bytes will time out

    def _reject(self, conn: _Conn, status: int, reason: str, headers: dict[str, str] | None = None) -> None:
        """Answer from the selector thread (best effort, never blocks) and close."""
        self._send_nowait(conn, refusal_response(status, reason, headers))
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
        peers = self._by_peer.get(conn.remote)
        if peers is not None:
            peers.discard(conn)
            if not peers:
                del self._by_peer[conn.remote]
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

    def _handshake_loop(self) -> None:
        while True:
            conn = self._handshakes.get()
            if conn is None:
                return
            try:
                conn.sock.do_handshake()  # non-blocking: one step, then back to the selector
                outcome = "done"
                if self.accept_tls is not None and not self.accept_tls(conn.sock):
                    log.debug("client certificate SAN not allowed", extra={"remote": conn.remote})
                    outcome = "refused"
            except ssl.SSLWantReadError:
                outcome = "read"
            except ssl.SSLWantWriteError:
                outcome = "write"
            except (OSError, ssl.SSLError, ValueError, AttributeError) as e:  # plain HTTP, scanners, wrong CA;
                # AttributeError: the selector thread closed the socket meanwhile (SSLSocket.close()
                # drops its SSL object): an uncaught one ended this thread, and TLS with it
                log.debug("TLS handshake failed", extra={"remote": conn.remote, "err": str(e)})
                outcome = "failed"
            self._handshaken.put((conn, outcome))
            self._wake()

    def _work_loop(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            conn, head, body, queued_at = item
            keep = False
            try:
                if time.monotonic() - queued_at > QUEUE_WAIT:
                    with self._lock:
                        self.rejected_total += 1
                    data = refusal_response(503, "Service Unavailable: too many requests in flight")
                else:
                    data, keep = handle(head, body, conn.remote, self.app)
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
