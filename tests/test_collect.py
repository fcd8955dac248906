"""`tunewatch collect`: a snapshot scans to the same verdicts as what it was collected from."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tunewatch import results
from tunewatch.scan import engine
from tunewatch.scan.collect import collect
from tunewatch.content.catalog import Content
from tunewatch.errors import TunewatchError
from tunewatch.facts.context import Facts
from tunewatch.host.fs import FS
from test_scenarios import ALL as SCENARIOS, run_scenario

EXAMPLES = os.path.join(os.path.dirname(__file__), "snapshots", "examples")
NAMES = sorted(n for n in os.listdir(EXAMPLES) if os.path.isdir(os.path.join(EXAMPLES, n)))
PLATFORM_PROFILE = {"azure-m-rebooted": "azure-sap-hana", "azure-m-tuned": "azure-sap-hana",
                    "azure-mlx5-kernel-4.15": "azure-sap-hana", "bigip-ve-esxi": "bigip-ve-esxi",
                    "rhel9-vmware-nm-keyfile": "vmware-sap-hana", "sas-anf": "azure-sas-grid-anf",
                    "sles15-vmware-ifcfg": "vmware-sap-hana", "vmware-seed001-tuned": "vmware-sap-hana",
                    "vmware-vmxnet3-default": "vmware-sap-hana", "vmware-vmxnet3-tuned": "vmware-sap-hana",
                    "sas-anf-seed003": "azure-sas-grid-anf", "sas-anf-udev-hook": "azure-sas-grid-anf",
                    "sas-anf-modules-load": "azure-sas-grid-anf", "sas-anf-modprobe-install": "azure-sas-grid-anf",
                    "azure-m416-kernel-6.12": "azure-sap-hana", "azure-ubuntu-next-kernel-6.14": "azure-sap-hana",
                    "azure-m-pinned-oneshot": "azure-sap-hana", "azure-m-pinned-udev": "azure-sap-hana",
                    "sas-anf-rhel9-tuned": "azure-sas-grid-anf", "sas-anf-sles15-saptune": "azure-sas-grid-anf",
                    "azure-rhel9-sap-nm-unmanaged": "azure-sap-hana", "azure-ubuntu2404-netplan": "azure-sap-hana"}


@pytest.fixture(scope="module")
def content() -> Content:
    return Content()


def verdicts(result: results.ScanResult) -> list:
    """Per-check status and per-object status/expected/actual/message; root and timing ignored."""
    root = result.root
    return [(r.check, r.status, [(o.object, o.status, o.expected, o.actual, o.message.replace(root, "<root>"))
                                 for o in r.objects]) for r in result.results]


def test_examples_have_a_platform_profile():
    assert set(NAMES) == set(PLATFORM_PROFILE)


@pytest.mark.parametrize("name", NAMES)
def test_collect_from_snapshot_scans_the_same(name, content, tmp_path):
    src = os.path.join(EXAMPLES, name)
    dst = str(tmp_path / "snap")
    written = collect(src, dst, content)
    assert written > 10
    for profile_id in ("auto", PLATFORM_PROFILE[name]):
        profile = content.resolve(profile_id)
        original, copy = engine.scan(content, profile, src), engine.scan(content, profile, dst)
        assert verdicts(copy) == verdicts(original), (name, profile_id)
        assert copy.host == original.host
        assert copy.nics == original.nics  # driver, version, firmware, bus survive the normalised sysfs
        assert copy.cpu_node == original.cpu_node


@pytest.mark.parametrize("directory", [pytest.param(d, id=f"{d.parent.name}/{d.name}") for d in SCENARIOS])
def test_collect_of_a_scenario_judges_the_same(directory, content, tmp_path):
    """Every named scenario (links, masks, owner and mode, udev parents, cron, rc.local...)
    collected, then judged by its check: the same status and per-object verdicts."""
    copy = tmp_path / directory.name
    (copy / "root").parent.mkdir(exist_ok=True)
    collect(str(directory / "root"), str(copy / "root"), content)
    shutil.copy(directory / "scenario.yaml", copy / "scenario.yaml")
    _, _, want = run_scenario(content, directory)
    _, _, got = run_scenario(content, copy)
    assert got.status == want.status
    root = str(directory / "root")
    assert [(o.object, o.status, o.message.replace(str(copy / "root"), root)) for o in got.objects] == \
        [(o.object, o.status, o.message) for o in want.objects]


def test_collect_of_a_collect_is_stable(content, tmp_path):
    first, second = str(tmp_path / "a"), str(tmp_path / "b")
    n1 = collect(os.path.join(EXAMPLES, "azure-m-tuned"), first, content)
    n2 = collect(first, second, content)
    assert n1 == n2
    profile = content.resolve("azure-sap-hana")
    assert verdicts(engine.scan(content, profile, first)) == verdicts(engine.scan(content, profile, second))


def test_collect_keeps_meaningful_symlinks(content, tmp_path):
    dst = tmp_path / "snap"
    collect(os.path.join(EXAMPLES, "azure-m-tuned"), str(dst), content)
    assert os.readlink(dst / "sys/class/net/enP30832s1/master") == "../eth0"
    assert os.path.islink(dst / "sys/class/net/eth0/lower_enP30832s1")
    assert os.path.basename(os.readlink(dst / "sys/class/net/enP30832s1/device/driver")) == "mlx5_core"
    assert (dst / "ethtool/enP30832s1.json").is_file()
    wants = dst / "etc/systemd/system/multi-user.target.wants"
    assert all(os.path.islink(wants / n) for n in os.listdir(wants))


def test_collect_keeps_parent_devices_links_and_owner_mode(content, tmp_path):
    """The Azure VF's hv_pci parent (udev DRIVERS==, NM_UNMANAGED), the MAC and its origin,
    a sysctl.d link and a keyfile's 0600 survive; the copy states owner and mode in filestat.json."""
    from tunewatch.facts.netdevice import read_net_devices

    src = str(SCENARIOS[0].parent.parent / "nic_settings_persistent/keyfile_vf_unmanaged_by_udev.fail/root")
    root = tmp_path / "root"
    shutil.copytree(src, root, symlinks=True)
    (root / "etc/sysctl.d").mkdir(parents=True)
    os.symlink("../sysctl.conf", root / "etc/sysctl.d/99-sysctl.conf")
    (root / "etc/sysctl.conf").write_text("net.core.somaxconn = 4096\n")
    dst = tmp_path / "snap"
    collect(str(root), str(dst), content)
    before, after = Facts(FS(str(root))), Facts(FS(str(dst)))
    want, got = read_net_devices(before.fs, before.interfaces), read_net_devices(after.fs, after.interfaces)
    chain = lambda d: [(p.kernel, p.subsystem, p.driver) for p in d.parents]  # noqa: E731
    assert {n: chain(d) for n, d in got.items()} == {n: chain(d) for n, d in want.items()}
    assert "hv_pci" in [p.driver for p in got["enP1s1"].parents]
    assert {n: (d.mac, d.permanent_mac, d.type) for n, d in got.items()} == \
        {n: (d.mac, d.permanent_mac, d.type) for n, d in want.items()}
    assert os.readlink(dst / "etc/sysctl.d/99-sysctl.conf") == "../sysctl.conf"
    stats = json.loads((dst / "filestat.json").read_text())
    assert stats["etc/NetworkManager/system-connections/enP1s1.nmconnection"] == {"mode": "0600", "uid": 0}
    assert after.sysctl_configured == before.sysctl_configured


