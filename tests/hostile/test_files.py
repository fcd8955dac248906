"""What tunewatch writes is never lost or hijacked, and facts are not cheaply spoofed.

- `collect` refuses a directory another user owns (or may write), never writes or chmods
  through a link planted in it, and a collect cut short by a full disk (a small tmpfs, in
  a mount namespace) leaves a snapshot marked incomplete that `scan --root` refuses;
- `scan --output`, `remediate --output` and the textfile on a full disk keep the previous
  file whole (mode too);
- a process named irqbalance that is not irqbalance's binary run by root does not fail
  irqbalance-disabled; shortened label values stay unique; a fact directory that is a link
  leading out of the root is an error; an interface name the kernel cannot have is an error
  for that interface only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import names
from test_remediate import ENV, IN_CI, copy_host

PY = sys.executable


def tunewatch(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "tunewatch.cli.main", *args], capture_output=True, text=True, env=ENV,
                          timeout=180, cwd=cwd)


def _root_and_unshare() -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        if IN_CI:
            pytest.fail("these tests need root and unshare under CI")
        pytest.skip("needs root and unshare")


def _in_small_tmpfs(size: str, script: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`script` (bash) in a mount namespace where /mnt/full is a tmpfs of `size`."""
    wrapper = f"set -u\nmount -t tmpfs -o size={size} tw-full /mnt\nmkdir -p /mnt/full\ncd /mnt/full\n{script}"
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", wrapper],
                          capture_output=True, text=True, env=env or ENV, timeout=300)


# -- collect ---------------------------------------------------------------------------------


def test_collect_refuses_a_directory_another_user_owns_or_may_write(tmp_path):
    _root_and_unshare()
    source = str(names_example("sas-anf"))
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    done = tunewatch("collect", "--root", source, str(theirs))
    assert done.returncode != 0 and "owned by uid 65534" in done.stderr, done.stderr
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    done = tunewatch("collect", "--root", source, str(shared))
    assert done.returncode != 0 and "group or others may write it" in done.stderr, done.stderr
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir()
    done = tunewatch("collect", "--root", source, str(link))
    assert done.returncode != 0 and "not through a link" in done.stderr, done.stderr
    assert not os.listdir(theirs) and not os.listdir(shared) and not os.listdir(tmp_path / "elsewhere")


def names_example(name: str) -> Path:
    from support.snapshots import example
    return example(name)


def test_collect_never_writes_or_chmods_through_a_planted_link(tmp_path):
    """The links another user planted in the old attack (`proc/` appeared, then a link to a
    root-only file and one to a root-only directory): nothing is written or chmodded there."""
    from tunewatch.host.fs import FS
    from tunewatch.scan.snapshot_writer import SnapshotWriter
    from tunewatch.scan.destdir import Dest
    source = tmp_path / "src"
    (source / "etc/NetworkManager/dispatcher.d").mkdir(parents=True)
    script = source / "etc/NetworkManager/dispatcher.d/10-x"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    secret.chmod(0o600)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    dest = Dest(str(tmp_path / "snap"))
    try:
        (tmp_path / "snap/etc/NetworkManager/dispatcher.d").mkdir(parents=True)
        (tmp_path / "snap/etc/NetworkManager/dispatcher.d/10-x").symlink_to(secret)
        (tmp_path / "snap/ethtool").symlink_to(private)
        snap = SnapshotWriter(FS(str(source)), dest)
        snap.copy("etc/NetworkManager/dispatcher.d/10-x")
        with pytest.raises(OSError):
            snap.write("ethtool/eth0.json", "{}\n")
    finally:
        dest.close()
    assert oct(secret.stat().st_mode & 0o777) == "0o600" and secret.read_text() == "root only\n"
    assert not os.listdir(private)


@pytest.mark.parametrize("size", ["16k", "64k", "256k"])
def test_collect_cut_short_by_a_full_disk_is_refused_by_scan(size):
    _root_and_unshare()
    source = names_example("azure-m-rebooted")
    script = (f"{PY} -m tunewatch.cli.main collect --root {source} snap; echo \"collect: $?\"\n"
              f"{PY} -m tunewatch.cli.main scan --root snap --profile azure-sap-hana --format json >/dev/null; "
              "echo \"scan: $?\"\nls -a snap | head -5\n")
    done = _in_small_tmpfs(size, script)
    assert "collect: 1" in done.stdout, done.stdout + done.stderr
    assert "scan: 1" in done.stdout, done.stdout + done.stderr
    assert "did not finish" in done.stderr or "No space left" in done.stderr, done.stderr
    assert ".tunewatch-collect-complete" not in done.stdout


