"""`tunewatch export goss` judged by real goss (`../shared/tools/goss`, v0.4).

- every export of an example snapshot is a gossfile goss parses (`goss render`), holds no
  `command` test unless `--allow-command`, and lists what it left out with a reason;
- live: inside a network namespace the test creates, the exported gossfile and tunewatch
  agree on every exported (check, object); after a net.* sysctl is changed inside that
  namespace (goss and tunewatch both read the namespace's /proc/sys), both fail it;
- mounts: a tmpfs mounted in a private mount namespace shows that per-mount flags (goss
  `opts`) and super-block options (goss `vfs-opts`) land where the kernel puts them; a
  remount with relatime fails both;
- snapshot: with `--files-in-root` goss reads the files of a copy of sas-anf and agrees
  with tunewatch on every file test, passing and, after the copy is broken, failing.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.snapshots import EXAMPLE_PROFILES, REPO, copy_example, example

ENV = {**os.environ, "PYTHONPATH": str(REPO / "exporter"), "LC_ALL": "C"}
IN_CI = os.environ.get("CI") == "true"
SOMAXCONN_CHECK = """\
id: net-somaxconn
title: listen backlog (test-only check)
description: net.core.somaxconn is 4096 in this network namespace.
rationale: test content for the goss export; a per-namespace sysctl.
severity: low
references: [{title: "listen(2)", url: "https://man7.org/linux/man-pages/man2/listen.2.html"}]
kind: sysctl
vars:
  source: runtime
  settings: {net.core.somaxconn: 4096}
