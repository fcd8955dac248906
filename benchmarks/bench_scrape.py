#!/usr/bin/env python3
"""Scrape latency and memory of `tunewatch serve` on the big host.

    python benchmarks/bench_scrape.py               # benchmarks/gen_big_host.py tree, real engine
    python benchmarks/bench_scrape.py --synthetic   # a synthetic ScanResult of the same shape

Builds the 416-CPU / 8-node host (4 AN pairs x 64 data IRQs, 50 NFS mounts), starts the
exporter in a child process on 127.0.0.1, waits for the first scan, then drives cached
/metrics scrapes from 20 client threads x 100 requests (keep-alive connections, like
Prometheus). The same load against a plain static-file http.server child serving a file
of the same size gives a same-machine baseline. Prints scrape p50/p99, the exporter's CPU
per scrape (utime+stime of its process over the load / scrapes), scan time, exporter RSS
(VmRSS / VmHWM from /proc/<pid>/status) and ratios.

Then, unless --no-node-exporter (or no binary, or --synthetic): Debian's
prometheus-node-exporter with only the textfile collector serves `tunewatch scan --format
prometheus` of the same host, and both servers get the same load at 20 and at 50 clients
(--clients), interleaved, in the same run: p50/p99 and CPU per scrape side by side.

Targets (exit 1 when one is missed): p99 < 20 ms, CPU <= 0.5 ms per scrape at 20 clients,
RSS < 100 MB, p99 <= node_exporter's at every --clients count. Every child is stopped by
PID before exit.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
P99_TARGET_MS = 20.0
RSS_TARGET_MB = 100.0
EXPORTER = REPO / "exporter"  # the package measured (--tree: another checkout's, for a before/after)
CPU_TARGET_MS = 0.5  # exporter CPU per cached scrape at 20 clients


def _sibling(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# one HTTP/process toolkit for the benchmarks: bench_load's
_load = _sibling("bench_load")
free_port, get, percentile, stop_child = _load.free_port, _load.get, _load.percentile, _load.stop
cpu_seconds = _load.cpu_seconds


# --- children ----------------------------------------------------------------------------


def child_exporter(args: argparse.Namespace) -> int:
    """Run the exporter (blocking until SIGTERM) on the requested host, as `tunewatch serve`
    does: each scan in a forked child that renders it, serve keeps the bytes."""
    from tunewatch.serve.exporter import run_exporter
    if args.synthetic:
        sys.path.insert(0, str(REPO / "tests"))
        from support.scanresults import big_host
        result = big_host()

        def scan():
            return result
    else:
        from tunewatch.scan import engine
        from tunewatch.content.catalog import Content
        content = Content()
        profile = content.resolve(args.profile)

        def scan():
            return engine.scan(content, profile, args.root)
    return run_exporter(f"127.0.0.1:{args.port}", None, scan, None, 3600.0, 600.0,
                        {"benchmark": "bench_scrape"}, "warn")


def child_baseline(args: argparse.Namespace) -> int:
    """A static-file server (stdlib http.server, HTTP/1.1 keep-alive) for the baseline."""
    import functools
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Handler(SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as the exporter does: no delayed-ACK stalls

        def log_message(self, *_a):
            pass
    server = ThreadingHTTPServer(("127.0.0.1", args.port), functools.partial(Handler, directory=args.root))
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever(0.1)
    return 0


# --- driver ------------------------------------------------------------------------------






def gzip_size(port: int, path: str) -> int:
    """Bytes on the wire for a scrape that asks for gzip (as Prometheus does)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
        response = conn.getresponse()
        body = response.read()
        return len(body) if response.getheader("Content-Encoding") == "gzip" else -1
    finally:
        conn.close()




