#!/usr/bin/env python3
"""Every output of every example snapshot, byte for byte, between two checkouts.

    python3 benchmarks/compare_outputs.py --base /work/main [--other DIR] [--keep DIR]

For each checkout (--base, and --other: this one by default) a child process with
PYTHONPATH=<checkout>/exporter runs, in process, `tunewatch scan --root <example>
--profile P --format F` for every example under tests/snapshots/examples, every profile
(auto and each shipped one), every format (text, json, junit, prometheus, html, xccdf,
arf), plus `--format prometheus --metrics.detail` and `export goss`, and writes each
output to a file. Then the two trees of files are compared after masking what changes from
run to run (scan start time and duration, ISO timestamps). Prints the number of outputs
compared and every difference (a unified diff, cut at 40 lines each); exit status 1 when
any output differs or is missing on one side. A speed-up must not change any of them.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
FORMATS = ("text", "json", "junit", "prometheus", "html", "xccdf", "arf")

# What differs between two runs of the same code (found by running one checkout twice).
VOLATILE = [
    (re.compile(r'("started_at": )[0-9.e+]+'), r"\1T"),
    (re.compile(r'("duration_seconds": )[0-9.e+-]+'), r"\1D"),
    (re.compile(r'^(tunewatch_(?:scan_duration_seconds|last_scan_timestamp_seconds)) \S+$', re.M), r"\1 T"),
    (re.compile(r'( time=")[0-9.e+-]+(")'), r"\1D\2"),
    (re.compile(r"\(\d+ checks, \d+ ms\)"), "(N checks, D ms)"),
    (re.compile(r" in \d+ ms( &middot;)"), r" in D ms\1"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"), "DATE-TIME UTC"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "ISO-TIME"),
]

# Runs inside the child, with the checkout's package first on sys.path.
CHILD = r"""
import contextlib, io, os, sys
from tunewatch.cli import main as cli
from tunewatch.content.catalog import Content
examples, out = sys.argv[1], sys.argv[2]
profiles = ["auto", *sorted(p for p in Content().profiles if p != "auto")]
formats = sys.argv[3].split(",")
for example in sorted(os.listdir(examples)):
    root = os.path.join(examples, example)
    if not os.path.isdir(root):
        continue
    for profile in profiles:
        runs = [(f, ["scan", "--root", root, "--profile", profile, "--format", f]) for f in formats]
        runs.append(("prometheus-detail", ["scan", "--root", root, "--profile", profile, "--format", "prometheus",
                                           "--metrics.detail"]))
        runs.append(("goss", ["export", "goss", "--root", root, "--profile", profile]))
        for name, argv in runs:
            buf, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
                code = cli.main(argv)
            with open(os.path.join(out, f"{example}__{profile}__{name}"), "w") as f:
                f.write(f"exit {code}\n{buf.getvalue()}\n--- stderr\n{err.getvalue()}")
"""


def render_all(checkout: str, examples: str, out: str) -> None:
    os.makedirs(out)
    env = dict(os.environ, PYTHONPATH=os.path.join(checkout, "exporter"), NO_COLOR="1")
    subprocess.run([sys.executable, "-c", CHILD, examples, out, ",".join(FORMATS)], env=env, check=True,
                   cwd=checkout)


def mask(text: str, checkout: str) -> str:
    text = text.replace(os.path.abspath(checkout), "<checkout>")  # e.g. the runbook link of html
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, metavar="DIR", help="checkout before (e.g. /work/main)")
    parser.add_argument("--other", default=CHECKOUT, metavar="DIR", help="checkout after (default: this one)")
    parser.add_argument("--keep", metavar="DIR", help="write the outputs under DIR and keep them")
    args = parser.parse_args(argv)
    work = args.keep or tempfile.mkdtemp(prefix="tunewatch-compare-")
    try:
        before, after = os.path.join(work, "before"), os.path.join(work, "after")
        # the same inputs at the same path for both (the root is part of every report)
        examples = os.path.join(work, "examples")
        shutil.copytree(os.path.join(CHECKOUT, "tests", "snapshots", "examples"), examples, symlinks=True)
        render_all(os.path.abspath(args.base), examples, before)
        render_all(os.path.abspath(args.other), examples, after)
        names = sorted(set(os.listdir(before)) | set(os.listdir(after)))
        bad = 0
        for name in names:
            texts = []
            for tree, checkout in ((before, args.base), (after, args.other)):
                path = os.path.join(tree, name)
                texts.append(mask(open(path, encoding="utf-8").read(), checkout) if os.path.exists(path) else None)
            if texts[0] == texts[1]:
                continue
            bad += 1
            if None in texts:
                print(f"{name}: only in {'after' if texts[0] is None else 'before'}")
                continue
            diff = list(difflib.unified_diff(texts[0].splitlines(), texts[1].splitlines(), "before", "after",
                                             lineterm="", n=1))
            print(f"{name}: differs\n" + "\n".join(diff[:40]))
        print(f"{len(names)} outputs compared ({args.base} vs {args.other}): "
              f"{'all identical (timestamps masked)' if not bad else f'{bad} differ'}")
        return 1 if bad else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