"""
SOMAXCONN_PERSISTENT = SOMAXCONN_CHECK.replace("id: net-somaxconn", "id: net-somaxconn-persistent").replace(
    "source: runtime", "source: configured").replace("references:", "runtime_check: net-somaxconn\nreferences:")
TEST_PROFILE = """\
id: goss-test
title: goss export test
description: irqbalance, a per-namespace sysctl and its configured twin.
select: [irqbalance-disabled, irqbalance-disabled-persistent, net-somaxconn, net-somaxconn-persistent]
"""


def goss_binary() -> str:
    found = shutil.which("goss") or next((str(p) for p in [REPO.parent / "shared" / "tools" / "goss"]
                                          if p.is_file() and os.access(p, os.X_OK)), None)
    if found is None:
        if IN_CI:
            pytest.fail("goss is missing under CI (PATH or ../shared/tools/goss)")
        pytest.skip("goss not found on PATH or at ../shared/tools/goss")
    return found


def tunewatch(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    out = subprocess.run([*prefix, sys.executable, "-m", "tunewatch.cli.main", *args], capture_output=True, text=True,
                         env=ENV, timeout=300)
    assert out.returncode in (0, 2), out.stderr
    return out


def goss_verdicts(gossfile: Path, prefix: tuple[str, ...] = ()) -> dict[tuple[str, str], str]:
    """(check, object) -> pass / fail / skip; a resource fails when any of its tests fails."""
    out = subprocess.run([*prefix, goss_binary(), "-g", str(gossfile), "validate", "--format", "json",
                          "--no-color"], capture_output=True, text=True, timeout=120, env=ENV)
    assert out.returncode in (0, 1), out.stderr
    return goss_json_verdicts(out.stdout)


def goss_json_verdicts(text: str) -> dict[tuple[str, str], str]:
    verdicts: dict[tuple[str, str], str] = {}
    for r in json.loads(text)["results"]:
        key = (r["meta"]["check"], r["meta"]["object"])
        status = {0: "pass", 1: "fail", 2: "skip"}[r["result"]]
        if verdicts.get(key) != "fail":
            verdicts[key] = "fail" if status == "fail" else verdicts.get(key, status)
    return verdicts


def tunewatch_verdicts(scan_json: str) -> dict[tuple[str, str], str]:
    return {(r["check"], o["object"]): o["status"] for r in json.loads(scan_json)["results"] for o in r["objects"]}


def exported(gossfile: Path) -> list[dict]:
    doc = yaml.safe_load(gossfile.read_text())
    return [{"type": t, "key": k, **spec} for t, specs in doc.items() for k, spec in specs.items()]


def _export_or_nothing(root: Path, profile: str, output: Path, extra: tuple[str, ...]) -> bool:
    """Export; False when nothing can be expressed (goss rejects `{}` with exit 78): then
    tunewatch exits 1, says so, and writes no file."""
    out = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "export", "goss", "--root", str(root), "--profile",
                          profile, *extra, "--output", str(output)], capture_output=True, text=True, env=ENV,
                         timeout=300)
    if out.returncode == 1 and "nothing in it can be expressed as a goss test" in out.stderr:
        assert not output.exists()
        scan = tunewatch("scan", "--root", str(root), "--profile", profile, "--format", "json").stdout
        for r in json.loads(scan)["results"]:  # every check is one goss cannot express here
            assert f"{r['check']}: " in out.stderr, r["check"]
        return False
    assert out.returncode == 0, out.stderr
    return True


@pytest.mark.parametrize("name", sorted(EXAMPLE_PROFILES))
def test_export_of_every_example_is_a_gossfile(name, tmp_path):
    goss = goss_binary()
    root, profile = example(name), EXAMPLE_PROFILES[name]
    plain, with_command = tmp_path / "goss.yaml", tmp_path / "goss-command.yaml"
    written = [f for f, extra in ((plain, ()), (with_command, ("--allow-command",)))
               if _export_or_nothing(root, profile, f, extra)]
    if plain not in written:  # nothing expressible: the checks of the scan say why, per check
        return
    for f in written:
        rendered = subprocess.run([goss, "-g", str(f), "render"], capture_output=True, text=True, timeout=60)
        assert rendered.returncode == 0, rendered.stderr
    resources = exported(plain)
    assert all(r["type"] != "command" for r in resources), "a command test without --allow-command"
    assert all(set(r["meta"]) == {"check", "object"} for r in resources)
    text = plain.read_text()
    omitted = text.split("# not exported:")[1]
    scan = tunewatch("scan", "--root", str(root), "--profile", profile, "--format", "json").stdout
    for r in json.loads(scan)["results"]:
        listed = any(x["meta"]["check"] == r["check"] for x in resources) or re.search(
            rf"^#   {re.escape(r['check'])} \S+: \S", omitted, re.M)
        assert listed, f"{r['check']} is neither exported nor listed with a reason"
    if any(r["kind"] in ("nic_channels", "nic_ethtool") and r["status"] != "notapplicable"
           for r in json.loads(scan)["results"]):
        assert any(r["type"] == "command" for r in exported(with_command))


@pytest.fixture
def netns():
    if os.geteuid() != 0:
        pytest.skip("needs root to create a network namespace")
    if shutil.which("ip") is None:
        pytest.skip("iproute2 missing")
    name = f"twg-{os.getpid()}-{secrets.token_hex(3)}"
    created = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if created.returncode:
        if IN_CI:
            pytest.fail(f"cannot create a network namespace: {created.stderr}")
        pytest.skip(f"cannot create a network namespace: {created.stderr.strip()}")
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


@pytest.fixture
def content(tmp_path):
    """The shipped checks plus test-only checks of a sysctl that each network namespace has."""
    directory = tmp_path / "content"
    shutil.copytree(REPO / "checks", directory)
    (directory / "network" / "net-somaxconn.yaml").write_text(SOMAXCONN_CHECK)
    (directory / "network" / "net-somaxconn-persistent.yaml").write_text(SOMAXCONN_PERSISTENT)
    (directory / "profiles" / "goss-test.yaml").write_text(TEST_PROFILE)
    return directory


def test_live_verdicts_agree_and_a_namespace_sysctl_change_fails_both(netns, content, tmp_path):
    goss_binary()
    inside = ("ip", "netns", "exec", netns)
    subprocess.run([*inside, "sysctl", "-w", "net.core.somaxconn=4096"], check=True, capture_output=True)
    gossfile = tmp_path / "goss.yaml"
    args = ("--content", str(content), "--profile", "goss-test")
    tunewatch("export", "goss", *args, "--output", str(gossfile), prefix=inside)
    assert {r["meta"]["check"] for r in exported(gossfile)} == {
        "irqbalance-disabled", "irqbalance-disabled-persistent", "net-somaxconn", "net-somaxconn-persistent"}

    ours = tunewatch_verdicts(tunewatch("scan", *args, "--format", "json", prefix=inside).stdout)
    theirs = goss_verdicts(gossfile, prefix=inside)
    assert set(theirs) <= set(ours)
    assert {k: ours[k] for k in theirs} == theirs
    assert theirs[("net-somaxconn", "net.core.somaxconn")] == "pass"

    subprocess.run([*inside, "sysctl", "-w", "net.core.somaxconn=1024"], check=True, capture_output=True)
    ours = tunewatch_verdicts(tunewatch("scan", *args, "--format", "json", prefix=inside).stdout)
    theirs = goss_verdicts(gossfile, prefix=inside)
    assert {k: ours[k] for k in theirs} == theirs
    assert theirs[("net-somaxconn", "net.core.somaxconn")] == "fail"
    # the host's own namespace is untouched: goss run outside still sees its value
    host_value = Path("/proc/sys/net/core/somaxconn").read_text().strip()
    outside = goss_verdicts(gossfile)[("net-somaxconn", "net.core.somaxconn")]
    assert outside == ("pass" if host_value == "4096" else "fail")


TMPFS_CHECK = """\
id: tmpfs-options
title: tmpfs mount options (test-only check)
description: a tmpfs the test mounts in its own mount namespace has noatime, nodiratime, mode and size.
rationale: exercises per-mount flags (goss opts) and super-block options (goss vfs-opts) on a real mount.
severity: low
references: [{title: "tmpfs(5)", url: "https://man7.org/linux/man-pages/man5/tmpfs.5.html"}]
kind: nfs_mount_options
objects:
  mounts:
    include: [{fstype: [tmpfs], path: '^MOUNT_POINT$'}]
vars:
  source: runtime
  options: [noatime, nodiratime, mode=755, size=1024k]
  negations: {atime: noatime, relatime: noatime, strictatime: noatime, diratime: nodiratime}
