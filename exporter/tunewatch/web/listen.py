"""Listening sockets and file-descriptor budget for the exporter, as a Go server has them.

* `raise_nofile_limit()`: the soft RLIMIT_NOFILE goes up to the hard limit at start (Go's
  runtime does this since 1.19): systemd's default soft limit of 1024 is far below what an
  exporter facing a hostile network needs, and the hard limit (524288 under systemd) is
  what the administrator actually granted.
* `connection_cap()`: open connections the server may hold, derived from that limit with a
  reserve kept for everything else the process (and the scan child it forks, which
  inherits every descriptor) opens: the scan's files, pipes, the log, TLS files.
* `rank_evictable()`: which connection makes room when the table is full;
* `bind()` names the address it could not bind the way Go's net package does:
  `listen tcp 0.0.0.0:19847: bind: address already in use`.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
from collections.abc import Iterable
from typing import Any

try:
    import resource
except ImportError:  # not POSIX: nothing to raise
    resource = None  # type: ignore[assignment]

RESERVE_MIN = 64  # descriptors kept free for scans and logs, at least
EVICT_GRACE = 1.0  # seconds: a stranger younger than this is evicted only after the older ones


def raise_nofile_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; return the soft limit now in force."""
    if resource is None:
        return 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError):
            pass  # a sandbox refusing it: keep the old limit, the cap follows it
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def nofile_limit() -> int:
    if resource is None:
        return 1024
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_cap(limit: int | None = None) -> int:
    """Connections to allow under an fd limit: an eighth (at least RESERVE_MIN) stays free.
    1024 -> 896, 524288 -> 458752 (capped at 65536: more is no exporter's job)."""
    limit = nofile_limit() if limit is None else limit
    return max(16, min(65536, limit - max(RESERVE_MIN, limit // 8)))


def rank_evictable(conns: Iterable[Any], now: float) -> list[Any]:
    """httpserver connections that may be evicted, the one to go first LAST (for pop()):
    strangers before served clients; among strangers the idle, then the stalled (a half-
    sent request or handshake), both older than EVICT_GRACE, then the young, oldest first
    each (a real client's fresh connection is the newest, so a flood recycles its own
    connections, not that one). Busy ones (receiving a response, in a handshake step)
    are never evicted."""
    ranked = []
    for c in conns:
        if c.busy:
            continue
        if c.requests:  # a client that has been served: only after every stranger
            key = (3, c.last_active)
        elif now - c.opened < EVICT_GRACE:
            key = (2, c.opened)
        else:
            key = (1 if c.buf or c.handshaking else 0, c.opened)
        ranked.append((key, c))
    ranked.sort(key=lambda item: item[0], reverse=True)
    return [c for _, c in ranked]


class Throttled:
    """One warning per `every` seconds at most; the next one says how many were dropped."""

    def __init__(self, log: logging.Logger, every: float):
        self.log, self.every, self.next, self.dropped = log, every, 0.0, 0

    def warning(self, now: float, message: str, **extra: Any) -> None:
        if now < self.next:
            self.dropped += 1
            return
        self.log.warning(message, extra={**extra, "suppressed": self.dropped})
        self.dropped, self.next = 0, now + self.every


def somaxconn() -> int:
    try:
        with open("/proc/sys/net/core/somaxconn") as f:
            return max(128, int(f.read()))
    except (OSError, ValueError):
        return max(128, socket.SOMAXCONN)


class BindError(OSError):
    """A listen address that could not be bound; str() is Go's wording."""

    def __str__(self) -> str:
        return str(self.strerror)


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket for host:port; host '' or '::' is every interface (IPv6 and IPv4)."""
    try:
        if host in ("", "::"):
            families: list[tuple[socket.AddressFamily, tuple]] = [(socket.AF_INET6, ("::", port)),
                                                                  (socket.AF_INET, ("0.0.0.0", port))]
        else:
            info = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)[0]
            families = [(info[0], info[4][:2])]
    except socket.gaierror as e:
        raise BindError(errno.EINVAL, f"listen tcp {_hostport(host, port)}: lookup {host}: {e.strerror}") from e
    for i, (family, address) in enumerate(families):
        sock = socket.socket(family, socket.SOCK_STREAM)
        step = "bind"
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and address[0] == "::":
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind(address)
            step = "listen"
            sock.listen(somaxconn())
            sock.setblocking(False)
            return sock
        except OSError as e:
            sock.close()
            # IPv6 disabled in the kernel (common in containers): all IPv4 interfaces.
            if i + 1 < len(families) and e.errno in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
                continue
            reason = os.strerror(e.errno).lower() if e.errno else str(e)
            raise BindError(e.errno, f"listen tcp {_hostport(address[0], port)}: {step}: {reason}") from e
    raise AssertionError("unreachable")
