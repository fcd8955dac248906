"""Rescan within seconds of a NIC appearing, going or being renamed: kernel uevents.

A re-added VF (Azure host servicing), `modprobe -r`/`modprobe` or a driver update brings a
device back at driver defaults; waiting for the next `--scan.interval` (5 minutes by
default) would show the reset only then. `serve` listens on a NETLINK_KOBJECT_UEVENT socket
(protocol 15, multicast group 1: the kernel's own uevents, netlink(7)), keeps the events of
the `net` and `pci` subsystems with action `add`, `remove` or `move`, and asks the scan loop
for a scan `debounce` seconds after the last of them (at most `max_delay` seconds after the
first, so a steady stream still gets scans). The scan loop is single-flight: a flood of
events never means more than one scan at a time (serve/scanloop.py `request_scan()`).

Messages are accepted from the kernel only (netlink sender port id 0). Kernel uevents for a
net device are broadcast in the device's network namespace (lib/kobject_uevent.c
`kobject_uevent_net_broadcast()`), so a `serve` in a namespace sees that namespace's NICs.
Where the socket cannot be opened (no AF_NETLINK, a seccomp filter, an unprivileged
container), it says so once in the log and the interval alone drives scans.
"""

from __future__ import annotations

import errno
import logging
import os
import select
import socket
import threading
import time
from typing import Callable

log = logging.getLogger("tunewatch.uevents")

NETLINK_KOBJECT_UEVENT = 15
KERNEL_GROUP = 1  # udevd re-broadcasts processed events on group 2 ("libudev" header); not read
SUBSYSTEMS = frozenset({"net", "pci"})
ACTIONS = frozenset({"add", "remove", "move"})
_RCVBUF = 1 << 20  # a driver reload of a many-queue NIC sends hundreds of queue events


def parse_uevent(data: bytes) -> dict[str, str] | None:
    """`add@/devices/...\\0ACTION=add\\0DEVPATH=...\\0SUBSYSTEM=net\\0...` -> its properties;
    None for anything else (a libudev message, garbage)."""
    if data.startswith(b"libudev"):
        return None
    head, _, rest = data.partition(b"\0")
    if b"@" not in head:
        return None
    props = {}
    for field in rest.split(b"\0"):
        key, sep, value = field.partition(b"=")
        if sep:
            props[key.decode("ascii", "replace")] = value.decode("utf-8", "replace")
    return props


def wanted(props: dict[str, str] | None) -> bool:
    return props is not None and props.get("SUBSYSTEM") in SUBSYSTEMS and props.get("ACTION") in ACTIONS


class UeventWatcher:
    """Calls `on_change()` `debounce` seconds after the last wanted uevent (at most
    `max_delay` after the first of a burst), from its own daemon thread."""

    def __init__(self, on_change: Callable[[], None], debounce: float = 2.0, max_delay: float = 10.0):
        self.on_change, self.debounce, self.max_delay = on_change, float(debounce), max(float(max_delay), debounce)
        self._sock: socket.socket | None = None
        self._wake_r, self._wake_w = -1, -1
        self._thread: threading.Thread | None = None
        self._stopping = False

    def start(self) -> bool:
        """Open the socket and start watching; False (logged once) where uevents are unavailable."""
        try:
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT)
        except (OSError, AttributeError) as e:  # AttributeError: no AF_NETLINK on this platform
            log.warning("kernel uevents unavailable: rescanning on the interval only", extra={"err": str(e)})
            return False
        try:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF)
            except OSError:
                pass
            sock.bind((0, KERNEL_GROUP))
        except OSError as e:
            sock.close()
            log.warning("kernel uevents unavailable: rescanning on the interval only", extra={"err": str(e)})
            return False
        self._sock = sock
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="tunewatch-uevents", daemon=True)
        self._thread.start()
        log.info("Rescanning on NIC uevents", extra={"subsystems": ",".join(sorted(SUBSYSTEMS)),
                                                    "debounce_seconds": self.debounce})
        return True

    def stop(self, wait: float = 2.0) -> None:
        if self._thread is None:
            return
        self._stopping = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        self._thread.join(wait)
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        if self._sock is not None:
            self._sock.close()
        self._thread = None

    def _read(self) -> bool:
        """Drain the socket; True when a wanted event (or an overflow: events were lost) came."""
        assert self._sock is not None
        seen = False
        while True:
            try:
                data, (pid, _groups) = self._sock.recvfrom(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return seen
            except OSError as e:
                if e.errno == errno.ENOBUFS:  # the kernel dropped events: something happened
                    seen = True
                    continue
                raise
            if pid == 0 and wanted(parse_uevent(data)):
                seen = True

    def _run(self) -> None:
        first = due = None  # monotonic times of the burst's first event and of its trigger
        while not self._stopping:
            timeout: float | None = None if due is None else max(0.0, due - time.monotonic())
            try:
                ready, _, _ = select.select([self._sock, self._wake_r], [], [], timeout)  # type: ignore[type-var]  # open while running
            except (OSError, ValueError):
                return
            if self._stopping:
                return
            if self._sock in ready:
                try:
                    got = self._read()
                except OSError as e:
                    log.warning("kernel uevents stopped: rescanning on the interval only", extra={"err": str(e)})
                    return
                if got:
                    now = time.monotonic()
                    first = now if first is None else first
                    due = min(now + self.debounce, first + self.max_delay)
            if due is not None and time.monotonic() >= due:
                first = due = None
                log.debug("NIC uevents: rescanning")
                self.on_change()
