"""What a scrape gets: format and compression negotiated, per-scan bytes plus live series.

The per-scan part comes rendered from the scan's child (scanjob.ScanOutput, both formats);
a scrape adds the serve-only series (scan health from outputs.prometheus.serve_families,
how long the running scan has run, rescan requests) and the standard process_* and
python_info series. Gzip: the per-scan part is compressed once per scan and the zlib
state after it is kept, so a gzip scrape only compresses the few live lines (copy()).
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from typing import Any, Callable

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from ..outputs.textformat import text_exposition
from .scanjob import OPENMETRICS_EOF, ScanOutput

TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
GZIP_LEVEL = 6
# The process_* and python_info series are rendered at most once a second: reading
# /proc/self for them was 78 % of a cached scrape's CPU (docs/architecture.md#start-up-cost), and a scraper that
# polls more often than once a second learns nothing from a fresher CPU counter.
PROCESS_SERIES_MAX_AGE_S = 1.0


def _qualities(header: str) -> list[tuple[str, float]]:
    """'a/b;q=0.5, c' -> [('a/b', 0.5), ('c', 1.0)] (names lower-cased)."""
    out = []
    for part in header.split(","):
        name, *params = part.split(";")
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if name.strip():
            out.append((name.strip().lower(), q))
    return out


def wants_openmetrics(accept: str | None) -> bool:
    """OpenMetrics when the client ranks it at least as high as the text format."""
    om = text = 0.0
    for media, q in _qualities(accept or ""):
        if media == "application/openmetrics-text":
            om = max(om, q)
        elif media in ("text/plain", "text/*", "*/*"):
            text = max(text, q)
    return om > 0 and om >= text


def wants_gzip(accept_encoding: str | None) -> bool:
    return any(coding in ("gzip", "x-gzip") and q > 0 for coding, q in _qualities(accept_encoding or ""))


class _Families:
    def __init__(self, families: list):
        self._families = families

    def collect(self):
        return iter(self._families)


def expose(families: list, openmetrics: bool) -> bytes:
    """Families in one format; OpenMetrics without its "# EOF" (the caller ends the reply)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(families))
    if not openmetrics:
        return generate_latest(registry)
    body = generate_openmetrics(registry)
    return body[:-len(OPENMETRICS_EOF)] if body.endswith(OPENMETRICS_EOF) else body


class Exposition:
    """Builds `/metrics` replies from a ScanLoop state.

    `legacy_render(state) -> bytes` is the in-process mode (tests that feed ScanResults
    straight to the loop): its text is used as the per-scan part, text format only.
    """

    def __init__(self, live_families: Callable[[Any], list], legacy_render: Callable[[Any], bytes] | None = None):
        self._live_families = live_families
        self._legacy = legacy_render
        self._process = ProcessCollector(registry=None)
        self._platform = PlatformCollector(registry=None)
        self._lock = threading.Lock()
        self._gzip_cache: dict[bool, tuple[ScanOutput | None, Any, bytes]] = {}
        self._process_lock = threading.Lock()  # concurrent scrapes in the same second render it once
        self._process_cache: dict[bool, tuple[float, bytes]] = {}  # openmetrics -> (monotonic time, bytes)

    def _live(self, state: Any, openmetrics: bool) -> bytes:
        # One exposition is its families' texts end to end, so the cached process part
        # can follow the fresh scan-health part byte for byte.
        families = list(self._live_families(state))
        if not openmetrics and all(_plain(f) for f in families):  # 2.5x cheaper than generate_latest, same bytes
            return text_exposition(families).encode("utf-8") + self._process_series(False)
        return expose(families, openmetrics) + self._process_series(openmetrics)

    def _process_series(self, openmetrics: bool) -> bytes:
        now = time.monotonic()
        with self._process_lock:
            cached = self._process_cache.get(openmetrics)
            if cached is None or now - cached[0] >= PROCESS_SERIES_MAX_AGE_S:
                body = expose(list(self._process.collect()) + list(self._platform.collect()), openmetrics)
                cached = self._process_cache[openmetrics] = (now, body)
            return cached[1]

    def metrics(self, state: Any, accept: str | None, accept_encoding: str | None) -> tuple[bytes, str, bool]:
        """(body, content type, gzipped)."""
        if self._legacy is not None:
            body = _bytes(self._legacy(state)) + self._live(state, False)
            if wants_gzip(accept_encoding):
                return gzip.compress(body, GZIP_LEVEL, mtime=0), TEXT_CONTENT_TYPE, True
            return body, TEXT_CONTENT_TYPE, False
        openmetrics = wants_openmetrics(accept)
        output: ScanOutput | None = state.result
        prefix = b"" if output is None else (output.openmetrics if openmetrics else output.text)
        tail = self._live(state, openmetrics) + (OPENMETRICS_EOF if openmetrics else b"")
        content_type = OPENMETRICS_CONTENT_TYPE if openmetrics else TEXT_CONTENT_TYPE
        if not wants_gzip(accept_encoding):
            return prefix + tail, content_type, False
        compressor, head = self._compressed_prefix(output, openmetrics, prefix)
        return head + compressor.compress(tail) + compressor.flush(), content_type, True

    def _compressed_prefix(self, output: ScanOutput | None, openmetrics: bool, prefix: bytes) -> tuple[Any, bytes]:
        """A zlib (gzip) compressor that has consumed `prefix` (a private copy) and its output."""
        with self._lock:
            cached = self._gzip_cache.get(openmetrics)
            if cached is None or cached[0] is not output:
                compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)  # 31: gzip wrapper
                cached = (output, compressor, compressor.compress(prefix))
                self._gzip_cache[openmetrics] = cached  # drops the previous scan's state
            return cached[1].copy(), cached[2]


def report_body(output: ScanOutput, accept_encoding: str | None) -> tuple[bytes, bool]:
    """The JSON report, gzipped when the client takes it (it is stored compressed)."""
    if wants_gzip(accept_encoding):
        return output.report_gz, True
    return gzip.decompress(output.report_gz), False


def extra_families(state: Any, rescans: dict[str, int]) -> list:
    """Serve-only series beyond outputs.prometheus.serve_families."""
    running = GaugeMetricFamily("tunewatch_scan_running_seconds",
                                "How long the running scan has run so far (a stuck one included); 0 when idle.")
    running.add_metric([], round(state.running_seconds(), 3))
    requests = CounterMetricFamily("tunewatch_rescan_requests_total",
                                   "POST /-/rescan requests, by outcome (rate_limited: answered 429).",
                                   labels=["outcome"])
    for outcome in ("accepted", "rate_limited"):
        requests.add_metric([outcome], float(rescans.get(outcome, 0)))
    return [running, requests]


def _plain(family: Any) -> bool:
    """A gauge or counter without timestamps or _created samples: what outputs.prometheus's
    text writer writes exactly as generate_latest does."""
    return family.type in ("gauge", "counter") and all(
        getattr(s, "timestamp", None) is None and not s.name.endswith("_created") for s in family.samples)


def _bytes(body: Any) -> bytes:
    return body.encode() if isinstance(body, str) else body
