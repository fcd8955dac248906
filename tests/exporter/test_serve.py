"""The exporter in-process: routes, readiness, hung and failing scans, TLS + basic auth."""

from __future__ import annotations

import io
import json
import logging
import socket
import ssl
import threading
import time
import urllib.error

import pytest
from prometheus_client.parser import text_string_to_metric_families

from support import scanresults as sr
from support.procs import LOOPBACK, http_get, http_request, wait_until
from tunewatch.serve.exporter import configure_logging
from tunewatch.web.config import WebConfigError, load_web_config

from .conftest import PASSWORD, USER


def metric(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return None


def good_result(check_status: str = "pass"):
    return sr.result([sr.check("irqbalance-disabled", [sr.obj("irqbalance.service", check_status)])])


class ControlledScan:
    """A scan callable the test steers: each call takes the next action from a queue.

    Actions: a result (returned), an exception (raised), or "block" (waits on `release`).
    """

    def __init__(self, *actions):
        self.actions = list(actions)
        self.release = threading.Event()
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self):
        with self.lock:
            self.calls += 1
            action = self.actions.pop(0) if len(self.actions) > 1 else self.actions[0]
        if action == "block":
            self.release.wait(30)
            return good_result("fail")
        if isinstance(action, BaseException):
            raise action
        return action


def timed_get(url: str, **kwargs):
    started = time.monotonic()
    result = http_get(url, timeout=3.0, **kwargs)
    return result, time.monotonic() - started


def test_routes_and_landing_page(start_exporter_inproc):
    handle = start_exporter_inproc(lambda: good_result(), landing_info={"profile": "azure-sap-hana <x>"})
    handle.loop.wait_first_scan(10)
    page = http_get(handle.url + "/")
    assert page.status == 200 and "text/html" in page.headers["Content-Type"]
    assert "azure-sap-hana &lt;x&gt;" in page.text and 'href="/metrics"' in page.text
    assert http_get(handle.url + "/-/healthy").status == 200
    assert http_get(handle.url + "/nope").status == 404
    assert http_request(handle.url + "/metrics", "POST", data=b"").status == 405
    metrics = http_get(handle.url + "/metrics")
    assert metrics.status == 200 and metrics.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert metric(metrics.text, "tunewatch_check_status", check="irqbalance-disabled", status="pass") == 1
    assert http_request(handle.url + "/metrics", "HEAD").body == b""


def test_ready_is_503_until_the_first_scan_then_200(start_exporter_inproc):
    scan = ControlledScan("block", good_result())
    handle = start_exporter_inproc(scan)
    try:
        wait_until(lambda: scan.calls == 1, 5)
        assert http_get(handle.url + "/-/ready").status == 503
        response, took = timed_get(handle.url + "/metrics")
        assert response.status == 200 and took < 1.0
        assert metric(response.text, "tunewatch_scan_in_progress") == 1
        assert metric(response.text, "tunewatch_scan_success") is None  # nothing concluded yet
    finally:
        scan.release.set()
    wait_until(lambda: http_get(handle.url + "/-/ready").status == 200, 5)


def test_hung_scan_times_out_and_scrapes_keep_the_last_good_result(start_exporter_inproc):
    scan = ControlledScan(good_result(), "block", good_result("fail"))
    handle = start_exporter_inproc(scan, interval=0.3, timeout=0.5)
    try:
        url = handle.url + "/metrics"
        wait_until(lambda: metric(http_get(url).text, "tunewatch_scan_errors_total", reason="timeout") == 1, 5)
        for _ in range(5):  # while the scan hangs, scrapes answer at once with the old result
            response, took = timed_get(url)
            assert response.status == 200 and took < 0.5
            text = response.text
            assert metric(text, "tunewatch_scan_success") == 0
            assert metric(text, "tunewatch_check_status", check="irqbalance-disabled", status="pass") == 1
            assert metric(text, "tunewatch_scan_errors_total", reason="exception") == 0
            time.sleep(0.1)
        # further due scans are skipped (not stacked) while the hung one lives
        wait_until(lambda: (metric(http_get(url).text, "tunewatch_scans_skipped_total") or 0) >= 1, 5)
        assert scan.calls == 2
        assert http_get(handle.url + "/-/ready").status == 200
    finally:
        scan.release.set()
    # once the stuck scan returns (its result discarded), scanning resumes by itself
    wait_until(lambda: metric(http_get(handle.url + "/metrics").text, "tunewatch_check_status",
                              check="irqbalance-disabled", status="fail") == 1, 5)
    assert metric(http_get(handle.url + "/metrics").text, "tunewatch_scan_success") == 1


