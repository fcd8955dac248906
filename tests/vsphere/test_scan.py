"""scan --vsphere.config against vcsim: one VM by name, the guest's own VM, and collect."""

from __future__ import annotations

import pytest

from tunewatch.vsphere.source import uuid_forms

from .run import scan_json, tunewatch, verdicts

HANA = ("--profile", "vmware-sap-hana")
BIGIP = ("--profile", "bigip-ve-esxi")


def test_hana_vm_tuned_per_seed_001_passes(fleet, tmp_path):
    code, report = scan_json("--vsphere.config", fleet.config(tmp_path), "--vsphere.vm", "hana-tuned", *HANA)
    assert verdicts(report) == {
        "vmx-nic-options": {"hana-tuned.vmx:ethernet0": "pass", "hana-tuned.vmx:ethernet1": "pass"},
        "esxi-netq-rx-pair-disabled": {"/Net/NetNetqRxQueueFeatPairEnable": "pass"}}
    assert report["host"]["hostname"] == "hana-tuned" and report["host"]["platform"] == "vmware"
    assert code == 0


def test_hana_vm_at_defaults_fails(fleet, tmp_path):
    code, report = scan_json("--vsphere.config", fleet.config(tmp_path), "--vsphere.vm", "hana-default", *HANA)
    assert verdicts(report) == {
        "vmx-nic-options": {"hana-default.vmx:ethernet0": "fail", "hana-default.vmx:ethernet1": "fail"},
        "esxi-netq-rx-pair-disabled": {"/Net/NetNetqRxQueueFeatPairEnable": "fail"}}
    nic = next(o for c in report["results"] for o in c["objects"] if o["object"] == "hana-default.vmx:ethernet1")
    assert nic["actual"] == "pnicFeatures=unset ctxPerDev=unset udpRSS=unset"
    assert code == 2


def test_bigip_ve_judged_on_ethernet1_to_3(hosts, tmp_path):
    code, report = scan_json("--vsphere.config", hosts.config(tmp_path), "--vsphere.vm", "bigip-ve", *BIGIP)
    assert verdicts(report) == {
        "vmx-nic-options": {f"bigip-ve.vmx:ethernet{n}": "pass" for n in (1, 2, 3)},
        "vmx-cpu-affinity-avoids-core0": {"bigip-ve.vmx": "pass"},
        "esxi-hyperthreading-disabled": {"Hyperthreading Active": "pass"},
        "esxi-power-policy-performance": {"/Power/CpuPolicy": "pass"}}
    assert code == 0
    code, report = scan_json("--vsphere.config", hosts.config(tmp_path), "--vsphere.vm", "bigip-default", *BIGIP)
    assert {c: set(o.values()) for c, o in verdicts(report).items()} == {
        "vmx-nic-options": {"fail"}, "vmx-cpu-affinity-avoids-core0": {"fail"},
        "esxi-hyperthreading-disabled": {"fail"}, "esxi-power-policy-performance": {"fail"}}
    assert code == 2


def test_hyperthreading_pending_change_is_reported(hosts, tmp_path):
    """DC0_C0_H0: HT active, configured off: still active until the reboot, so it fails now,
    and the result predicts the value after the reboot."""
    code, report = scan_json("--vsphere.config", hosts.config(tmp_path), "--vsphere.vm", "hana-default", *BIGIP,
                             "--rule", "esxi-hyperthreading-disabled")
    (obj,) = report["results"][0]["objects"]
    assert (obj["status"], obj["actual"], obj.get("predicted")) == ("fail", "true", "false")
    assert "next reboot" in obj["message"]
    code, report = scan_json("--vsphere.config", hosts.config(tmp_path), "--vsphere.vm", "hana-tuned", *BIGIP,
                             "--rule", "esxi-hyperthreading-disabled")
    (obj,) = report["results"][0]["objects"]
    assert (obj["status"], obj["actual"], obj.get("predicted")) == ("fail", "true", "true")
    assert "next reboot" not in obj["message"]


def test_vm_name_matching_none_is_a_usage_error(fleet, tmp_path):
    done = tunewatch("scan", "--vsphere.config", fleet.config(tmp_path), "--vsphere.vm", "nothing-*", *BIGIP)
    assert done.returncode == 1
    assert "'nothing-*' matches 0 VMs" in done.stderr
    assert done.stdout == ""


