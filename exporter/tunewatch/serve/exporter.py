"""`tunewatch serve`: glue a ScanLoop to the HTTP server, with logfmt logging and signals.

`scan() -> ScanResult` comes from outside. By default each scan runs in a forked child
(scanjob.ChildScan) that renders it (scanjob.render_output) and is killed on timeout; the
loop keeps only the rendered bytes. Passing `render(ScanState) -> bytes` instead selects
the in-process mode (scan in a thread, text format only) that tests use to feed synthetic
results. A scrape only ever sees a finished snapshot, so it never waits on a scan.
"""

from __future__ import annotations

import functools
import html
import json
import logging
import math
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as _replace
from typing import Any, Callable, TypeVar

from ..web.config import BasicAuth, Request, Response, WebConfig, load_web_config, parse_listen_address, san_allowed
from ..web.listen import nofile_limit, raise_nofile_limit
from ..web.server import HTTPServer, bind
from .exposition import Exposition, extra_families, report_body
from .options import DEFAULT_LISTEN_ADDRESS, DEFAULT_PORT, REPORT_PATH, ServeOptions, parse_duration
from .scanjob import ChildScan, preload_child_imports, render_output
from .scanloop import ScanLoop, ScanState

T = TypeVar("T")
log = logging.getLogger("tunewatch.serve")

__all__ = ["DEFAULT_LISTEN_ADDRESS", "DEFAULT_PORT", "parse_duration", "start_exporter", "run_exporter"]
HTML_CONTENT_TYPE = "text/html; charset=utf-8"
_READ_METHODS = ("GET", "HEAD")
STOP_WAIT = 0.6  # SIGTERM to exit: well under a second even with a scan stuck in the kernel


class LogfmtFormatter(logging.Formatter):
    """`ts=... level=info msg="..." key=value` lines; `extra={...}` fields become keys."""

    _STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
    _LEVELS = {"WARNING": "warn", "CRITICAL": "error"}

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        pairs: list[tuple[str, Any]] = [
            ("ts", f"{ts}.{int(record.msecs):03d}Z"),
            ("level", self._LEVELS.get(record.levelname, record.levelname.lower())),
            ("logger", record.name), ("msg", record.getMessage())]
        pairs += [(k, v) for k, v in vars(record).items() if k not in self._STANDARD and not k.startswith("_")]
        if record.exc_info:
            pairs.append(("exc", self.formatException(record.exc_info)))
        return " ".join(f"{key}={_logfmt_value(value)}" for key, value in pairs)


def _logfmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if text and all(c.isprintable() and c not in ' "=' for c in text):
        return text
    return json.dumps(text, ensure_ascii=False)  # quotes and escapes \" \n


class JsonFormatter(LogfmtFormatter):
    """One JSON object per line with the same keys as the logfmt lines."""

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        doc: dict[str, Any] = {"ts": f"{ts}.{int(record.msecs):03d}Z",
                               "level": self._LEVELS.get(record.levelname, record.levelname.lower()),
                               "logger": record.name, "msg": record.getMessage()}
        doc.update((k, v) for k, v in vars(record).items() if k not in self._STANDARD and not k.startswith("_"))
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False, default=str)


LOG_FORMATS = {"logfmt": LogfmtFormatter, "json": JsonFormatter}
LOG_LEVELS = ("debug", "info", "warn", "error")


