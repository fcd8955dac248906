#!/usr/bin/env python3
"""The exporter on a hostile network (issue 18): `tunewatch serve` beside node_exporter.

    python3 benchmarks/bench_hostile.py                        # this checkout's tunewatch
    python3 benchmarks/bench_hostile.py --exporter /work/main/exporter   # another one (before/after)
    python3 benchmarks/bench_hostile.py --scrapes 40 --json out.json

Both servers start under a soft fd limit of 1024 (prlimit; systemd's default) and serve
the same metrics: node_exporter through its textfile collector (`--collector.disable-
defaults --collector.textfile`) reading tunewatch's `scan --format prometheus` output.
Each runs plain HTTP, then TLS + basic auth (the same exporter-toolkit web config file).
Per case, a well-behaved scraper (a fresh connection per GET /metrics, every 50 ms, 5 s
timeout) measures success rate and p50/p99 while the attack runs on 127.0.0.1:

* quiet: no attack (the reference);
* idle 1100: 1,100 connections that send nothing;
* half 1100: 1,100 connections that send half a request line, all re-opened every 3 s;
* hello 1100 (TLS): 1,100 connections that send a partial ClientHello, re-opened every 3 s;
* handshakes (TLS): 8 threads doing full handshakes and hanging up, as fast as they can.

Then the malformed requests of tests/exporter/hostile.py: how many got their RFC status
line. The clients are tests/exporter/hostile.py's (what the tests assert on). Every
process is stopped by its pid. About 2-3 minutes on 2 CPUs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXAMPLE = REPO / "tests" / "snapshots" / "examples" / "sas-anf"
PROFILE = "azure-sas-grid-anf"
USER, PASSWORD = "prometheus", "bench pass"
FLOOD = 1100


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


hostile = _module("hostile", REPO / "tests" / "exporter" / "hostile.py")
stop = _module("bench_load", HERE / "bench_load.py").stop  # SIGTERM by pid, SIGKILL after 10 s


def _env(exporter: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(exporter)}


def start(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(hostile.prlimit_argv(argv, 1024), stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)


def wait_ready(proc: subprocess.Popen, port: int, tls: bool, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args} exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        if hostile.scrape(port, 1, tls=tls, auth=(USER, PASSWORD) if tls else None, interval=0, timeout=2).ok:
            return
        time.sleep(0.2)
    raise SystemExit(f"not ready on :{port} within 60s:\n{log.read_text()[-2000:]}")


def make_web_config(work: Path) -> Path:
    import bcrypt
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=30)
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=10)).decode()
    path = work / "web.yml"
    path.write_text(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"
                    f"basic_auth_users:\n  {USER}: '{hashed}'\n")
    return path


CASES = [("quiet", None, False), ("idle 1100", ("idle", None), False), ("half 1100", ("half", 3.0), False),
         ("hello 1100", ("hello", 3.0), True), ("handshakes", "handshakes", True)]


def run_case(port: int, attack, tls: bool, scrapes: int) -> dict:
    auth = (USER, PASSWORD) if tls else None
    budget = scrapes * 0.05 + 10  # 50 ms apart, plus slack; a server timing out fails the rest
    if attack is None:
        result = hostile.scrape(port, scrapes, tls=tls, auth=auth, budget=budget)
    elif attack == "handshakes":
        with hostile.HandshakeFlood(port, threads=8):
            result = hostile.scrape(port, scrapes, tls=tls, auth=auth, budget=budget)
    else:
        kind, period = attack
        with hostile.Flood(port, FLOOD, kind, period):
            result = hostile.scrape(port, scrapes, tls=tls, auth=auth, budget=budget)
    return {"ok": result.ok, "failed": result.failed, "rate": round(result.rate, 4),
            "p50_ms": round(result.percentile(50) * 1000, 1), "p99_ms": round(result.percentile(99) * 1000, 1),
            "errors": result.errors}


def measure(exporter: Path, scrapes: int) -> dict:
    hostile.raise_own_nofile(FLOOD * 3)
    env = _env(exporter)
    binary = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    figures: dict = {"exporter": str(exporter), "scrapes": scrapes, "cases": {}, "malformed": {}, "log_bytes": {}}
    with tempfile.TemporaryDirectory(prefix="tunewatch-bench-hostile-") as tmp:
        work = Path(tmp)
        textfile = work / "textfile"
        textfile.mkdir()
        done = subprocess.run([sys.executable, "-m", "tunewatch.cli", "scan", "--root", str(EXAMPLE), "--profile",
                               PROFILE, "--format", "prometheus", "--output", str(textfile / "tunewatch.prom")],
                              capture_output=True, text=True, timeout=120, env=env)
        if done.returncode not in (0, 2):
            raise SystemExit(f"scan --format prometheus failed: {done.stderr}")
        web_config = make_web_config(work)
        for tls in (False, True):
            servers = {}
            port = hostile.free_port()
            servers["tunewatch"] = (port, [sys.executable, "-m", "tunewatch.cli", "serve", "--root", str(EXAMPLE),
                                           "--profile", PROFILE, "--web.listen-address", f"127.0.0.1:{port}",
                                           *(["--web.config.file", str(web_config)] if tls else [])])
            if binary:
                port = hostile.free_port()
                servers["node_exporter"] = (port, [binary, f"--web.listen-address=127.0.0.1:{port}",
                                                   "--collector.disable-defaults", "--collector.textfile",
                                                   f"--collector.textfile.directory={textfile}",
                                                   *([f"--web.config.file={web_config}"] if tls else [])])
            for name, (port, argv) in servers.items():
                log = work / f"{name}-{tls}.log"
                proc = start(argv, log, env)
                try:
                    wait_ready(proc, port, tls, log)
                    for case, attack, tls_only in CASES:
                        if tls_only and not tls:
                            continue
                        label = f"{case}{' TLS+auth' if tls else ''}"
                        figures["cases"].setdefault(label, {})[name] = run_case(port, attack, tls, scrapes)
                        time.sleep(1)  # let the closed floods drain before the next case
                    if not tls:
                        figures["malformed"][name] = hostile.malformed_answered(port)
                finally:
                    stop(proc)
                figures["log_bytes"][f"{name}{' TLS' if tls else ''}"] = hostile.log_bytes(str(log))
    return figures


def report(figures: dict) -> list[str]:
    names = ["tunewatch", "node_exporter"]
    lines = [f"tunewatch from {figures['exporter']}; {figures['scrapes']} fresh-connection scrapes per case, "
             f"soft fd limit 1024, {os.cpu_count()} CPUs",
             f"{'case':24}" + "".join(f" | {n + ' ok %':>16} {'p50 ms':>7} {'p99 ms':>7}" for n in names) +
             " | p99 ratio"]
    for case, by_server in figures["cases"].items():
        row = f"{case:24}"
        for name in names:
            f = by_server.get(name)
            row += (f" | {f['rate'] * 100:16.1f} {f['p50_ms']:7.1f} {f['p99_ms']:7.1f}" if f else f" | {'-':>32}")
        tw, ne = by_server.get("tunewatch"), by_server.get("node_exporter")
        if tw and ne and tw["ok"] and ne["ok"]:
            row += f" | {tw['p99_ms'] / max(ne['p99_ms'], 0.1):.2f}x"
        lines.append(row)
    for case, by_server in figures["cases"].items():
        for name, f in by_server.items():
            if f["errors"]:
                lines.append(f"  {case} / {name} failures: {f['errors']}")
    for name, (answered, wrong) in figures["malformed"].items():
        lines.append(f"malformed requests with their RFC status line, {name}: {answered}/{len(hostile.MALFORMED)}"
                     + (f"; wrong: {'; '.join(wrong)}" if wrong else ""))
    lines.append("log bytes: " + ", ".join(f"{k} {v}" for k, v in figures["log_bytes"].items()))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exporter", type=Path, default=REPO / "exporter",
                        help="directory holding the tunewatch package to measure (default: this checkout's)")
    parser.add_argument("--scrapes", type=int, default=60, help="scrapes per case and server (default: 60)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    figures = measure(args.exporter.resolve(), args.scrapes)
    print("\n".join(report(figures)))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    tw = [c["tunewatch"] for c in figures["cases"].values() if "tunewatch" in c]
    return 0 if all(f["rate"] >= 0.99 for f in tw) else 1


if __name__ == "__main__":
    sys.exit(main())
