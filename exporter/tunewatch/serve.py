"""`tunewatch serve`: glue a ScanLoop to the HTTP server, with logfmt logging and signals.

Generic over two callables so the engine and the metrics renderer plug in from outside:
`scan() -> T` (runs in a background thread) and `render(ScanState[T]) -> bytes` (runs in
the scrape's thread; it only ever sees a finished snapshot, so a scrape never waits on a
scan, however long the scan hangs).
"""

from __future__ import annotations

import html
import json
import logging
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, TypeVar

from .scanloop import ScanLoop, ScanState
from .web import ExporterHTTPServer, Request, Response, load_web_config, make_server, parse_listen_address

T = TypeVar("T")
log = logging.getLogger("tunewatch.serve")

# Outside Prometheus' default port allocation list (9100-9999 is fully allocated); see
# docs/metrics.md "Default port".
DEFAULT_PORT = 19847
DEFAULT_LISTEN_ADDRESS = f":{DEFAULT_PORT}"
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
HTML_CONTENT_TYPE = "text/html; charset=utf-8"
_READ_METHODS = ("GET", "HEAD")


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0, "y": 31536000.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")


def parse_duration(text: str) -> float:
    """Prometheus-style duration ('30s', '5m', '1h30m', '500ms') -> seconds (> 0).

    A bare number is seconds. Raises ValueError naming the text.
    """
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise ValueError(f"invalid duration {text!r}: expected e.g. 30s, 5m, 1h30m, 500ms") from None
        seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    if not seconds > 0 or seconds != seconds or seconds == float("inf"):
        raise ValueError(f"invalid duration {text!r}: must be positive")
    return seconds


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


def build_routes(loop: ScanLoop[T], render: Callable[[ScanState[T]], bytes],
                 landing_info: Mapping[str, Any] | None = None) -> dict[str, Callable[[Request], Response]]:
    landing = _landing_page(landing_info or {})

    def read_only(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def route(request: Request) -> Response:
            if request.method not in _READ_METHODS:
                return _method_not_allowed("GET, HEAD")
            return handler(request)
        return route

    def metrics(_: Request) -> Response:
        body = render(loop.state())  # a snapshot: returns at once even while a scan hangs
        return Response(200, METRICS_CONTENT_TYPE, body.encode() if isinstance(body, str) else body)

    def ready(_: Request) -> Response:
        if loop.state().first_scan_done:
            return Response(200, body=b"OK\n")
        return Response(503, body=b"Not ready: the first scan has not finished yet\n")

    def rescan(request: Request) -> Response:
        if request.method != "POST":
            return _method_not_allowed("POST")
        loop.request_scan()
        return Response(202, body=b"Scan requested\n")

    return {
        "/": read_only(lambda _: Response(200, HTML_CONTENT_TYPE, landing)),
        "/metrics": read_only(metrics),
        "/-/healthy": read_only(lambda _: Response(200, body=b"OK\n")),
        "/-/ready": read_only(ready),
        "/-/rescan": rescan,
    }


def _method_not_allowed(allow: str) -> Response:
    return Response(405, body=b"Method Not Allowed\n", headers={"Allow": allow})


def _landing_page(info: Mapping[str, Any]) -> bytes:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in info.items())
    links = "".join(f'<li><a href="{p}">{p}</a></li>' for p in ("/metrics", "/-/healthy", "/-/ready"))
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tunewatch exporter</title></head>"
        f"<body><h1>tunewatch exporter</h1><table>{rows}</table><ul>{links}</ul>"
        "<p>POST /-/rescan to request a scan now.</p></body></html>\n").encode()


@dataclass
class ExporterHandle:
    """A running exporter: HTTP server thread plus scan loop. stop() is idempotent."""

    server: ExporterHTTPServer
    loop: ScanLoop[Any]
    thread: threading.Thread

    @property
    def url(self) -> str:
        host = self.server.server_address[0]
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
        return f"{self.server.scheme}://{f'[{host}]' if ':' in host else host}:{self.server.port}"

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()  # waits for serve_forever to return
        self.server.server_close()
        self.loop.stop()


def start_exporter(listen_address: str, web_config_path: str | None, scan: Callable[[], T],
                   render: Callable[[ScanState[T]], bytes], interval: float, timeout: float,
                   landing_info: Mapping[str, Any] | None = None) -> ExporterHandle:
    """Validate config, bind, start scanning and serving; return without blocking.

    Raises WebConfigError (bad web config), ValueError (bad listen address) or OSError
    (cannot bind) before any thread is started.
    """
    web_config = load_web_config(web_config_path)
    loop: ScanLoop[T] = ScanLoop(scan, interval, timeout)  # not started until the bind worked
    server = make_server(parse_listen_address(listen_address), build_routes(loop, render, landing_info),
                         web_config)
    loop.start()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                              name="tunewatch-http", daemon=True)
    thread.start()
    handle = ExporterHandle(server, loop, thread)
    log.info("Listening on", extra={"address": listen_address, "url": handle.url})
    log.info(f"TLS is {'enabled' if web_config.tls else 'disabled'}.",
             extra={"basic_auth": bool(web_config.basic_auth_users), "interval_seconds": interval,
                    "timeout_seconds": timeout})
    return handle


def run_exporter(listen_address: str, web_config_path: str | None, scan: Callable[[], T],
                 render: Callable[[ScanState[T]], bytes], interval: float, timeout: float,
                 landing_info: Mapping[str, Any] | None = None, log_level: str = "info",
                 log_format: str = "logfmt") -> int:
    """Serve until SIGTERM or SIGINT, then shut down cleanly and return 0 (the exit code).

    Must be called from the main thread (signal handlers). Start-up errors propagate as in
    start_exporter; the caller turns them into a message and a non-zero exit.
    """
    configure_logging(log_level, fmt=log_format)
    stop_requested = threading.Event()
    received: list[str] = []

    def on_signal(signum: int, _frame: Any) -> None:
        received.append(signal.Signals(signum).name)
        stop_requested.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        handle = start_exporter(listen_address, web_config_path, scan, render, interval, timeout,
                                landing_info)
        while not stop_requested.wait(1.0):  # a timed wait lets the signal handler run promptly
            pass
        log.info("Shutting down", extra={"signal": received[0] if received else ""})
        handle.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