def test_failing_scan_counts_exception_and_keeps_last_result(start_exporter_inproc, caplog):
    scan = ControlledScan(good_result(), RuntimeError("proc vanished"))
    handle = start_exporter_inproc(scan, interval=0.2)
    url = handle.url + "/metrics"
    text = wait_until(lambda: (t := http_get(url).text) and
                      (metric(t, "tunewatch_scan_errors_total", reason="exception") or 0) >= 2 and t, 5)
    assert metric(text, "tunewatch_scan_success") == 0
    assert metric(text, "tunewatch_check_status", check="irqbalance-disabled", status="pass") == 1
    assert metric(text, "tunewatch_last_scan_timestamp_seconds") < time.time()
    assert metric(text, "tunewatch_scans_total") >= 3


def test_first_scan_failing_reports_but_is_not_ready(start_exporter_inproc):
    # ready means "has results to show" (issue 10): a failed first scan has none
    handle = start_exporter_inproc(ControlledScan(ValueError("bad root")))
    assert handle.loop.wait_first_scan(5)
    not_ready = http_get(handle.url + "/-/ready")
    assert not_ready.status == 503 and "bad root" in not_ready.text
    text = http_get(handle.url + "/metrics").text
    assert metric(text, "tunewatch_scan_success") == 0
    assert metric(text, "tunewatch_scan_errors_total", reason="exception") == 1
    assert "tunewatch_check_status" not in text


def test_rescan_is_single_flight(start_exporter_inproc):
    scan = ControlledScan(good_result(), "block", good_result(), good_result())
    handle = start_exporter_inproc(scan)
    handle.limiter.min_interval = 0.0  # this test is about single flight, not the rate limit
    handle.loop.wait_first_scan(5)
    assert http_request(handle.url + "/-/rescan", "POST", data=b"").status == 202
    wait_until(lambda: scan.calls == 2, 5)
    for _ in range(5):  # requests during a running scan collapse into one rerun
        assert http_request(handle.url + "/-/rescan", "POST", data=b"").status == 202
    assert http_get(handle.url + "/-/rescan").status == 405
    scan.release.set()
    wait_until(lambda: scan.calls == 3, 5)
    time.sleep(0.3)
    assert scan.calls == 3


def test_rescan_inside_the_minimum_interval_is_429_with_retry_after(start_exporter_inproc):
    scan = ControlledScan(good_result())
    handle = start_exporter_inproc(scan)  # default minimum interval: 30 s
    handle.loop.wait_first_scan(5)
    assert http_request(handle.url + "/-/rescan", "POST", data=b"").status == 202
    wait_until(lambda: scan.calls == 2, 5)
    for _ in range(20):
        refused = http_request(handle.url + "/-/rescan", "POST", data=b"")
        assert refused.status == 429 and 1 <= int(refused.headers["Retry-After"]) <= 30
    time.sleep(0.3)
    assert scan.calls == 2
    text = http_get(handle.url + "/metrics").text
    assert metric(text, "tunewatch_rescan_requests_total", outcome="accepted") == 1
    assert metric(text, "tunewatch_rescan_requests_total", outcome="rate_limited") == 20
    handle.limiter.min_interval = 0.2  # once the interval has passed, a request is accepted again
    wait_until(lambda: http_request(handle.url + "/-/rescan", "POST", data=b"").status == 202, 5)


def test_tls_and_basic_auth(start_exporter_inproc, tls_web_config):
    handle = start_exporter_inproc(lambda: good_result(), web_config=tls_web_config)
    assert handle.url.startswith("https://")
    url = handle.url + "/metrics"
    assert http_get(url, insecure=True).status == 401
    no_auth = http_get(url, insecure=True)
    assert no_auth.headers.get("WWW-Authenticate", "").startswith("Basic")
    assert http_get(url, insecure=True, auth=(USER, "wrong")).status == 401
    assert http_get(url, insecure=True, auth=("nobody", PASSWORD)).status == 401
    ok = http_get(url, insecure=True, auth=(USER, PASSWORD))
    assert ok.status == 200 and "tunewatch_build_info" in ok.text
    # the certificate is the configured one (verifies against it as CA)
    context = ssl.create_default_context(cafile=str(tls_web_config.parent / "cert.pem"))
    with socket.create_connection((LOOPBACK, handle.server.port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
    # plain HTTP to the TLS port gets no HTTP answer
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)) as err:
        result = http_get(url.replace("https://", "http://"), auth=(USER, PASSWORD), timeout=5)
        raise AssertionError(f"plain HTTP answered {result.status}")  # pragma: no cover
    assert not isinstance(err.value, AssertionError)
    # a silent client does not block other scrapes (handshake runs per connection)
    with socket.create_connection((LOOPBACK, handle.server.port), timeout=5):
        assert http_get(url, insecure=True, auth=(USER, PASSWORD)).status == 200


