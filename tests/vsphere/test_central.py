"""Central mode: `serve --vsphere.config F --vsphere.vm GLOB` scraped by a real Prometheus
with the shipped rules (only `for:` shortened), firing TunewatchCheckFailing for the
agentless BIG-IP VE that is not tuned; a hanging vCenter never makes a scrape wait."""

from __future__ import annotations

import socket
import sys
import time
from collections import Counter

from tests.rules.test_alertmanager_e2e import fast_rules
from tests.support.procs import LOOPBACK, ManagedProcess, free_port, http_get, wait_until
from tests.support.prom import start_prometheus, static_job

from .run import EXPORTER
from .vcsim import PASSWORD


def start_serve(workdir, *args: str) -> tuple[ManagedProcess, str]:
    port = free_port()
    process = ManagedProcess([sys.executable, "-m", "tunewatch", "serve", "--web.listen-address",
                              f"{LOOPBACK}:{port}", "--log.level", "debug", *args], workdir, "serve",
                             env={"PYTHONPATH": EXPORTER, "PATH": "/usr/bin:/bin"}).start()
    try:
        process.wait_http(f"http://{LOOPBACK}:{port}/-/healthy", 30)
    except BaseException:
        process.stop()
        raise
    return process, f"{LOOPBACK}:{port}"


def samples(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_central_mode_exports_each_vm_and_fires_the_shipped_alert(hosts, tmp_path):
    cfg = hosts.config(tmp_path)
    serve, address = start_serve(tmp_path / "serve", "--vsphere.config", str(cfg), "--vsphere.vm",
                                 "/DC0/vm/appliances/*", "--vsphere.vm", "bigip-def*", "--profile", "bigip-ve-esxi",
                                 "--scan.interval", "2s")
    try:
        metrics = wait_until(lambda: (lambda t: t if 'vm="bigip-default"' in t else None)(
            http_get(f"http://{address}/metrics").text), 30, 0.25, serve.describe)
        per_vm = Counter(line.split('vm="', 1)[1].split('"', 1)[0] for line in samples(metrics) if 'vm="' in line)
        assert set(per_vm) == {"bigip-ve", "bigip-default"}
        assert max(per_vm.values()) <= 20, per_vm  # the documented series budget
        assert 'tunewatch_vsphere_up{vcenter="' + hosts.url + '"} 1.0' in metrics
        assert PASSWORD not in metrics and PASSWORD not in serve.logs(100000)
        scrape = static_job("tunewatch", address, honor_labels=True)
        with start_prometheus(tmp_path / "prom", [scrape], rule_files=fast_rules(tmp_path)) as prom:
            rows = prom.wait_for_query('tunewatch_check_status{job="tunewatch"} == 1',
                                       lambda r: {x["metric"]["instance"] for x in r} == {"bigip-ve", "bigip-default"})
            status = {(r["metric"]["instance"], r["metric"]["check"]): r["metric"]["status"] for r in rows}
            assert {c: s for (vm, c), s in status.items() if vm == "bigip-ve"} == dict.fromkeys(
                ["vmx-nic-options", "vmx-cpu-affinity-avoids-core0", "esxi-hyperthreading-disabled",
                 "esxi-power-policy-performance"], "pass")
            assert {s for (vm, _c), s in status.items() if vm == "bigip-default"} == {"fail"}

            def firing():
                alerts = [a for a in prom.alerts() if a["labels"]["alertname"] == "TunewatchCheckFailing"
                          and a["state"] == "firing"]
                return {(a["labels"]["instance"], a["labels"]["check"]) for a in alerts} or None
            fired = wait_until(firing, 30, 0.5, lambda: str(prom.alerts()))
            assert fired == {("bigip-default", c) for c in ("vmx-nic-options", "vmx-cpu-affinity-avoids-core0",
                                                            "esxi-hyperthreading-disabled",
                                                            "esxi-power-policy-performance")}
            ratio = prom.query('instance:tunewatch_compliance:ratio{job="tunewatch"}')
            assert {r["metric"]["instance"]: float(r["value"][1]) for r in ratio} == {"bigip-ve": 1.0,
                                                                                      "bigip-default": 0.0}
    finally:
        serve.stop()


def test_central_mode_scrape_does_not_wait_on_a_hanging_vcenter(hosts, tmp_path):
    with socket.socket() as listener:  # accepts TCP, never answers
        listener.bind((LOOPBACK, 0))
        listener.listen(16)
        cfg = hosts.config(tmp_path, url=f"https://{LOOPBACK}:{listener.getsockname()[1]}/sdk", timeout="3s")
        serve, address = start_serve(tmp_path / "serve", "--vsphere.config", str(cfg), "--vsphere.vm", "*",
                                     "--profile", "bigip-ve-esxi", "--scan.interval", "30s")
        try:
            for _ in range(5):  # while the first scan waits on vCenter
                started = time.monotonic()
                reply = http_get(f"http://{address}/metrics")
                assert reply.status == 200 and time.monotonic() - started < 1.0
                time.sleep(0.2)
            text = wait_until(lambda: (lambda t: t if "tunewatch_vsphere_up" in t else None)(
                http_get(f"http://{address}/metrics").text), 15, 0.25, serve.describe)
            assert "tunewatch_vsphere_up{" in text and "} 0.0" in next(
                line for line in samples(text) if line.startswith("tunewatch_vsphere_up"))
            report = http_get(f"http://{address}/api/v1/report")
            assert "no answer within the timeout of 3s" in report.text, report.text[:500]
        finally:
            serve.stop()


def test_guest_serve_adds_its_vms_checks_to_its_own_metrics(fleet, tmp_path):
    from .test_scan import _bios_uuid, _guest_root
    root = _guest_root(tmp_path, _bios_uuid(fleet, "hana-tuned"))
    serve, address = start_serve(tmp_path / "serve", "--root", str(root), "--vsphere.config",
                                 str(fleet.config(tmp_path)), "--profile", "vmware-sap-hana")
    try:
        text = wait_until(lambda: (lambda t: t if "tunewatch_check_status{" in t else None)(
            http_get(f"http://{address}/metrics").text), 30, 0.25, serve.describe)
        current = {line.split('check="', 1)[1].split('"', 1)[0]: line.split('status="', 1)[1].split('"', 1)[0]
                   for line in samples(text) if line.startswith("tunewatch_check_status{") and line.endswith(" 1.0")}
        assert current["vmx-nic-options"] == "pass" and current["esxi-netq-rx-pair-disabled"] == "pass"
        assert 'hostname="hana-guest"' in text  # the guest's own identity, not the VM's
    finally:
        serve.stop()
