#!/usr/bin/env python3
"""Series and bytes per host that tunewatch exports, default and with --metrics.detail.

    python3 benchmarks/bench_series.py [--sizes 64,208,416,832,1664] [--json FILE]

Scans (real engine, in process) every example snapshot of tests/snapshots/examples with the
profile its README names, and benchmarks/gen_big_host.py's host built at each CPU count
(4 NUMA nodes up to 208 CPUs, then 52 CPUs per node: 416 = the benchmark host of 8 nodes,
1,664 = 32 nodes; same 4 AN pairs x 64 data IRQs and 50 NFS mounts), with its profile
`azure-sas-grid-anf` and with `auto`. For each it renders `/metrics` as `tunewatch serve`
does (per-scan series + serve-only series) and prints the number of series, bytes per
scrape, and bytes gzipped (gzip level 6 of the same text, done here: what a scraper that
sends `Accept-Encoding: gzip` transfers), default and with detail. The baseline of each
row is its own default rendering: the ratio columns are detail/default and plain/gzip.
Budgets (docs/metrics.md): <= 150 series by default on the 416-CPU host, <= 100 where no
check applies; exit status 1 when one is missed.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "exporter"))

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from tunewatch.scan import engine  # noqa: E402
from tunewatch.content.catalog import Content  # noqa: E402
from tunewatch.outputs.prometheus import make_renderer  # noqa: E402
from tunewatch.serve.scanloop import ScanState  # noqa: E402

EXAMPLES = {"azure-m-tuned": "azure-sap-hana", "azure-m-rebooted": "azure-sap-hana",
            "vmware-vmxnet3-default": "vmware-sap-hana", "vmware-vmxnet3-tuned": "vmware-sap-hana",
            "sas-anf": "azure-sas-grid-anf", "bigip-ve-esxi": "bigip-ve-esxi"}
BIG_HOST_BUDGET, NOTHING_APPLIES_BUDGET = 150, 100


def load_gen():
    spec = importlib.util.spec_from_file_location("gen_big_host", HERE / "gen_big_host.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def scrape(scan, detail: bool) -> bytes:
    state = ScanState(result=scan, result_completed_at=scan.started_at + scan.duration_seconds,
                      result_duration_seconds=scan.duration_seconds, scans_total=1, last_success=True,
                      first_scan_done=True)
    return make_renderer(detail=detail)(state)


def measure(name: str, profile: str, scan) -> dict:
    row = {"host": name, "profile": profile}
    for mode, detail in (("default", False), ("detail", True)):
        body = scrape(scan, detail)
        row[mode] = {"series": sum(len(f.samples) for f in text_string_to_metric_families(body.decode())),
                     "bytes": len(body), "gzip_bytes": len(gzip.compress(body, 6))}
    return row


def sized_host(gen, directory: Path, cpus: int) -> str:
    nodes = 4 if cpus <= 208 else cpus // 52
    gen.NODES, gen.PER_NODE, gen.NCPU = nodes, cpus // nodes, cpus
    return gen.build(str(directory))


def nothing_applies(directory: Path, cpus: int) -> str:
    """A host of `cpus` CPUs where no check applies: no NIC, no NFS, no VMware files."""
    (directory / "sys/devices/system/cpu").mkdir(parents=True)
    (directory / "sys/devices/system/cpu/online").write_text(f"0-{cpus - 1}\n")
    per = 52 if cpus >= 52 else cpus
    for node in range(max(cpus // per, 1)):
        (directory / f"sys/devices/system/node/node{node}").mkdir(parents=True)
        (directory / f"sys/devices/system/node/node{node}/cpulist").write_text(
            f"{node * per}-{node * per + per - 1}\n")
    (directory / "proc").mkdir()
    (directory / "proc/stat").write_text("cpu  1 2 3 4\nbtime 1700000000\n")
    return str(directory)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="64,208,416,832,1664", help="CPU counts of the generated host")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args()
    content = Content()
    gen = load_gen()
    rows = []
    for name, profile in EXAMPLES.items():
        root = REPO / "tests" / "snapshots" / "examples" / name
        rows.append(measure(name, profile, engine.scan(content, content.resolve(profile), str(root))))
    with tempfile.TemporaryDirectory(prefix="bench-series-") as tmp:
        for cpus in (int(n) for n in args.sizes.split(",")):
            root = sized_host(gen, Path(tmp) / f"big{cpus}", cpus)
            for profile in (gen.PROFILE, "auto"):
                rows.append(measure(f"big host {cpus} CPUs", profile,
                                    engine.scan(content, content.resolve(profile), root)))
            empty = nothing_applies(Path(tmp) / f"empty{cpus}", cpus)
            rows.append(measure(f"nothing applies {cpus} CPUs", "auto",
                                engine.scan(content, content.resolve("auto"), empty)))
    print(f"{'host':28} {'profile':20} {'series':>7} {'bytes':>8} {'gzip':>6} | {'detail':>7} {'bytes':>8} "
          f"{'gzip':>7} | {'detail/default':>14} {'plain/gzip':>10}")
    missed = []
    for r in rows:
        d, x = r["default"], r["detail"]
        print(f"{r['host']:28} {r['profile']:20} {d['series']:7d} {d['bytes']:8d} {d['gzip_bytes']:6d} | "
              f"{x['series']:7d} {x['bytes']:8d} {x['gzip_bytes']:7d} | {x['series'] / d['series']:13.1f}x "
              f"{d['bytes'] / d['gzip_bytes']:9.1f}x")
        if r["host"] == "big host 416 CPUs" and d["series"] > BIG_HOST_BUDGET:
            missed.append(f"{r['host']} {r['profile']}: {d['series']} > {BIG_HOST_BUDGET}")
        if r["host"].startswith("nothing applies") and d["series"] > NOTHING_APPLIES_BUDGET:
            missed.append(f"{r['host']}: {d['series']} > {NOTHING_APPLIES_BUDGET}")
    print("series include the 5 serve-only series (scan health counters); a textfile has 5 fewer.")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    for m in missed:
        print("budget missed:", m, file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
