"""The exporter's HTTP server on 127.0.0.1 with raw sockets: framing, keep-alive, slow and
idle clients, bounded workers, negotiation (issue 10 "Exporter", issue 11 "Exposition")."""

from __future__ import annotations

import gzip
import socket
import threading
import time

import pytest

from support import scanresults as sr
from support.procs import LOOPBACK, http_get, wait_until
from support.prom import check_metrics, find_binary
from tunewatch.web.server import EVICT_GRACE, HTTPServer, Response, bind

from .test_serve import metric


def good_result():
    return sr.result([sr.check("irqbalance-disabled", [sr.obj("irqbalance.service", "pass")])])


@pytest.fixture
def child_exporter(child_exporter):
    """The conftest exporter with a passing result as the default scan."""
    return lambda scan=None, **options: child_exporter(scan or good_result, **options)


_LEFTOVER: dict[int, bytes] = {}  # fd -> bytes read past the previous response (pipelining)


def raw(port: int, data: bytes, timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection((LOOPBACK, port), timeout=timeout)
    _LEFTOVER[sock.fileno()] = b""
    sock.sendall(data)
    return sock


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One response (Content-Length framed) from `sock`; raises on EOF before it is whole."""
    buf = _LEFTOVER.get(sock.fileno(), b"")
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError(f"connection closed after {buf!r}")
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers["content-length"])
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed inside the body")
        body += chunk
    _LEFTOVER[sock.fileno()] = body[length:]
    return status, headers, body[:length]


def closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


def test_duplicate_or_conflicting_content_length_is_400(child_exporter):
    handle = child_exporter()
    port = handle.server.port
    for lengths in ((b"0", b"0"), (b"2", b"3"), (b"1, 1",), (b"-1",)):
        request = b"POST /-/rescan HTTP/1.1\r\nHost: x\r\n" + b"".join(
            b"Content-Length: " + n + b"\r\n" for n in lengths) + b"\r\nab"
        with raw(port, request) as sock:
            status, headers, _ = read_response(sock)
            assert status == 400, lengths
            assert headers["connection"] == "close" and closed_by_server(sock, 5)
    with raw(port, b"POST /-/rescan HTTP/1.1\r\nHost: x\r\nContent-Length : 2\r\n\r\nab") as sock:
        assert read_response(sock)[0] == 400  # whitespace before the colon (RFC 9112 5.1)
    with raw(port, b"POST /-/rescan HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") as sock:
        assert read_response(sock)[0] == 411
    with raw(port, b"POST /-/rescan HTTP/1.1\r\nHost: x\r\nContent-Length: 999999\r\n\r\n") as sock:
        assert read_response(sock)[0] == 413
    assert http_get(handle.url + "/-/healthy").status == 200


def test_http10_keep_alive_and_close(child_exporter):
    handle = child_exporter()
    port = handle.server.port
    # HTTP/1.0 with keep-alive: answered with keep-alive and a length, the connection stays usable
    with raw(port, b"GET /-/healthy HTTP/1.0\r\nConnection: keep-alive\r\n\r\n") as sock:
        status, headers, body = read_response(sock)
        assert (status, body) == (200, b"OK\n")
        assert headers["connection"].lower() == "keep-alive" and headers["content-length"] == "3"
        sock.sendall(b"GET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        status, headers, body = read_response(sock)
        assert status == 200 and b"tunewatch_build_info" in body
        sock.sendall(b"GET /-/healthy HTTP/1.0\r\n\r\n")  # no keep-alive: answered, then closed
        status, headers, _ = read_response(sock)
        assert status == 200 and headers["connection"] == "close"
        assert closed_by_server(sock, 5)
    # plain HTTP/1.0: closed right after the answer (the client reads to EOF)
    with raw(port, b"GET /-/healthy HTTP/1.0\r\n\r\n") as sock:
        started = time.monotonic()
        assert read_response(sock)[0] == 200 and closed_by_server(sock, 5)
        assert time.monotonic() - started < 5
    # a client that half-closes after its requests (printf ... | nc) still gets every answer
    with raw(port, b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\nGET /-/ready HTTP/1.1\r\nHost: x\r\n\r\n") as sock:
        sock.shutdown(socket.SHUT_WR)
        assert read_response(sock)[0] == 200
        assert read_response(sock)[0] in (200, 503) and closed_by_server(sock, 5)
    # HTTP/1.1 pipelined requests on one connection, then close
    with raw(port, b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\nGET /-/healthy HTTP/1.1\r\nHost: x\r\n"
                   b"Connection: close\r\n\r\n") as sock:
        assert read_response(sock)[0] == 200
        assert read_response(sock)[0] == 200 and closed_by_server(sock, 5)


def test_slow_and_idle_connections_neither_block_scrapes_nor_hold_threads(child_exporter):
    handle = child_exporter(request_timeout=2.0)
    port = handle.server.port
    assert http_get(handle.url + "/-/ready").status in (200, 503)
    idle: list[socket.socket] = []
    try:
        started = time.monotonic()
        for i in range(200):  # half say nothing, half start a request and never finish it
            sock = socket.create_connection((LOOPBACK, port), timeout=10)
            if i % 2:
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            idle.append(sock)
        opened = time.monotonic() - started
        assert opened < 10, f"200 connects took {opened:.1f}s"
        wait_until(lambda: handle.server.open_connections >= 200, 10)
        threads_before = threading.active_count()
        for _ in range(20):
            response = http_get(handle.url + "/metrics", timeout=5)
            assert response.status == 200
        assert threading.active_count() <= threads_before + 5  # no thread per connection
        # slowloris: a request not complete within --web.request-timeout is closed
        assert closed_by_server(idle[1], 10)
    finally:
        for sock in idle:
            sock.close()


def test_excess_requests_get_503_at_once_not_a_hang():
    release = threading.Event()
    entered = threading.Semaphore(0)

    def app(request):
        if request.path == "/slow":
            entered.release()
            release.wait(20)
        return Response(200, body=b"done\n")

    server = HTTPServer([bind(LOOPBACK, 0)], app, max_requests=2).start()
    port = server.port
    socks = []
    try:
        for _ in range(4):  # 2 handled, 2 waiting for a worker
            socks.append(raw(port, b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"))
        assert entered.acquire(timeout=10) and entered.acquire(timeout=10)
        wait_until(lambda: server._inflight == 4, 5)
        started = time.monotonic()
        with raw(port, b"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n") as sock:
            status, headers, _ = read_response(sock)
        assert status == 503 and headers["retry-after"] == "1"
        assert time.monotonic() - started < 2
        assert server.rejected_total == 1
        release.set()
        for sock in socks:
            assert read_response(sock)[0] == 200
    finally:
        release.set()
        for sock in socks:
            sock.close()
        server.shutdown()


def test_gzip_and_openmetrics_negotiated_on_raw_requests(child_exporter):
    handle = child_exporter()
    wait_until(lambda: http_get(handle.url + "/-/ready").status == 200, 20)
    url = handle.url + "/metrics"
    plain = http_get(url)
    assert plain.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "Content-Encoding" not in plain.headers
    for name in ("tunewatch_check_status", "tunewatch_scan_running_seconds", "process_resident_memory_bytes",
                 "process_cpu_seconds_total", "python_info"):
        assert name in plain.text, name
    if find_binary("promtool"):
        done = check_metrics(plain.text)
        assert done.returncode == 0 and not done.stdout.strip() and not done.stderr.strip(), done
    zipped = http_get(url, headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip" and zipped.headers["Vary"] == "Accept, Accept-Encoding"
    text = gzip.decompress(zipped.body).decode()
    assert text.splitlines()[:20] == plain.text.splitlines()[:20] and "process_max_fds" in text
    assert len(zipped.body) < len(text) / 2
    prometheus_accept = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
                         "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
    om = http_get(url, headers={"Accept": prometheus_accept, "Accept-Encoding": "gzip"})
    assert om.headers["Content-Type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8"
    body = gzip.decompress(om.body).decode()
    assert body.endswith("# EOF\n") and body.count("# EOF") == 1
    assert "# TYPE tunewatch_scans counter" in body and "process_cpu_seconds_total" in body
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    names = {f.name for f in text_string_to_metric_families(body)}
    assert {"tunewatch_check_status", "tunewatch_scans", "process_cpu_seconds"} <= names
    # text still wins when the client prefers it
    assert http_get(url, headers={"Accept": "text/plain;q=1,application/openmetrics-text;q=0.5"}).headers[
        "Content-Type"].startswith("text/plain")
    # the JSON report: same auth, gzip when asked
    report = http_get(handle.url + "/api/v1/report", headers={"Accept-Encoding": "gzip"})
    assert report.status == 200 and report.headers["Content-Encoding"] == "gzip"
    import json
    doc = json.loads(gzip.decompress(report.body))
    assert doc["results"][0]["check"] == "irqbalance-disabled"
    assert http_get(handle.url + "/api/v1/report").json() == doc
    page = http_get(handle.url + "/").text
    for path in ("/metrics", "/api/v1/report", "/-/healthy", "/-/ready", "/-/rescan"):
        assert path in page


def test_telemetry_path_and_several_listen_addresses(tmp_path):
    from support.procs import free_port
    from tunewatch.serve.exporter import start_exporter
    from tunewatch.serve.options import ServeOptions
    ports = [free_port(), free_port()]
    handle = start_exporter([f"{LOOPBACK}:{p}" for p in ports], None, good_result,
                            options=ServeOptions(telemetry_path="/probe"))
    try:
        for port in ports:
            wait_until(lambda: http_get(f"http://{LOOPBACK}:{port}/-/ready").status == 200, 20)
            response = http_get(f"http://{LOOPBACK}:{port}/probe")
            assert response.status == 200 and metric(response.text, "tunewatch_check_status",
                                                     check="irqbalance-disabled", status="pass") == 1
            assert http_get(f"http://{LOOPBACK}:{port}/metrics").status == 404
    finally:
        handle.stop()


def test_at_max_connections_the_longest_idle_one_makes_room():
    server = HTTPServer([bind(LOOPBACK, 0)], lambda request: Response(200, body=b"ok\n"), max_connections=5,
                        max_connections_per_peer=5).start()
    socks = []
    try:
        for _ in range(5):
            socks.append(raw(server.port, b""))  # connected, idle
            wait_until(lambda: server.open_connections == len(socks), 5)
        time.sleep(EVICT_GRACE)  # younger ones are never evicted: a real client's request may be on its way
        with raw(server.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") as sock:
            assert read_response(sock)[0] == 200
        assert closed_by_server(socks[0], 5)  # the oldest idle connection
        socks[-1].sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # the newest still works
        assert read_response(socks[-1])[0] == 200
    finally:
        for sock in socks:
            sock.close()
        server.shutdown()


def test_a_handshake_step_on_a_socket_closed_meanwhile_keeps_the_tls_worker():
    """The selector thread may close a connection (idle timeout, eviction) while its next
    handshake step waits in the queue: SSLSocket.close() drops the SSL object, and
    do_handshake() then raises AttributeError. Uncaught, it ended the worker thread, and no
    TLS handshake was ever served again."""
    class ClosedMeanwhile:
        def do_handshake(self):
            raise AttributeError("'NoneType' object has no attribute 'do_handshake'")

    class Conn:
        sock, remote = ClosedMeanwhile(), ("127.0.0.1", 1)

    listener = bind(LOOPBACK, 0)
    server = HTTPServer([listener], lambda request: Response(200, body=b"ok\n"))
    try:
        conn = Conn()
        server._handshakes.put(conn)
        server._handshakes.put(None)  # then the worker's stop signal
        server._handshake_loop()  # returns at the stop signal: it did not raise
        assert server._handshaken.get_nowait() == (conn, "failed")
    finally:
        listener.close()
