"""Engine behaviour through the CLI: statuses, exit codes, waivers, tailoring, report shapes,
unreadable facts and snapshot symlinks (docs/snapshot-contract.md)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tunewatch import kinds
from tunewatch.cli import main as cli
from tunewatch.scan import engine
from tunewatch.content.catalog import Content
from tunewatch.content.waivers import Waiver
from tunewatch.facts.context import Facts
from tunewatch.host.fs import FS
from tunewatch.results import ERROR, FAIL, NOTAPPLICABLE, PASS, STATUSES, WAIVED, worst

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "tests" / "snapshots" / "examples"
TUNED, REBOOTED = str(EXAMPLES / "azure-m-tuned"), str(EXAMPLES / "azure-m-rebooted")
HANA = ["irqbalance-disabled", "irqbalance-disabled-persistent", "accelerated-networking", "nic-queue-count",
        "nic-irq-affinity", "nic-irq-spread", "nic-settings-persistent", "nic-irq-affinity-persistent"]
IRQ_CHECKS = {"nic-irq-affinity", "nic-irq-spread"}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


def scan_json(capsys, root: str, *extra: str) -> tuple[int, dict]:
    rc, out, err = run(capsys, "scan", "--root", root, "--format", "json", *extra)
    assert rc in (0, 2), err
    return rc, json.loads(out)


def by_check(report: dict) -> dict[str, dict]:
    return {r["check"]: r for r in report["results"]}


def objects(result: dict) -> dict[str, str]:
    return {o["object"]: o["status"] for o in result["objects"]}


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def only(tmp_path: Path, *keep: str, name="only", extra: str = "") -> str:
    """A tailoring of azure-sap-hana that keeps only `keep`."""
    drop = [c for c in HANA if c not in keep]
    return write(tmp_path / f"{name}.yaml", f"tailoring: {name}\nprofile: azure-sap-hana\n"
                                            f"unselect: [{', '.join(drop)}]\n{extra}")


@pytest.fixture
def tuned_copy(tmp_path: Path) -> Path:
    """A private copy of azure-m-tuned (symlinks kept as links) to damage."""
    dst = tmp_path / "root"
    shutil.copytree(TUNED, dst, symlinks=True)
    return dst


# -- statuses and exit codes -----------------------------------------------------------

def test_worst_order() -> None:
    assert worst([PASS, FAIL, ERROR]) == FAIL
    assert worst([PASS, ERROR, WAIVED]) == ERROR
    assert worst([PASS, WAIVED]) == WAIVED
    assert worst([NOTAPPLICABLE, PASS]) == PASS
    assert worst([NOTAPPLICABLE]) == NOTAPPLICABLE
    assert worst([]) == NOTAPPLICABLE


def test_check_status_is_worst_of_its_objects(capsys) -> None:
    rc, report = scan_json(capsys, REBOOTED, "--profile", "azure-sap-hana")
    assert rc == 2
    for r in report["results"]:
        assert r["status"] == worst(o["status"] for o in r["objects"]), r["check"]
    checks = by_check(report)
    assert checks["nic-queue-count"]["status"] == FAIL
    assert objects(checks["nic-queue-count"]) == {"enP30832s1": FAIL, "enP30833s2": FAIL, "eth0": PASS, "eth1": PASS}
    assert sum(report["summary"].values()) == len(report["results"]) == len(HANA)


@pytest.mark.parametrize("root, profile, code", [(TUNED, "azure-sap-hana", 0), (REBOOTED, "azure-sap-hana", 2),
                                                 (str(EXAMPLES / "sas-anf"), "azure-sas-grid-anf", 0),
                                                 (str(EXAMPLES / "vmware-vmxnet3-default"), "vmware-sap-hana", 2)])
def test_exit_codes_in_process(capsys, root: str, profile: str, code: int) -> None:
    assert run(capsys, "scan", "--root", root, "--profile", profile)[0] == code


def test_usage_and_content_errors_exit_1(capsys, tmp_path: Path) -> None:
    rc, _, err = run(capsys, "scan", "--root", TUNED, "--profile", "no-such-profile")
    assert rc == 1 and "no-such-profile" in err
    rc, _, err = run(capsys, "scan", "--root", str(tmp_path / "missing"))
    assert rc == 1 and "not a directory" in err


def test_argparse_usage_error_exits_1() -> None:
    p = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "scan", "--format", "yaml"], capture_output=True,
                       text=True, timeout=60)
    assert "invalid choice" in p.stderr
    assert p.returncode == 1


def test_exit_codes_real_process(tmp_path: Path) -> None:
    def scan(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "scan", *argv], capture_output=True,
                              text=True, timeout=60)
    ok = scan("--root", TUNED, "--profile", "azure-sap-hana")
    failing = scan("--root", REBOOTED, "--profile", "azure-sap-hana", "--format", "json")
    bad = scan("--root", TUNED, "--waivers", write(tmp_path / "w.yaml", "- just a list\n"))
    assert (ok.returncode, failing.returncode, bad.returncode) == (0, 2, 1)
    assert json.loads(failing.stdout)["summary"]["fail"] > 0
    for p in (ok, failing, bad):
        assert "Traceback" not in p.stderr
    assert "w.yaml" in bad.stderr and bad.stdout == ""


# -- waivers ---------------------------------------------------------------------------

def test_active_waiver_turns_the_only_failure_into_waived_exit_0(capsys, tmp_path: Path) -> None:
    tailoring = only(tmp_path, "irqbalance-disabled")
    waivers = write(tmp_path / "waivers.yaml", "waivers:\n  - check: irqbalance-disabled\n"
                    "    justification: vendor support needs irqbalance until the driver fix\n"
                    "    expires: '2099-12-31'\n")
    rc, report = scan_json(capsys, REBOOTED, "--tailoring", tailoring)
    assert rc == 2 and by_check(report)["irqbalance-disabled"]["status"] == FAIL
    rc, report = scan_json(capsys, REBOOTED, "--tailoring", tailoring, "--waivers", waivers)
    result = by_check(report)["irqbalance-disabled"]
    assert rc == 0 and result["status"] == WAIVED
    assert report["summary"]["waived"] == 1 and report["summary"]["fail"] == 0
    obj = result["objects"][0]
    assert "waived until 2099-12-31" in obj["message"] and obj["waiver"].startswith(waivers)


def test_expired_waiver_fails_again_with_a_message(capsys, tmp_path: Path) -> None:
    waivers = write(tmp_path / "waivers.yaml", "waivers:\n  - check: irqbalance-disabled\n"
                    "    justification: temporary exception for the migration weekend\n"
                    "    expires: '2020-01-31'\n")
    rc, report = scan_json(capsys, REBOOTED, "--tailoring", only(tmp_path, "irqbalance-disabled"),
                           "--waivers", waivers)
    result = by_check(report)["irqbalance-disabled"]
    assert rc == 2 and result["status"] == FAIL
    assert "waiver expired on 2020-01-31" in result["objects"][0]["message"]


def test_object_waiver_covers_only_that_object(capsys, tmp_path: Path) -> None:
    waivers = write(tmp_path / "waivers.yaml", "waivers:\n  - check: nic-queue-count\n    object: enP30832s1\n"
                    "    justification: this VF is being replaced next week\n    expires: '2099-01-01'\n")
    tailoring = only(tmp_path, "nic-queue-count")
    rc, report = scan_json(capsys, REBOOTED, "--tailoring", tailoring, "--waivers", waivers)
    result = by_check(report)["nic-queue-count"]
    assert rc == 2 and result["status"] == FAIL
    assert objects(result) == {"enP30832s1": WAIVED, "enP30833s2": FAIL, "eth0": PASS, "eth1": PASS}


def test_waiver_for_a_passing_check_changes_nothing(capsys, tmp_path: Path) -> None:
    waivers = write(tmp_path / "waivers.yaml", "waivers:\n  - check: accelerated-networking\n"
                    "    justification: kept for the audit trail only\n    expires: '2099-01-01'\n")
    rc, report = scan_json(capsys, TUNED, "--profile", "azure-sap-hana", "--waivers", waivers)
    assert rc == 0 and by_check(report)["accelerated-networking"]["status"] == PASS


def test_waived_ranks_between_error_and_pass() -> None:
    content = Content()
    profile = content.resolve("azure-sap-hana")
    waivers = [Waiver("nic-queue-count", vf, "replacing this VF", dt.date(2099, 1, 1), "inline")
               for vf in ("enP30832s1", "enP30833s2")]
    result = engine.scan(content, profile, REBOOTED, waivers, today=dt.date(2030, 1, 1))
    check = next(r for r in result.results if r.check == "nic-queue-count")
    assert check.status == WAIVED  # two waived + two pass objects
    assert result.exit_code == 2  # other checks still fail


# -- tailoring -------------------------------------------------------------------------

def test_tailoring_unselects_a_check(capsys, tmp_path: Path) -> None:
    t = write(tmp_path / "t.yaml", "tailoring: no-irqbalance\nprofile: azure-sap-hana\n"
              "unselect: [irqbalance-disabled, irqbalance-disabled-persistent]\n")
    rc, report = scan_json(capsys, REBOOTED, "--tailoring", t)
    assert report["profile"] == "no-irqbalance"
    assert set(by_check(report)) == set(HANA) - {"irqbalance-disabled", "irqbalance-disabled-persistent"}


def test_tailoring_var_override_makes_the_rebooted_host_pass(capsys, tmp_path: Path) -> None:
    t = only(tmp_path, "nic-queue-count", extra="vars:\n  nic-queue-count: {max_queues: 32}\n")
    rc, report = scan_json(capsys, REBOOTED, "--tailoring", t)
    result = by_check(report)["nic-queue-count"]
    assert rc == 0 and result["status"] == PASS
    assert {o["expected"] for o in result["objects"]} == {"<= 32"}


def test_tailoring_scope_excludes_an_interface_by_name(capsys, tmp_path: Path) -> None:
    t = only(tmp_path, "nic-queue-count", extra=(
        "scope:\n  interfaces:\n    include:\n      - {driver: [hv_netvsc]}\n"
        "      - {driver: [mlx5_core], has_master: true}\n    exclude:\n      - {name: '^(eth1|enP30833s2)$'}\n"))
    rc, report = scan_json(capsys, REBOOTED, "--tailoring", t)
    assert objects(by_check(report)["nic-queue-count"]) == {"enP30832s1": FAIL, "eth0": PASS}


def test_tailoring_selects_a_check_the_profile_lacks(capsys, tmp_path: Path) -> None:
    t = write(tmp_path / "t.yaml", "tailoring: plus-tuned\nprofile: azure-sap-hana\nselect: [tuned-profile]\n")
    rc, report = scan_json(capsys, TUNED, "--tailoring", t)
    assert by_check(report)["tuned-profile"]["status"] == NOTAPPLICABLE  # no NFS on this host


# -- report formats --------------------------------------------------------------------

def test_json_shape(capsys) -> None:
    rc, report = scan_json(capsys, REBOOTED, "--profile", "azure-sap-hana")
    assert {"tool", "version", "profile", "root", "host", "summary", "results"} <= set(report)
    assert report["tool"] == "tunewatch" and report["profile"] == "azure-sap-hana"
    assert report["root"] == REBOOTED
    assert report["host"]["hostname"] == "hanadb01" and report["host"]["platform"] == "azure"
    assert report["host"]["kernel"] == "5.14.21-150400.24.81-default"
    assert set(report["summary"]) == set(STATUSES)
    for r in report["results"]:
        assert {"check", "title", "severity", "status", "objects"} <= set(r)
        assert r["severity"] in ("high", "medium", "low") and r["objects"]
        for o in r["objects"]:
            assert {"object", "status", "expected", "actual", "message"} <= set(o)
            assert all(isinstance(o[k], str) for k in ("object", "status", "expected", "actual", "message"))
    counts = {s: sum(r["status"] == s for r in report["results"]) for s in STATUSES}
    assert counts == report["summary"]


def test_json_output_file(capsys, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    rc, stdout, _ = run(capsys, "scan", "--root", TUNED, "--format", "json", "--output", str(out))
    assert rc == 0 and stdout == "" and json.loads(out.read_text())["summary"]["fail"] == 0


def test_junit_parses_and_counts_match(capsys) -> None:
    rc, out, _ = run(capsys, "scan", "--root", REBOOTED, "--profile", "azure-sap-hana", "--format", "junit")
    _, report = scan_json(capsys, REBOOTED, "--profile", "azure-sap-hana")
    suite = ET.fromstring(out.split("\n", 1)[1] if out.startswith("<?xml") else out)
    objs = [o for r in report["results"] for o in r["objects"]]
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases) == len(objs)
    assert int(suite.get("failures")) == sum(o["status"] == FAIL for o in objs) == len(suite.findall(".//failure"))
    assert int(suite.get("errors")) == sum(o["status"] == ERROR for o in objs) == len(suite.findall(".//error"))


def test_text_has_no_ansi_when_not_a_tty(capsys) -> None:
    rc, out, _ = run(capsys, "scan", "--root", REBOOTED, "--profile", "azure-sap-hana")
    assert rc == 2 and "\x1b[" not in out and "FAIL" in out and "summary:" in out
    rc, out, _ = run(capsys, "scan", "--root", REBOOTED, "--profile", "azure-sap-hana", "--color", "always")
    assert "\x1b[" in out


# -- unreadable facts ------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["garbage", "directory", "cut_in_header", "empty", "bad_count"])
def test_unreadable_proc_interrupts_errors_only_the_irq_checks(capsys, tuned_copy: Path, damage: str) -> None:
    path = tuned_copy / "proc" / "interrupts"
    text = path.read_text()
    path.unlink()
    if damage == "directory":
        path.mkdir()
    elif damage == "garbage":
        path.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00\nnot interrupts at all\n")
    elif damage == "cut_in_header":
        path.write_text(text[:25])
    elif damage == "empty":
        path.write_text("")
    else:  # an IRQ row whose count is not a number
        path.write_text(text.replace("  24:", "  24: 12x4", 1))
    rc, report = scan_json(capsys, str(tuned_copy), "--profile", "azure-sap-hana")
    assert rc == 2
    for check, result in by_check(report).items():
        if check in IRQ_CHECKS:
            assert result["status"] == ERROR, (check, result)
            assert "could not decide" in result["objects"][0]["message"]
        else:
            assert result["status"] == PASS, (check, result)


def test_garbage_ethtool_json_costs_only_that_interface(capsys, tuned_copy: Path) -> None:
    (tuned_copy / "ethtool" / "enP30833s2.json").write_text("{not json")
    rc, report = scan_json(capsys, str(tuned_copy), "--profile", "azure-sap-hana")
    result = by_check(report)["nic-queue-count"]
    assert rc == 2 and objects(result)["enP30833s2"] == ERROR and objects(result)["enP30832s1"] == PASS
    assert by_check(report)["nic-irq-affinity"]["status"] == PASS


def test_bug_in_a_kind_is_an_error_result_not_a_crash(capsys, monkeypatch) -> None:
    def boom(target):
        raise RuntimeError("kaboom")
    monkeypatch.setattr(kinds.KINDS["process_absent"], "evaluate", boom)
    rc, report = scan_json(capsys, TUNED, "--profile", "azure-sap-hana")
    result = by_check(report)["irqbalance-disabled"]
    assert rc == 2 and result["status"] == ERROR and "kaboom" in result["objects"][0]["message"]
    assert by_check(report)["nic-irq-affinity"]["status"] == PASS


# -- symlinks stay inside the root -----------------------------------------------------

def test_absolute_symlink_resolves_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc" / "sysctl.d").mkdir(parents=True)
    (root / "etc" / "real.conf").write_text("sunrpc.tcp_slot_table_entries = 128\n")
    os.symlink("/etc/real.conf", root / "etc" / "sysctl.d" / "90-link.conf")
    os.symlink("/etc/hostname", root / "etc" / "hostname-link")  # the real /etc/hostname may exist
    os.symlink("../../../../../../../etc/passwd", root / "etc" / "climb")
    os.symlink("/", root / "slash")
    fs = FS(str(root))
    assert fs.read_text("etc/sysctl.d/90-link.conf") == "sunrpc.tcp_slot_table_entries = 128\n"
    assert fs.path("etc/sysctl.d/90-link.conf") == str(root / "etc" / "real.conf")
    assert fs.read_text("etc/hostname-link") is None
    assert fs.read_text("etc/climb") is None and fs.path("etc/climb") == str(root / "etc" / "passwd")
    assert fs.path("slash/etc/passwd") == str(root / "etc" / "passwd")
    facts = Facts(fs, {})
    assert facts.sysctl_configured.consumers[0].values["sunrpc.tcp_slot_table_entries"].value == "128"


def test_absolute_sysfs_links_resolve_inside_the_root(tmp_path: Path) -> None:
    """sys/class/net/<if> and device/driver written as absolute /sys/... links."""
    root = tmp_path / "root"
    dev = root / "sys/devices/pci0000:00/0000:00:15.0/0000:0b:00.0"
    (dev / "net" / "ens192").mkdir(parents=True)
    (dev / "net" / "ens192" / "operstate").write_text("up\n")
    (dev / "numa_node").write_text("1\n")
    (dev / "msi_irqs").mkdir()
    (dev / "msi_irqs" / "59").write_text("")
    os.symlink("/sys/bus/pci/drivers/vmxnet3", dev / "driver")
    os.symlink("/sys/devices/pci0000:00/0000:00:15.0/0000:0b:00.0", dev / "net" / "ens192" / "device")
    (root / "sys/class/net").mkdir(parents=True)
    os.symlink("/sys/devices/pci0000:00/0000:00:15.0/0000:0b:00.0/net/ens192", root / "sys/class/net/ens192")
    iface = Facts(FS(str(root)), {}).interfaces["ens192"]
    assert (iface.driver, iface.numa_node, iface.msi_irqs, iface.bus_info) == ("vmxnet3", 1, (59,), "0000:0b:00.0")
    assert iface.up


# -- a process list a non-root scanner cannot see is `error`, never "irqbalance not running" --
# proc(5) "Mount options": hidepid=2 (invisible) hides other users' /proc/<pid> folders;
# hidepid=1 (noaccess) and 0500 pid folders deny their files. Both are run for real: a forked
# child drops to uid nobody (after the parent imported everything, since the interpreter
# lives under /root, mode 0700) and scans; the hidepid=2 case mounts a real procfs in a
# private mount namespace (unshare(CLONE_NEWNS)), so the host's /proc is never touched.

NOBODY = 65534
CLONE_NEWNS, MS_REC, MS_PRIVATE = 0x00020000, 0x4000, 0x40000
IN_CI = os.environ.get("CI") == "true"


def _skip_or_fail(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: this test must run)")
    pytest.skip(reason)


def _scan_irqbalance_as_nobody(root: str, mount_hidepid: bool = False) -> dict:
    """Fork; the child (optionally in a new mount namespace with a hidepid=2 procfs on
    root/proc) becomes uid/gid nobody and scans `root`; returns irqbalance-disabled's result."""
    import ctypes
    content = Content()
    profile = content.resolve("azure-sap-hana")
    libc = ctypes.CDLL(None, use_errno=True)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        status = 0
        try:
            os.close(read_fd)
            if mount_hidepid:
                if libc.unshare(CLONE_NEWNS) != 0:
                    raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
                if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
                    raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
                target = os.path.join(root, "proc").encode()
                if libc.mount(b"proc", target, b"proc", 0, b"hidepid=2") != 0:
                    raise OSError(ctypes.get_errno(), "mount -t proc -o hidepid=2")
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            result = next(r for r in engine.scan(content, profile, root).results if r.check == "irqbalance-disabled")
            payload = {"status": result.status, "messages": [o.message for o in result.objects], "uid": os.getuid()}
        except OSError as e:
            payload, status = {"setup_error": f"{e.strerror or e}: {e.filename or ''}"}, 3
        except BaseException as e:  # noqa: BLE001 - report, never fall into the parent's pytest
            payload, status = {"crash": f"{type(e).__name__}: {e}"}, 4
        os.write(write_fd, json.dumps(payload).encode())
        os._exit(status)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data or b"{}")


