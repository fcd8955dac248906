#!/usr/bin/env python3
"""Wall time of the tunewatch CLI against `python -c pass`, goss, and another checkout.

    python3 benchmarks/bench_cli.py [--base /work/main] [--runs 15] [--no-live] [--system]

All figures are medians of N interleaved runs of the same interpreter, in one run, so the
ratios hold on a loaded machine. The interpreter is a bare venv of sys.executable made in a
temp dir (`venv --without-pip`), with this interpreter's site-packages on PYTHONPATH for the
dependencies: as a venv install runs, without the `.pth` start-up hooks a global
site-packages may carry (here one imports certifi: +20 ms on every Python command).
`--system` times sys.executable itself instead. `--installed` times tunewatch as users install
it: each checkout `pip install`ed (not editable) into a venv of its own with its dependencies
from the index, run as the venv's `bin/tunewatch` script, against that venv's `python -c pass`
(after the content cache's racy window, so the warm-up writes the cache as a user's second
run would find it).

  pass        `python -c pass`: what any Python command costs here
  json        `tunewatch scan --root <example> --format json` (tests/snapshots/examples/
              azure-m-rebooted)                          target: <= 5x pass (--installed: <= 4x)
  prometheus  the same with `--format prometheus`        target: <= json + 10 ms
  live        `tunewatch scan --format json` of this host (root /)
  goss        `goss -g F validate` of this host with F = `tunewatch export goss` (goss from
              PATH or ../shared/tools)                   target: live <= 4x goss

With --base DIR (another checkout, e.g. /work/main) each tunewatch case also runs with
PYTHONPATH=DIR/exporter, interleaved with this checkout's, and the table shows both and
after/before. Both packages are byte-compiled first, as an install leaves them. Exit status
1 when a target of this checkout is missed.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
EXAMPLE = os.path.join(CHECKOUT, "tests", "snapshots", "examples", "azure-m-rebooted")
PASS_TARGET, GOSS_TARGET, PROMETHEUS_EXTRA_MS = 5.0, 4.0, 10.0
INSTALLED_PASS_TARGET = 4.0  # --installed: the venv's bin/tunewatch / the venv's python -c pass


def find_goss() -> str | None:
    return shutil.which("goss") or next(
        (p for p in (os.path.join(CHECKOUT, "..", "shared", "tools", "goss"), "/work/shared/tools/goss")
         if os.access(p, os.X_OK)), None)


PYTHON, SITE = sys.executable, ""


def env_for(checkout: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.path.join(checkout, "exporter") + SITE)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


CPU: dict[tuple, list[float]] = {}  # the same runs' CPU (user+system, waited-for children included)


def timed(argv: list[str], env: dict | None = None) -> float:
    cpu, t = _children_cpu(), time.perf_counter()
    run = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - t
    CPU.setdefault(tuple(argv) + tuple(sorted((env or {}).items())), []).append(_children_cpu() - cpu)
    if run.returncode not in (0, 1, 2) or (run.returncode == 1 and b"error" in run.stderr):
        raise SystemExit(f"{' '.join(argv[:6])} failed ({run.returncode}): {run.stderr.decode()[-400:]}")
    return elapsed


def tw(*args: str) -> list[str]:
    return [PYTHON, "-m", "tunewatch", *args]


SCRIPTS: dict[str, str] = {}  # --installed: checkout name -> its venv's bin/tunewatch


def installed_venvs(trees: dict[str, str], work: str) -> str:
    """A venv per checkout with `pip install CHECKOUT` (a wheel built and installed, as a user
    gets it); returns the last venv's python (the `pass` baseline)."""
    python = ""
    for name, tree in trees.items():
        venv = os.path.join(work, f"venv-{name}")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        python = os.path.join(venv, "bin", "python")
        subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", tree], check=True,
                       stdout=subprocess.DEVNULL)
        SCRIPTS[name] = os.path.join(venv, "bin", "tunewatch")
    # The content cache trusts no file changed in the last RACY_NS (content/cachekey.py): a
    # warm-up right after the install would validate without saving, and the first timed
    # runs (~200 ms each) would too. Wait until the newest installed file is old enough.
    sys.path.insert(0, os.path.join(CHECKOUT, "exporter"))
    from tunewatch.content.cachekey import RACY_NS
    time.sleep(RACY_NS / 1e9 + 0.2)
    return python