def test_web_config_errors_name_the_key(tmp_path, tls_files):
    bad_hash = tmp_path / "bad-hash.yml"
    bad_hash.write_text("basic_auth_users:\n  alice: plaintext\n")
    with pytest.raises(WebConfigError, match="basic_auth_users.alice"):
        load_web_config(str(bad_hash))
    unknown = tmp_path / "unknown.yml"
    unknown.write_text("tls_server_config:\n  cert_file: x\n  key_file: y\n  bogus: 1\n")
    with pytest.raises(WebConfigError, match="bogus"):
        load_web_config(str(unknown))
    missing = tmp_path / "missing.yml"
    missing.write_text("tls_server_config:\n  cert_file: nope.pem\n  key_file: nope.key\n")
    with pytest.raises(WebConfigError, match="cert_file"):
        load_web_config(str(missing))
    assert load_web_config(None).tls is None


def test_log_formats():
    stream = io.StringIO()
    configure_logging("info", stream, fmt="json")
    try:
        logging.getLogger("tunewatch.test").warning("scan failed", extra={"reason": "timeout"})
        doc = json.loads(stream.getvalue().strip().splitlines()[-1])
        assert doc["level"] == "warn" and doc["msg"] == "scan failed" and doc["reason"] == "timeout"
        configure_logging("debug", stream, fmt="logfmt")
        logging.getLogger("tunewatch.test").info("Listening on", extra={"address": "127.0.0.1:1"})
        line = stream.getvalue().strip().splitlines()[-1]
        assert 'level=info' in line and 'msg="Listening on"' in line and "address=127.0.0.1:1" in line
        with pytest.raises(ValueError):
            configure_logging("info", stream, fmt="xml")
    finally:
        configure_logging("warn")


RUN_EXPORTER = """
import sys
sys.path.insert(0, {tests!r})
from support import scanresults as sr
from tunewatch.outputs.prometheus import make_renderer
from tunewatch.serve.exporter import run_exporter
scan = sr.result([sr.check("irqbalance-disabled", [sr.obj("irqbalance.service", "pass")])])
sys.exit(run_exporter({address!r}, None, lambda: scan, make_renderer(), 300.0, 60.0,
                      {{"profile": "test"}}, "info", {fmt!r}))
"""


@pytest.mark.parametrize("fmt", ["logfmt", "json"])
def test_run_exporter_exits_0_promptly_on_sigterm(tmp_path, fmt):
    import signal
    import sys
    from pathlib import Path

    from support.procs import ManagedProcess, free_port
    port = free_port()
    script = RUN_EXPORTER.format(tests=str(Path(__file__).resolve().parents[1]), address=f"{LOOPBACK}:{port}",
                                 fmt=fmt)
    process = ManagedProcess([sys.executable, "-c", script], tmp_path, "run_exporter")
    with process.start():
        process.wait_http(f"http://{LOOPBACK}:{port}/-/ready", 20)
        started = time.monotonic()
        process.signal(signal.SIGTERM)
        assert process.wait(10) == 0, process.describe()
        assert time.monotonic() - started < 3
    log = process.stderr_path.read_text()
    if fmt == "json":
        lines = [json.loads(line) for line in log.splitlines() if line.strip()]
        assert any(line["msg"] == "Listening on" for line in lines)
        assert any(line["msg"] == "Shutting down" and line["signal"] == "SIGTERM" for line in lines)
    else:
        assert 'msg="Listening on"' in log and "signal=SIGTERM" in log


def test_parse_duration():
    from tunewatch.serve.exporter import parse_duration
    assert [parse_duration(t) for t in ("5m", "30s", "1h30m", "500ms", "2", "1d")] == [300, 30, 5400, 0.5, 2, 86400]
    for bad in ("", "5x", "0s", "-1", "m5", "5 m"):
        with pytest.raises(ValueError):
            parse_duration(bad)


LAZY_IMPORTS = """
import sys
from tunewatch.cli import main as cli
cli.build_parser().parse_args(["scan"])
heavy = ("bcrypt", "ssl", "tunewatch.serve.exporter", "tunewatch.web.config", "http.server", "prometheus_client")
assert not [m for m in heavy if m in sys.modules], [m for m in heavy if m in sys.modules]
from tunewatch.serve.exporter import start_exporter
handle = start_exporter("127.0.0.1:0", None, lambda: None)
handle.stop()
assert "bcrypt" not in sys.modules, "plain serve imported bcrypt"
from tunewatch.web.config import BasicAuth
BasicAuth(dict(u={hash!r}.encode()))
assert "bcrypt" in sys.modules
"""


def test_bcrypt_and_the_web_stack_are_imported_only_when_used(password_hash):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", LAZY_IMPORTS.format(hash=password_hash)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