@pytest.fixture
def open_root():
    """A snapshot folder uid nobody can reach (pytest's own tmp folders are 0700 root)."""
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="tunewatch-hidepid-"))
    os.chmod(base, 0o755)
    try:
        yield base
    finally:
        for d, _dirs, _files in os.walk(base):
            os.chmod(d, 0o755)
        shutil.rmtree(base)


def test_pid_folders_mode_0500_give_error_for_a_non_root_scan(open_root: Path) -> None:
    if os.geteuid() != 0:
        _skip_or_fail("needs root to create root-owned 0500 pid folders and switch to uid nobody")
    root = open_root
    for pid, comm in {1: "systemd", 2: "kthreadd", 1163: "irqbalance", 1290: "sshd"}.items():
        d = root / "proc" / str(pid)
        d.mkdir(parents=True)
        (d / "comm").write_text(comm + "\n")
        os.chmod(d, 0o500)  # root-owned, like a pid folder under hidepid=1
    os.chmod(root / "proc", 0o555)
    got = _scan_irqbalance_as_nobody(str(root))
    assert got.get("uid") == NOBODY, got
    assert got["status"] == ERROR, got
    assert any("process list unreadable" in m for m in got["messages"]), got
    # the same snapshot scanned as root sees irqbalance running
    result = next(r for r in engine.scan(Content(), Content().resolve("azure-sap-hana"), str(root)).results
                  if r.check == "irqbalance-disabled")
    assert result.status == FAIL


