"""`tunewatch serve` flags and their defaults, importable without the web stack.

`tunewatch --help` and every other command build the serve subparser, so this module must
stay light: argparse and dataclasses only (no ssl, bcrypt, http.server, prometheus_client).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

# Outside Prometheus' default port allocation list (9100-9999 is fully allocated); see
# docs/metrics.md "Default port".
DEFAULT_PORT = 19847
DEFAULT_LISTEN_ADDRESS = f":{DEFAULT_PORT}"
REPORT_PATH = "/api/v1/report"  # the last scan's JSON report (same shape as `scan --format json`)

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


@dataclass(frozen=True)
class ServeOptions:
    """Everything about serving that is not the scan itself (times in seconds)."""

    listen_addresses: tuple[str, ...] = (DEFAULT_LISTEN_ADDRESS,)
    web_config: str | None = None
    telemetry_path: str = "/metrics"
    max_requests: int = 40  # requests handled at once; as many more may wait, the rest get 503
    request_timeout: float = 10.0  # a client must send a whole request within this (slowloris)
    idle_timeout: float = 120.0  # an idle keep-alive connection is closed after this
    # open connections; None: derived from the fd limit (listen.connection_cap). When full,
    # the connection that has done the least is closed to admit another (httpserver.py).
    max_connections: int | None = None
    max_connections_per_peer: int | None = None  # None: half of max_connections
    rescan_min_interval: float = 30.0  # POST /-/rescan answers 429 more often than this
    interval: float = 300.0
    timeout: float = 60.0
    # rescan `uevent_debounce` s after the last net/pci add, remove or move (serve/uevents.py);
    # off unless asked (the CLI turns it on by default: --no-scan.uevents turns it off)
    uevents: bool = False
    uevent_debounce: float = 2.0


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    """The serve subcommand's own flags (the scan flags are added by the CLI)."""
    p.add_argument("--web.listen-address", dest="listen_address", action="append", metavar="ADDRESS",
                   help=f"address to listen on; repeat to listen on several (default: {DEFAULT_LISTEN_ADDRESS})")
    p.add_argument("--web.config.file", dest="web_config", metavar="FILE",
                   help="exporter-toolkit web config: TLS and basic auth")
    p.add_argument("--web.telemetry-path", dest="telemetry_path", default="/metrics", metavar="PATH",
                   help="path under which to expose metrics (default: /metrics)")
    p.add_argument("--web.max-requests", dest="max_requests", type=int, default=40, metavar="N",
                   help="requests served at once; up to N more wait, the rest get 503 at once (default: 40)")
    p.add_argument("--web.max-connections", dest="max_connections", type=int, default=None, metavar="N",
                   help="open connections at most; when full, an idle or stalled one makes room "
                        "(default: the open-file limit minus a reserve of 1/8 for scans and logs)")
    p.add_argument("--web.max-connections-per-peer", dest="max_connections_per_peer", type=int, default=None,
                   metavar="N", help="open connections from one client address at most "
                                     "(default: half of --web.max-connections)")
    p.add_argument("--web.request-timeout", dest="request_timeout", default="10s", metavar="DURATION",
                   help="a connection that does not send a complete request within this is closed (default: 10s)")
    p.add_argument("--web.rescan-min-interval", dest="rescan_min_interval", default="30s", metavar="DURATION",
                   help="POST /-/rescan more often than this answers 429 with Retry-After (default: 30s)")
    p.add_argument("--scan.interval", dest="scan_interval", default="5m", help="time between scans (default: 5m)")
    p.add_argument("--scan.timeout", dest="scan_timeout", default="60s",
                   help="a scan running longer is killed and reported as failed (default: 60s)")
    p.add_argument("--scan.uevents", dest="scan_uevents", action=argparse.BooleanOptionalAction, default=True,
                   help="rescan soon after a NIC or PCI device is added, removed or renamed (kernel uevents: a "
                        "re-added VF, a driver reload); --no-scan.uevents scans on the interval only (default: on)")
    p.add_argument("--scan.uevent-debounce", dest="scan_uevent_debounce", default="2s", metavar="DURATION",
                   help="rescan this long after the last such uevent (default: 2s)")
    p.add_argument("--log.level", dest="log_level", default="info", choices=("debug", "info", "warn", "error"),
                   help="only log messages with this severity or above (default: %(default)s)")
    p.add_argument("--log.format", dest="log_format", default="logfmt", choices=("logfmt", "json"),
                   help="output format of log messages, on stderr (default: %(default)s)")


def options_from_args(args: argparse.Namespace) -> ServeOptions:
    """ServeOptions from parsed flags; ValueError names a bad flag value."""
    if args.max_requests < 1:
        raise ValueError(f"--web.max-requests must be at least 1, got {args.max_requests}")
    for flag, value in (("--web.max-connections", args.max_connections),
                        ("--web.max-connections-per-peer", args.max_connections_per_peer)):
        if value is not None and value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}")
    path = args.telemetry_path
    if not path.startswith("/") or path in ("/", "/-/healthy", "/-/ready", "/-/rescan", REPORT_PATH):
        raise ValueError(f"--web.telemetry-path {path!r}: must start with / and not be a path tunewatch "
                         "already serves")
    return ServeOptions(listen_addresses=tuple(args.listen_address or (DEFAULT_LISTEN_ADDRESS,)),
                        web_config=args.web_config, telemetry_path=path, max_requests=args.max_requests,
                        max_connections=args.max_connections, max_connections_per_peer=args.max_connections_per_peer,
                        request_timeout=parse_duration(args.request_timeout),
                        rescan_min_interval=parse_duration(args.rescan_min_interval),
                        interval=parse_duration(args.scan_interval), timeout=parse_duration(args.scan_timeout),
                        uevents=args.scan_uevents, uevent_debounce=parse_duration(args.scan_uevent_debounce))

