"""Validated content is cached by digest (a scan then loads no YAML parser, no jsonschema,
no web stack); a damaged or unwritable cache only means validating again. And the scan's
own deadline: checks that still need facts after it are `error`, not missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tunewatch.scan import engine
from tunewatch.scan import hangsafe
from tunewatch.content.catalog import Content, cache_dir

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "snapshots", "examples", "azure-m-rebooted")
HEAVY = {"yaml", "jsonschema", "referencing", "ssl", "bcrypt", "http", "socketserver"}
PROBE = """
import sys
from tunewatch.cli import main as cli
rc = cli.main(["scan", "--root", sys.argv[1], "--format", "json", "--output", sys.argv[2]])
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[3].split(",")))
mine = sorted(m for m in sys.modules if m.startswith("tunewatch.") and m.split(".")[1] in ("serve", "web", "scanloop"))
print(rc, ",".join(heavy + mine))
"""


def _scan(tmp_path, cache_home) -> tuple[int, list[str], dict]:
    out = tmp_path / "report.json"
    run = subprocess.run([sys.executable, "-c", PROBE, EXAMPLE, str(out), ",".join(HEAVY)], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "XDG_CACHE_HOME": str(cache_home)})
    assert run.returncode == 0, run.stderr
    rc, heavy = run.stdout.split(" ", 1)
    report = json.loads(out.read_text())
    return int(rc), [m for m in heavy.strip().split(",") if m], {r["check"]: r["status"] for r in report["results"]}


def test_second_scan_uses_the_cache_and_no_heavy_imports(tmp_path):
    cache = tmp_path / "cache"
    rc1, heavy1, verdicts1 = _scan(tmp_path, cache)
    assert "jsonschema" in heavy1  # the first run validated
    assert len(os.listdir(cache / "tunewatch")) == 1
    rc2, heavy2, verdicts2 = _scan(tmp_path, cache)
    assert heavy2 == [] and (rc2, verdicts2) == (rc1, verdicts1)


def test_damaged_or_unwritable_cache_means_validating_again(tmp_path):
    cache = tmp_path / "cache"
    _, _, want = _scan(tmp_path, cache)
    (entry,) = (cache / "tunewatch").iterdir()
    for damage in (b"", b"\x00garbage", entry.read_bytes()[:100]):
        entry.write_bytes(damage)
        _, heavy, got = _scan(tmp_path, cache)
        assert got == want and "jsonschema" in heavy
    entry.unlink()
    os.mkfifo(entry)  # a FIFO where the cache was: no cache, no hang
    _, heavy, got = _scan(tmp_path, cache)
    assert got == want and "jsonschema" in heavy
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    _, heavy, got = _scan(tmp_path, blocked)
    assert got == want and "jsonschema" in heavy


def test_cached_content_resolves_like_validated_content(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    fresh = Content(use_cache=False)
    Content()  # writes the cache
    cached = Content()
    assert cached._vars_checked and cached._validator_table is None  # came from the cache
    assert cache_dir() == str(tmp_path / "tunewatch") and cached.digest == fresh.digest
    for pid in fresh.profiles:
        a, b = fresh.resolve(pid), cached.resolve(pid)
        assert [(s.check.id, s.vars) for s in a.checks] == [(s.check.id, s.vars) for s in b.checks] and a.scope == b.scope


def test_a_passed_deadline_makes_checks_that_need_facts_errors():
    content = Content()
    profile = content.resolve("azure-sap-hana")
    result = engine.scan(content, profile, EXAMPLE, timeout=0)
    messages = [o.message for r in result.results for o in r.objects if o.status == "error"]
    assert messages and all("scan timed out" in m for m in messages)
    assert {r.status for r in result.results} <= {"error", "notapplicable"}


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "in-process"])
def test_watchdog_returns_every_check_in_time(monkeypatch, fork):
    monkeypatch.setattr(hangsafe, "needs_watchdog", lambda root, mountinfo=None: fork)
    content = Content()
    profile = content.resolve("azure-sap-hana")
    result = engine.scan_with_watchdog(content, profile, EXAMPLE, timeout=60)
    plain = engine.scan(content, profile, EXAMPLE)
    assert not result.timed_out and result.host == plain.host and result.cpu_node == plain.cpu_node
    assert [(r.check, r.status) for r in result.results] == [(r.check, r.status) for r in plain.results]


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "in-process"])
def test_watchdog_reports_a_crashed_scan_as_such(monkeypatch, fork):
    """Not every missing result is a timeout: a scan process that dies says so."""
    monkeypatch.setattr(hangsafe, "needs_watchdog", lambda root, mountinfo=None: fork)
    content = Content()
    profile = content.resolve("azure-sap-hana")

    def crash(*args):
        raise SystemExit(3)

    monkeypatch.setattr(engine, "evaluate_check", crash)
    result = engine.scan_with_watchdog(content, profile, EXAMPLE, timeout=60)
    assert not result.timed_out and len(result.results) == len(profile.checks)
    assert all("ended without deciding it" in r.objects[0].message for r in result.results)