def test_real_hidepid_2_procfs_gives_error_for_a_non_root_scan(open_root: Path) -> None:
    if os.geteuid() != 0:
        _skip_or_fail("needs root for unshare(CLONE_NEWNS) and mount -t proc")
    root = open_root
    (root / "proc").mkdir()
    got = _scan_irqbalance_as_nobody(str(root), mount_hidepid=True)
    if "setup_error" in got:
        _skip_or_fail(f"cannot mount a hidepid=2 procfs here: {got['setup_error']}")
    assert got.get("uid") == NOBODY, got
    assert got["status"] == ERROR, got
    assert any("proc/1 is not visible" in m for m in got["messages"]), got
    assert not os.listdir(root / "proc"), "the procfs must have stayed inside the child's mount namespace"


# -- whole-host examples built from the seeds and distribution documentation ----------------
# Each passes its profile, persistence included: sles15-vmware-ifcfg through wicked's
# ETHTOOL_OPTIONS_<suffix> variables (compat-suse.c try_add_ethtool_vars(), one command each),
# azure-mlx5-kernel-4.15 through a udev rule matching DRIVERS=="mlx5_core" that RUNs ethtool.
SEED_HOSTS = {
    # example: (profile, {check: status})
    "vmware-seed001-tuned": ("vmware-sap-hana", {}),
    "sles15-vmware-ifcfg": ("vmware-sap-hana", {}),
    "rhel9-vmware-nm-keyfile": ("vmware-sap-hana", {}),
    "azure-mlx5-kernel-4.15": ("azure-sap-hana", {}),
    # running 6.8 (hv_netvsc default 8 would pass), GRUB's default entry is 6.14: 32 channels
    "azure-ubuntu-next-kernel-6.14": ("azure-sap-hana", {"nic-settings-persistent": FAIL}),
    # distribution images (tests/snapshots/build_distro_examples.py): azure-vm-utils' udev rule
    # leaves the VFs unmanaged, so seed 000's Red Hat dispatcher procedure never runs for them
    "azure-rhel9-sap-nm-unmanaged": ("azure-sap-hana", {"nic-settings-persistent": FAIL}),
    "azure-ubuntu2404-netplan": ("azure-sap-hana", {}),
}

