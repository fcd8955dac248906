"""`tunewatch remediate`: the generated bash and Ansible are judged by real tools.

- shellcheck (bash) and `ansible-playbook --syntax-check` on the output for several example
  snapshots and broken variants of sas-anf;
- the bash applied to a copy of a snapshot (TUNEWATCH_ROOT) makes every persistent check it
  targeted pass on a re-scan, and a second run changes no file, mode or link;
- the runtime part (bash and Ansible) for channels and offloads, run inside a network
  namespace on a veth with too many queues, makes the `nic_channels` and `nic_ethtool`
  verdicts pass on the live re-read, and a second run does nothing;
- the playbook applied for real (connection local) to a copy fixes the same persistent checks;
- the runtime IRQ step, run on a copy whose IRQ numbers changed since the scan, pins the new
  numbers (found from msi_irqs and /proc/interrupts names) and leaves the IRQ that now has an
  old number alone; script and playbook refuse another boot id or hostname, changing nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.snapshots import REPO, copy_example

EXPORTER = REPO / "exporter"
ENV = {**os.environ, "PYTHONPATH": str(EXPORTER), "LC_ALL": "C"}
IN_CI = os.environ.get("CI") == "true"


BOOT_ID = "3f0c6f4e-54a4-4e0d-9d7e-0c1f2a7b5e11"


def copy_host(example: str, dest: Path, boot_id: str = BOOT_ID) -> Path:
    """A copy of an example snapshot with a boot id, as `tunewatch collect` records it: the
    remediation refuses a root whose boot id it cannot match."""
    root = copy_example(example, dest)
    set_boot_id(root, boot_id)
    return root


def set_boot_id(root: Path, boot_id: str) -> None:
    (root / "proc/sys/kernel/random").mkdir(parents=True, exist_ok=True)
    (root / "proc/sys/kernel/random/boot_id").write_text(boot_id + "\n")


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        if IN_CI:
            pytest.fail(f"{tool} is missing under CI")
        pytest.skip(f"{tool} is not installed")
    return path


def tunewatch(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunewatch.cli.main", *args], capture_output=True, text=True, env=ENV,
                          check=check, timeout=120)


def scan(root: Path, profile: str) -> dict[str, dict]:
    out = tunewatch("scan", "--root", str(root), "--profile", profile, "--format", "json", check=False)
    assert out.returncode in (0, 2), out.stderr
    return {r["check"]: r for r in json.loads(out.stdout)["results"]}


def tree(root: Path) -> dict[str, tuple]:
    """Every file, directory and link under root: content hash, mode, link target."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st = path.lstat()
            if path.is_symlink():
                found[str(path.relative_to(root))] = ("link", os.readlink(path))
            elif path.is_file():
                found[str(path.relative_to(root))] = ("file", oct(st.st_mode), hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                found[str(path.relative_to(root))] = ("dir", oct(st.st_mode))
    return found


def break_sas_anf(root: Path) -> None:
    """sas-anf after a careless change: every persistent setting of seed 003 undone."""
    conf = root / "etc/sysctl.d/90-sas-anf.conf"
    conf.write_text(conf.read_text().replace("sunrpc.tcp_slot_table_entries = 128", "sunrpc.tcp_slot_table_entries = 64"))
    fstab = root / "etc/fstab"
    text = re.sub(r"(/sasdata\s+nfs\s+\S*)rsize=65536", r"\1rsize=1048576",
                  fstab.read_text()).replace("nodiratime,rdirplus,acdirmin=0,tcp,_netdev,nconnect=8 0 0\n10.0.2.4:/sasconfig",
                                             "nodiratime,rdirplus,acdirmin=0,tcp,nconnect=8 0 0\n10.0.2.4:/sasconfig")
    # /sashome no longer mounts at boot (noauto), and a right line for /sasconfig after the
    # wrong one changes nothing: systemd-fstab-generator mounts the first line of a mount point
    text = re.sub(r"(/sashome\s+nfs\s+\S*nconnect=8)", r"\1,noauto", text)
    good = next(line for line in text.splitlines() if line.startswith("10.0.2.4:/sasdata"))
    text += good.replace("/sasdata", "/sasconfig").replace("rsize=1048576", "rsize=65536") + "\n"
    fstab.write_text(text)
    (root / "etc/udev/rules.d/99-nfs.rules").unlink()
    (root / "etc/tuned/active_profile").write_text("balanced\n")
    os.symlink("/usr/lib/systemd/system/irqbalance.service", root / "etc/systemd/system/multi-user.target.wants/irqbalance.service")
    (root / "etc/sysctl.conf").write_text("# local changes\nvm.dirty_bytes = 0\n")


def break_keyfile(root: Path) -> None:
    """The tuned VMware guest after someone edited the NetworkManager keyfile of ens224."""
    keyfile = root / "etc/NetworkManager/system-connections/ens224.nmconnection"
    keyfile.write_text(keyfile.read_text().replace("ring-rx=512", "ring-rx=1024").replace("feature-lro=false\n", ""))
    keyfile.chmod(0o644)


def break_wicked_ifcfg(root: Path) -> None:
    """The SLES guest with its ETHTOOL_OPTIONS joined by ';', which wicked applies none of
    (compat-suse.c try_add_ethtool_vars() splits a value at blanks only)."""
    ifcfg = root / "etc/sysconfig/network/ifcfg-ens224"
    kept = [line for line in ifcfg.read_text().splitlines() if not line.startswith("ETHTOOL_OPTIONS")]
    ifcfg.write_text("\n".join(kept + ["ETHTOOL_OPTIONS='-C ens224 rx-usecs 25; -K ens224 lro off'"]) + "\n")


CASES = {  # name -> (example, profile, breaker)
    "azure-m-rebooted": ("azure-m-rebooted", "azure-sap-hana", None),
    "vmware-vmxnet3-default": ("vmware-vmxnet3-default", "vmware-sap-hana", None),
    "sas-anf-broken": ("sas-anf", "azure-sas-grid-anf", break_sas_anf),
    "sas-anf-broken-auto": ("sas-anf", "auto", break_sas_anf),
    "vmware-vmxnet3-tuned-keyfile": ("vmware-vmxnet3-tuned", "vmware-sap-hana", break_keyfile),
    "sles15-wicked-semicolons": ("sles15-vmware-ifcfg", "vmware-sap-hana", break_wicked_ifcfg),
    "azure-rhel9-nm-unmanaged": ("azure-rhel9-sap-nm-unmanaged", "azure-sap-hana", None),
}


@pytest.fixture(params=sorted(CASES))
def case(request, tmp_path):
    example, profile, breaker = CASES[request.param]
    root = copy_host(example, tmp_path / "root")
    if breaker:
        breaker(root)
    return request.param, root, profile


def persistent_checks(results: dict[str, dict]) -> set[str]:
    """Failing checks judged on configuration files: the part a copy of a snapshot can prove."""
    from tunewatch.content.catalog import Content
    content = Content()
    return {cid for cid, r in results.items() if r["status"] == "fail"
            and (content.checks[cid].runtime_check or content.checks[cid].kind in ("nic_settings_persistent",
                                                                                  "tuned_profile"))}


def test_bash_is_shellcheck_clean_and_fixes_the_persistent_checks_of_a_copy(case, tmp_path):
    name, root, profile = case
    need("shellcheck")
    script = tmp_path / "fix.sh"
    tunewatch("remediate", "--root", str(root), "--profile", profile, "--output", str(script))
    assert os.access(script, os.X_OK)
    text = script.read_text()
    lint = subprocess.run(["shellcheck", "--severity=style", str(script)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout

    before = scan(root, profile)
    targeted = persistent_checks(before)
    assert targeted, f"{name}: the example should fail persistent checks"
    for cid in targeted:
        assert f"[persistent] {cid}" in text or re.search(rf"\[persistent\] [\w, -]*\b{cid}\b", text), cid
    for cid, r in before.items():  # failed checks only: nothing for what passes (also after a re-add)
        lost = [o for o in r["objects"] if o["status"] == "pass" and o.get("after_readd", {}).get("status") == "fail"]
        if r["status"] != "fail" and not (lost and r["kind"].endswith("_persistent")):
            assert f"] {cid} " not in text, f"{cid} is {r['status']} but the script changes it"

    env = {**ENV, "TUNEWATCH_ROOT": str(root)}
    first = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    after = scan(root, profile)
    still = {cid: [o["message"] for o in after[cid]["objects"] if o["status"] != "pass"]
             for cid in targeted if after[cid]["status"] != "pass"}
    assert not still, f"{name}: persistent checks still failing after remediation: {still}"
    if name == "azure-m-rebooted":  # the VFs are pinned and tuned, found by driver at boot, never via eth0
        assert {"nic-irq-affinity-persistent", "nic-settings-persistent"} <= targeted
        assert {after[c]["status"] for c in ("nic-irq-affinity-persistent", "nic-settings-persistent")} == {"pass"}
        rule = (root / "etc/udev/rules.d/99-tunewatch-irq-affinity-mlx5_core.rules").read_text()
        assert 'DRIVERS=="mlx5_core"' in rule and " %k " in rule
        assert not list((root / "etc/systemd/system").glob("tunewatch-irq-affinity-*")), "a unit pinning a master"
    if name == "azure-rhel9-nm-unmanaged":  # NM never acts for the unmanaged VFs: udev does, by driver
        rule = (root / "etc/udev/rules.d/99-tunewatch-ethtool-mlx5_core.rules").read_text()
        assert 'DRIVERS=="mlx5_core"' in rule and "-L $name combined 16" in rule
        assert not list((root / "etc/NetworkManager/dispatcher.d").glob("90-tunewatch-*"))
        assert not list((root / "etc/NetworkManager/system-connections").glob("*"))

    snapshot = tree(root)
    second = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "tunewatch: 0 change(s)" in second.stdout, second.stdout
    assert tree(root) == snapshot, "a second run changed files"


def test_bash_keeps_keyfile_and_script_modes(tmp_path):
    """Consumers' rules: NetworkManager runs only root-owned executable dispatcher scripts
    (NetworkManager-dispatcher(8)), udev rules are plain files."""
    root = copy_host("vmware-vmxnet3-default", tmp_path / "root")
    (root / "etc/sysconfig/network-scripts/ifcfg-ens224").unlink()  # no ifcfg: NetworkManager dispatcher
    script = tmp_path / "fix.sh"
    tunewatch("remediate", "--root", str(root), "--profile", "vmware-sap-hana", "--output", str(script))
    env = {**ENV, "TUNEWATCH_ROOT": str(root)}
    subprocess.run(["bash", str(script)], check=True, capture_output=True, env=env, timeout=120)
    dispatcher = root / "etc/NetworkManager/dispatcher.d/90-tunewatch-ethtool-ens224"
    st = dispatcher.stat()
    assert oct(st.st_mode & 0o777) == "0o755" and (os.geteuid() != 0 or st.st_uid == 0)
    assert '[ "$1" = "ens224" ] && [ "$2" = "up" ] || exit 0' in dispatcher.read_text()
    assert scan(root, "vmware-sap-hana")["nic-settings-persistent"]["status"] == "pass"


def test_bash_edits_the_keyfile_the_host_has_and_makes_it_0600(tmp_path):
    """A connection keyfile bound to the interface gets the [ethtool] keys; NetworkManager
    reads keyfiles only when root-owned and not group/other readable (nm-settings-keyfile(5))."""
    root = copy_host("vmware-vmxnet3-tuned", tmp_path / "root")
    break_keyfile(root)
    script = tmp_path / "fix.sh"
    tunewatch("remediate", "--root", str(root), "--profile", "vmware-sap-hana", "--output", str(script))
    subprocess.run(["bash", str(script)], check=True, capture_output=True, env={**ENV, "TUNEWATCH_ROOT": str(root)},
                   timeout=120)
    keyfile = root / "etc/NetworkManager/system-connections/ens224.nmconnection"
    ethtool = keyfile.read_text().split("[ethtool]\n")[1].split("\n\n")[0].splitlines()
    assert sorted(ethtool) == ["coalesce-rx-usecs=25", "feature-lro=false", "ring-rx-mini=0", "ring-rx=512",
                               "ring-tx=512"]
    assert oct(keyfile.stat().st_mode & 0o777) == "0o600"
    assert not (root / "etc/NetworkManager/dispatcher.d").exists(), "the keyfile is the host's mechanism"


def test_ansible_syntax_check(case, tmp_path):
    name, root, profile = case
    playbook_bin = need("ansible-playbook")
    playbook = tmp_path / "fix.yml"
    tunewatch("remediate", "--format", "ansible", "--root", str(root), "--profile", profile, "--output", str(playbook))
    checked = subprocess.run([playbook_bin, "-i", "localhost,", "--syntax-check", str(playbook)],
                             capture_output=True, text=True, cwd=tmp_path, timeout=120, env=ansible_env(tmp_path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "ansible.builtin" in playbook.read_text()


def ansible_env(tmp_path: Path) -> dict[str, str]:
    return {**ENV, "LC_ALL": "C.UTF-8", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
            "ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_PIPELINING": "1"}


@pytest.mark.parametrize("name", ["azure-m-rebooted", "sas-anf-broken", "vmware-vmxnet3-tuned-keyfile"])
def test_ansible_applied_to_a_copy_fixes_the_persistent_checks(name, tmp_path):
    """The playbook run for real (connection local, `-e tunewatch_root=` a copy): the same
    persistent checks pass afterwards, and a second run reports changed=0 and changes no file."""
    playbook_bin = need("ansible-playbook")
    if os.geteuid() != 0:
        pytest.skip("the playbook writes root-owned files")
    example, profile, breaker = CASES[name]
    root = copy_host(example, tmp_path / "root")
    if breaker:
        breaker(root)
    playbook = tmp_path / "fix.yml"
    tunewatch("remediate", "--format", "ansible", "--root", str(root), "--profile", profile, "--output", str(playbook))
    targeted = persistent_checks(scan(root, profile))
    argv = [playbook_bin, "-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
            "-e", "tunewatch_hosts=localhost", "-e", f"tunewatch_root={root}", "--tags", "persistent", str(playbook)]

    first = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=ansible_env(tmp_path), timeout=600)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    after = scan(root, profile)
    assert {cid: after[cid]["status"] for cid in targeted} == dict.fromkeys(targeted, "pass")

    snapshot = tree(root)
    second = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=ansible_env(tmp_path), timeout=600)
    assert second.returncode == 0, second.stdout[-3000:]
    assert re.search(r"localhost\s+: ok=\d+\s+changed=0\s", second.stdout), second.stdout[-1500:]
    assert tree(root) == snapshot


def test_nothing_failed_nothing_to_do(tmp_path):
    script = tmp_path / "fix.sh"
    tunewatch("remediate", "--root", str(REPO / "tests/snapshots/examples/azure-m-pinned-udev"), "--profile",
              "azure-sap-hana", "--output", str(script))
    assert "nothing: no check failed" in script.read_text()
    assert "tw_run" not in script.read_text().split("tw_enable()")[1]


# -- guards: where and when the script runs -------------------------------------------------------------

VFS = ("enP30832s1", "enP30833s2")


def renumber_irqs(root: Path, shift: int) -> dict[int, int]:
    """The VFs' IRQs get new numbers (a driver reload): msi_irqs entries, /proc/irq/N and the
    /proc/interrupts rows move by `shift`; the old numbers of the first VF's IRQs are now
    other devices' IRQs (an nvme queue), pinned to CPU 0, which the fix must not touch.
    effective_affinity_list goes: the kernel, not the fix, writes it after smp_affinity_list."""
    for effective in (root / "proc/irq").glob("*/effective_affinity_list"):
        effective.unlink()
    moved = {}
    for vf in VFS:
        msi = (root / "sys/class/net" / vf / "device/msi_irqs").resolve()
        for entry in sorted(msi.iterdir(), key=lambda p: int(p.name), reverse=True):
            old = int(entry.name)
            moved[old] = old + shift
            entry.rename(msi / str(old + shift))
            (root / f"proc/irq/{old}").rename(root / f"proc/irq/{old + shift}")
    lines = (root / "proc/interrupts").read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        label, _, rest = line.partition(":")
        if label.strip().isdigit() and int(label) in moved:
            line = f"{moved[int(label)]:>4}:{rest}"
        out.append(line)
    foreign = sorted(moved)[:4]
    template = next(line for line in out[1:] if "mlx5_comp" in line)
    for n, old in enumerate(foreign):
        counts = template.partition(":")[2].split("PCI-MSI")[0]
        out.append(f"{old:>4}:{counts}PCI-MSI 1048{n:03d}-edge      nvme0q{n}")
        (root / f"proc/irq/{old}").mkdir()
        (root / f"proc/irq/{old}/smp_affinity_list").write_text("0\n")
    (root / "proc/interrupts").write_text("\n".join(out) + "\n")
    return moved


def test_runtime_irq_step_finds_the_irqs_when_it_runs(tmp_path):
    """The script written for one set of IRQ numbers, run (runtime phase, for real) on a copy
    whose IRQs were renumbered: the new numbers get pinned, the IRQs that now carry the old
    numbers keep CPU 0, and a re-scan of the copy passes nic-irq-affinity."""
    root = copy_host("azure-m-rebooted", tmp_path / "root")
    script = tmp_path / "fix.sh"
    tunewatch("remediate", "--root", str(root), "--profile", "azure-sap-hana", "--output", str(script))
    text = script.read_text()
    assert re.search(r"^    tw_irqs 2-31 enP30832s1 '", text, re.M)
    assert not re.search(r"proc/irq/\d+", text), "an IRQ number frozen at scan time"
    assert scan(root, "azure-sap-hana")["nic-irq-affinity"]["status"] == "fail"
    moved = renumber_irqs(root, 200)
    env = {**ENV, "TUNEWATCH_ROOT": str(root), "TUNEWATCH_APPLY": "runtime"}
    run = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "not run under TUNEWATCH_ROOT" in run.stdout  # ethtool and systemctl never touch this machine
    after = scan(root, "azure-sap-hana")["nic-irq-affinity"]
    assert after["status"] == "pass", [o["message"] for o in after["objects"] if o["status"] != "pass"]
    pinned = {int(o["object"].split("/irq")[1]) for o in after["objects"]}
    assert pinned and pinned <= set(moved.values())
    for old in sorted(moved)[:4]:
        assert (root / f"proc/irq/{old}/smp_affinity_list").read_text() == "0\n"
    control = [irq for irq in moved.values() if irq not in pinned]
    assert control, "the control vectors (mlx5_async) are left alone"
    second = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert "tunewatch: 0 change(s)" in second.stdout, second.stdout + second.stderr


@pytest.mark.parametrize("change", ["boot id", "hostname", "no boot id"])
def test_bash_refuses_another_boot_or_host(change, tmp_path):
    root = copy_host("sas-anf", tmp_path / "root")
    break_sas_anf(root)
    script = tmp_path / "fix.sh"
    tunewatch("remediate", "--root", str(root), "--profile", "azure-sas-grid-anf", "--output", str(script))
    assert f"TW_SCAN_BOOT={BOOT_ID}" in script.read_text()
    if change == "boot id":
        set_boot_id(root, "8d2b1c7e-0000-4000-8000-000000000002")
    elif change == "hostname":
        (root / "proc/sys/kernel/hostname").write_text("other-host\n")
    else:
        (root / "proc/sys/kernel/random/boot_id").unlink()
    snapshot = tree(root)
    env = {**ENV, "TUNEWATCH_ROOT": str(root)}
    refused = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "refusing" in refused.stderr and "TUNEWATCH_FORCE=1" in refused.stderr
    assert ("other-host" in refused.stderr) == (change == "hostname")
    assert tree(root) == snapshot, "a refused run wrote something"
    forced = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                            env={**env, "TUNEWATCH_FORCE": "1"}, timeout=120)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert tree(root) != snapshot


def test_ansible_refuses_another_boot_and_targets_the_scanned_host(tmp_path):
    playbook_bin = need("ansible-playbook")
    root = copy_host("sas-anf", tmp_path / "root")
    break_sas_anf(root)
    playbook = tmp_path / "fix.yml"
    tunewatch("remediate", "--format", "ansible", "--root", str(root), "--profile", "azure-sas-grid-anf",
              "--output", str(playbook))
    import yaml
    play = yaml.safe_load(playbook.read_text().replace("!unsafe", ""))[0]
    # the scanned host, from the !unsafe variable (a hostname is never spliced into a template)
    assert play["hosts"] == "{{ tunewatch_hosts | default(tunewatch_scan_hostname) }}"
    assert play["vars"]["tunewatch_scan_hostname"] == "sasgrid01"
    listed = subprocess.run([playbook_bin, "-i", "sasgrid01,localhost,", "--list-hosts", str(playbook)],
                            capture_output=True, text=True, cwd=tmp_path, env=ansible_env(tmp_path), timeout=120)
    assert listed.returncode == 0 and "hosts (1):" in listed.stdout and "sasgrid01" in listed.stdout, listed.stdout
    set_boot_id(root, "8d2b1c7e-0000-4000-8000-000000000002")
    snapshot = tree(root)
    argv = [playbook_bin, "-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
            "-e", "tunewatch_hosts=localhost", "-e", f"tunewatch_root={root}", "--tags", "persistent", str(playbook)]
    refused = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=ansible_env(tmp_path), timeout=600)
    assert refused.returncode != 0 and "refusing: written for sasgrid01" in refused.stdout, refused.stdout[-2000:]
    assert tree(root) == snapshot
    forced = subprocess.run(argv[:-1] + ["-e", "tunewatch_force=true", str(playbook)], capture_output=True, text=True,
                            cwd=tmp_path, env=ansible_env(tmp_path), timeout=600)
    assert forced.returncode == 0, forced.stdout[-3000:]


# -- the runtime part on a real veth -------------------------------------------------------------------

RUN_IN_NETNS = r"""
import dataclasses, json, sys
from tunewatch import results as tw_results
from tunewatch.content.catalog import Content
from tunewatch.facts.context import Facts
from tunewatch.facts.defaults import Defaults
from tunewatch.host.fs import FS
from tunewatch.kinds import KINDS
from tunewatch.kinds.base import Target
from tunewatch.results import worst
from tunewatch.remediate.ansible import render_ansible
from tunewatch.remediate.bash import render_bash
from tunewatch.remediate.hostview import HostView
from tunewatch.remediate.plan import build_plan

iface, script_path = sys.argv[1], sys.argv[2]
content = Content()
profile = content.resolve("auto")
wanted = {"nic-queue-count": {"max_queues": 4, "limit_to_node_cpus": False},
          # a nic_ethtool check on what a veth has: two features, one ethtool -K command
          "vmxnet3-lro-disabled": {"expected": {"generic-receive-offload": True, "tcp-segmentation-offload": False}}}
profile.checks = [s for s in profile.checks if s.check.id in wanted]
facts = Facts(FS("/"), defaults=Defaults(layouts=content.defaults.layouts))  # as remediate.hostview
# veth has no device/ link in sysfs; its driver name comes from the kernel (ETHTOOL_GDRVINFO)
veth = facts.interfaces[iface].replace(driver=facts.ethtool(iface)["driver"]["driver"])

class VethTarget(Target):
    def interfaces(self):
        return [veth]

results = []
for sel in profile.checks:
    sel.vars.update(wanted[sel.check.id])
    objects = KINDS[sel.check.kind].evaluate(VethTarget(sel.check.id, sel.vars, facts, {}, {}))
    results.append(tw_results.CheckResult(sel.check.id, sel.check.title, sel.check.severity, sel.check.kind,
                                         worst(o.status for o in objects), objects))
if script_path != "-":
    result = tw_results.ScanResult(profile.id, "/", facts.host, results, 0.0, 0.0, content.digest)
    render = render_ansible if script_path.endswith(".yml") else render_bash
    with open(script_path, "w") as f:
        f.write(render(build_plan(HostView(result, profile, facts))))
print(json.dumps({r.check: [(o.object, o.status, o.actual) for o in r.objects] for r in results}))
"""


@pytest.fixture
def netns():
    if os.geteuid() != 0:
        pytest.skip("needs root to create a network namespace")
    need("ethtool")
    name = f"twr-{os.getpid()}-{secrets.token_hex(3)}"
    created = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if created.returncode:
        if IN_CI:
            pytest.fail(f"cannot create a network namespace: {created.stderr}")
        pytest.skip(f"cannot create a network namespace: {created.stderr.strip()}")
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)  # also removes the veth pair


