"""Boot prediction as data: every object of a `-persistent` check says what the value will
be after the next boot and where that comes from, and every failing object of the kinds
with a persistent form carries a structured fix (outputs never parse message text)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tunewatch.results import STATUSES
from tunewatch.scan import engine
from tunewatch.host import fs as fs_module
from tunewatch.content.catalog import Content
from tunewatch.host.fs import FS

from test_scenarios import ALL, run_scenario

EXAMPLES = Path(__file__).parent / "snapshots" / "examples"
# the kinds with a `-persistent` form (docs/snapshot-contract.md, Persistence); their runtime forms get `fix` too
PERSISTENT_KINDS = {"irq_affinity_persistent", "nic_settings_persistent", "service_disabled", "sysctl",
                    "nfs_mount_options", "nfs_nconnect"}
SOURCES = ("configured by ", "driver default", "module default", "kernel default", "never applied: ", "not configured",
           "not installed", "disabled", "nothing required", "could not predict")


@pytest.fixture(scope="module")
def content() -> Content:
    return Content()


def _assert_data(result) -> None:
    persistent = result.runtime_check is not None
    for o in result.objects:
        if persistent:  # every object of every -persistent check, whatever its kind or status
            assert o.predicted and o.source, f"{result.check} {o.object}: no prediction ({o.message})"
        if persistent or result.check.endswith("-persistent"):  # and what a re-add of its device leaves
            after = o.after_readd
            assert after is not None and after.predicted and after.source, f"{result.check} {o.object}: no after_readd"
            assert after.status in STATUSES, (result.check, o.object, after.status)
    if result.kind not in PERSISTENT_KINDS:
        return  # udev_attr's (nfs-readahead-persistent) sources belong to the udev engine's work
    for o in result.objects:
        if persistent or o.predicted is not None:
            assert o.predicted, f"{result.check} {o.object}: no predicted value ({o.message})"
            assert o.source, f"{result.check} {o.object}: no source"
            # several settings of one object: "key: source; key: source"
            parts = [re.sub(r"^(channels|rings|coalesce|features)\.[\w-]+: ", "", p)
                     for p in re.split(r"; (?=(?:channels|rings|coalesce|features)\.[\w-]+: )", o.source)]
            assert all(p.startswith(SOURCES) for p in parts), f"{result.check} {o.object}: source {o.source!r}"
        if o.status == "fail":
            assert o.fix is not None and o.fix.to_dict(), f"{result.check} {o.object}: failing without a fix"


@pytest.mark.parametrize("directory", [d for d in ALL if d.parent.name in PERSISTENT_KINDS],
                         ids=lambda d: f"{d.parent.name}/{d.name}")
def test_scenario_objects_carry_prediction_and_fix(content: Content, directory: Path) -> None:
    _meta, _check, result = run_scenario(content, directory)
    _assert_data(result)


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()))
def test_example_objects_carry_prediction_and_fix(content: Content, example: str) -> None:
    scan = engine.scan(content, content.resolve("auto"), str(EXAMPLES / example))
    for result in scan.results:
        _assert_data(result)


def _objects(content: Content, example: str, profile: str, check: str) -> dict:
    scan = engine.scan(content, content.resolve(profile), str(EXAMPLES / example))
    result = next(r for r in scan.results if r.check == check)
    return {o.object: o for o in result.objects}


SLOTS = ("sunrpc.tcp_slot_table_entries", "sunrpc.tcp_max_slot_table_entries")


def test_seed003_slot_tables_revert_to_module_defaults(content: Content) -> None:
    """A RHEL 8 SAS/ANF host configured exactly as seed 003 (sunrpc.* in /etc/sysctl.conf):
    systemd-sysctl runs before sunrpc loads, so the slot tables come back at 2 and 65536."""
    objs = _objects(content, "sas-anf-seed003", "azure-sas-grid-anf", "sunrpc-slot-table-persistent")
    assert {k: (o.status, o.predicted) for k, o in objs.items()} == {
        "sunrpc.tcp_slot_table_entries": ("fail", "2"), "sunrpc.tcp_max_slot_table_entries": ("fail", "65536")}
    for key in SLOTS:
        assert objs[key].source.startswith("never applied: ") and "sunrpc is not loaded before systemd-sysctl" \
            in objs[key].source
        assert objs[key].fix.file == "/etc/modprobe.d/sunrpc.conf"
        assert objs[key].fix.change == f"options sunrpc {key.split('.', 1)[1]}=128"


@pytest.mark.parametrize("example, via", [("sas-anf-udev-hook", "usr/lib/udev/rules.d/60-nfs.rules:"),
                                          ("sas-anf-modules-load", "systemd-sysctl"),
                                          ("sas-anf-modprobe-install", "usr/lib/modprobe.d/50-nfs.conf:4 (install)")])
def test_seed003_fixed_the_three_ways_distributions_do(content: Content, example: str, via: str) -> None:
    objs = _objects(content, example, "azure-sas-grid-anf", "sunrpc-slot-table-persistent")
    for key in SLOTS:
        assert (objs[key].status, objs[key].predicted) == ("pass", "128"), objs[key].message
        # etc/sysctl.conf, read by systemd-sysctl through the 99-sysctl.conf link, by procps directly
        assert objs[key].source.startswith("configured by etc/sysctl") and "sysctl.conf:" in objs[key].source
        assert via in objs[key].message


def test_rhel9_tuned_vm_unit_zeroes_bytes_and_reapply_restores_them(content: Content, tmp_path: Path) -> None:
    """sas-anf-rhel9-tuned: tuned 2.25's virtual-guest writes vm.dirty_ratio = 30 in its [vm]
    unit after systemd-sysctl set seed 003's vm.dirty_bytes (the kernel zeroes the bytes);
    reapply_sysctl writes etc/sysctl.conf again. Without it the host boots with 0."""
    objs = _objects(content, "sas-anf-rhel9-tuned", "azure-sas-grid-anf", "vm-dirty-settings-persistent")
    bytes_ = objs["vm.dirty_bytes"]
    assert (bytes_.status, bytes_.predicted, bytes_.source) == ("pass", "31457280", "configured by etc/sysctl.conf:16")
    assert "tuned (virtual-guest) reapply_sysctl" in bytes_.message
    root = tmp_path / "host"
    shutil.copytree(EXAMPLES / "sas-anf-rhel9-tuned", root, symlinks=True)
    main = root / "etc/tuned/tuned-main.conf"
    main.write_text(main.read_text().replace("reapply_sysctl = 1", "reapply_sysctl = 0"))
    scan = engine.scan(content, content.resolve("azure-sas-grid-anf"), str(root))
    result = next(r for r in scan.results if r.check == "vm-dirty-settings-persistent")
    got = {o.object: o for o in result.objects}["vm.dirty_bytes"]
    assert (got.status, got.predicted) == ("fail", "0")
    assert got.source.startswith("configured by tuned profile virtual-guest (usr/lib/tuned/virtual-guest/tuned.conf)")
    assert "writing vm.dirty_ratio = 30 (the kernel zeroes vm.dirty_bytes" in got.source and "dirty_ratio_handler()" in got.source
    assert got.fix.change == "reapply_sysctl = 1"


def test_sles15_saptune_note_wins_over_sysctl_d(content: Content) -> None:
    """sas-anf-sles15-saptune: saptune.service applies SAP note 1984787 after systemd-sysctl,
    so its vm.dirty_bytes (629145600) is what the host boots with, not seed 003's."""
    objs = _objects(content, "sas-anf-sles15-saptune", "azure-sas-grid-anf", "vm-dirty-settings-persistent")
    got = objs["vm.dirty_bytes"]
    assert (got.status, got.predicted) == ("fail", "629145600")
    assert got.source == "configured by saptune note usr/share/saptune/notes/1984787:10"
    assert (got.fix.file, got.fix.change) == ("/etc/saptune/override/1984787", "[sysctl]\nvm.dirty_bytes=")
    assert {k: o.status for k, o in objs.items() if k != "vm.dirty_bytes"} == {
        "vm.dirty_expire_centisecs": "pass", "vm.dirty_writeback_centisecs": "pass"}