def configure_logging(level: str = "info", stream: Any = None, fmt: str = "logfmt") -> None:
    """Send all logging to stderr as logfmt or JSON (idempotent: replaces our previous handler)."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"unknown log format {fmt!r} (use {' or '.join(LOG_FORMATS)})")
    if level.lower() not in LOG_LEVELS + ("warning",):
        raise ValueError(f"unknown log level {level!r} (use one of {', '.join(LOG_LEVELS)})")
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_tunewatch", False)]:
        root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(LOG_FORMATS[fmt]())
    handler._tunewatch = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel({"warn": "WARNING"}.get(level.lower(), level.upper()))



class RescanLimiter:
    """At most one accepted POST /-/rescan per `min_interval` seconds (the first always)."""

    def __init__(self, min_interval: float):
        self.min_interval = min_interval
        self._last: float | None = None
        self._lock = threading.Lock()
        self.counts = {"accepted": 0, "rate_limited": 0}

    def try_accept(self) -> float:
        """0 when accepted, else the seconds until a request would be."""
        with self._lock:
            now = time.monotonic()
            if self._last is not None and now - self._last < self.min_interval:
                self.counts["rate_limited"] += 1
                return self.min_interval - (now - self._last)
            self._last = now
            self.counts["accepted"] += 1
            return 0.0


def build_routes(loop: ScanLoop[Any], exposition: Exposition, limiter: RescanLimiter,
                 landing_info: Mapping[str, Any] | None = None, telemetry_path: str = "/metrics",
                 legacy: bool = False) -> dict[str, Callable[[Request], Response]]:
    landing = _landing_page(landing_info or {}, telemetry_path)

    def read_only(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def route(request: Request) -> Response:
            if request.method not in _READ_METHODS:
                return _method_not_allowed("GET, HEAD")
            return handler(request)
        return route

    def metrics(request: Request) -> Response:
        # a snapshot of the state: answers at once even while a scan hangs
        body, content_type, gzipped = exposition.metrics(loop.state(), request.headers.get("Accept"),
                                                         request.headers.get("Accept-Encoding"))
        headers = {"Vary": "Accept, Accept-Encoding"}
        if gzipped:
            headers["Content-Encoding"] = "gzip"
        return Response(200, content_type, body, headers)

    def ready(_: Request) -> Response:
        state = loop.state()
        if state.result is not None:
            return Response(200, body=b"OK\n")
        why = state.last_error or "the first scan has not finished yet"
        return Response(503, body=f"Not ready: no scan result yet ({why})\n".encode())

    def rescan(request: Request) -> Response:
        if request.method != "POST":
            return _method_not_allowed("POST")
        wait = limiter.try_accept()
        if wait > 0:
            return Response(429, body=f"Too many rescan requests: retry in {math.ceil(wait)}s\n".encode(),
                            headers={"Retry-After": str(math.ceil(wait))})
        loop.request_scan()
        return Response(202, body=b"Scan requested\n")

    def report(request: Request) -> Response:
        result = loop.state().result
        if result is None:
            return Response(503, body=b"No scan result yet\n")
        if legacy:
            from ..outputs.report import render_json
            return Response(200, "application/json", render_json(result).encode())
        body, gzipped = report_body(result, request.headers.get("Accept-Encoding"))
        headers = {"Vary": "Accept-Encoding", **({"Content-Encoding": "gzip"} if gzipped else {})}
        return Response(200, "application/json", body, headers)

    return {
        "/": read_only(lambda _: Response(200, HTML_CONTENT_TYPE, landing)),
        telemetry_path: read_only(metrics),
        "/-/healthy": read_only(lambda _: Response(200, body=b"OK\n")),
        "/-/ready": read_only(ready),
        "/-/rescan": rescan,
        REPORT_PATH: read_only(report),
    }


def make_app(routes: Mapping[str, Callable[[Request], Response]], web_config: WebConfig,
             auth: BasicAuth) -> Callable[[Request], Response]:
    """Authentication (every path, as exporter-toolkit does), routing, configured headers."""
    def app(request: Request) -> Response:
        verdict = auth.check(request.headers.get("Authorization"))
        if verdict is None:
            response = Response(503, body=b"Too many authentication attempts; retry\n", headers={"Retry-After": "1"})
        elif not verdict:
            response = Response(401, body=b"Unauthorized\n", headers={"WWW-Authenticate": f'Basic realm="{REALM}"'})
        else:
            route = routes.get(request.path)
            response = route(request) if route is not None else Response(404, body=b"Not Found\n")
        response.headers = {**web_config.headers, **response.headers}
        return response
    return app


REALM = "tunewatch"


def _method_not_allowed(allow: str) -> Response:
    return Response(405, body=b"Method Not Allowed\n", headers={"Allow": allow})


def _landing_page(info: Mapping[str, Any], telemetry_path: str) -> bytes:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in info.items())
    endpoints = [(telemetry_path, "metrics (text or OpenMetrics, gzip when asked)"),
                 (REPORT_PATH, "JSON report of the last scan (same shape as scan --format json)"),
                 ("/-/healthy", "200 while the process runs"),
                 ("/-/ready", "200 once a scan has produced results")]
    links = "".join(f'<li><a href="{html.escape(p)}">{html.escape(p)}</a> {html.escape(what)}</li>'
                    for p, what in endpoints)
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tunewatch exporter</title></head>"
        f"<body><h1>tunewatch exporter</h1><table>{rows}</table><ul>{links}</ul>"
        "<p>POST /-/rescan to request a scan now (rate-limited: 429 with Retry-After).</p></body></html>\n").encode()


@dataclass
class ExporterHandle:
    """A running exporter: HTTP server plus scan loop. stop() is idempotent."""

    server: HTTPServer
    loop: ScanLoop[Any]
    scanner: Any  # ChildScan in the default mode, the scan callable otherwise
    limiter: RescanLimiter
    uevents: Any = None  # a started uevents.UeventWatcher, or None

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self, wait: float = 5.0) -> None:
        """Stop serving and scanning within about `wait` seconds: a scan child stuck in the
        kernel is killed and abandoned, a worker writing to a client that does not read is
        abandoned (both are daemons), never joined beyond the budget."""
        deadline = time.monotonic() + wait
        self.server.shutdown(wait / 2)
        if self.uevents is not None:
            self.uevents.stop(min(1.0, max(0.0, deadline - time.monotonic())))
        self.loop.stop(max(0.0, deadline - time.monotonic()))


def start_exporter(listen_address: str | Sequence[str], web_config_path: str | None, scan: Callable[[], Any],
                   render: Callable[[ScanState[Any]], bytes] | None = None, interval: float | None = None,
                   timeout: float | None = None, landing_info: Mapping[str, Any] | None = None, *,
                   options: ServeOptions | None = None, detail: bool = False,
                   prepare: Callable[[Any], Any] | None = None) -> ExporterHandle:
    """Validate config, bind every address, start scanning and serving; return without blocking.

    `render` None (the CLI): scans in child processes, rendered by scanjob.render_output
    (`detail` passed on). Raises WebConfigError (bad web config), ValueError (bad listen
    address) or OSError (cannot bind) before any thread is started.
    """
    options = options or ServeOptions()
    addresses = [listen_address] if isinstance(listen_address, str) else list(listen_address)
    options = _replace(options, listen_addresses=tuple(addresses), web_config=web_config_path,
                       interval=options.interval if interval is None else interval,
                       timeout=options.timeout if timeout is None else timeout)
    web_config = load_web_config(web_config_path)
    auth = BasicAuth(web_config.basic_auth_users)
    parsed = [parse_listen_address(a) for a in addresses]
    prepare = prepare or functools.partial(render_output, detail=detail)  # vsphere central mode: its own
    scanner: Any = ChildScan(scan, prepare) if render is None else scan
    loop: ScanLoop[Any] = ScanLoop(scanner, options.interval, options.timeout)  # not started until bound
    limiter = RescanLimiter(options.rescan_min_interval)
    servers: list[HTTPServer] = []  # filled below: the families read its counters at scrape time
    exposition = Exposition(lambda state: _live_families(state, limiter, servers), render)
    routes = build_routes(loop, exposition, limiter, landing_info, options.telemetry_path, legacy=render is not None)
    listeners = []
    try:
        for host, port in parsed:
            listeners.append(bind(host, port))
    except BaseException:
        for sock in listeners:
            sock.close()
        raise
    server = HTTPServer(listeners, make_app(routes, web_config, auth), web_config.tls,
                        max_requests=options.max_requests, request_timeout=options.request_timeout,
                        idle_timeout=options.idle_timeout, max_connections=options.max_connections,
                        max_connections_per_peer=options.max_connections_per_peer,
                        accept_tls=functools.partial(san_allowed, web_config) if web_config.tls else None)
    servers.append(server)
    if render is None:  # scans in forked children: nothing they import may be mid-import in a thread
        preload_child_imports()
    if options.uevents:
        from .uevents import UeventWatcher  # before the threads, for the same reason
    loop.start()
    server.start()
    _show_first_scan(loop)
    watcher = None
    if options.uevents:
        watcher = UeventWatcher(loop.request_scan, options.uevent_debounce)
        watcher = watcher if watcher.start() else None
    handle = ExporterHandle(server, loop, scanner, limiter, watcher)
    for address, url in zip(addresses, server.urls):
        log.info("Listening on", extra={"address": address, "url": url})
    log.info(f"TLS is {'enabled' if web_config.tls else 'disabled'}.",
             extra={"basic_auth": auth.enabled, "interval_seconds": options.interval,
                    "timeout_seconds": options.timeout, "max_requests": options.max_requests,
                    "max_connections": server.max_connections, "open_files_limit": nofile_limit(),
                    "scan_isolation": "process" if render is None else "thread"})
    return handle


def _show_first_scan(loop: ScanLoop[Any]) -> None:
    """On a terminal, a status line counts the seconds of the first scan until it concludes
    (a fleet of VMs takes a while); in a pipe, a log or the journal nothing is shown."""
    from .._progress import Progress
    progress = Progress(min_interval=0)
    if not progress.enabled:
        return
    progress("tunewatch serve: first scan running")  # at once: the scan runs in a child, which takes a while

    def show() -> None:
        while True:
            state = loop.state()
            if state.first_scan_done:
                progress.done()
                return
            progress(f"tunewatch serve: first scan running, {state.running_seconds():.0f} s")
            time.sleep(1.0)
    threading.Thread(target=show, name="tunewatch-first-scan", daemon=True).start()


def _live_families(state: ScanState[Any], limiter: RescanLimiter, servers: list[HTTPServer]) -> list:
    from ..outputs.prometheus import serve_families
    return serve_families(state) + extra_families(state, limiter.counts) + server_families(servers)


def server_families(servers: list[HTTPServer]) -> list:
    """The HTTP server's own counters: what a hostile network costs it."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    out: list = []  # metric families of two classes
    for name, help_text, attr in (
            ("tunewatch_http_accept_errors_total", "accept() failures for lack of file descriptors or memory "
             "(accepting then pauses 5 ms, doubling up to 1 s).", "accept_errors_total"),
            ("tunewatch_http_connections_evicted_total", "Connections closed to make room for a new one "
             "(idle or stalled ones first).", "evicted_total"),
            ("tunewatch_http_connections_refused_total", "New connections closed at once: the connection "
             "table was full and nothing in it could be evicted.", "refused_total")):
        family = CounterMetricFamily(name, help_text)
        family.add_metric([], float(sum(getattr(s, attr) for s in servers)))
        out.append(family)
    for name, help_text, value in (
            ("tunewatch_http_connections", "Open HTTP connections.", lambda s: s.open_connections),
            ("tunewatch_http_max_connections", "Connection cap (--web.max-connections).", lambda s: s.max_connections)):
        gauge = GaugeMetricFamily(name, help_text)
        gauge.add_metric([], float(sum(value(s) for s in servers)))
        out.append(gauge)
    return out