def veth_with_too_many_queues(netns: str):
    """A veth pair with 8 queues each way (too many for max_queues 4), GRO off and TSO on."""
    def ns(*args, env=ENV, check=False):
        return subprocess.run(["ip", "netns", "exec", netns, *args], capture_output=True, text=True, env=env,
                              timeout=600, check=check)

    queues = ("numrxqueues", "8", "numtxqueues", "8")
    assert ns("ip", "link", "add", "twq0", *queues, "type", "veth", "peer", "name", "twq1", *queues).returncode == 0
    assert ns("ethtool", "-L", "twq0", "rx", "8", "tx", "8").returncode == 0
    assert ns("ethtool", "-K", "twq0", "gro", "off", "tso", "on").returncode == 0
    return ns


def test_runtime_channels_on_a_veth_in_a_network_namespace(netns, tmp_path):
    ns = veth_with_too_many_queues(netns)

    script = tmp_path / "fix.sh"
    before = json.loads(ns(sys.executable, "-c", RUN_IN_NETNS, "twq0", str(script), check=True).stdout)
    assert before == {"nic-queue-count": [["twq0", "fail", "8"]],
                      "vmxnet3-lro-disabled": [["twq0", "fail", "generic-receive-offload off tcp-segmentation-offload on"]]}
    text = script.read_text()
    assert "ethtool -L twq0 rx 4" in text and "[runtime] nic-queue-count twq0" in text
    assert "ethtool -K twq0 generic-receive-offload on tcp-segmentation-offload off" in text
    assert subprocess.run(["shellcheck", str(script)], capture_output=True).returncode == 0

    first = ns("bash", str(script), env={**ENV, "TUNEWATCH_APPLY": "runtime"})
    assert first.returncode == 0, first.stdout + first.stderr
    assert "2 change(s)" in first.stdout
    after = json.loads(ns(sys.executable, "-c", RUN_IN_NETNS, "twq0", "-", check=True).stdout)
    assert after == {"nic-queue-count": [["twq0", "pass", "4"]],
                     "vmxnet3-lro-disabled": [["twq0", "pass", "generic-receive-offload on tcp-segmentation-offload off"]]}

    channels = ns("ethtool", "-l", "twq0").stdout + ns("ethtool", "-k", "twq0").stdout
    second = ns("bash", str(script), env={**ENV, "TUNEWATCH_APPLY": "runtime"})
    assert second.returncode == 0 and "tunewatch: 0 change(s)" in second.stdout, second.stdout + second.stderr
    assert ns("ethtool", "-l", "twq0").stdout + ns("ethtool", "-k", "twq0").stdout == channels


