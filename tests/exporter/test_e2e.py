"""End to end with the real Debian binaries: Prometheus scraping tunewatch (plain, TLS +
basic auth) and node_exporter's textfile collector; then PromQL over the HTTP API.

Two layers:
* in-process exporters serving synthetic scans (always runnable);
* the real CLI (`python -m tunewatch.cli serve` / `scan --format prometheus`) on the example
  snapshots, skipped until the CLI has those commands.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import scanresults as sr
from support.procs import LOOPBACK, ManagedProcess, free_port, http_get, wait_until
from support.prom import start_node_exporter, start_prometheus, static_job
from tunewatch.outputs.prometheus import render, write_textfile

from .conftest import PASSWORD, REPO, USER

EXAMPLES = REPO / "tests" / "snapshots" / "examples"


def rebooted_like():
    """The azure-m-rebooted outcome, synthetically: irqbalance and queue count fail."""
    return sr.result([
        sr.check("irqbalance-disabled", [sr.obj("irqbalance.service", "fail", "disabled", "enabled, running")],
                 kind="service_disabled"),
        sr.check("nic-queue-count", [sr.obj("enP30832s1", "fail", "<= 16", "32",
                                            [sr.Setting("channels.combined", 32, None),
                                             sr.Setting("channels.limit", None, 16)])], kind="nic_channels"),
        sr.check("accelerated-networking", [sr.obj("eth0", "pass", "VF present", "enP30832s1")],
                 kind="accelerated_networking"),
    ], nics=[sr.NicInfo("enP30832s1", "mlx5_core", "5.14.21", "16.30.1004", "7870:00:02.0")])


def states(prom, job: str) -> dict[str, str]:
    """check -> current status, as Prometheus sees it for `job`."""
    rows = prom.query(f'tunewatch_check_status{{job="{job}"}} == 1')
    return {r["metric"]["check"]: r["metric"]["status"] for r in rows}


def test_prometheus_scrapes_exporter_tls_exporter_and_textfile(tmp_path, start_exporter_inproc, tls_web_config):
    scan = rebooted_like()
    plain = start_exporter_inproc(lambda: scan)
    secure = start_exporter_inproc(lambda: scan, web_config=tls_web_config)
    textfile_dir = tmp_path / "textfile"
    textfile_dir.mkdir()
    write_textfile(str(textfile_dir / "tunewatch.prom"), render(scan, detail=True))  # textfile with detail
    with start_node_exporter(tmp_path / "node", textfile_dir) as node:
        tls = {"insecure_skip_verify": True}
        jobs = [
            static_job("tunewatch", f"{LOOPBACK}:{plain.server.port}"),
            static_job("tunewatch-tls", f"{LOOPBACK}:{secure.server.port}", scheme="https", tls_config=tls,
                       basic_auth={"username": USER, "password": PASSWORD}),
            static_job("tunewatch-badauth", f"{LOOPBACK}:{secure.server.port}", scheme="https", tls_config=tls,
                       basic_auth={"username": USER, "password": "wrong"}),
            static_job("node", node.address),
        ]
        with start_prometheus(tmp_path / "prom", jobs) as prom:
            for job in ("tunewatch", "tunewatch-tls", "node"):
                prom.wait_for_targets_up(job)
            prom.wait_for_query('count by (job) (tunewatch_check_status{status="fail"} == 1)',
                                lambda r: len(r) == 3)
            expected = {"irqbalance-disabled": "fail", "nic-queue-count": "fail", "accelerated-networking": "pass"}
            for job in ("tunewatch", "tunewatch-tls", "node"):
                assert states(prom, job) == expected, job
            assert prom.query_value(
                'tunewatch_check_status{job="node",check="irqbalance-disabled",status="fail"}') == 1
            # default: counts, not per-setting series; the detail textfile has the setting
            assert prom.query_value('tunewatch_check_objects{job="tunewatch",check="nic-queue-count",status="fail"}') == 1
            assert prom.query('tunewatch_setting_observed{job="tunewatch"}') == []
            assert prom.query_value('tunewatch_setting_observed{job="node",setting="channels.combined"}') == 32
            assert prom.query_value('tunewatch_host_compliant{job="tunewatch-tls"}') == 0
            assert prom.query_value('tunewatch_scan_success{job="tunewatch"}') == 1
            # serve-only counters come from serve, not from the textfile
            assert prom.query_value('tunewatch_scans_total{job="tunewatch"}') >= 1
            assert prom.query('tunewatch_scans_total{job="node"}') == []
            bad = [t for t in prom.targets() if t["labels"]["job"] == "tunewatch-badauth"]
            wait_until(lambda: [t for t in prom.targets() if t["labels"]["job"] == "tunewatch-badauth"
                                and t["health"] == "down"], 10)
            assert prom.query_value('up{job="tunewatch-badauth"}') == 0, bad


# --- the real CLI ----------------------------------------------------------------------


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "tunewatch.cli", *args]


@functools.lru_cache(maxsize=None)
def cli_has(command: str) -> bool:
    try:
        done = subprocess.run(cli(command, "--help"), capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def need_cli(*commands: str) -> None:
    for command in commands:
        if not cli_has(command):
            pytest.skip(f"`tunewatch {command}` not available yet in tunewatch.cli")


def need_example(name: str) -> Path:
    path = EXAMPLES / name
    if not path.is_dir():
        pytest.skip(f"example snapshot {name} not generated yet")
    return path


def start_serve(tmp_path: Path, root: Path, profile: str, *extra: str) -> tuple[ManagedProcess, int]:
    last = None
    for _ in range(3):  # a port lost to a race: try another
        port = free_port()
        process = ManagedProcess(cli("serve", "--root", str(root), "--profile", profile,
                                     "--web.listen-address", f"{LOOPBACK}:{port}", "--scan.interval", "1s",
                                     *extra), tmp_path / "serve", "tunewatch").start()
        try:
            process.wait_http(f"http://{LOOPBACK}:{port}/-/ready", 30)
            return process, port
        except AssertionError as e:
            process.stop()
            last = e
            if "address already in use" not in process.logs().lower():
                raise
    raise last  # type: ignore[misc]


REBOOTED_FAILS = {"irqbalance-disabled", "nic-queue-count", "nic-irq-affinity"}


def test_cli_serve_and_textfile_agree_in_prometheus(tmp_path):
    need_cli("serve", "scan")
    root = need_example("azure-m-rebooted")
    textfile_dir = tmp_path / "textfile"
    textfile_dir.mkdir()
    done = subprocess.run(cli("scan", "--root", str(root), "--profile", "azure-sap-hana", "--format", "prometheus",
                              "--output", str(textfile_dir / "tunewatch.prom")),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 2), done.stderr
    assert sorted(p.name for p in textfile_dir.iterdir()) == ["tunewatch.prom"]
    serve, port = start_serve(tmp_path, root, "azure-sap-hana")
    try:
        with start_node_exporter(tmp_path / "node", textfile_dir) as node, \
                start_prometheus(tmp_path / "prom", [static_job("tunewatch", f"{LOOPBACK}:{port}"),
                                                     static_job("node", node.address)]) as prom:
            prom.wait_for_query('count by (job) (tunewatch_check_status == 1)', lambda r: len(r) == 2)
            served, textfile = states(prom, "tunewatch"), states(prom, "node")
            assert served == textfile
            for check in REBOOTED_FAILS & served.keys():
                assert served[check] == "fail", (check, served)
            assert prom.query_value(
                'tunewatch_check_status{job="tunewatch",check="irqbalance-disabled",status="fail"}') == 1
            assert prom.query_value('tunewatch_host_compliant{job="node"}') == 0
            assert prom.query_value('tunewatch_boot_time_seconds{job="tunewatch"}') == 1717570245
        # SIGTERM: prompt, clean exit 0
        started = time.monotonic()
        serve.signal(signal.SIGTERM)
        assert serve.wait(10) == 0, serve.describe()
        assert time.monotonic() - started < 5
    finally:
        serve.stop()


def test_cli_serve_tls_and_auth(tmp_path, tls_web_config):
    need_cli("serve")
    root = need_example("azure-m-tuned")
    port = free_port()
    process = ManagedProcess(cli("serve", "--root", str(root), "--profile", "azure-sap-hana",
                                 "--web.listen-address", f"{LOOPBACK}:{port}", "--web.config.file",
                                 str(tls_web_config), "--scan.interval", "5m"), tmp_path / "serve", "tunewatch")
    with process.start():
        url = f"https://{LOOPBACK}:{port}/metrics"
        process.wait_http(url, 30, expect=401, insecure=True)
        assert http_get(url, insecure=True, auth=(USER, "nope")).status == 401
        wait_until(lambda: "tunewatch_check_status" in http_get(url, insecure=True, auth=(USER, PASSWORD)).text, 20)
        with pytest.raises(OSError):
            http_get(url.replace("https", "http"), auth=(USER, PASSWORD), timeout=5)
        process.signal(signal.SIGTERM)
        assert process.wait(10) == 0, process.describe()


def test_cli_serve_bad_web_config_fails_fast(tmp_path):
    need_cli("serve")
    root = need_example("azure-m-tuned")
    bad = tmp_path / "web.yml"
    bad.write_text("basic_auth_users:\n  alice: plaintext\n")
    done = subprocess.run(cli("serve", "--root", str(root), "--profile", "azure-sap-hana", "--web.listen-address",
                              f"{LOOPBACK}:{free_port()}", "--web.config.file", str(bad)),
                          capture_output=True, text=True, timeout=30, env={**os.environ})
    assert done.returncode != 0 and "basic_auth_users.alice" in done.stderr
