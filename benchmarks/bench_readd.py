#!/usr/bin/env python3
"""Time from a NIC add to updated metrics in `tunewatch serve` (kernel uevents).

    sudo python3 benchmarks/bench_readd.py                 # 20 veth adds, debounce 2 s
    sudo python3 benchmarks/bench_readd.py --adds 5 --json

Needs root: it creates a network namespace `twbench-<pid>` (`ip netns add`) and runs itself
inside it (`ip netns exec`, which also mounts the namespace's own /sys), where it brings up
lo, starts `tunewatch serve` (this tree's package) on 127.0.0.1 with `--scan.interval 1h`
(so only uevents start scans after the first) and then, once per round: adds a veth pair,
polls /metrics every 10 ms until `tunewatch_scans_total` has moved and
`tunewatch_last_scan_timestamp_seconds` is later than the add (a scan that started after
it finished), removes the pair and waits for that scan too. Prints p50/p99/max of add ->
updated metrics and of remove -> updated metrics. `--flood N` then adds N pairs back to
back and reports how many scans they caused (the debounce makes it one). The namespace (and
with it every veth) is deleted and the exporter stopped by PID at the end.

The latency is the debounce (2 s by default) plus one scan plus at most one poll interval.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = REPO / "tests" / "snapshots" / "examples" / "azure-m-pinned-oneshot"
PORT = 19847  # the namespace's own loopback: nothing else listens there
_SAMPLE = re.compile(rb"^(tunewatch_scans_total|tunewatch_last_scan_timestamp_seconds|tunewatch_scan_in_progress) "
                     rb"(\S+)$", re.M)


def scrape() -> dict[str, float]:
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=5)
    try:
        conn.request("GET", "/metrics")
        body = conn.getresponse().read()
    finally:
        conn.close()
    return {m.group(1).decode(): float(m.group(2)) for m in _SAMPLE.finditer(body)}


def wait_for(predicate, timeout: float, poll: float = 0.01) -> tuple[float, dict[str, float]]:
    """(monotonic time it held, the metrics then); TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            metrics = scrape()
        except OSError:
            metrics = {}
        now = time.monotonic()
        if metrics and predicate(metrics):
            return now, metrics
        if now > deadline:
            raise TimeoutError(f"metrics did not move within {timeout:g} s: {metrics}")
        time.sleep(poll)


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def scanned_after(before: dict[str, float], wall: float):
    """A scan started after `before` was scraped, and finished after `wall` (Unix time)."""
    return lambda m: (m.get("tunewatch_scans_total", 0) > before["tunewatch_scans_total"]
                      and m.get("tunewatch_last_scan_timestamp_seconds", 0) > wall
                      and m.get("tunewatch_scan_in_progress", 1) == 0)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def inside(args) -> dict:
    ip("link", "set", "lo", "up")
    env = {**os.environ, "PYTHONPATH": str(REPO / "exporter")}
    cmd = [sys.executable, "-m", "tunewatch", "serve", "--root", str(args.root), "--profile", "auto",
           "--web.listen-address", f"127.0.0.1:{PORT}", "--scan.interval", "1h",
           "--scan.uevent-debounce", args.debounce, "--log.level", "warn"]
    if args.no_uevents:
        cmd.append("--no-scan.uevents")
    serve = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    out: dict = {"adds": [], "removes": []}
    try:
        _, metrics = wait_for(lambda m: m.get("tunewatch_scans_total", 0) >= 1
                              and m.get("tunewatch_scan_in_progress", 1) == 0
                              and "tunewatch_last_scan_timestamp_seconds" in m, 180)  # a loaded CI machine
        settle = float(args.debounce.rstrip("s")) + 1.0
        for i in range(args.adds):
            for verb, key in (("add", "adds"), ("del", "removes")):
                before, wall, t0 = scrape(), time.time(), time.monotonic()
                if verb == "add":
                    ip("link", "add", f"twb{i}a", "type", "veth", "peer", "name", f"twb{i}b")
                else:
                    ip("link", "del", f"twb{i}a")
                if args.no_uevents:  # nothing may move: wait out the debounce and a scan
                    time.sleep(settle + 1.0)
                    out[key].append(None if scrape()["tunewatch_scans_total"] == before["tunewatch_scans_total"]
                                    else "scanned")
                    continue
                t1, _ = wait_for(scanned_after(before, wall), args.timeout)
                out[key].append(round(t1 - t0, 4))
        if args.flood:
            time.sleep(0.2)
            before, wall = scrape(), time.time()
            for i in range(args.flood):
                ip("link", "add", f"twf{i}a", "type", "veth", "peer", "name", f"twf{i}b")
            wait_for(scanned_after(before, wall), args.timeout)
            time.sleep(settle + 1.0)  # a second scan, if the burst caused one, would show by now
            out["flood_pairs"] = args.flood
            out["flood_scans"] = int(scrape()["tunewatch_scans_total"] - before["tunewatch_scans_total"])
        out["scans_total"] = scrape()["tunewatch_scans_total"]
    finally:
        serve.terminate()
        try:
            serve.wait(10)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait(5)
        out["serve_stderr"] = serve.stderr.read().decode(errors="replace")[-2000:] if serve.stderr else ""
    return out


def summary(values: list[float]) -> dict:
    return {"n": len(values), "p50_s": round(statistics.median(values), 3), "p99_s": round(pct(values, 99), 3),
            "max_s": round(max(values), 3), "min_s": round(min(values), 3)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--adds", type=int, default=20)
    p.add_argument("--debounce", default="2s")
    p.add_argument("--flood", type=int, default=10, help="veth pairs added back to back at the end (0: none)")
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="what serve scans (default: an example host)")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--no-uevents", action="store_true", help="serve with --no-scan.uevents: expect no rescans")
    p.add_argument("--json", action="store_true")
    p.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.inside:
        print(json.dumps(inside(args)))
        return 0
    if os.geteuid() != 0:
        print("bench_readd.py needs root (ip netns add)", file=sys.stderr)
        return 2
    name = f"twbench-{os.getpid()}-{secrets.token_hex(2)}"
    ip("netns", "add", name)
    try:
        argv = [a for a in sys.argv[1:] if a != "--json"]
        done = subprocess.run(["ip", "netns", "exec", name, sys.executable, __file__, "--inside", *argv],
                              capture_output=True, text=True, timeout=180 + args.adds * 2 * (args.timeout + 5))
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    if done.returncode != 0:
        print(done.stdout, done.stderr, file=sys.stderr)
        return 1
    raw = json.loads(done.stdout.strip().splitlines()[-1])
    report = {"debounce": args.debounce, "root": str(args.root), "raw": raw}
    if not args.no_uevents:
        report["add_to_metrics"] = summary(raw["adds"])
        report["remove_to_metrics"] = summary(raw["removes"])
    if args.json:
        print(json.dumps(report))
        return 0
    if args.no_uevents:
        print(f"--no-scan.uevents: adds that caused a scan: {sum(1 for a in raw['adds'] if a)} of {len(raw['adds'])}")
        return 0
    a, r = report["add_to_metrics"], report["remove_to_metrics"]
    print(f"veth add -> updated metrics over {a['n']} adds (debounce {args.debounce}): "
          f"p50 {a['p50_s']:.3f} s, p99 {a['p99_s']:.3f} s, min {a['min_s']:.3f} s, max {a['max_s']:.3f} s")
    print(f"veth remove -> updated metrics: p50 {r['p50_s']:.3f} s, p99 {r['p99_s']:.3f} s")
    if "flood_scans" in raw:
        print(f"{raw['flood_pairs']} veth pairs added back to back -> {raw['flood_scans']} scan(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
