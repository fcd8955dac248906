#!/usr/bin/env python3
"""Scan time of the big host against the cost of just reading what the scan reads.

    python3 benchmarks/bench_scan.py [--runs N] [--profile-top K] [--keep DIR]

Builds benchmarks/gen_big_host.py's 416-CPU host in a temp dir, then measures in one run:
  1. baseline: open and read every file the scan reads and list every directory it lists
     (recorded once by wrapping FS.read_text/FS.listdir), best of N;
  2. in-process scan: engine.scan(content, profile, root) with Content loaded once outside
     the timer, best of N and median;
  3. CLI: `tunewatch scan --root DIR --profile P --format json` as a subprocess, wall time
     best of 5 (interpreter start, imports, content load included).
Prints a table, the ratio scan/baseline (target <= 3) and the CLI wall time (target < 1 s).
With --profile-top K (or when the ratio target is missed) prints the top K functions of a
cProfile of one scan by cumulative and by own time. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RATIO_TARGET, CLI_TARGET_S = 3.0, 1.0


def _gen():
    spec = importlib.util.spec_from_file_location("gen_big_host", os.path.join(HERE, "gen_big_host.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def record_reads(content, profile, root: str) -> tuple[list[str], list[str]]:
    """Real paths of the files the scan reads and the directories it lists (one traced scan)."""
    from tunewatch import engine
    from tunewatch.fs import FS
    files, dirs = [], []
    read_text, listdir = FS.read_text, FS.listdir

    def traced_read(self, rel):
        files.append(self.path(rel))
        return read_text(self, rel)

    def traced_list(self, rel):
        dirs.append(self.path(rel))
        return listdir(self, rel)

    FS.read_text, FS.listdir = traced_read, traced_list
    try:
        engine.scan(content, profile, root)
    finally:
        FS.read_text, FS.listdir = read_text, listdir
    return list(dict.fromkeys(files)), list(dict.fromkeys(dirs))


def baseline_once(files: list[str], dirs: list[str]) -> float:
    t0 = time.perf_counter()
    for d in dirs:
        try:
            sorted(os.listdir(d))
        except OSError:
            pass
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                f.read()
        except OSError:
            pass
    return time.perf_counter() - t0


def best_and_median(fn, runs: int) -> tuple[float, float]:
    times = [fn() for _ in range(runs)]
    return min(times), statistics.median(times)


def cli_wall(root: str, profile_id: str, runs: int = 5) -> float:
    exe = shutil.which("tunewatch")
    cmd = [exe] if exe else [sys.executable, "-m", "tunewatch.cli"]
    cmd += ["scan", "--root", root, "--profile", profile_id, "--format", "json"]
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        best = min(best, time.perf_counter() - t0)
        if run.returncode not in (0, 2):
            raise SystemExit(f"tunewatch scan failed ({run.returncode}): {run.stderr.decode()[-400:]}")
    return best


def profile_scan(content, profile, root: str, top: int) -> str:
    from tunewatch import engine
    prof = cProfile.Profile()
    prof.enable()
    engine.scan(content, profile, root)
    prof.disable()
    out = io.StringIO()
    for key in ("cumulative", "tottime"):
        out.write(f"--- cProfile of one scan, top {top} by {key} ---\n")
        pstats.Stats(prof, stream=out).strip_dirs().sort_stats(key).print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="repetitions for best/median (default 15)")
    parser.add_argument("--profile-top", type=int, default=0, metavar="K", help="print a cProfile top K")
    parser.add_argument("--keep", metavar="DIR", help="build the host in DIR and keep it")
    args = parser.parse_args(argv)

    from tunewatch import engine
    from tunewatch.content import Content
    gen = _gen()
    work = args.keep or tempfile.mkdtemp(prefix="tunewatch-bench-")
    try:
        t0 = time.perf_counter()
        root = gen.build(os.path.join(work, "host") if not args.keep else work)
        build_s = time.perf_counter() - t0
        content = Content()
        profile = content.resolve(gen.PROFILE)
        files, dirs = record_reads(content, profile, root)
        size = sum(os.path.getsize(p) for p in files if os.path.isfile(p))
        baseline_once(files, dirs)  # warm the page cache
        base_best, base_med = best_and_median(lambda: baseline_once(files, dirs), args.runs)

        def one_scan() -> float:
            t = time.perf_counter()
            engine.scan(content, profile, root)
            return time.perf_counter() - t

        result = engine.scan(content, profile, root)
        scan_best, scan_med = best_and_median(one_scan, args.runs)
        cli = cli_wall(root, gen.PROFILE)
        ratio = scan_best / base_best
        s = result.summary
        print(f"big host: {len(result.cpu_node)} CPUs, {len(result.nics)} NICs in scope, profile {gen.PROFILE}, "
              f"built in {build_s:.1f} s")
        print(f"scan reads {len(files)} files ({size / 1e6:.1f} MB) and lists {len(dirs)} directories; "
              f"result: {', '.join(f'{v} {k}' for k, v in s.items())}")
        print()
        print(f"{'measure':34} {'best ms':>9} {'median ms':>10}")
        print(f"{'baseline (read what scan reads)':34} {base_best * 1e3:9.1f} {base_med * 1e3:10.1f}")
        print(f"{'engine.scan in process':34} {scan_best * 1e3:9.1f} {scan_med * 1e3:10.1f}")
        print(f"{'CLI scan --format json (wall)':34} {cli * 1e3:9.1f} {'':>10}")
        print()
        ok_ratio, ok_cli = ratio <= RATIO_TARGET, cli < CLI_TARGET_S
        print(f"ratio scan/baseline: {ratio:.2f} (target <= {RATIO_TARGET:g}) {'OK' if ok_ratio else 'MISSED'}")
        print(f"CLI wall time: {cli:.3f} s (target < {CLI_TARGET_S:g} s on 2 cores, this machine has "
              f"{os.cpu_count()} CPUs) {'OK' if ok_cli else 'MISSED'}")
        if args.profile_top or not ok_ratio:
            print()
            print(profile_scan(content, profile, root, args.profile_top or 25))
        return 0 if ok_ratio and ok_cli else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