def run_exporter(listen_address: str | Sequence[str], web_config_path: str | None, scan: Callable[[], Any],
                 render: Callable[[ScanState[Any]], bytes] | None = None, interval: float | None = None,
                 timeout: float | None = None, landing_info: Mapping[str, Any] | None = None,
                 log_level: str = "info", log_format: str = "logfmt", *, options: ServeOptions | None = None,
                 detail: bool = False, prepare: Callable[[Any], Any] | None = None) -> int:
    """Serve until SIGTERM or SIGINT, then shut down cleanly and return 0 (the exit code).

    Must be called from the main thread (signal handlers). Start-up errors propagate as in
    start_exporter; the caller turns them into a message and a non-zero exit.
    """
    configure_logging(log_level, fmt=log_format)
    raise_nofile_limit()  # as the Go runtime does: the soft limit up to the hard one
    stop_requested = threading.Event()
    received: list[str] = []

    def on_signal(signum: int, _frame: Any) -> None:
        received.append(signal.Signals(signum).name)
        stop_requested.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        handle = start_exporter(listen_address, web_config_path, scan, render, interval, timeout,
                                landing_info, options=options, detail=detail, prepare=prepare)
        while not stop_requested.wait(1.0):  # a timed wait lets the signal handler run promptly
            pass
        log.info("Shutting down", extra={"signal": received[0] if received else ""})
        handle.stop(wait=STOP_WAIT)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