README_VMWARE_TAILORING = """\
tailoring: hana-vmware-irq
profile: vmware-sap-hana
description: seed 001 plus the irqbalance, queue and IRQ placement rules of seed 000
select: [irqbalance-disabled, irqbalance-disabled-persistent, nic-queue-count,
         nic-irq-affinity, nic-irq-spread, nic-irq-affinity-persistent]
"""


def example_copy(tmp_path: Path, name: str) -> str:
    """A private copy of an example (a test may scan it as another user or change it)."""
    dst = tmp_path / name
    shutil.copytree(EXAMPLES / name, dst, symlinks=True)
    return str(dst)


def _seed_host_cases():
    for name, (profile, _) in SEED_HOSTS.items():
        content = Content()
        for sel in content.resolve(profile).checks:
            yield pytest.param(name, profile, sel.check.id, id=f"{name}/{sel.check.id}")


@pytest.mark.parametrize("name, profile, check", list(_seed_host_cases()))
def test_seed_host_passes_its_profile(capsys, tmp_path: Path, name: str, profile: str, check: str) -> None:
    rc, report = scan_json(capsys, example_copy(tmp_path, name), "--profile", profile)
    result = by_check(report)[check]
    want = SEED_HOSTS[name][1].get(check, PASS)
    assert result["status"] == want, "\n".join(f"{o['status']} {o['object']}: {o['message']}" for o in result["objects"])


