#!/usr/bin/env python3
"""vSphere central mode on a vcsim fleet against `govc object.collect` of the same properties.

    python3 benchmarks/bench_vsphere.py [--vms 1000 2000] [--base DIR] [--python PY] [--runs 1]

For each fleet size a vcsim (govmomi's simulator; `.ci/install-go-tools` builds it) serves one
cluster of 16 hosts plus a standalone host (17 ESXi hosts) with the VMs split over their two
resource pools, on 127.0.0.1, with SOAP tracing on so that every request is counted.

  govc      `govc object.collect` of the properties central mode reads: the VMs' name,
            config.uuid, config.extraConfig, config.cpuAffinity, config.hardware.device and
            runtime.host, and the hosts' name, config.hyperThread, config.powerSystemInfo
            (two commands, timed together): the baseline of the same run
  central   one central-mode fleet scan (vsphere.central.scan_fleet, what each `serve`
            scan runs) of profile bigip-ve-esxi over every VM (`--vsphere.vm '*'`), in a
            fresh interpreter: wall time and SOAP requests
  rss       the same fleet served by `tunewatch serve`: its RSS after the first scan and
            after 1,000 scrapes of /metrics (loopback, sequential)

Targets: central / govc <= 2 and <= 60 SOAP requests at 1,000 VMs; serve RSS after the
scrapes <= 1.2x after the first scan. `--python` is the interpreter of a venv with tunewatch
installed as users install it (`pip install .`); by default this checkout's exporter/ on
PYTHONPATH. `--base DIR` runs another checkout's central scan too (before/after).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
TOOLS = os.environ.get("TUNEWATCH_GO_TOOLS", "/usr/local/lib/tunewatch-go-tools/bin")
USER, PASSWORD = "bench", "bench-pw"
VM_PROPS = ("name", "config.uuid", "config.extraConfig", "config.cpuAffinity", "config.hardware.device",
            "runtime.host")
HOST_PROPS = ("name", "config.hyperThread", "config.powerSystemInfo")
SCAN = r"""
import sys, time
from tunewatch.content.catalog import Content
from tunewatch.vsphere.central import scan_fleet
from tunewatch.vsphere.config import load_config
content = Content()
profile = content.resolve("bigip-ve-esxi")
cfg = load_config(sys.argv[1])
t0 = time.perf_counter()
fleet = scan_fleet(cfg, ["*"], content, profile)
elapsed = time.perf_counter() - t0
assert fleet.error is None, fleet.error
print(elapsed, len(fleet.vms))
"""


def tool(name: str) -> str:
    for path in (os.path.join(TOOLS, name), shutil.which(name) or ""):
        if path and os.access(path, os.X_OK):
            return path
    sys.exit(f"{name} not found (run .ci/install-go-tools)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Vcsim:
    def __init__(self, vms: int, workdir: str):
        self.port = free_port()
        self.trace = os.path.join(workdir, "trace.log")
        self.log = open(os.path.join(workdir, "vcsim.log"), "w")
        self.proc = subprocess.Popen(
            [tool("vcsim"), "-l", f"127.0.0.1:{self.port}", "-username", USER, "-password", PASSWORD,
             "-cluster", "1", "-host", "16", "-standalone-host", "1", "-vm", str(vms // 2),
             "-trace", "-trace-file", self.trace], stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if "GOVC_URL=" in open(self.log.name).read():
                return
            if self.proc.poll() is not None:
                sys.exit(f"vcsim exited: {open(self.log.name).read()[-2000:]}")
            time.sleep(0.5)
        self.stop()
        sys.exit("vcsim did not start within 300 s")

    def requests(self) -> int:
        with open(self.trace, "rb") as f:
            return f.read().count(b"Request: ")

    def govc(self, *args: str) -> None:
        env = {**os.environ, "GOVC_URL": f"https://{USER}:{PASSWORD}@127.0.0.1:{self.port}/sdk",
               "GOVC_INSECURE": "1"}
        subprocess.run([tool("govc"), *args], env=env, check=True, stdout=subprocess.DEVNULL, timeout=600)

    def config(self, workdir: str) -> str:
        pw = os.path.join(workdir, "pw")
        with open(pw, "w") as f:
            f.write(PASSWORD + "\n")
        path = os.path.join(workdir, "vsphere.yml")
        with open(path, "w") as f:
            f.write(f"url: https://127.0.0.1:{self.port}/sdk\nusername: {USER}\npassword_file: {pw}\n"
                    "insecure_skip_verify: true\ntimeout: 600s\n")
        return path

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def timed_govc(sim: Vcsim) -> tuple[float, int]:
    before = sim.requests()
    t0 = time.perf_counter()
    sim.govc("object.collect", "-s", "-type", "m", "/", *VM_PROPS)
    sim.govc("object.collect", "-s", "-type", "h", "/", *HOST_PROPS)
    return time.perf_counter() - t0, sim.requests() - before


def timed_central(sim: Vcsim, python: str, exporter: str | None, config: str) -> tuple[float, int]:
    env = dict(os.environ)
    if exporter:
        env["PYTHONPATH"] = exporter
    before = sim.requests()
    done = subprocess.run([python, "-c", SCAN, config], env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode:
        sys.exit(f"central scan failed: {done.stderr[-3000:]}")
    elapsed, _count = done.stdout.split()
    return float(elapsed), sim.requests() - before


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def tree_rss_kb(pid: int) -> int:
    """The serve process and its scan children (central mode scans in a child)."""
    total = rss_kb(pid)
    for child in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split():
        try:
            total += rss_kb(int(child))
        except (OSError, AttributeError):
            pass
    return total


def serve_rss(sim: Vcsim, python: str, exporter: str | None, config: str, scrapes: int) -> tuple[int, int]:
    env = dict(os.environ)
    if exporter:
        env["PYTHONPATH"] = exporter
    port = free_port()
    proc = subprocess.Popen([python, "-m", "tunewatch", "serve", "--profile", "bigip-ve-esxi", "--vsphere.config",
                             config, "--vsphere.vm", "*", "--web.listen-address", f"127.0.0.1:{port}",
                             "--scan.interval", "1h", "--scan.timeout", "1200s"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 1200
        while time.monotonic() < deadline:
            try:
                body = urllib.request.urlopen(url, timeout=30).read()
                if b"tunewatch_vsphere_vms{" in body:
                    break
            except OSError:
                pass
            time.sleep(1)
        first = rss_kb(proc.pid)
        for _ in range(scrapes):  # bounded, sequential, loopback
            urllib.request.urlopen(url, timeout=30).read()
        return first, rss_kb(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vms", type=int, nargs="+", default=[1000, 2000])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--base", help="another checkout whose central scan also runs (before/after)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--scrapes", type=int, default=1000)
    ap.add_argument("--no-serve", action="store_true", help="skip the serve RSS measurement")
    args = ap.parse_args()
    exporter = None if args.python != sys.executable else os.path.join(CHECKOUT, "exporter")
    missed = False
    for vms in args.vms:
        with tempfile.TemporaryDirectory(prefix="tunewatch-bench-vsphere-") as work:
            sim = Vcsim(vms, work)
            try:
                config = sim.config(work)
                govc, central, base = [], [], []
                for _ in range(args.runs):
                    govc.append(timed_govc(sim))
                    central.append(timed_central(sim, args.python, exporter, config))
                    if args.base:
                        base.append(timed_central(sim, sys.executable, os.path.join(args.base, "exporter"),
                                                  config))
                g = statistics.median(t for t, _ in govc)
                c = statistics.median(t for t, _ in central)
                calls = central[0][1]
                print(f"{vms} VMs, 17 hosts: govc object.collect {g:.2f} s ({govc[0][1]} requests); "
                      f"central scan {c:.2f} s ({calls} requests) = {c / g:.2f}x govc (target <= 2, <= 60 requests)")
                missed |= vms == 1000 and (c / g > 2 or calls > 60)
                if base:
                    b = statistics.median(t for t, _ in base)
                    print(f"    base {args.base}: {b:.2f} s ({base[0][1]} requests) = {b / g:.2f}x govc; "
                          f"after/before {c / b:.2f}")
                if not args.no_serve and vms == args.vms[0]:
                    first, after = serve_rss(sim, args.python, exporter, config, args.scrapes)
                    print(f"    serve RSS {first / 1024:.1f} MB after the first scan, {after / 1024:.1f} MB after "
                          f"{args.scrapes} scrapes = {after / first:.2f}x (target <= 1.2)")
                    missed |= after / first > 1.2
            finally:
                sim.stop()
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