def load(port: int, path: str, threads: int, requests: int) -> list[float]:
    """`threads` clients x `requests` GETs each on one keep-alive connection; latencies in s."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        mine = []
        try:
            start.wait(10)
            for _ in range(requests):
                t0 = time.perf_counter()
                conn.request("GET", path)
                response = conn.getresponse()
                response.read()
                mine.append(time.perf_counter() - t0)
                if response.status != 200:
                    errors.append(str(response.status))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
        finally:
            conn.close()
            with lock:
                latencies.extend(mine)
    workers = [threading.Thread(target=client) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    if errors:
        raise SystemExit(f"{len(errors)} failed requests of {threads} x {requests} keep-alive GETs, e.g. {errors[0]}")
    return latencies




def proc_status(pid: int) -> dict[str, float]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0]) / 1024  # kB -> MiB
    return out


def start_child(mode: str, extra: list[str], log_dir: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    log = open(log_dir / f"{mode}.log", "wb")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(EXPORTER),
                                                                      os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), f"--child={mode}", f"--port={port}",
                             *extra], stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    log.close()
    return proc, port




def load_generator():
    return _sibling("gen_big_host") if (HERE / "gen_big_host.py").exists() else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--synthetic", action="store_true", help="synthetic ScanResult instead of gen_big_host")
    parser.add_argument("--profile", help="default: gen_big_host.PROFILE")
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--clients", default="20,50", help="client counts of the node_exporter comparison")
    parser.add_argument("--tree", metavar="DIR", help="measure DIR/exporter (another checkout) instead of this one")
    parser.add_argument("--no-node-exporter", action="store_true", help="skip the node_exporter comparison")
    parser.add_argument("--child", choices=("exporter", "baseline"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global EXPORTER
    if args.tree:
        EXPORTER = Path(args.tree).resolve() / "exporter"
    if args.child == "exporter":
        return child_exporter(args)
    if args.child == "baseline":
        return child_baseline(args)

    with tempfile.TemporaryDirectory(prefix="tunewatch-bench-") as tmp:
        work = Path(tmp)
        extra = ["--synthetic"] if args.synthetic else []
        source = "synthetic ScanResult (tests/support/scanresults.big_host)"
        if not args.synthetic:
            gen = load_generator()
            if gen is None:
                print("SKIP: benchmarks/gen_big_host.py not present (use --synthetic for a ScanResult of the "
                      "same shape)")
                return 0
            t0 = time.perf_counter()
            built = gen.build(str(work / "host"))
            root = str(built) if isinstance(built, (str, os.PathLike)) else str(work / "host")
            print(f"built big host tree in {time.perf_counter() - t0:.2f}s: {root}")
            args.profile = args.profile or getattr(gen, "PROFILE", "auto")
            extra += [f"--root={root}", f"--profile={args.profile}"]
            source = f"benchmarks/gen_big_host.py tree, profile {args.profile}"

        exporter, port = start_child("exporter", extra, work)
        baseline = None
        try:
            _load.wait_http(exporter, port, "/-/ready", 300, work / "exporter.log")
            status, body = get(port, "/metrics")  # first scrape renders the per-scan part once
            assert status == 200, status
            t0 = time.perf_counter()
            get(port, "/metrics")
            single_ms = (time.perf_counter() - t0) * 1000
            gzipped_bytes = gzip_size(port, "/metrics")
            lines = body.decode().splitlines()
            series = sum(1 for line in lines if line and not line.startswith("#"))
            scan_seconds = next(float(line.split()[-1]) for line in lines
                                if line.startswith("tunewatch_scan_duration_seconds "))
            rss_idle = proc_status(exporter.pid)
            cpu0 = cpu_seconds(exporter.pid)["cpu_self"]
            latencies = load(port, "/metrics", args.threads, args.requests)
            cpu_ms = (cpu_seconds(exporter.pid)["cpu_self"] - cpu0) * 1000 / len(latencies)
            rss_loaded = proc_status(exporter.pid)
            versus = [] if args.synthetic or args.no_node_exporter else \
                beside_node_exporter(work, root, args.profile, exporter, port,
                                     [int(c) for c in args.clients.split(",")], args.requests)

            static_dir = work / "static"
            static_dir.mkdir()
            (static_dir / "metrics").write_bytes(body)
            baseline, base_port = start_child("baseline", [f"--root={static_dir}"], work)
            _load.wait_http(baseline, base_port, "/metrics", 30, work / "baseline.log")
            base_latencies = load(base_port, "/metrics", args.threads, args.requests)
        finally:
            stop_child(exporter)
            if baseline is not None:
                stop_child(baseline)

    p50, p99 = percentile(latencies, 50) * 1000, percentile(latencies, 99) * 1000
    b50, b99 = percentile(base_latencies, 50) * 1000, percentile(base_latencies, 99) * 1000
    figures = {
        "source": source, "series": series, "exposition_bytes": len(body), "gzip_bytes": gzipped_bytes,
        "scan_seconds": round(scan_seconds, 4),
        "clients": f"{args.threads} threads x {args.requests} requests", "cpus": os.cpu_count(),
        "single_scrape_ms": round(single_ms, 2),
        "scrape_p50_ms": round(p50, 2), "scrape_p99_ms": round(p99, 2),
        "scrape_mean_ms": round(statistics.mean(latencies) * 1000, 2),
        "cpu_ms_per_scrape": round(cpu_ms, 3), "versus_node_exporter": versus,
        "baseline_static_p50_ms": round(b50, 2), "baseline_static_p99_ms": round(b99, 2),
        "p50_vs_baseline": round(p50 / b50, 2) if b50 else None,
        "p99_vs_baseline": round(p99 / b99, 2) if b99 else None,
        "rss_idle_mb": round(rss_idle.get("VmRSS", 0), 1), "rss_after_load_mb": round(rss_loaded.get("VmRSS", 0), 1),
        "rss_peak_mb": round(rss_loaded.get("VmHWM", 0), 1),
    }
    ok_latency, ok_rss = p99 < P99_TARGET_MS, figures["rss_peak_mb"] < RSS_TARGET_MB
    ok_cpu = cpu_ms <= CPU_TARGET_MS
    print(f"host: {source}")
    print(f"exposition: {series} series, {len(body)} bytes ({gzipped_bytes} gzipped); "
          f"scan {scan_seconds * 1000:.0f} ms "
          f"(once per interval, in the background)")
    print(f"cached /metrics, {figures['clients']} on 127.0.0.1 ({os.cpu_count()} CPUs): "
          f"p50 {p50:.2f} ms, p99 {p99:.2f} ms  [target p99 < {P99_TARGET_MS:g} ms: {'ok' if ok_latency else 'MISSED'}]")
    print(f"exporter CPU per scrape: {cpu_ms:.3f} ms  [target <= {CPU_TARGET_MS:g} ms at {args.threads} clients: "
          f"{'ok' if ok_cpu else 'MISSED'}]")
    print(f"baseline static http.server, same file, same load: p50 {b50:.2f} ms, p99 {b99:.2f} ms "
          f"-> exporter/baseline p50 x{figures['p50_vs_baseline']}, p99 x{figures['p99_vs_baseline']}")
    print(f"exporter RSS: {figures['rss_idle_mb']} MB idle, {figures['rss_after_load_mb']} MB after load, "
          f"peak {figures['rss_peak_mb']} MB  [target < {RSS_TARGET_MB:g} MB: {'ok' if ok_rss else 'MISSED'}]")
    ok_versus = True
    if versus:
        print(f"beside node_exporter (textfile collector only, `scan --format prometheus` of the same host), "
              f"{args.requests} scrapes per client, each on a new connection, interleaved:")
        print(f"  {'clients':>7} {'server':<22} {'p50 ms':>7} {'p99 ms':>7} {'failed':>6} {'CPU ms/scrape':>13}")
        for row in versus:
            for name in ("tunewatch serve", "node_exporter"):
                f = row[name]
                print(f"  {row['clients']:>7} {name:<22} {f['p50_ms']:7.2f} {f['p99_ms']:7.2f} {f['failures']:6d} "
                      f"{f['cpu_ms']:13.3f}")
            met = row["p99_ratio"] <= 1.0 and not row["tunewatch serve"]["failures"]
            ok_versus &= met
            print(f"  {row['clients']:>7} p99 tunewatch / node_exporter {row['p99_ratio']:.2f}  [target <= 1: "
                  f"{'ok' if met else 'MISSED'}]")
    elif not args.synthetic and not args.no_node_exporter:
        print("node_exporter comparison: no prometheus-node-exporter/node_exporter binary (not measured)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if ok_latency and ok_rss and ok_cpu and ok_versus else 1


def beside_node_exporter(work: Path, root: str, profile: str, exporter, port: int, clients: list[int],
                         requests: int) -> list[dict]:
    """Same load on `tunewatch serve` and on node_exporter serving the same scan's textfile."""
    binary = _load.node_exporter_binary()
    if binary is None:
        return []
    textfile = work / "textfile"
    textfile.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(EXPORTER),
                                                                      os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "tunewatch", "scan", "--root", root, "--profile", profile,
                           "--format", "prometheus", "--output", str(textfile / "tunewatch.prom")],
                          capture_output=True, text=True, timeout=300, env=env)
    if done.returncode not in (0, 2):
        raise SystemExit(f"scan --format prometheus failed: {done.stderr[-400:]}")
    node_port = free_port()
    log = work / "node_exporter.log"
    node = _load.start([binary, f"--web.listen-address=127.0.0.1:{node_port}", "--collector.disable-defaults",
                        "--collector.textfile", f"--collector.textfile.directory={textfile}"], log)
    rows = []
    try:
        _load.wait_http(node, node_port, "/metrics", 30, log)
        get(node_port, "/metrics")
        for n in clients:
            row: dict = {"clients": n}
            for name, proc, p in (("tunewatch serve", exporter, port), ("node_exporter", node, node_port)):
                cpu0 = cpu_seconds(proc.pid)["cpu_self"]
                stats = _load.scrape_load("127.0.0.1", p, "/metrics", n * requests, n)
                row[name] = {"p50_ms": stats.p50_ms, "p99_ms": stats.p99_ms, "failures": stats.failures,
                             "cpu_ms": round((cpu_seconds(proc.pid)["cpu_self"] - cpu0) * 1000 / stats.scrapes, 3)}
            row["p99_ratio"] = round(row["tunewatch serve"]["p99_ms"] / row["node_exporter"]["p99_ms"], 2)
            rows.append(row)
    finally:
        stop_child(node)
    return rows


if __name__ == "__main__":
    sys.exit(main())
