"""Never hang, never blow up: hung network mounts reached by every link shape, FIFOs,
device nodes, huge files and content bombs end in bounded time with `error` results (facts)
or exit 1 naming file and reason (content), never a traceback. See hazards.py."""

from __future__ import annotations

import os

import pytest

from . import hazards


@pytest.fixture(scope="module")
def fuse_results(tmp_path_factory):
    why = hazards.fuse_available()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"FUSE fault cases must run in CI: {why}")
        pytest.skip(why)
    return {r["name"]: r for r in hazards.fuse_cases(str(tmp_path_factory.mktemp("fuse")))}


@pytest.fixture(scope="module")
def file_results(tmp_path_factory):
    return {r["name"]: r for r in hazards.file_cases(str(tmp_path_factory.mktemp("files")))}


def _check(results: dict, prefix: str, expect_count: int) -> None:
    cases = {n: r for n, r in results.items() if n.startswith(prefix)}
    assert len(cases) == expect_count, sorted(cases)
    bad = {}
    for name, r in cases.items():
        ok, text = hazards.judge(r)
        if not ok:
            bad[name] = (text, r["stderr"][-600:])
        assert r["rc"] is not None and r["seconds"] < hazards.CASE_TIMEOUT / 2, (name, r["seconds"])
    assert not bad, bad


def test_snapshot_scan_never_touches_the_hung_nfs_mount(fuse_results):
    """13 shapes in a snapshot whose mountinfo lists /opt/sas as nfs, <root>/opt/sas hung;
    and a hung mount inside the snapshot directory that only the scanning host lists."""
    _check(fuse_results, "snapshot scan:", 14)
    for name, r in fuse_results.items():
        if r["must_error"]:
            assert "network file system" in r["stdout"], name


def test_live_facts_never_touch_the_hung_sshfs_mount(fuse_results):
    """The same shapes on the live root, the kernel listing the mount as fuse.sshfs."""
    _check(fuse_results, "live facts:", 13)
    unit_link = fuse_results["live facts: wants link to a unit file on the mount"]["stdout"]
    assert "fuse.sshfs at mount point /etc/tw-hung" in unit_link


def test_collect_skips_the_hung_mount_and_says_so(fuse_results):
    for name in ("snapshot collect: every shape", "live collect: every shape"):
        r = fuse_results[name]
        ok, text = hazards.judge(r)
        assert ok and "network file system" in r["stderr"], (name, text, r["stderr"][-800:])
        assert "skipped" in r["stderr"].splitlines()[-1]


def test_watchdog_ends_a_scan_blocked_on_an_unlisted_mount(fuse_results):
    """A FUSE type nobody lists hangs the read; --timeout 3s still ends the CLI with errors."""
    r = fuse_results["watchdog: hung fuse.tw-unknown over proc/irq, --timeout 3s"]
    ok, text = hazards.judge(r)
    assert ok and r["rc"] == 2, (text, r["stderr"])
    assert "did not finish within 3 s" in r["stderr"]


def test_special_and_huge_files_are_errors(file_results):
    _check(file_results, "", len(file_results))
    facts = [r for r in file_results.values() if not r.get("content")]
    assert len(facts) == 7 and all(r["rc"] == 2 for r in facts)


def test_content_bombs_exit_1_with_file_and_reason(file_results):
    bombs = [r for r in file_results.values() if r.get("content")]
    assert len(bombs) == 8
    for r in bombs:
        last = r["stderr"].strip().splitlines()[-1]
        assert last.startswith("tunewatch: error: ") and "/c" in last and "Traceback" not in r["stderr"], last
