"""Run the tunewatch command line of this checkout in a subprocess (bounded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXPORTER = str(Path(__file__).resolve().parents[2] / "exporter")


def tunewatch(*args: str, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": EXPORTER, **(env or {})}
    return subprocess.run([sys.executable, "-m", "tunewatch", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=full_env)


def scan_json(*args: str, **kw) -> tuple[int, dict]:
    done = tunewatch("scan", "--format", "json", *args, **kw)
    assert done.stdout, f"no report (exit {done.returncode}): {done.stderr}"
    return done.returncode, json.loads(done.stdout)


def verdicts(report: dict) -> dict[str, dict[str, str]]:
    """{check: {object: status}}"""
    return {c["check"]: {o["object"]: o["status"] for o in c["objects"]} for c in report["results"]}


def messages(report: dict) -> list[str]:
    return [o["message"] for c in report["results"] for o in c["objects"]]