def test_m416_on_6_12_masters_come_back_at_64(content: Content) -> None:
    objs = _objects(content, "azure-m416-kernel-6.12", "azure-sap-hana", "nic-settings-persistent")
    for master in ("eth0", "eth1"):
        assert (objs[master].status, objs[master].predicted) == ("fail", "64")
        # the result names the kernel it assumed: no boot loader files, so the running one
        assert objs[master].source == ("driver default (hv_netvsc, Linux 6.12: 64) of 6.12.0-160000.5-default "
                                       "(the running kernel: no GRUB, BLS or boot/vmlinuz files)")
        assert objs[master].fix.command == f"ethtool -L {master} combined 16"
    for vf in ("enP30832s1", "enP30833s2"):
        assert (objs[vf].status, objs[vf].predicted) == ("pass", "16")
    # the same configuration on Linux 5.14 (azure-m-tuned's masters are configured; the
    # 5.14 default 8 would pass as well: see scenarios netvsc_default_8_on_5_14.pass)


def test_pending_6_14_kernel_masters_come_back_at_32(content: Content, tmp_path: Path) -> None:
    """Ubuntu 24.04, 128 vCPUs, running 6.8 with 6.14 first in grub.cfg (GRUB_DEFAULT=0):
    the masters come back at 6.14's hv_netvsc default vCPUs/4 = 32, and the source says
    which kernel was assumed and that it is not the running one. Without the boot files the
    running kernel's 8 is assumed and the check passes (the verdict before this change)."""
    objs = _objects(content, "azure-ubuntu-next-kernel-6.14", "azure-sap-hana", "nic-settings-persistent")
    for master in ("eth0", "eth1"):
        assert (objs[master].status, objs[master].predicted) == ("fail", "32"), objs[master].message
        assert objs[master].source.startswith("driver default (hv_netvsc, Linux 6.14: 32) of 6.14.0-1012-azure "
                                              "(the GRUB default entry 'Ubuntu'")
        assert objs[master].source.endswith("; running 6.8.0-1021-azure)")
        # a re-add or driver reload without a reboot: the running 6.8's driver, not 6.14's (SPEC §2)
        after = objs[master].after_readd
        assert (after.status, after.predicted) == ("pass", "8"), after
        assert after.source == "driver default (hv_netvsc, Linux 6.8: 8) of the running kernel 6.8.0-1021-azure"
    for vf in ("enP30832s1", "enP30833s2"):
        assert (objs[vf].after_readd.status, objs[vf].after_readd.predicted) == ("pass", "16")
    root = tmp_path / "host"
    shutil.copytree(EXAMPLES / "azure-ubuntu-next-kernel-6.14", root, symlinks=True)
    shutil.rmtree(root / "boot")
    scan = engine.scan(content, content.resolve("azure-sap-hana"), str(root))
    before = {o.object: o for r in scan.results if r.check == "nic-settings-persistent" for o in r.objects}
    assert (before["eth0"].status, before["eth0"].predicted) == ("pass", "8")
    assert before["eth0"].source.endswith("of 6.8.0-1021-azure (the running kernel: no GRUB, BLS or boot/vmlinuz files)")


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_snapshot_owner_counts_when_the_snapshot_keeps_owners(content: Content, tmp_path: Path) -> None:
    """docs/snapshot-contract.md: a path filestat.json does not list has the snapshot file's own owner when the
    snapshot root is owned by uid 0 (a copy that kept owners), and root otherwise."""
    src = Path(__file__).parent / "scenarios" / "nic_settings_persistent" / "nm_dispatcher_script.pass"
    dst = tmp_path / "scn"
    shutil.copytree(src, dst, symlinks=True)
    script = dst / "root" / "etc" / "NetworkManager" / "dispatcher.d" / "90-accelnet-tuning"
    os.chown(script, 1000, 1000)
    os.chown(dst / "root", 0, 0)
    _meta, _check, result = run_scenario(content, dst)
    assert result.status == "fail" and any("owned by uid 1000" in o.message for o in result.objects)
    os.chown(dst / "root", 1000, 1000)  # a copy made by an ordinary user: root assumed
    _meta, _check, result = run_scenario(content, dst)
    assert result.status == "pass", [o.message for o in result.objects]


