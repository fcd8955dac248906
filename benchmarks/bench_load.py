#!/usr/bin/env python3
"""Exporter under load: `tunewatch serve` beside node_exporter serving the same metrics.

    python3 benchmarks/bench_load.py                       # 10,000 scrapes, 50 concurrent
    python3 benchmarks/bench_load.py --scrapes 2000 --concurrency 20
    python3 benchmarks/bench_load.py --memory              # + serve RSS after 10 scans, 1,664 CPUs

In one run, on 127.0.0.1:

1. `tunewatch scan --format prometheus --output DIR/tunewatch.prom` on the example snapshot
   writes the textfile; node_exporter (textfile collector only) serves it: the baseline.
2. `tunewatch serve` on the same snapshot and profile.
3. Each gets the same load: SCRAPES GET /metrics, CONCURRENCY client threads, every scrape
   on a new connection (connect, request, read, close), 30 s client timeout.

Prints per server: scrapes/s, latency p50/p99/max, failures (errors, non-200), and RSS
and threads of the server process before and after the load; then the ratios
tunewatch / node_exporter. `--memory` also builds the 1,664-CPU host with
benchmarks/gen_big_host.py, runs serve on it with a 1 s interval and prints its RSS after
10 completed scans (target <= 150 MB: issue 12) and the peak (VmHWM).

`main(argv)` returns the exit status (1 when a target is missed: a failure under load, or
RSS over target); `run(...)` returns the figures as a dict for benchmarks/faults.py. The
load driver `scrape_load()` is what tests/exporter/test_serve_load.py runs at a smaller
size. Every child is stopped by pid before exit.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import inspect
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXAMPLE = REPO / "tests" / "snapshots" / "examples" / "azure-m-rebooted"
EXAMPLE_PROFILE = "azure-sap-hana"
RSS_TARGET_MB = 150.0
BIG_CPUS = 1664


@dataclass
class LoadStats:
    scrapes: int
    concurrency: int
    failures: int
    first_failure: str
    seconds: float
    p50_ms: float
    p99_ms: float
    max_ms: float

    @property
    def rate(self) -> float:
        return self.scrapes / self.seconds if self.seconds else 0.0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def scrape_load(host: str, port: int, path: str = "/metrics", scrapes: int = 10_000, concurrency: int = 50,
                timeout: float = 30.0, headers: dict | None = None) -> LoadStats:
    """`scrapes` GETs from `concurrency` threads, each on a new connection; bounded by `timeout`
    per request, so it always ends."""
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    remaining = [scrapes]
    start = threading.Barrier(concurrency)

    def take() -> bool:
        with lock:
            if remaining[0] <= 0:
                return False
            remaining[0] -= 1
            return True

    def client() -> None:
        try:
            start.wait(30)
        except threading.BrokenBarrierError:
            pass
        while take():
            t0 = time.perf_counter()
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
            try:
                conn.request("GET", path, headers=headers or {})
                response = conn.getresponse()
                response.read()
                error = "" if response.status == 200 else f"HTTP {response.status}"
            except Exception as e:  # noqa: BLE001 - counted and reported
                error = repr(e)
            finally:
                conn.close()
            took = time.perf_counter() - t0
            with lock:
                latencies.append(took)
                if error:
                    failures.append(error)

    workers = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    began = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout * (scrapes / concurrency + 2))
    seconds = time.perf_counter() - began
    return LoadStats(len(latencies), concurrency, len(failures), failures[0] if failures else "",
                     round(seconds, 3), round(percentile(latencies, 50) * 1000, 2),
                     round(percentile(latencies, 99) * 1000, 2), round(max(latencies, default=0) * 1000, 2))


def proc_figures(pid: int) -> dict[str, float]:
    """RSS and peak RSS (MiB), threads, and CPU seconds (own, and of reaped children)."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = round(int(rest.split()[0]) / 1024, 1)
            elif key == "Threads":
                out["threads"] = int(rest)
    out.update(cpu_seconds(pid))
    return out


