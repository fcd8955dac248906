"""`--vsphere.tag`: VMs selected by vSphere tag, read over the vSphere Automation REST API
of vcsim (tags made with govc tags.category.create / tags.create / tags.attach).

Tags on the `hosts` vcsim (created once per test session):
  tw-role/bigip   on bigip-ve and bigip-default
  tw-role/ve      on bigip-ve, and on the ESXi host DC0_C0_H1 (not a VM: never selected)
  tw-role/unused  on nothing
  tw-env/bigip    on hana-default (a bare `bigip` selects both categories' tags)
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from tests.support.procs import http_get, wait_until

from .run import messages, scan_json, tunewatch, verdicts
from .test_central import samples, start_serve
from .vcsim import PASSWORD

BIGIP = ("--profile", "bigip-ve-esxi")
CHECKS = {"vmx-nic-options", "vmx-cpu-affinity-avoids-core0", "esxi-hyperthreading-disabled",
          "esxi-power-policy-performance"}


@pytest.fixture(scope="module")
def tagged(hosts):
    if "tw-role" not in hosts.govc("tags.category.ls"):
        hosts.govc("tags.category.create", "-t", "VirtualMachine", "-t", "HostSystem", "tw-role")
        hosts.govc("tags.category.create", "-t", "VirtualMachine", "tw-env")
        for tag in ("bigip", "ve", "unused"):
            hosts.govc("tags.create", "-c", "tw-role", tag)
        hosts.govc("tags.create", "-c", "tw-env", "bigip")
        for tag, path in (("bigip", "/DC0/vm/appliances/bigip-ve"), ("bigip", "/DC0/vm/bigip-default"),
                          ("ve", "/DC0/vm/appliances/bigip-ve"), ("ve", "/DC0/host/DC0_C0/DC0_C0_H1")):
            hosts.govc("tags.attach", "-c", "tw-role", tag, path)
        hosts.govc("tags.attach", "-c", "tw-env", "bigip", "/DC0/vm/hana-default")
    return hosts


def _vms(metrics: str) -> Counter:
    return Counter(line.split('vm="', 1)[1].split('"', 1)[0] for line in samples(metrics) if 'vm="' in line)


def _scrape(serve, address: str, ready) -> str:
    return wait_until(lambda: (lambda t: t if ready(t) else None)(http_get(f"http://{address}/metrics").text),
                      30, 0.25, serve.describe)


def _gauge(metrics: str, name: str) -> str:
    return next(line for line in samples(metrics) if line.startswith(name + "{")).rsplit(" ", 1)[1]


def test_scan_by_tag_judges_the_tagged_vm_as_the_glob_does(tagged, tmp_path):
    cfg = tagged.config(tmp_path)
    code, report = scan_json("--vsphere.config", cfg, "--vsphere.tag", "tw-role/ve", *BIGIP)
    assert report["host"]["hostname"] == "bigip-ve" and report["host"]["platform"] == "vmware"
    by_glob_code, by_glob = scan_json("--vsphere.config", cfg, "--vsphere.vm", "bigip-ve", *BIGIP)
    assert verdicts(report) == verdicts(by_glob) == {
        "vmx-nic-options": {f"bigip-ve.vmx:ethernet{n}": "pass" for n in (1, 2, 3)},
        "vmx-cpu-affinity-avoids-core0": {"bigip-ve.vmx": "pass"},
        "esxi-hyperthreading-disabled": {"Hyperthreading Active": "pass"},
        "esxi-power-policy-performance": {"/Power/CpuPolicy": "pass"}}
    assert code == by_glob_code == 0


def test_scan_selection_of_several_vms_is_one_report_and_of_none_a_usage_error(tagged, tmp_path):
    import json
    cfg = tagged.config(tmp_path)
    done = tunewatch("scan", "--vsphere.config", cfg, "--vsphere.tag", "tw-role/bigip", *BIGIP, "--format", "json")
    assert done.returncode == 2, done.stderr  # bigip-default is untuned
    assert list(json.loads(done.stdout)["vms"]) == ["bigip-default", "bigip-ve"]
    done = tunewatch("scan", "--vsphere.config", cfg, "--vsphere.tag", "bigip", *BIGIP, "--format", "json")
    assert list(json.loads(done.stdout)["vms"]) == ["bigip-default", "bigip-ve", "hana-default"]  # both categories
    done = tunewatch("scan", "--vsphere.config", cfg, "--vsphere.tag", "tw-role/unused", *BIGIP)
    assert done.returncode == 1 and "selects 0 VMs" in done.stderr, done.stderr


def test_scan_union_of_glob_and_tag(tagged, tmp_path):
    cfg = tagged.config(tmp_path)
    code, report = scan_json("--vsphere.config", cfg, "--vsphere.vm", "bigip-ve", "--vsphere.tag", "tw-role/ve",
                             *BIGIP)  # the same VM both ways: one VM
    assert report["host"]["hostname"] == "bigip-ve" and code == 0
    done = tunewatch("scan", "--vsphere.config", cfg, "--vsphere.vm", "hana-tuned", "--vsphere.tag", "tw-role/ve",
                     *BIGIP, "--format", "json")  # the union: two VMs, one report with a section each
    import json
    assert list(json.loads(done.stdout)["vms"]) == ["bigip-ve", "hana-tuned"], done.stderr


def test_unknown_tag_is_a_clear_error(tagged, tmp_path):
    cfg = tagged.config(tmp_path)
    done = tunewatch("scan", "--vsphere.config", cfg, "--vsphere.tag", "tw-role/nope", *BIGIP)
    assert done.returncode == 1, done.stdout
    assert "--vsphere.tag" in done.stderr and "no tag 'tw-role/nope'" in done.stderr, done.stderr
    assert "tw-role/bigip" in done.stderr  # what exists is listed
    done = tunewatch("scan", "--vsphere.config", cfg, "--vsphere.tag", "no-such-category/bigip", *BIGIP)
    assert done.returncode == 1 and "no category 'no-such-category'" in done.stderr, done.stderr
    done = tunewatch("scan", "--vsphere.config", cfg, "--vsphere.tag", "tw-role/", *BIGIP)
    assert done.returncode == 1 and "expected CATEGORY/TAG or TAG" in done.stderr, done.stderr
    done = tunewatch("scan", "--vsphere.tag", "tw-role/ve", *BIGIP)
    assert done.returncode == 1 and "--vsphere.tag: needs --vsphere.config FILE" in done.stderr, done.stderr


def test_serve_exports_only_the_tagged_vms(tagged, tmp_path):
    serve, address = start_serve(tmp_path / "serve", "--vsphere.config", str(tagged.config(tmp_path)),
                                 "--vsphere.tag", "tw-role/bigip", *BIGIP, "--scan.interval", "2s")
    try:
        metrics = _scrape(serve, address, lambda t: "tunewatch_vsphere_vms{" in t)
        assert set(_vms(metrics)) == {"bigip-ve", "bigip-default"}
        assert max(_vms(metrics).values()) <= 20
        assert _gauge(metrics, "tunewatch_vsphere_up") == "1.0" and _gauge(metrics, "tunewatch_vsphere_vms") == "2.0"
        current = {(line.split('vm="', 1)[1].split('"', 1)[0], line.split('check="', 1)[1].split('"', 1)[0]):
                   line.split('status="', 1)[1].split('"', 1)[0] for line in samples(metrics)
                   if line.startswith("tunewatch_check_status{") and line.endswith(" 1.0")}
        assert {c for (vm, c), s in current.items() if vm == "bigip-ve" and s == "pass"} == CHECKS
        assert {s for (vm, _c), s in current.items() if vm == "bigip-default"} == {"fail"}
        assert PASSWORD not in metrics and PASSWORD not in serve.logs(100000)
    finally:
        serve.stop()


def test_serve_union_of_globs_and_tags(tagged, tmp_path):
    serve, address = start_serve(tmp_path / "serve", "--vsphere.config", str(tagged.config(tmp_path)),
                                 "--vsphere.vm", "hana-tuned", "--vsphere.tag", "bigip", "--vsphere.tag",
                                 "tw-role/unused", *BIGIP, "--scan.interval", "2s")
    try:
        metrics = _scrape(serve, address, lambda t: "tunewatch_vsphere_vms{" in t)
        assert set(_vms(metrics)) == {"hana-tuned", "bigip-ve", "bigip-default", "hana-default"}
        assert _gauge(metrics, "tunewatch_vsphere_vms") == "4.0"
    finally:
        serve.stop()


def test_serve_unknown_tag_and_wrong_password_are_error_results(tagged, tmp_path):
    serve, address = start_serve(tmp_path / "serve", "--vsphere.config", str(tagged.config(tmp_path)),
                                 "--vsphere.vm", "bigip-ve", "--vsphere.tag", "tw-role/nope", *BIGIP,
                                 "--scan.interval", "30s")
    try:
        metrics = _scrape(serve, address, lambda t: "tunewatch_vsphere_up{" in t)
        assert _gauge(metrics, "tunewatch_vsphere_up") == "0.0" and not _vms(metrics)
        report = http_get(f"http://{address}/api/v1/report").json()
        assert "no tag 'tw-role/nope'" in report["error"], report
    finally:
        serve.stop()
    wrong = "wrong-tag-pw-1234"
    serve, address = start_serve(tmp_path / "serve-pw", "--vsphere.config",
                                 str(tagged.config(tmp_path, name="wrong.yml", password=wrong, timeout="3s")),
                                 "--vsphere.tag", "tw-role/bigip", *BIGIP, "--scan.interval", "30s")
    try:
        started = time.monotonic()
        metrics = _scrape(serve, address, lambda t: "tunewatch_vsphere_up{" in t)
        assert time.monotonic() - started < 3 + 10  # the scan's timeout, plus starting the scan child
        assert _gauge(metrics, "tunewatch_vsphere_up") == "0.0" and not _vms(metrics)
        report = http_get(f"http://{address}/api/v1/report")
        assert "login refused: wrong user name or password" in report.text, report.text[:500]
        for text in (metrics, report.text, serve.logs(100000)):
            assert wrong not in text and PASSWORD not in text
    finally:
        serve.stop()


def test_scan_wrong_password_gives_error_results_without_the_password(tagged, tmp_path):
    wrong = "wrong-tag-pw-5678"
    started = time.monotonic()
    done = tunewatch("scan", "--format", "json", "--vsphere.config",
                     tagged.config(tmp_path, password=wrong, timeout="3s"), "--vsphere.tag", "tw-role/ve", *BIGIP)
    assert time.monotonic() - started < 3 + 10
    assert wrong not in done.stdout + done.stderr
    code, report = scan_json("--vsphere.config", tagged.config(tmp_path, password=wrong, timeout="3s"),
                             "--vsphere.tag", "tw-role/ve", *BIGIP)
    assert set(verdicts(report)) == CHECKS
    assert {s for objs in verdicts(report).values() for s in objs.values()} == {"error"}
    assert all("login refused: wrong user name or password" in m for m in messages(report)), messages(report)
    assert code == 2


def test_tag_api_hanging_or_refused_is_a_fact_error_within_the_timeout():
    """The tag reader alone against a listener that never answers and a closed port (the
    SOAP side would fail first through the command line)."""
    import socket

    from tests.support.procs import free_port
    from tunewatch.errors import FactError
    from tunewatch.vsphere.config import VsphereConfig
    from tunewatch.vsphere.tags import tagged_vm_ids
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        # A hang ends by the socket's timeout or by the deadline, whichever fires first (both 1.5s):
        # the text is the same apart from the API named, which only the socket's path knows.
        for port, expected in ((listener.getsockname()[1], "no answer within the timeout of 1.5s (vCenter hanging"),
                               (free_port(), "tags (/api API): connection refused")):
            cfg = VsphereConfig("vsphere.yml", f"https://127.0.0.1:{port}/sdk", "127.0.0.1", port, "u",
                                "secret-xyz-pw", None, True, 1.5)
            started = time.monotonic()
            with pytest.raises(FactError) as failure:
                tagged_vm_ids(cfg, ["tw-role/ve"])
            assert time.monotonic() - started < 1.5 + 1.0
            assert "tags" in str(failure.value) and expected in str(failure.value)
            assert "secret-xyz-pw" not in str(failure.value)
