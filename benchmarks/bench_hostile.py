#!/usr/bin/env python3
"""The exporter on a hostile network (issue 18): `tunewatch serve` beside node_exporter.

    python3 benchmarks/bench_hostile.py                        # this checkout's tunewatch
    python3 benchmarks/bench_hostile.py --exporter /work/main/exporter   # another one (before/after)
    python3 benchmarks/bench_hostile.py --scrapes 40 --json out.json
    python3 benchmarks/bench_hostile.py --servers tunewatch,aiohttp,node_exporter   # + the aiohttp prototype
    python3 benchmarks/bench_hostile.py --nofile-hard 1024 --modes plain   # hard limit 1024: accept() hits EMFILE

Every server starts under a soft fd limit of 1024 (prlimit; systemd's default) and serves
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
line, and three requests that must be served (leading empty lines, HTTP/1.0 without Host,
`Expect: 100-continue` answered with 100 or a final status before the body). The clients
are tests/exporter/hostile.py's (what the tests assert on). Every process is stopped by
its pid. About 2-3 minutes per server on 2 CPUs.

`--servers` adds benchmarks/alt_aiohttp_serve.py ("aiohttp"): the same /metrics bytes on
aiohttp with the same web config, run by `--alt-python` (default build/altvenv/bin/python,
see the prototype's docstring), for the "hand-written stack vs aiohttp" measurement.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import socket
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


def start(argv: list[str], log: Path, env: dict[str, str], hard: int | None = None) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(hostile.prlimit_argv(argv, 1024, hard), stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL,
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


# must be served, not refused (RFC 9112 2.2 and 9.3; RFC 9110 10.1.1): request, check of what came back
EXTRAS = [
    ("leading empty lines", b"\r\n\r\nGET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
     lambda data: data.startswith(b"HTTP/1.1 200 ") or data.startswith(b"HTTP/1.0 200 ")),
    ("HTTP/1.0 without Host", b"GET /-/healthy HTTP/1.0\r\n\r\n",
     lambda data: data[:13] in (b"HTTP/1.1 200 ", b"HTTP/1.0 200 ")),
    # the body is not sent: the server must say 100 Continue (or give its final answer) first
    ("Expect: 100-continue", b"POST /-/rescan HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n"
                             b"Connection: close\r\n\r\n",
     lambda data: data.startswith(b"HTTP/1.1 100 ") or (data.startswith(b"HTTP/1.") and data[9:10] in b"2345")),
]


def extras_answered(port: int) -> tuple[int, list[str]]:
    wrong = []
    for name, request, good in EXTRAS:
        data = b""
        try:
            with socket.create_connection((hostile.LOOPBACK, port), timeout=5) as sock:
                sock.sendall(request)
                sock.settimeout(3)
                data = sock.recv(200)
        except OSError as e:
            data = repr(e).encode()
        if not good(data):
            line = data.split(b"\r\n", 1)[0][:40].decode(errors="replace")
            wrong.append(f"{name}: {line or '(nothing within 3 s)'}")
    return len(EXTRAS) - len(wrong), wrong


def malformed_lines(port: int) -> list[str]:
    """The status line (or what else came back) for each of hostile.MALFORMED, in order;
    the same exchange as hostile.malformed_answered(), which counts the right ones."""
    lines = []
    for request, _ in hostile.MALFORMED:
        try:
            with socket.create_connection((hostile.LOOPBACK, port), timeout=5) as sock:
                sock.sendall(request)
                line = hostile.read_status(sock)[0]
        except OSError as e:
            line = repr(e).encode()
        text = line[:40].decode(errors="replace").splitlines()
        lines.append(text[0] if text else "(closed, nothing)")
    return lines


def _right(line: str, status: int) -> bool:
    return line.startswith(f"HTTP/1.1 {status} ") or line.startswith(f"HTTP/1.0 {status} ")


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


def server_argv(name: str, port: int, tls: bool, web_config: Path, textfile: Path, alt_python: str,
                alt_args: list[str]) -> list[str]:
    web = ["--web.listen-address", f"127.0.0.1:{port}", *(["--web.config.file", str(web_config)] if tls else [])]
    if name == "tunewatch":
        return [sys.executable, "-m", "tunewatch.cli.main", "serve", "--root", str(EXAMPLE), "--profile", PROFILE, *web]
    if name == "aiohttp":
        return [alt_python, str(HERE / "alt_aiohttp_serve.py"), "--metrics-file", str(textfile / "tunewatch.prom"),
                *web, *alt_args]
    binary = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    return [binary, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
            "--collector.textfile", f"--collector.textfile.directory={textfile}",
            *([f"--web.config.file={web_config}"] if tls else [])]


def measure(exporter: Path, scrapes: int, servers: list[str], modes: list[str], cases: list[str] | None,
            hard: int | None, alt_python: str, alt_args: list[str] | None = None) -> dict:
    hostile.raise_own_nofile(FLOOD * 3)
    env = _env(exporter)
    if not (shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")):
        servers = [s for s in servers if s != "node_exporter"]
    figures: dict = {"exporter": str(exporter), "scrapes": scrapes, "servers": servers, "nofile_hard": hard,
                     "alt_args": alt_args or [],
                     "loadavg_before": os.getloadavg(), "cases": {}, "malformed": {}, "extras": {}, "log_bytes": {}}
    with tempfile.TemporaryDirectory(prefix="tunewatch-bench-hostile-") as tmp:
        work = Path(tmp)
        textfile = work / "textfile"
        textfile.mkdir()
        done = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "scan", "--root", str(EXAMPLE), "--profile",
                               PROFILE, "--format", "prometheus", "--output", str(textfile / "tunewatch.prom")],
                              capture_output=True, text=True, timeout=120, env=env)
        if done.returncode not in (0, 2):
            raise SystemExit(f"scan --format prometheus failed: {done.stderr}")
        web_config = make_web_config(work)
        for tls in [m == "tls" for m in modes]:
            for name in servers:
                port = hostile.free_port()
                argv = server_argv(name, port, tls, web_config, textfile, alt_python, alt_args or [])
                log = work / f"{name}-{tls}.log"
                proc = start(argv, log, env, hard)
                try:
                    wait_ready(proc, port, tls, log)
                    for case, attack, tls_only in CASES:
                        if (tls_only and not tls) or (cases and case.split()[0] not in cases):
                            continue
                        label = f"{case}{' TLS+auth' if tls else ''}"
                        figures["cases"].setdefault(label, {})[name] = run_case(port, attack, tls, scrapes)
                        figures["cases"][label][name]["loadavg"] = os.getloadavg()[0]
                        time.sleep(1)  # let the closed floods drain before the next case
                    if not tls and (not cases or "malformed" in cases):
                        got = figures.setdefault("malformed_lines", {})[name] = malformed_lines(port)
                        wrong = [f"{status}: {line}" for (_, status), line in zip(hostile.MALFORMED, got)
                                 if not _right(line, status)]
                        figures["malformed"][name] = (len(hostile.MALFORMED) - len(wrong), wrong)
                        figures["extras"][name] = extras_answered(port)
                finally:
                    stop(proc)
                figures["log_bytes"][f"{name}{' TLS' if tls else ''}"] = hostile.log_bytes(str(log))
                figures.setdefault("log_tail", {})[f"{name}{' TLS' if tls else ''}"] = \
                    log.read_bytes()[-1500:].decode(errors="replace")
    figures["loadavg_after"] = os.getloadavg()
    return figures


def report(figures: dict) -> list[str]:
    names = figures.get("servers", ["tunewatch", "node_exporter"])
    lines = [f"tunewatch from {figures['exporter']}; {figures['scrapes']} fresh-connection scrapes per case, "
             f"soft fd limit 1024" + (f", hard {figures['nofile_hard']}" if figures.get("nofile_hard") else "") +
             (f", aiohttp {' '.join(figures['alt_args'])}" if figures.get("alt_args") else "") +
             f", {os.cpu_count()} CPUs, load average {figures['loadavg_before'][0]:.1f} before, "
             f"{figures['loadavg_after'][0]:.1f} after",
             f"{'case':24}" + "".join(f" | {n + ' ok %':>16} {'p50 ms':>7} {'p99 ms':>7}" for n in names) +
             "".join(f" | {n[:5]} p99/ne" for n in names if n != "node_exporter")]
    for case, by_server in figures["cases"].items():
        row = f"{case:24}"
        for name in names:
            f = by_server.get(name)
            row += (f" | {f['rate'] * 100:16.1f} {f['p50_ms']:7.1f} {f['p99_ms']:7.1f}" if f else f" | {'-':>32}")
        ne = by_server.get("node_exporter")
        for name in names:
            if name == "node_exporter":
                continue
            f = by_server.get(name)
            row += (f" | {f['p99_ms'] / max(ne['p99_ms'], 0.1):10.2f}x" if f and ne and f["ok"] and ne["ok"]
                    else f" | {'-':>11}")
        lines.append(row)
    for case, by_server in figures["cases"].items():
        for name, f in by_server.items():
            if f["errors"]:
                lines.append(f"  {case} / {name} failures: {f['errors']}")
    for name, (answered, wrong) in figures["malformed"].items():
        lines.append(f"malformed requests with their RFC status line, {name}: {answered}/{len(hostile.MALFORMED)}"
                     + (f"; wrong: {'; '.join(wrong)}" if wrong else ""))
    for name, (answered, wrong) in figures.get("extras", {}).items():
        lines.append(f"requests to serve (leading CRLF, 1.0 without Host, Expect: 100-continue), {name}: "
                     f"{answered}/{len(EXTRAS)}" + (f"; wrong: {'; '.join(wrong)}" if wrong else ""))
    by_server = figures.get("malformed_lines", {})
    if len(by_server) > 1:  # which case each server gets wrong, side by side
        lines.append(f"{'#':>2} {'request':42} {'RFC':>3}" + "".join(f" | {n:24}" for n in by_server))
        for i, (request, status) in enumerate(hostile.MALFORMED):
            shown = request[:40].decode(errors="replace").replace("\r", "\\r").replace("\n", "\\n")
            shown = shown.replace("\t", "\\t").replace("\x00", "\\0")
            lines.append(f"{i:2} {shown:42} {status:3}" + "".join(
                f" | {('' if _right(got[i], status) else '*') + got[i][:23]:24}" for got in by_server.values()))
    lines.append("log bytes: " + ", ".join(f"{k} {v}" for k, v in figures["log_bytes"].items()))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exporter", type=Path, default=REPO / "exporter",
                        help="directory holding the tunewatch package to measure (default: this checkout's)")
    parser.add_argument("--scrapes", type=int, default=60, help="scrapes per case and server (default: 60)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--servers", default="tunewatch,node_exporter",
                        help="comma-separated: tunewatch, aiohttp (benchmarks/alt_aiohttp_serve.py), node_exporter")
    parser.add_argument("--modes", default="plain,tls", help="plain, tls or both (default)")
    parser.add_argument("--cases", help="only these (first words: quiet,idle,half,hello,handshakes,malformed)")
    parser.add_argument("--nofile-hard", type=int,
                        help="start the servers with this hard fd limit too (1024: raising the soft limit cannot help, "
                             "accept() runs into EMFILE)")
    parser.add_argument("--alt-python", default=str(REPO / "build" / "altvenv" / "bin" / "python"),
                        help="interpreter with aiohttp for --servers aiohttp")
    parser.add_argument("--alt-arg", action="append", default=[],
                        help="passed on to the aiohttp prototype, e.g. --alt-arg=--keepalive-timeout=10")
    args = parser.parse_args(argv)
    figures = measure(args.exporter.resolve(), args.scrapes, args.servers.split(","), args.modes.split(","),
                      args.cases.split(",") if args.cases else None, args.nofile_hard, args.alt_python,
                      args.alt_arg)
    print("\n".join(report(figures)))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    tw = [c["tunewatch"] for c in figures["cases"].values() if "tunewatch" in c]
    return 0 if all(f["rate"] >= 0.99 for f in tw) else 1


if __name__ == "__main__":
    sys.exit(main())