def cpu_seconds(pid: int) -> dict[str, float]:
    """utime+stime and cutime+cstime of /proc/<pid>/stat, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    tick = os.sysconf("SC_CLK_TCK")
    # fields[0] is the state (field 3 of proc(5)): utime is field 14 -> index 11
    return {"cpu_self": (int(fields[11]) + int(fields[12])) / tick,
            "cpu_children": (int(fields[13]) + int(fields[14])) / tick}


# --- processes ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "exporter"),
                                                                      os.environ.get("PYTHONPATH")]))}


def start(argv: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=out, stdin=subprocess.DEVNULL, env=_env(),
                                start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)


def get(port: int, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def wait_http(proc: subprocess.Popen, port: int, path: str, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args[0]} exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        try:
            if get(port, path, 2.0)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"not ready on :{port}{path} within {timeout:g}s:\n{log.read_text()[-2000:]}")


def tunewatch(*args: str) -> list[str]:
    return [sys.executable, "-m", "tunewatch.cli.main", *args]


def node_exporter_binary() -> str | None:
    import shutil
    return shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")


def metric_value(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


# --- measurements ------------------------------------------------------------------------


def measure_load(work: Path, root: Path, profile: str, scrapes: int, concurrency: int) -> dict:
    textfile = work / "textfile"
    textfile.mkdir()
    done = subprocess.run(tunewatch("scan", "--root", str(root), "--profile", profile, "--format", "prometheus",
                                    "--output", str(textfile / "tunewatch.prom")),
                          capture_output=True, text=True, timeout=120, env=_env())
    if done.returncode not in (0, 2):
        raise SystemExit(f"scan --format prometheus failed: {done.stderr}")
    servers: dict[str, tuple[subprocess.Popen, int]] = {}
    figures: dict[str, dict] = {}
    try:
        port = free_port()
        log = work / "serve.log"
        servers["tunewatch serve"] = (start(tunewatch("serve", "--root", str(root), "--profile", profile,
                                                      "--web.listen-address", f"127.0.0.1:{port}",
                                                      "--log.level", "warn"), log), port)
        wait_http(servers["tunewatch serve"][0], port, "/-/ready", 60, log)
        binary = node_exporter_binary()
        if binary:
            port = free_port()
            log = work / "node_exporter.log"
            servers["node_exporter textfile"] = (start([binary, f"--web.listen-address=127.0.0.1:{port}",
                                                        "--collector.disable-defaults", "--collector.textfile",
                                                        f"--collector.textfile.directory={textfile}"], log), port)
            wait_http(servers["node_exporter textfile"][0], port, "/metrics", 30, log)
        for name, (proc, port) in servers.items():
            get(port, "/metrics")  # warm: first scrape
            before = proc_figures(proc.pid)
            stats = scrape_load("127.0.0.1", port, "/metrics", scrapes, concurrency)
            after = proc_figures(proc.pid)
            figures[name] = {"load": asdict(stats), "rate_per_s": round(stats.rate, 1),
                             "rss_mb_before": before["VmRSS"], "rss_mb_after": after["VmRSS"],
                             "threads_before": before["threads"], "threads_after": after["threads"],
                             "cpu_seconds": round(after["cpu_self"] - before["cpu_self"], 2)}
    finally:
        for proc, _ in servers.values():
            stop(proc)
    return figures


def build_big_host(directory: Path, cpus: int) -> Path:
    spec = importlib.util.spec_from_file_location("gen_big_host", HERE / "gen_big_host.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)  # type: ignore[union-attr]
    if "cpus" in inspect.signature(gen.build).parameters:
        return Path(gen.build(str(directory), cpus=cpus))
    gen.NODES = cpus // gen.PER_NODE  # the generator's own knobs: 32 nodes x 52 CPUs
    gen.NCPU = gen.NODES * gen.PER_NODE
    return Path(gen.build(str(directory)))


def measure_memory(work: Path, cpus: int, scans: int = 10) -> dict:
    t0 = time.perf_counter()
    root = build_big_host(work / "big", cpus)
    built = time.perf_counter() - t0
    port = free_port()
    log = work / "serve-big.log"
    proc = start(tunewatch("serve", "--root", str(root), "--profile", "azure-sas-grid-anf", "--web.listen-address",
                           f"127.0.0.1:{port}", "--scan.interval", "1s", "--scan.timeout", "120s",
                           "--log.level", "warn"), log)
    try:
        wait_http(proc, port, "/-/ready", 300, log)
        first = proc_figures(proc.pid)
        deadline = time.monotonic() + 60 * scans
        completed = 0.0
        while time.monotonic() < deadline:
            text = get(port, "/metrics", 30)[1].decode()
            started = metric_value(text, "tunewatch_scans_total") or 0
            completed = started - (1 if metric_value(text, "tunewatch_scan_in_progress") else 0)
            if completed >= scans:
                break
            time.sleep(0.5)
        after = proc_figures(proc.pid)
        status, body = get(port, "/metrics", 30)
        duration = metric_value(body.decode(), "tunewatch_scan_duration_seconds")
    finally:
        stop(proc)
    return {"cpus": cpus, "build_seconds": round(built, 1), "scans_completed": int(completed),
            "scan_seconds": duration, "rss_mb_after_first_scan": first["VmRSS"],
            "rss_mb_after_scans": after["VmRSS"], "rss_peak_mb": after["VmHWM"], "threads": after["threads"],
            "exposition_bytes": len(body), "target_mb": RSS_TARGET_MB}


def run(scrapes: int = 10_000, concurrency: int = 50, memory: bool = False, cpus: int = BIG_CPUS,
        root: Path = EXAMPLE, profile: str = EXAMPLE_PROFILE) -> dict:
    """All figures as a dict: {"load": {server: {...}}, "memory": {...} (with memory=True)}."""
    with tempfile.TemporaryDirectory(prefix="tunewatch-bench-load-") as tmp:
        figures: dict = {"scrapes": scrapes, "concurrency": concurrency, "cpus_here": os.cpu_count(),
                         "snapshot": str(root), "load": measure_load(Path(tmp), root, profile, scrapes, concurrency)}
        if memory:
            figures["memory"] = measure_memory(Path(tmp), cpus)
    return figures


def report(figures: dict) -> list[str]:
    lines = [f"{figures['scrapes']} scrapes, {figures['concurrency']} concurrent new connections, "
             f"{figures['cpus_here']} CPUs, snapshot {figures['snapshot']}",
             f"{'server':24} {'scr/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'fail':>5} "
             f"{'RSS MB before/after':>20} {'threads before/after':>21} {'CPU s':>6}"]
    for name, f in figures["load"].items():
        load = f["load"]
        lines.append(f"{name:24} {f['rate_per_s']:7.0f} {load['p50_ms']:8.2f} {load['p99_ms']:8.2f} "
                     f"{load['max_ms']:8.1f} {load['failures']:5d} {f['rss_mb_before']:>9}/{f['rss_mb_after']:<10} "
                     f"{f['threads_before']:>10}/{f['threads_after']:<10} {f['cpu_seconds']:6.2f}")
        if load["failures"]:
            lines.append(f"    first failure: {load['first_failure']}")
    both = figures["load"]
    if len(both) == 2:
        tw, ne = both["tunewatch serve"]["load"], both["node_exporter textfile"]["load"]
        lines.append("tunewatch / node_exporter: p50 x{:.1f}, p99 x{:.1f}, max x{:.1f}".format(
            *(tw[k] / ne[k] if ne[k] else float("nan") for k in ("p50_ms", "p99_ms", "max_ms"))))
    memory = figures.get("memory")
    if memory:
        ok = memory["rss_mb_after_scans"] <= RSS_TARGET_MB
        lines.append(f"serve on the {memory['cpus']}-CPU host: RSS {memory['rss_mb_after_first_scan']} MB after the "
                     f"first scan, {memory['rss_mb_after_scans']} MB after {memory['scans_completed']} scans, peak "
                     f"{memory['rss_peak_mb']} MB (scan {memory['scan_seconds']} s, exposition "
                     f"{memory['exposition_bytes']} bytes) [target <= {RSS_TARGET_MB:g} MB: "
                     f"{'ok' if ok else 'MISSED'}]")
    return lines


def main(argv: list[str] | None = None) -> int:
    """`argv` None means defaults (benchmarks/faults.py calls main()), not this process's sys.argv."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scrapes", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--memory", action="store_true", help="also serve RSS after 10 scans on the big host")
    parser.add_argument("--cpus", type=int, default=BIG_CPUS, help="CPUs of the --memory host (default 1664)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args([] if argv is None else argv)
    figures = run(args.scrapes, args.concurrency, args.memory, args.cpus)
    for line in report(figures):
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    failed = bool(figures["load"]["tunewatch serve"]["load"]["failures"])
    too_big = bool(figures.get("memory")) and figures["memory"]["rss_mb_after_scans"] > RSS_TARGET_MB
    return 1 if failed or too_big else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