def installed_env() -> dict:
    env = dict(os.environ)
    for var in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE"):
        env.pop(var, None)
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", metavar="DIR", help="another checkout to compare (e.g. /work/main)")
    parser.add_argument("--runs", type=int, default=15, help="runs per case, median taken (default 15)")
    parser.add_argument("--no-live", action="store_true", help="skip the live-host and goss cases")
    parser.add_argument("--system", action="store_true", help="time sys.executable, not a bare venv of it")
    parser.add_argument("--installed", action="store_true",
                        help="pip install each checkout (not editable) into its own venv and time its bin/tunewatch")
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="tunewatch-bench-cli-")
    try:
        return run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, work: str) -> int:
    global PYTHON, SITE
    if args.installed:
        pass  # below, once the checkouts are known
    elif not args.system:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", os.path.join(work, "venv")], check=True)
        PYTHON = os.path.join(work, "venv", "bin", "python")
        SITE = os.pathsep + os.pathsep.join(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))

    trees = {"after": CHECKOUT}
    if args.base:
        trees = {"before": os.path.abspath(args.base), **trees}
    if args.installed:
        PYTHON = installed_venvs(trees, work)
    for tree in trees.values():
        compileall.compile_dir(os.path.join(tree, "exporter", "tunewatch"), quiet=1)
    cases = {"json": ["scan", "--root", EXAMPLE, "--format", "json"],
             "prometheus": ["scan", "--root", EXAMPLE, "--format", "prometheus"]}
    goss = None if args.no_live else find_goss()
    commands: dict[tuple[str, str], tuple[list[str], dict | None]] = {("pass", "-"): ([PYTHON, "-c", "pass"], None)}
    if not args.no_live:
        cases["live"] = ["scan", "--format", "json"]
    for name, tree in trees.items():
        for case, cargs in cases.items():
            commands[(case, name)] = ((SCRIPTS[name], *cargs), installed_env()) if args.installed else \
                (tw(*cargs), env_for(tree))
    if goss:
        gossfile = os.path.join(work, "goss.yaml")
        export = [SCRIPTS["after"]] if args.installed else tw()
        subprocess.run([*export, "export", "goss", "--output", gossfile],
                       env=installed_env() if args.installed else env_for(CHECKOUT), check=True)
        commands[("goss", "-")] = ([goss, "-g", gossfile, "validate", "--format", "json"], None)
    for argv_, env in commands.values():  # warm-up: page cache, content cache, bytecode
        timed(argv_, env)
    samples: dict[tuple[str, str], list[float]] = {k: [] for k in commands}
    for _ in range(args.runs):  # interleaved: every case sees the same load
        for key, (argv_, env) in commands.items():
            samples[key].append(timed(argv_, env))
    ms = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
    cpu_ms = {k: statistics.median(CPU[tuple(a) + tuple(sorted((e or {}).items()))][1:]) * 1e3
              for k, (a, e) in commands.items()}

    kind = ", pip-installed venvs" if args.installed else "" if args.system else ", bare venv"
    print(f"{PYTHON} (Python {sys.version.split()[0]}{kind}), {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.2f}; median of {args.runs} interleaved runs, ms")
    names = list(trees)
    print(f"{'case':<12}" + "".join(f"{n + ' ms':>12}" for n in names) + (f"{'after/before':>14}" if args.base else "")
          + "".join(f"{n + ' CPU ms':>14}" for n in names))
    for case in ["pass", *cases, *(["goss"] if goss else [])]:
        keys = [(case, "-")] * len(names) if (case, "-") in ms else [(case, n) for n in names]
        row, cpu = [ms[k] for k in keys], [cpu_ms[k] for k in keys]
        ratio = f"{row[1] / row[0]:14.2f}" if args.base and keys[0] != keys[1] else " " * 14 if args.base else ""
        print(f"{case:<12}" + "".join(f"{v:12.1f}" for v in row) + ratio + "".join(f"{v:14.1f}" for v in cpu))

    ok = True
    print("\ntargets (this checkout" + (", before in brackets)" if args.base else ")"))

    def target(label: str, value: float, limit: float, unit: str, before: float | None) -> None:
        nonlocal ok
        met = value <= limit
        ok &= met
        was = f" [{before:.2f}{unit}]" if before is not None else ""
        print(f"  {label:<44} {value:6.2f}{unit}{was}  target <= {limit:g}{unit}  {'OK' if met else 'MISSED'}")

    def of(case: str, name: str = "after", table: dict = ms) -> float:
        return table[(case, name)]

    before = "before" if args.base else None
    target("scan --format json (example) / python -c pass", of("json") / of("pass", "-"),
           INSTALLED_PASS_TARGET if args.installed else PASS_TARGET, "x",
           before and of("json", before) / of("pass", "-"))
    target("--format prometheus - --format json", of("prometheus") - of("json"), PROMETHEUS_EXTRA_MS, " ms",
           before and of("prometheus", before) - of("json", before))
    if goss:
        target("live scan --format json / goss validate", of("live") / of("goss", "-"), GOSS_TARGET, "x",
               before and of("live", before) / of("goss", "-"))
    elif not args.no_live:
        print("  live / goss: no goss binary on PATH or in ../shared/tools (not measured)")
    # CPU time does not grow with other jobs' load the way wall time does: the same ratios on
    # CPU say what the targets would read on a quiet machine (not judged).
    cpu = [f"json/pass {of('json', table=cpu_ms) / of('pass', '-', cpu_ms):.2f}x",
           f"prometheus-json {of('prometheus', table=cpu_ms) - of('json', table=cpu_ms):.1f} ms"]
    if goss:
        cpu.append(f"live/goss {of('live', table=cpu_ms) / of('goss', '-', cpu_ms):.2f}x")
    print("  same ratios on CPU time (user+system, not judged): " + ", ".join(cpu))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