def test_ansible_runtime_on_a_veth_in_a_network_namespace(netns, tmp_path):
    playbook_bin = need("ansible-playbook")
    ns = veth_with_too_many_queues(netns)
    playbook = tmp_path / "fix.yml"
    ns(sys.executable, "-c", RUN_IN_NETNS, "twq0", str(playbook), check=True)
    argv = [playbook_bin, "-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
            "-e", "tunewatch_hosts=localhost", "--tags", "runtime", str(playbook)]
    first = ns(*argv, env=ansible_env(tmp_path))
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert re.search(r"localhost\s+: ok=\d+\s+changed=2\s", first.stdout), first.stdout[-1500:]
    after = json.loads(ns(sys.executable, "-c", RUN_IN_NETNS, "twq0", "-", check=True).stdout)
    assert {check: objects[0][1] for check, objects in after.items()} == {"nic-queue-count": "pass",
                                                                         "vmxnet3-lro-disabled": "pass"}
    second = ns(*argv, env=ansible_env(tmp_path))
    assert re.search(r"localhost\s+: ok=\d+\s+changed=0\s", second.stdout), second.stdout[-1500:]



def test_live_scan_can_select_a_veth_by_name(netns, tmp_path):
    """A veth has no device/driver link: only a scope naming it puts it in scope (driver from
    ETHTOOL_GDRVINFO); the default scope of `auto` still ignores it."""
    tailoring = tmp_path / "t.yaml"
    tailoring.write_text("tailoring: veth\nprofile: auto\nscope:\n  interfaces:\n    include: [{name: '^twq0$'}]\n")
    subprocess.run(["ip", "netns", "exec", netns, "ip", "link", "add", "twq0", "type", "veth", "peer", "name", "twq1"],
                   check=True)

    def scan(*extra):
        out = subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-m", "tunewatch.cli.main", "scan", *extra,
                              "--format", "json"], capture_output=True, text=True, env=ENV, timeout=300)
        assert out.stdout, out.stderr
        return json.loads(out.stdout)

    report = scan("--tailoring", str(tailoring))
    results = {r["check"]: r for r in report["results"]}
    assert [o["object"] for o in results["nic-queue-count"]["objects"]] == ["twq0"]
    assert "twq1" not in json.dumps(report["results"])  # named by nothing
    default = scan()  # auto's own scope: drivers only, a veth is never in it
    assert all("twq0" not in [o["object"] for o in r["objects"]] for r in default["results"])