def test_refuses_a_non_empty_directory(content, tmp_path):
    (tmp_path / "x").write_text("keep me")
    with pytest.raises(TunewatchError, match="empty"):
        collect(os.path.join(EXAMPLES, "sas-anf"), str(tmp_path), content)
    assert (tmp_path / "x").read_text() == "keep me"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert collect(os.path.join(EXAMPLES, "sas-anf"), str(empty), content) > 0


def test_cli_collect_then_scan(tmp_path):
    src, dst = os.path.join(EXAMPLES, "sas-anf"), str(tmp_path / "snap")
    run = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "collect", "--root", src, dst],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "wrote" in run.stdout
    again = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "collect", "--root", src, dst],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "empty" in again.stderr


def test_live_round_trip(content, tmp_path):
    """collect("/") then scan --root: the same verdicts and the same parsed facts as a live scan."""
    if not os.path.isdir("/proc/self") or not os.path.isdir("/sys/class/net"):
        pytest.skip("no procfs/sysfs")
    dst = str(tmp_path / "snap")
    collect("/", dst, content)
    every_nic = content.resolve("auto").replace(scope={"interfaces": {"include": [{"name": "."}]}})
    for profile in (*map(content.resolve, ("auto", "azure-sap-hana", "azure-sas-grid-anf", "vmware-sap-hana")),
                    every_nic):  # a scope naming interfaces reaches the device-less ones too (lo, veth)
        live, copy = engine.scan(content, profile, "/"), engine.scan(content, profile, dst)
        assert verdicts(copy) == verdicts(live), profile.id
        assert copy.host == live.host and copy.nics == live.nics and copy.cpu_node == live.cpu_node
    live, copy = Facts(FS("/"), defaults=content.defaults), Facts(FS(dst), defaults=content.defaults)
    assert copy.interfaces == live.interfaces
    for name, iface in live.interfaces.items():
        if iface.driver:
            try:
                want = live.ethtool(name)
            except TunewatchError:
                continue
            assert copy.ethtool(name) == want
    assert copy.topology == live.topology
    assert copy.mountinfo == live.mountinfo and copy.fstab == live.fstab
    names = lambda i: {n: (q.name, q.chip) for n, q in i.irqs.items()}  # noqa: E731 - counts move on
    assert names(copy.interrupts) == names(live.interrupts)
    assert copy.sysctl_configured == live.sysctl_configured
    assert copy.tuned == live.tuned
    assert copy.boot_scripts == live.boot_scripts
    units = {n for d in ("etc/systemd/system", "usr/lib/systemd/system", "lib/systemd/system")
             for n in live.fs.listdir(d) if n.endswith(".service")} | {"irqbalance.service"}
    for unit in sorted(units)[:300]:
        assert copy.unit_state(unit) == live.unit_state(unit), unit