def test_a_glob_selecting_several_vms_gives_one_report_with_a_section_per_vm(hosts, tmp_path):
    """bigip-ve is tuned per seed 002, bigip-default is not: one report of both, in name
    order, that fails as a whole; text ends with the fleet verdict; junit has a suite each."""
    import json
    import xml.etree.ElementTree as ET
    config = hosts.config(tmp_path)
    out = tunewatch("scan", "--vsphere.config", config, "--vsphere.vm", "bigip-*", *BIGIP, "--format", "json",
                    "--report", f"junit={tmp_path / 'fleet.xml'}", "--report", f"text={tmp_path / 'fleet.txt'}")
    assert out.returncode == 2, out.stderr
    report = json.loads(out.stdout)
    assert report["error"] is None and list(report["vms"]) == ["bigip-default", "bigip-ve"]
    nic = {name: verdicts(vm)["vmx-nic-options"] for name, vm in report["vms"].items()}
    assert set(nic["bigip-ve"].values()) == {"pass"} and "fail" in nic["bigip-default"].values()
    suites = ET.parse(tmp_path / "fleet.xml").getroot()
    assert suites.tag == "testsuites" and [s.get("hostname") for s in suites] == ["bigip-default", "bigip-ve"]
    text = (tmp_path / "fleet.txt").read_text().splitlines()
    assert "== VM bigip-default" in text and "== VM bigip-ve" in text
    assert text[-1].startswith("fleet summary: 2 VMs from ") and text[-1].endswith("1 compliant, 1 not")
    html = tunewatch("scan", "--vsphere.config", config, "--vsphere.vm", "bigip-*", *BIGIP, "--format", "html")
    assert html.returncode == 1 and "reports as text, json, junit, not html" in html.stderr


def _guest_root(tmp_path, product_uuid: str):
    root = tmp_path / "guest"
    (root / "sys/class/dmi/id").mkdir(parents=True)
    (root / "sys/class/dmi/id/product_uuid").write_text(product_uuid.upper() + "\n")
    (root / "sys/class/dmi/id/sys_vendor").write_text("VMware, Inc.\n")
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/hostname").write_text("hana-guest\n")
    return root


def _bios_uuid(sim, vm: str) -> str:
    out = sim.govc("object.collect", "-s", f"/DC0/vm/{'appliances/' if vm == 'bigip-ve' else ''}{vm}", "config.uuid")
    return out.strip()


def test_folder_glob_selects_by_inventory_path(hosts, tmp_path):
    code, report = scan_json("--vsphere.config", hosts.config(tmp_path), "--vsphere.vm", "/DC0/vm/appliances/*",
                             *BIGIP, "--rule", "vmx-nic-options")
    assert report["host"]["hostname"] == "bigip-ve"
    assert set(verdicts(report)["vmx-nic-options"]) == {f"bigip-ve.vmx:ethernet{n}" for n in (1, 2, 3)}


@pytest.mark.parametrize("swapped", [False, True], ids=["smbios-2.4-order", "smbios-2.6-little-endian"])
def test_guest_finds_its_vm_by_bios_uuid_in_either_byte_order(fleet, tmp_path, swapped):
    uuid = _bios_uuid(fleet, "hana-tuned")
    forms = uuid_forms(uuid)
    guest_uuid = (forms - {uuid}).pop() if swapped else uuid
    assert guest_uuid != uuid or not swapped
    root = _guest_root(tmp_path, guest_uuid)
    code, report = scan_json("--root", root, "--vsphere.config", fleet.config(tmp_path), *HANA,
                             "--rule", "vmx-nic-options", "--rule", "esxi-netq-rx-pair-disabled")
    assert report["host"]["hostname"] == "hana-guest"  # the guest's own identity, VM facts added
    assert verdicts(report)["vmx-nic-options"] == {"hana-tuned.vmx:ethernet0": "pass",
                                                   "hana-tuned.vmx:ethernet1": "pass"}
    assert code == 0


def test_guest_whose_uuid_is_unknown_gets_errors(fleet, tmp_path):
    root = _guest_root(tmp_path, "01020304-0506-0708-090a-0b0c0d0e0f10")
    code, report = scan_json("--root", root, "--vsphere.config", fleet.config(tmp_path), *HANA,
                             "--rule", "vmx-nic-options", "--rule", "esxi-netq-rx-pair-disabled")
    assert {c: set(o.values()) for c, o in verdicts(report).items()} == {
        "vmx-nic-options": {"error"}, "esxi-netq-rx-pair-disabled": {"error"}}
    assert (f"vSphere {fleet.url}: 0 VMs with BIOS UUID 01020304-0506-0708-090a-0b0c0d0e0f10 or "
            "04030201-0605-0807-090a-0b0c0d0e0f10") in report["results"][0]["objects"][0]["message"]
    assert code == 2


def test_collect_writes_the_facts_a_later_scan_judges_the_same(hosts, tmp_path):
    uuid = _bios_uuid(hosts, "bigip-ve")
    root = _guest_root(tmp_path, uuid)
    cfg = hosts.config(tmp_path)
    _, live = scan_json("--root", root, "--vsphere.config", cfg, *BIGIP)
    snap = tmp_path / "snap"
    done = tunewatch("collect", "--root", root, "--vsphere.config", cfg, snap)
    assert done.returncode == 0, done.stderr
    assert (snap / "vmware/bigip-ve.vmx").read_text().count('.present = "TRUE"') == 4
    _, later = scan_json("--root", snap, *BIGIP)
    assert verdicts(later) == verdicts(live)
    assert set(verdicts(live)["vmx-nic-options"]) == {f"bigip-ve.vmx:ethernet{n}" for n in (1, 2, 3)}
    assert all(v == "pass" for objs in verdicts(live).values() for v in objs.values())