"""


def test_mount_options_agree_on_a_real_mount_in_a_private_mount_namespace(content, tmp_path):
    """noatime/nodiratime are per-mount flags (mountinfo field 6, goss `opts`), mode/size are
    tmpfs super-block options (goss `vfs-opts`); after a remount with relatime both fail."""
    goss = goss_binary()
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a private mount namespace")
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    (content / "storage" / "tmpfs-options.yaml").write_text(TMPFS_CHECK.replace("MOUNT_POINT", re.escape(str(mount_point))))
    (content / "profiles" / "tmpfs-test.yaml").write_text(
        "id: tmpfs-test\ntitle: t\ndescription: t\nselect: [tmpfs-options]\n")
    cli = f"{sys.executable} -m tunewatch.cli.main"
    args = f"--content {content} --profile tmpfs-test"
    steps = [
        f"mount -t tmpfs -o noatime,nodiratime,mode=755,size=1024k tw {mount_point}",
        f"{cli} export goss {args} --output {tmp_path}/goss.yaml",
        f"{cli} scan {args} --format json --output {tmp_path}/scan1.json || true",
        f"{goss} -g {tmp_path}/goss.yaml validate --format json > {tmp_path}/goss1.json || true",
        f"mount -o remount,relatime,diratime {mount_point}",
        f"{cli} scan {args} --format json --output {tmp_path}/scan2.json || true",
        f"{goss} -g {tmp_path}/goss.yaml validate --format json > {tmp_path}/goss2.json || true",
    ]
    ran = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-ec", "\n".join(steps)],
                         capture_output=True, text=True, env=ENV, timeout=300)
    assert ran.returncode == 0, ran.stderr
    (spec,) = yaml.safe_load((tmp_path / "goss.yaml").read_text())["mount"].values()
    assert "noatime" in json.dumps(spec["opts"]) and "size=1024k" in json.dumps(spec["vfs-opts"])
    for n, want in ((1, "pass"), (2, "fail")):
        ours = tunewatch_verdicts((tmp_path / f"scan{n}.json").read_text())
        theirs = goss_json_verdicts((tmp_path / f"goss{n}.json").read_text())
        assert theirs == {("tmpfs-options", str(mount_point)): want}
        assert {k: ours[k] for k in theirs} == theirs


def break_files(root: Path) -> None:
    conf = root / "etc/sysctl.d/90-sas-anf.conf"
    conf.write_text(conf.read_text().replace("sunrpc.tcp_max_slot_table_entries = 128",
                                             "sunrpc.tcp_max_slot_table_entries = 65536"))
    # sunrpc loads after systemd-sysctl, so at boot only the module option sets its keys
    # (docs/snapshot-contract.md, "Persistence"): break that one too
    options = root / "etc/modprobe.d/sunrpc.conf"
    options.write_text(options.read_text().replace("tcp_max_slot_table_entries=128", "tcp_max_slot_table_entries=65536"))
    fstab = root / "etc/fstab"
    fstab.write_text(fstab.read_text().replace("/sashome     nfs   bg,rw,hard", "/sashome     nfs   bg,rw,soft"))
    (root / "etc/tuned/sas-performance/tuned.conf").write_text(
        (root / "etc/tuned/sas-performance/tuned.conf").read_text().replace("include=throughput-performance",
                                                                            "include=balanced"))
    # tuned loads nothing of a profile whose include it cannot find (profiles/loader.py), so
    # the included profile exists, as tuned ships it (its [cpu] part: no sysctl)
    balanced = root / "usr/lib/tuned/balanced/tuned.conf"
    balanced.parent.mkdir(parents=True)
    balanced.write_text("[main]\nsummary=General non-specialized tuned profile\n\n[cpu]\n"
                        "governor=conservative|powersave\nenergy_perf_bias=normal\n")


def test_files_of_a_snapshot_agree_passing_and_failing(tmp_path):
    root = copy_example("sas-anf", tmp_path / "root")
    gossfile = tmp_path / "goss.yaml"
    tunewatch("export", "goss", "--root", str(root), "--profile", "azure-sas-grid-anf", "--files-in-root",
              "--output", str(gossfile))
    resources = exported(gossfile)
    files = [r for r in resources if r["type"] == "file"]
    assert files and all(r["path"].startswith(str(root)) for r in files)
    assert all(r.get("skip") for r in resources if r["type"] != "file"), "runtime tests must be skipped"

    def compare() -> dict[tuple[str, str], str]:
        ours = tunewatch_verdicts(tunewatch("scan", "--root", str(root), "--profile", "azure-sas-grid-anf",
                                           "--format", "json").stdout)
        theirs = {k: v for k, v in goss_verdicts(gossfile).items() if v != "skip"}
        assert {k: ours[k] for k in theirs} == theirs
        return theirs

    assert set(compare().values()) == {"pass"}
    break_files(root)
    failing = {k for k, v in compare().items() if v == "fail"}
    assert ("sunrpc-slot-table-persistent", "sunrpc.tcp_max_slot_table_entries") in failing
    assert ("nfs-mount-options-persistent", "/sashome") in failing
    assert ("tuned-profile", "tuned") in failing