def test_unmanaged_interface_gets_a_udev_rule_not_its_keyfile(tmp_path):
    """NetworkManager.conf(5) [keyfile] unmanaged-devices leaves ens224 unmanaged: its
    keyfile's [ethtool] never applies, so remediate writes a udev rule for it (works whoever
    manages the device) and leaves the keyfile alone; the check then passes."""
    root = copy_host("vmware-vmxnet3-tuned", tmp_path / "root")
    break_keyfile(root)
    conf = root / "etc/NetworkManager/conf.d/90-unmanaged.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text("[keyfile]\nunmanaged-devices=interface-name:ens224\n")
    keyfile = root / "etc/NetworkManager/system-connections/ens224.nmconnection"
    before = keyfile.read_text()
    results = scan(root, "vmware-sap-hana")["nic-settings-persistent"]
    ens224 = next(o for o in results["objects"] if o["object"] == "ens224")
    assert ens224["status"] == "fail" and "unmanaged-devices" in ens224["message"]
    script = tmp_path / "fix.sh"
    tunewatch("remediate", "--root", str(root), "--profile", "vmware-sap-hana", "--output", str(script))
    subprocess.run(["bash", str(script)], check=True, capture_output=True, env={**ENV, "TUNEWATCH_ROOT": str(root)},
                   timeout=120)
    rule = (root / "etc/udev/rules.d/99-tunewatch-ethtool-ens224.rules").read_text()
    assert 'KERNEL=="ens224"' in rule and "$name" in rule
    assert keyfile.read_text() == before, "the keyfile of an unmanaged device applies nothing: left alone"
    assert not (root / "etc/NetworkManager/dispatcher.d").exists()
    assert scan(root, "vmware-sap-hana")["nic-settings-persistent"]["status"] == "pass"