# read twice outside the boot model: FS's network-mount guard reads the snapshot's
# mountinfo itself, and kinds/udev_attr.py (nfs-readahead-persistent) reads the udev rules
ELSEWHERE = re.compile(r"^(proc/self/mountinfo|(etc|usr/lib|lib|run)/udev/rules\.d/.*)$")


@pytest.mark.parametrize("example", ["sas-anf-udev-hook", "sas-anf-modprobe-install", "azure-m-tuned",
                                     "vmware-vmxnet3-tuned", "azure-m416-kernel-6.12"])
def test_the_model_reads_no_file_twice(content: Content, example: str, monkeypatch) -> None:
    root = str(EXAMPLES / example)
    opened: list[str] = []
    real = os.open

    def counting(path, *args, **kwargs):
        if path.startswith(root + "/"):
            opened.append(path[len(root) + 1:])
        return real(path, *args, **kwargs)

    monkeypatch.setattr(fs_module.os, "open", counting)
    engine.scan(content, content.resolve("auto"), root)
    monkeypatch.undo()
    assert opened  # the counter saw the scan's reads
    twice = sorted({rel for rel in opened if opened.count(rel) > 1 and not ELSEWHERE.match(rel)})
    assert twice == []


@pytest.mark.parametrize("example,after", [("azure-m-pinned-oneshot", "fail"), ("azure-m-pinned-udev", "pass")])
def test_irq_pinning_after_a_vf_readd(content: Content, example: str, after: str) -> None:
    """Both hosts pass every check (the next boot pins the VFs); only the udev rule pins
    the new IRQs of a VF that Azure re-adds during host servicing."""
    scan = engine.scan(content, content.resolve("azure-sap-hana"), str(EXAMPLES / example))
    assert scan.compliant
    objs = _objects(content, example, "azure-sap-hana", "nic-irq-affinity-persistent")
    assert {o.status for o in objs.values()} == {"pass"}
    assert {o.after_readd.status for o in objs.values()} == {after}