def test_a_finished_collect_is_marked_complete_and_scans(tmp_path):
    done = tunewatch("collect", "--root", str(names_example("azure-m-rebooted")), str(tmp_path / "snap"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "snap/.tunewatch-collect-complete").is_file()
    assert not (tmp_path / "snap/.tunewatch-collect-incomplete").exists()
    scanned = tunewatch("scan", "--root", str(tmp_path / "snap"), "--profile", "azure-sap-hana", "--brief")
    assert scanned.returncode == 2, scanned.stderr
    assert "FAIL          irqbalance-disabled " in scanned.stdout  # the old snapshot's comm-only pid still counts


# -- --output on a full disk -------------------------------------------------------------------


def test_outputs_on_a_full_disk_keep_the_previous_file():
    _root_and_unshare()
    root = names_example("azure-m-rebooted")
    run = f"{PY} -m tunewatch.cli.main"
    script = f"""
{run} scan --root {root} --profile azure-sap-hana --format json --output report.json; echo "first json: $?"
{run} remediate --root {root} --profile azure-sap-hana --output fix.sh; echo "first script: $?"
{run} scan --root {root} --profile azure-sap-hana --format prometheus --output t.prom; echo "first prom: $?"
chmod 0750 fix.sh
sha256sum report.json fix.sh t.prom > /tmp/tw-before
dd if=/dev/zero of=fill bs=1k 2>/dev/null; sync
{run} scan --root {root} --profile azure-sap-hana --format json -v --output report.json; echo "second json: $?"
{run} remediate --root {root} --profile azure-sap-hana --output fix.sh; echo "second script: $?"
{run} scan --root {root} --profile azure-sap-hana --format prometheus --metrics.detail --output t.prom; echo "second prom: $?"
sha256sum -c /tmp/tw-before && echo "unchanged"
stat -c '%a' fix.sh
ls -a
"""
    done = _in_small_tmpfs("512k", script)
    out = done.stdout
    for line in ("first json: 2", "first script: 0", "first prom: 0", "unchanged", "\n750\n"):
        assert line in out, out + done.stderr
    for line in ("second json: 0", "second script: 0", "second prom: 0"):
        assert line not in out, out  # each failed (no space), none truncated the old file
    assert ".tmp" not in out.split("750")[1], out  # no temp file left behind


def test_output_keeps_mode_and_is_replaced_whole(tmp_path):
    out = tmp_path / "fix.sh"
    out.write_text("old\n")
    out.chmod(0o700)
    done = tunewatch("remediate", "--root", str(names_example("azure-m-rebooted")), "--profile", "azure-sap-hana",
                     "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert oct(out.stat().st_mode & 0o777) == "0o700" and out.read_text().startswith("#!/bin/bash")
    assert [p.name for p in tmp_path.iterdir()] == ["fix.sh"]


# -- facts not cheaply spoofed -----------------------------------------------------------------


def _irqbalance(root: Path, pid: int, exe: str | None, uid: int | None) -> None:
    proc = root / f"proc/{pid}"
    proc.mkdir(parents=True)
    (proc / "comm").write_text("irqbalance\n")
    if uid is not None:
        (proc / "status").write_text(f"Name:\tirqbalance\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
    if exe is not None:
        (proc / "exe").symlink_to(exe)


def _status(root: Path, profile: str, check: str) -> dict:
    done = tunewatch("scan", "--root", str(root), "--profile", profile, "--format", "json", "--rule", check)
    assert done.returncode in (0, 2), done.stderr
    return json.loads(done.stdout)["results"][0]


def test_a_process_named_irqbalance_that_is_not_irqbalance_does_not_fail(tmp_path):
    root = copy_host("azure-m-tuned", tmp_path / "root")
    assert _status(root, "azure-sap-hana", "irqbalance-disabled")["status"] == "pass"
    _irqbalance(root, 4242, "/home/nobody/irqbalance", 65534)  # a user's own irqbalance-named program
    _irqbalance(root, 4243, "/tmp/evil", 0)  # root, but not the irqbalance binary
    got = _status(root, "azure-sap-hana", "irqbalance-disabled")
    assert got["status"] == "pass", got
    assert "pid 4242" in got["objects"][0]["message"] and "pid 4243" in got["objects"][0]["message"]
    _irqbalance(root, 4244, "/usr/sbin/irqbalance", 0)
    got = _status(root, "azure-sap-hana", "irqbalance-disabled")
    assert got["status"] == "fail" and "pid 4244" in got["objects"][0]["actual"], got
    assert "4242" not in got["objects"][0]["actual"]


def test_shortened_label_values_stay_unique():
    from support import scanresults as sr
    from support.prom import check_metrics
    from tunewatch.outputs.prometheus import render
    long = "/hana/" + "d" * 120
    result = sr.result([sr.check("nfs-mount-options", [sr.obj(long + "1", "fail"), sr.obj(long + "2", "fail")],
                                 kind="nfs_mount_options")])
    text = render(result, detail=True)
    series = [l.split(" ")[0] for l in text.splitlines() if l.startswith("tunewatch_object_status")]
    assert len(series) == 2 and len(set(series)) == 2, series
    checked = check_metrics(text)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("fact_dir, check", [("vmware", "vmx-nic-options"),
                                             ("usr/lib/systemd/system", "irqbalance-disabled-persistent")])
def test_a_fact_directory_linked_out_of_the_root_is_an_error(tmp_path, fact_dir, check):
    root = copy_host("vmware-vmxnet3-default", tmp_path / "root")
    outside = tmp_path / "outside"
    shutil.move(str(root / fact_dir), str(outside))
    depth = fact_dir.count("/") + 1
    (root / fact_dir).symlink_to("../" * (depth + 3) + "elsewhere")
    got = _status(root, "auto", check)
    assert got["status"] == "error", got


def test_an_interface_name_the_kernel_cannot_have_is_an_error_for_it_only(tmp_path):
    root = copy_host("vmware-vmxnet3-default", tmp_path / "root")
    names.rename(root, b"ens224", b"ens 224")
    got = _status(root, "vmware-sap-hana", "vmxnet3-rx-coalesce")
    by = {o["object"]: o["status"] for o in got["objects"]}
    assert by == {"ens 224": "error", "ens192": "fail"}, by


def test_vm_and_esxi_host_names_from_vsphere_stay_data(tmp_path):
    """A VM or ESXi host name (anyone with VM.Config rights picks it) lands in comments of the
    rendered .vmx and esxcli files: a newline there must not forge a setting."""
    from tunewatch.parsers.vmx import parse_vmx
    from tunewatch.vsphere.client import HostFacts, VmFacts
    from tunewatch.vsphere.render import render_files
    forged = 'x\nsched.cpu.affinity = "0"\nethernet1.pnicFeatures = "4"\n   Hyperthreading Active: false'
    vm = VmFacts(forged, "4221c1e8-0000-0000-0000-000000000001", {}, None, ((1, "vmxnet3"),))
    host = HostFacts(forged, {"Net.NetNetqRxQueueFeatPairEnable": "1"}, True, True, True, "dynamic")
    files = render_files(vm, host)
    (vmx_name, vmx), = [(k, v) for k, v in files.items() if k.endswith(".vmx")]
    assert "\n" not in vmx_name and "/" not in vmx_name[len("vmware/"):]
    parsed = parse_vmx(vmx, vmx_name)
    assert "sched.cpu.affinity" not in str(parsed) and "pnicfeatures" not in str(parsed).lower()
    cpu = files["vmware/esxcli/cpu-global.txt"].splitlines()
    assert [l for l in cpu if "Hyperthreading Active" in l and not l.startswith("#")] == \
        ["   Hyperthreading Active: true"]


def test_output_to_a_device_or_a_fifo_writes_to_it_and_never_replaces_it(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    done = tunewatch("scan", "--root", str(names_example("azure-m-tuned")), "--profile", "azure-sap-hana",
                     "--format", "json", "--output", str(fifo))
    out, _ = reader.communicate(timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(out)["profile"] == "azure-sap-hana"
    assert fifo.is_fifo() and [p.name for p in tmp_path.iterdir()] == ["fifo"]