NFS_UNIT = """[Unit]
Description=pin NIC IRQs (script lives on NFS)
[Service]
Type=oneshot
ExecStart=/opt/sas/bin/pin-irqs.sh eth0
[Install]
WantedBy=multi-user.target
"""


def test_collect_never_touches_nfs_mount_points(tmp_path):
    """A hung NFS server must not hang collect: nothing under an NFS mount point is opened or listed.

    The fake host mounts /sasdata (NFS) and enables a unit whose ExecStart lives there; under
    the mount point sits a FIFO, so opening it would block forever, and an audit hook fails
    the collect on any open/listdir of a path under a mount point.
    """
    root = tmp_path / "root"
    shutil.copytree(os.path.join(EXAMPLES, "sas-anf"), root, symlinks=True)
    (root / "etc/systemd/system/pin-irqs.service").write_text(NFS_UNIT)
    os.symlink("/etc/systemd/system/pin-irqs.service", root / "etc/systemd/system/multi-user.target.wants/pin-irqs.service")
    with open(root / "proc/self/mountinfo", "a") as f:
        f.write("122 23 0:55 / /opt/sas rw,noatime,nodiratime shared:82 - nfs 10.0.2.4:/sasbin rw,vers=3,"
                "rsize=65536,wsize=65536,acdirmin=0,hard,proto=tcp,nconnect=8,addr=10.0.2.4\n")
    (root / "sys/class/bdi/0:55").mkdir()
    (root / "sys/class/bdi/0:55/read_ahead_kb").write_text("128\n")
    (root / "opt/sas/bin").mkdir(parents=True)
    os.mkfifo(root / "opt/sas/bin/pin-irqs.sh")
    assert not (root / "sasdata").exists()  # the other mount points are absent, /opt/sas is a trap
    dst = tmp_path / "snap"
    script = textwrap.dedent(f"""
        import os, sys
        MOUNTS = [{str(root / 'opt/sas')!r}, {str(root / 'sasdata')!r}, {str(root / 'sashome')!r}]
        def hook(event, args):
            if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes)):
                path = os.fsdecode(args[0])
                if any(path == m or path.startswith(m + "/") for m in MOUNTS):
                    raise RuntimeError("touched a mount point: " + path)
        sys.addaudithook(hook)
        from tunewatch.scan.collect import collect
        from tunewatch.content.catalog import Content
        print(collect({str(root)!r}, {str(dst)!r}, Content(), verbose=True))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "opt/sas/bin/pin-irqs.sh" in run.stderr and "mount point" in run.stderr
    assert (dst / "etc/systemd/system/pin-irqs.service").read_text() == NFS_UNIT
    assert not (dst / "opt/sas").exists()
    for bdi in ("0:52", "0:53", "0:54"):
        assert (dst / f"sys/class/bdi/{bdi}/read_ahead_kb").read_text().strip() == "15380"
    assert (dst / "sys/class/bdi/0:55/read_ahead_kb").read_text() == "128\n"
    content = Content()
    profile = content.resolve("azure-sas-grid-anf")
    result = {r.check: r.status for r in engine.scan(content, profile, str(dst)).results}
    assert result["nfs-readahead"] == "fail"  # /opt/sas at 128 KiB: the copy still judges it
    assert result["nfs-mount-options"] == "pass"


def test_dangling_and_mask_links_keep_their_unit_state(content, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(os.path.join(EXAMPLES, "azure-m-tuned"), root, symlinks=True)
    wants = root / "etc/systemd/system/multi-user.target.wants"
    os.symlink("/usr/lib/systemd/system/gone.service", wants / "gone.service")  # dangling in a snapshot
    os.symlink("/dev/null", root / "etc/systemd/system/irqbalance.service")
    dst = str(tmp_path / "snap")
    collect(str(root), dst, content)
    before, after = Facts(FS(str(root))), Facts(FS(dst))
    for unit in ("gone.service", "irqbalance.service", "sshd.service", "mlnx-irq-affinity.service"):
        assert after.unit_state(unit) == before.unit_state(unit), unit
    assert after.unit_state("irqbalance.service").masked


def test_cli_collect_summarises_skips_in_one_line_and_lists_them_with_v(tmp_path):
    """Binaries among start-up programs are skipped on every run: one summary line, not one
    line each; -v lists them."""
    root = tmp_path / "root"
    shutil.copytree(os.path.join(EXAMPLES, "sas-anf"), root, symlinks=True)
    binaries = ["etc/rc.d/rc.local", "etc/rc.local", "etc/init.d/after.local"]
    for rel in binaries:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))

    def run(*extra):
        out = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "collect", *extra, "--root", str(root),
                              str(tmp_path / f"snap{len(extra)}")], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return [line for line in out.stderr.splitlines() if "skipped" in line]

    quiet = run()
    assert len(quiet) == 1, quiet
    assert quiet[0].startswith("tunewatch collect: skipped 3 file(s): 3 a binary") and "-v lists" in quiet[0]
    listed = run("-v")
    for rel in binaries:
        assert any(f"skipped {rel}: a binary" in line for line in listed), listed


def test_collect_copies_the_default_entry_a_per_interface_key_is_re_added_from():
    """A per-interface net.* key nothing configures comes back on a re-add as a copy of its
    `default` entry (kinds/sysctl.py after_readd): collect copies that entry too."""
    from types import SimpleNamespace as NS

    from tunewatch.scan.collect import _sysctl_keys
    check = NS(kind="sysctl", applicability={}, vars={"settings": {"net.ipv4.conf.eth0.rp_filter": 2, "vm.swappiness": 10}})
    fake = NS(checks={"c": check}, profiles=[], resolve=None)
    assert _sysctl_keys(fake) == {"net.ipv4.conf.eth0.rp_filter", "net.ipv4.conf.default.rp_filter", "vm.swappiness"}