def test_json_report_carries_after_readd_on_every_persistent_object(content: Content) -> None:
    import json

    from tunewatch.outputs.report import render_json

    scan = engine.scan(content, content.resolve("auto"), str(EXAMPLES / "azure-m-pinned-oneshot"))
    doc = json.loads(render_json(scan))
    persistent = [o for r in doc["results"] if r["check"].endswith("-persistent") for o in r["objects"]]
    assert persistent and all(set(o["after_readd"]) == {"predicted", "source", "status"} for o in persistent)
    irqbalance = next(r for r in doc["results"] if r["check"] == "irqbalance-disabled-persistent")["objects"][0]
    assert irqbalance["after_readd"]["source"] == "not affected by a re-add"


@pytest.mark.parametrize("directory", [d for d in ALL if d.parent.name == "nic_settings_persistent"],
                         ids=lambda d: d.name)
def test_every_mechanism_says_whether_it_runs_on_add(directory: Path) -> None:
    """Each PersistedEthtool of the existing mechanisms (ifcfg, keyfiles, .link files, udev
    rules, dispatcher scripts and units) is classified: runs again on the device's add
    event or not (None only for a mechanism not yet classified)."""
    from tunewatch.facts.context import Facts
    from tunewatch.facts.defaults import Defaults

    # with the content's layouts (the tuned profile directories), as a scan has them
    facts = Facts(FS(str(directory / "root")), defaults=Defaults(layouts=Content().defaults.layouts))
    try:
        entries = facts.persisted_ethtool
    except Exception:  # noqa: BLE001 - a scenario whose facts are unreadable on purpose
        pytest.skip("facts unreadable in this scenario")
    for e in entries:
        if not e.problem:
            assert e.on_add in (True, False), (directory.name, e)


def test_on_add_follows_the_consumer() -> None:
    """udev rule and .link: on add; wicked STARTMODE=onboot: on add; a dispatcher script
    reaching the VF through the master's lower_* link: not on add."""
    from tunewatch.facts.context import Facts

    def entries(name: str) -> dict[str, bool | None]:
        root = Path(__file__).parent / "scenarios" / "nic_settings_persistent" / name / "root"
        return {(e.source, t): e.on_add for e in Facts(FS(str(root))).persisted_ethtool if not e.problem
                for t in e.targets}

    udev = entries("udev_rule_reapplies_on_readd.pass")
    assert udev[("etc/sysconfig/network/ifcfg-eth0:ETHTOOL_OPTIONS", "eth0")] is True
    assert any(src.startswith("etc/udev/rules.d/") and t == "enP1s1" and on for (src, t), on in udev.items())
    link = entries("link_file_reapplies_on_readd.pass")
    assert link[("etc/systemd/network/10-vmxnet3.link", "ens192")] is True
    dispatcher = entries("dispatcher_on_master_not_rerun.pass")
    assert {on for (src, t), on in dispatcher.items() if t == "enP1s1"} == {False}
    assert {on for (src, t), on in dispatcher.items() if t == "eth0"} == {True}
