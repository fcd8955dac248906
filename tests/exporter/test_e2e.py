"""End to end with the real Debian binaries: Prometheus scraping tunewatch (plain, TLS +
basic auth) and node_exporter's textfile collector; then PromQL over the HTTP API.

Two layers:
* in-process exporters serving synthetic scans (always runnable);
* the real CLI (`python -m tunewatch.cli.main serve` / `scan --format prometheus`) on the example
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
    return [sys.executable, "-m", "tunewatch.cli.main", *args]


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
            pytest.skip(f"`tunewatch {command}` not available yet in tunewatch.cli.main")


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


# --- the textfile route: exit codes, the shipped systemd units, node_exporter -------------

CONTRIB = REPO / "contrib"
TEXTFILE_PATH = "/var/lib/prometheus/node-exporter/tunewatch.prom"


def test_cli_textfile_exit_codes(tmp_path):
    """`--output F` exits 0 once F is written, whatever the checks say; `--exit-code` keeps the
    compliance exit code; stdout keeps it too; an unwritable F is an error (1), not 0."""
    need_cli("scan")
    root = need_example("azure-m-rebooted")  # checks fail: compliance exit code 2
    base = cli("scan", "--root", str(root), "--profile", "azure-sap-hana", "--format", "prometheus")
    out = tmp_path / "tunewatch.prom"
    done = subprocess.run([*base, "--output", str(out)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert 'tunewatch_host_compliant{profile="azure-sap-hana"} 0.0' in out.read_text()
    done = subprocess.run([*base, "--output", str(out), "--exit-code"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    done = subprocess.run(base, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "tunewatch_check_status" in done.stdout
    done = subprocess.run([*base, "--output", str(tmp_path / "missing-dir" / "x.prom")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and "tunewatch: error:" in done.stderr and "Traceback" not in done.stderr
    # detail is opt-in on the textfile too
    done = subprocess.run([*base, "--output", str(out), "--metrics.detail"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "tunewatch_object_status{" in out.read_text()


def test_one_textfile_path_everywhere():
    """The docs, the help and the units name the same textfile path (Debian's directory)."""
    need_cli("scan")
    done = subprocess.run(cli("scan", "--help"), capture_output=True, text=True, timeout=30)
    help_text = " ".join(done.stdout.split())
    assert TEXTFILE_PATH in help_text
    done = subprocess.run(cli("--help"), capture_output=True, text=True, timeout=30)
    assert TEXTFILE_PATH in done.stdout
    for path in [CONTRIB / "systemd" / "tunewatch-textfile.service", CONTRIB / "README.md",
                 REPO / "docs" / "metrics.md"]:
        assert TEXTFILE_PATH in path.read_text(), path
    for path in [*REPO.glob("docs/*.md"), *CONTRIB.rglob("*"), REPO / "dashboards" / "README.md"]:
        if path.is_file():
            text = path.read_text()
            assert "/var/lib/node_exporter" not in text and "textfile_collector/" not in text, path


def systemd_root(tmp_path: Path) -> Path:
    """A root for `systemd-analyze --root`: the host's unit directory (sysinit.target & co.),
    the shipped units in etc/systemd/system and /usr/bin/env (their ExecStart), but no
    `tunewatch` anywhere: the units must verify wherever tunewatch is installed."""
    import shutil
    root = tmp_path / "root"
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "usr/bin").mkdir(parents=True)
    units = Path("/usr/lib/systemd/system")
    if not units.is_dir():
        pytest.skip("no /usr/lib/systemd/system on this host")
    shutil.copytree(units, root / "usr/lib/systemd/system", symlinks=True)
    for unit in (CONTRIB / "systemd").glob("tunewatch*.*"):
        shutil.copy(unit, root / "etc/systemd/system" / unit.name)
    shutil.copy("/usr/bin/env", root / "usr/bin/env")
    return root


def systemd_analyze() -> str:
    import shutil
    path = shutil.which("systemd-analyze")
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("systemd-analyze not installed (Debian package systemd)")
        pytest.skip("systemd-analyze not installed (Debian package systemd)")
    return path


def test_systemd_units_verify(tmp_path):
    analyze = systemd_analyze()
    root = systemd_root(tmp_path)
    names = ("tunewatch.service", "tunewatch-textfile.service", "tunewatch-textfile.timer")
    units = [str(root / "etc/systemd/system" / n) for n in names]
    done = subprocess.run([analyze, f"--root={root}", "verify", *units], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not done.stderr.strip(), done.stdout + done.stderr
    # the check is real: without the executable the unit names, the service does not verify
    (root / "usr/bin/env").unlink()
    done = subprocess.run([analyze, f"--root={root}", "verify", units[1]], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "/usr/bin/env" in done.stderr, done.stderr


def service_command(textfile: Path, extra_args: str) -> list[str]:
    """The service's ExecStart as systemd would run it: $TUNEWATCH_ARGS split into words,
    `tunewatch` found by env on the unit's PATH; only the output path is this test's."""
    import shlex
    unit = (CONTRIB / "systemd" / "tunewatch-textfile.service").read_text()
    [line] = [l for l in unit.splitlines() if l.startswith("ExecStart=")]
    words = shlex.split(line.split("=", 1)[1])
    output = "${TUNEWATCH_TEXTFILE_DIR}/tunewatch.prom"  # TUNEWATCH_TEXTFILE_DIR: the TEXTFILE_PATH directory
    assert f"Environment=TUNEWATCH_TEXTFILE_DIR={os.path.dirname(TEXTFILE_PATH)}" in unit
    assert words[:2] == ["/usr/bin/env", "tunewatch"] and output in words and words[-1] == "$TUNEWATCH_ARGS"
    words = [str(textfile) if w == output else w for w in words[2:-1]] + shlex.split(extra_args)
    return cli(*words)


def test_textfile_service_feeds_node_exporter_and_the_rules(tmp_path):
    """The timer's command on a failing snapshot exits 0 (the unit succeeds), node_exporter's
    textfile collector serves it, and the shipped rules see a failing check for job="node"."""
    root = need_example("azure-m-rebooted")
    textfile_dir = tmp_path / "node-exporter"
    textfile_dir.mkdir()
    done = subprocess.run(service_command(textfile_dir / "tunewatch.prom",
                                          f"--root {root} --profile azure-sap-hana"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in textfile_dir.iterdir()) == ["tunewatch.prom"]
    rules = sorted((REPO / "rules").glob("*.rules.yml"))
    with start_node_exporter(tmp_path / "node", textfile_dir) as node, \
            start_prometheus(tmp_path / "prom", [static_job("node", node.address)], rule_files=rules) as prom:
        assert "node_textfile_scrape_error 0" in node.metrics().text
        prom.wait_for_query('instance:tunewatch_checks_failing:count{job="node"} > 0')
        prom.wait_for_query('ALERTS{alertname="TunewatchCheckFailing",job="node",check="irqbalance-disabled"}')
        assert prom.query('ALERTS{alertname=~"TunewatchExporterDown|TunewatchResultsMissing"}') == []