def test_seed001_host_runs_irqbalance_yet_passes_vmware_sap_hana(capsys, tmp_path: Path) -> None:
    """Seed 001 asks for no irqbalance/queue/IRQ rule: the profile selects none; auto and the
    README tailoring judge them (and fail them on this host, where irqbalance runs)."""
    root = example_copy(tmp_path, "vmware-seed001-tuned")
    rc, report = scan_json(capsys, root, "--profile", "vmware-sap-hana")
    assert rc == 0 and report["summary"]["fail"] == report["summary"]["error"] == 0
    assert not {"irqbalance-disabled", "nic-irq-affinity", "nic-irq-spread", "nic-queue-count"} & set(by_check(report))
    t = write(tmp_path / "hana-vmware-irq.yaml", README_VMWARE_TAILORING)
    assert run(capsys, "validate-content", "--tailoring", t)[0] == 0
    rc, report = scan_json(capsys, root, "--tailoring", t)
    checks = by_check(report)
    assert rc == 2 and report["profile"] == "hana-vmware-irq"
    assert checks["irqbalance-disabled"]["status"] == checks["nic-irq-affinity"]["status"] == FAIL
    assert checks["vmxnet3-rx-coalesce"]["status"] == PASS
    # the host tuned beyond seed 001 (irqbalance off, IRQs pinned) passes the tailoring too
    rc, report = scan_json(capsys, example_copy(tmp_path, "vmware-vmxnet3-tuned"), "--tailoring", t)
    assert rc == 0, [(c["check"], c["status"]) for c in report["results"] if c["status"] != PASS]


def test_old_kernel_mlx5_control_vectors_are_not_judged(capsys) -> None:
    """Kernel 4.15 mlx5: mlx5_pages_eq, mlx5_cmd_eq, mlx5_async_eq (IRQs 24-26, on every CPU)
    are control vectors: no IRQ check judges them; the 32 mlx5_comp vectors all are."""
    rc, report = scan_json(capsys, str(EXAMPLES / "azure-mlx5-kernel-4.15"), "--profile", "azure-sap-hana")
    for check in ("nic-irq-affinity", "nic-irq-spread"):
        judged = objects(by_check(report)[check])
        assert judged == {f"enP30832s1/irq{n}": PASS for n in range(27, 27 + 32)}, check
