#!/usr/bin/env python3
"""Fault cases with outcome and time, then the exporter load table, in one run.

    python3 benchmarks/faults.py [--no-fuse] [--no-load]

The cases are tests/faults/hazards.py's (the same ones tests/faults/ asserts): a FUSE file
system that never answers, mounted in a private mount namespace, reached by every link and
path shape in a snapshot (mountinfo: nfs) and on the live root (kernel: fuse.sshfs), collect
of both, the watchdog ending a scan blocked on an unlisted FUSE type; FIFOs, a /dev/zero
device node, 1 GiB sparse files, a 20,000-range cpulist; content bombs (billion laughs,
5,000-level nesting, 50 MB, a FIFO, a schema without $id). Each line: OK or BAD, the
seconds the case took (a subprocess each, interpreter start included) and what happened.
The FUSE cases need root, unshare(1) and /dev/fuse (skipped with the reason otherwise).

Then, when benchmarks/bench_load.py is present, its main() prints the HTTP load table
(the exporter beside node_exporter). Exit status 1 when a fault case is BAD.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _module(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up there (bench_load's @dataclass)
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-fuse", action="store_true", help="skip the FUSE cases")
    parser.add_argument("--no-load", action="store_true", help="skip bench_load.py")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.join(HERE, "..", "exporter"))
    hazards = _module("hazards", os.path.join(HERE, "..", "tests", "faults", "hazards.py"))
    work = tempfile.mkdtemp(prefix="tunewatch-faults-")
    bad = 0
    try:
        t0 = time.perf_counter()
        results = []
        why = None if not args.no_fuse else "--no-fuse"
        why = why or hazards.fuse_available()
        if why is None:
            results += hazards.fuse_cases(os.path.join(work, "fuse"))
        results += hazards.file_cases(work)
        print(f"{'':3} {'fault case':66} {'seconds':>8}  outcome")
        for r in results:
            ok, text = hazards.judge(r)
            bad += not ok
            print(f"{'OK' if ok else 'BAD':3} {r['name'][:66]:66} {r['seconds']:8.2f}  {text[:150]}")
        if why:
            print(f"(FUSE cases skipped: {why})")
        print(f"{len(results)} cases, {bad} bad, {time.perf_counter() - t0:.1f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.path.join(HERE, "bench_load.py")
    if not args.no_load and os.path.exists(load):
        print()
        sys.argv = [load]
        code = _module("bench_load", load).main()
        bad += bool(code)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