def test_pinned_by_a_boot_oneshot_gets_a_rule_that_survives_a_readd(tmp_path):
    """Every check passes; the VFs' IRQ pinning is lost when Azure re-adds them (a boot
    oneshot): the plan adds a udev rule on the VFs' add event, never another oneshot, and
    after it the re-add verdict passes too."""
    need("shellcheck")
    root = copy_host("azure-m-pinned-oneshot", tmp_path / "root")
    before = scan(root, "azure-sap-hana")["nic-irq-affinity-persistent"]
    assert before["status"] == "pass" and {o["after_readd"]["status"] for o in before["objects"]} == {"fail"}
    script = tmp_path / "fix.sh"
    tunewatch("remediate", "--root", str(root), "--profile", "azure-sap-hana", "--output", str(script))
    text = script.read_text()
    assert "[persistent] nic-irq-affinity-persistent" in text and "WantedBy=multi-user.target" not in text
    subprocess.run(["bash", str(script)], check=True, capture_output=True, env={**ENV, "TUNEWATCH_ROOT": str(root)},
                   timeout=120)
    rule = (root / "etc/udev/rules.d/99-tunewatch-irq-affinity-mlx5_core.rules").read_text()
    assert 'ACTION=="add"' in rule and 'DRIVERS=="mlx5_core"' in rule
    after = scan(root, "azure-sap-hana")["nic-irq-affinity-persistent"]
    assert after["status"] == "pass" and {o["after_readd"]["status"] for o in after["objects"]} == {"pass"}


@pytest.mark.parametrize("scenario,mount_point,where", [
    ("mount_unit_options.fail", "/sas/data", "from /etc/systemd/system/sas-data.mount: set the options in"),
    ("autofs_entry_followed_by_indented_comment.fail", "/sas/sasdata", "but autofs drops the entry at /etc/auto.sas"),
    ("autofs_ldap_map_unknown.error", None, None),
])
def test_no_fstab_line_for_a_mount_something_else_mounts(scenario, mount_point, where, tmp_path):
    """An fstab line for a path an /etc .mount unit mounts is ignored at boot, and for one
    autofs mounts it would mount it twice: those are left to the admin, with where to look."""
    script = tmp_path / "fix.sh"
    tunewatch("remediate", "--root", str(REPO / "tests/scenarios/nfs_mount_options" / scenario / "root"),
              "--profile", "azure-sas-grid-anf", "--output", str(script))
    text = script.read_text()
    assert "tw_line etc/fstab" not in text  # no object that fstab mounts failed
    if mount_point:
        assert re.search(rf"#   nfs-mount-options-persistent[\w, -]* {re.escape(mount_point)}: "
                         rf"{re.escape(mount_point)}: (it mounts at boot|it is set in) .*{re.escape(where)}", text), text
