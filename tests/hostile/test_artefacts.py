"""Every output and generated artefact on hostile snapshots (tests/hostile/names.py).

Two snapshots carry the names of every channel: interface names that are shell code
(`$(id>x)`, `` `reboot` ``, `a;reboot`, not UTF-8 with ESC), a hostname with a newline,
Jinja and goss YAML, another with markup, ESC and BEL, mount points and an NFS source with
a newline or Jinja, a sysctl.d file name with Jinja, `$(...)` and a newline, a .vmx file
name with a newline, a NetworkManager keyfile whose name and id hold Jinja and `$(...)`. The generated bash, the playbook (persistent on a copy, runtime
forced on "this host"), the NetworkManager dispatcher script it writes and the goss
`--allow-command` export run as root in the sandbox (sandbox.py): no canary fires and no
reboot stub is called. XML parses, metrics pass `promtool check metrics` with
scan_success 1, the text report carries no raw control byte, and the HTML runs no script
in headless Chromium.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import names
import sandbox
from test_remediate import IN_CI, ENV, break_keyfile, break_sas_anf, copy_host, need

HOSTS = {"vmware": "auto", "sas": "azure-sas-grid-anf", "keyfile": "vmware-sap-hana"}
HOSTILE_RUNTIME = {"vmware"}  # hosts whose runtime steps carry hostile names (ethtool, IRQ pinning)
PLAYBOOK = ("ansible-playbook -i localhost, -c local -e ansible_python_interpreter={python} "
            "-e tunewatch_hosts=localhost ")


# TUNEWATCH_UNDER_TEST=DIR runs another checkout's exporter/ (the before/after table of the suite)
RUN_ENV = {**ENV, "PYTHONPATH": os.environ.get("TUNEWATCH_UNDER_TEST", ENV["PYTHONPATH"])}


def tunewatch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunewatch.cli.main", *args], capture_output=True, env=RUN_ENV,
                          timeout=180)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("hostile")
    return {"vmware": names.hostile_vmware(base / "vmware", copy_host),
            "sas": names.hostile_sas(base / "sas", copy_host, break_sas_anf),
            "keyfile": names.hostile_keyfile(base / "keyfile", copy_host, break_keyfile)}


def _sandboxed() -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        if IN_CI:
            pytest.fail("the hostile-input sandbox needs root and unshare under CI")
        pytest.skip("the sandbox needs root and unshare")


def _assert_clean(run: dict, what: str) -> None:
    assert not run["canaries"], f"{what}: canary fired: {run['canaries']}\n{run['out'][-3000:]}"
    assert not run["reboots"], f"{what}: reboot stub called: {run['reboots']}"


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_reports_parse_and_carry_no_control_bytes(hosts, host, tmp_path):
    root, profile = hosts[host], HOSTS[host]
    out = {}
    for fmt in ("text", "json", "junit", "xccdf", "arf", "html"):
        done = tunewatch("scan", "--root", str(root), "--profile", profile, "--format", fmt, "-v")
        assert done.returncode in (0, 2), done.stderr.decode(errors="replace")
        out[fmt] = done.stdout
    text = out["text"].decode("utf-8")  # valid UTF-8
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), "raw control byte in the text report"
    if host == "sas":  # ESC in the hostname and an interface name, shown escaped
        assert "\\x1b" in text
    json.loads(out["json"])
    for fmt in ("junit", "xccdf", "arf"):
        ET.fromstring(out[fmt])  # well-formed XML 1.0
    prom = tunewatch("scan", "--root", str(root), "--profile", profile, "--format", "prometheus",
                     "--metrics.detail", "--output", str(tmp_path / "t.prom"))
    assert prom.returncode == 0, prom.stderr.decode(errors="replace")
    metrics = (tmp_path / "t.prom").read_text(encoding="utf-8")
    assert "\ntunewatch_scan_success 1.0\n" in metrics
    from support.prom import check_metrics
    checked = check_metrics(metrics)
    assert checked.returncode == 0 and not checked.stdout.strip(), checked.stdout + checked.stderr


def test_html_runs_no_script(hosts, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if IN_CI:
            pytest.fail("chromium is missing under CI")
        pytest.skip("chromium not installed")
    from test_html import DevTools, _load
    page = tmp_path / "report.html"
    done = tunewatch("scan", "--root", str(hosts["sas"]), "--profile", HOSTS["sas"], "--format", "html", "-v",
                     "--output", str(page))
    assert done.returncode in (0, 2)
    assert b"<script>alert(1)</script>" not in page.read_bytes()
    browser = DevTools(chromium, str(tmp_path / "profile"))
    try:
        _load(browser, page.as_uri(), 1200)
        ran = [e for e in browser.events if e.get("method") in ("Page.javascriptDialogOpening",
                                                                "Runtime.consoleAPICalled")]
        assert not ran, ran
    finally:
        browser.close()


def _copy(root: Path, dest: Path) -> Path:
    shutil.copytree(root, dest, symlinks=True)
    return dest


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_bash_and_ansible_run_no_canary(hosts, host, tmp_path):
    _sandboxed()
    playbook_bin = need("ansible-playbook")
    root, profile = hosts[host], HOSTS[host]
    work = tmp_path / "w"
    work.mkdir()
    for fmt, name in (("bash", "fix.sh"), ("ansible", "fix.yml")):
        done = tunewatch("remediate", "--format", fmt, "--root", str(root), "--profile", profile,
                         "--output", str(work / name))
        assert done.returncode == 0, done.stderr.decode(errors="replace")
    _copy(root, work / "root")
    _copy(root, work / "aroot")
    ifaces = [n for n in os.listdir(os.fsencode(root / "sys/class/net")) if n != b"lo"]
    (work / "ifaces").write_bytes(b"\0".join(ifaces))
    play = PLAYBOOK.format(python=sys.executable).replace("ansible-playbook", playbook_bin)
    script = f"""export ANSIBLE_LOCAL_TEMP=/mnt/w/at ANSIBLE_REMOTE_TEMP=/mnt/w/rt ANSIBLE_HOME=/mnt/w/ah ANSIBLE_NOCOLOR=1
TUNEWATCH_ROOT=/mnt/w/root bash /mnt/w/fix.sh; echo "bash persistent: $?"
TUNEWATCH_ROOT=/mnt/w/root bash /mnt/w/fix.sh; echo "bash persistent again: $?"
TUNEWATCH_FORCE=1 TUNEWATCH_APPLY=runtime bash /mnt/w/fix.sh; echo "bash runtime: $?"
for f in /mnt/w/root/etc/NetworkManager/dispatcher.d/90-tunewatch-*; do
    [ -e "$f" ] || continue
    while IFS= read -r -d '' iface; do sh "$f" "$iface" up; done < <(cat /mnt/w/ifaces; printf '\\0')
done
{play} -e tunewatch_root=/mnt/w/aroot --tags persistent /mnt/w/fix.yml; echo "ansible persistent: $?"
"""
    if host in HOSTILE_RUNTIME:  # the runtime play of the others holds no host data (it costs ~15 s)
        script += f'{play} -e tunewatch_force=true --tags runtime /mnt/w/fix.yml; echo "ansible runtime: $?"\n'

    run = sandbox.run(work, script, timeout=600)
    _assert_clean(run, host)
    for line in ("bash persistent: 0", "bash persistent again: 0", "bash runtime: 0", "ansible persistent: 0",
                 *(["ansible runtime: 0"] if host in HOSTILE_RUNTIME else [])):
        assert line in run["out"], run["out"][-4000:]
    for copy in ("root", "aroot"):  # no forged fstab line
        fstab = (work / copy / "etc/fstab").read_bytes()
        assert not re.search(rb"^/dev/sdz1", fstab, re.M), fstab.decode(errors="replace")
    ethtool = [c for c in run["calls"] if c[0] == b"ethtool"]
    for call in ethtool:  # the interface arrives as one argument, byte for byte
        assert any(arg in ifaces for arg in call[1:]), call
    if host == "vmware":
        assert any(call[1:3] == [b"-C", names.IFACE_ID] for call in ethtool), ethtool
    if host == "keyfile":  # the [ethtool] fix landed in the keyfile with the hostile name, in both copies
        for copy in ("root", "aroot"):
            keyfile = os.path.join(os.fsencode(work / copy), b"etc/NetworkManager/system-connections/" + names.KEYFILE)
            with open(keyfile, "rb") as f:
                assert b"ring-rx=512" in f.read()


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_goss_export_runs_no_canary(hosts, host, tmp_path):
    _sandboxed()
    from test_goss import goss_binary
    goss = goss_binary()
    root, profile = hosts[host], HOSTS[host]
    work = tmp_path / "w"
    work.mkdir()
    done = tunewatch("export", "goss", "--allow-command", "--root", str(root), "--profile", profile,
                     "--output", str(work / "goss.yml"))
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"{{" not in (work / "goss.yml").read_bytes()
    run = sandbox.run(work, f"{goss} -g /mnt/w/goss.yml validate --format json > /mnt/w/goss.json; "
                            "echo \"goss: $?\"")
    _assert_clean(run, host)
    result = json.loads((work / "goss.json").read_text())  # goss parsed the file and ran every test
    assert result["summary"]["test-count"] > 0
    titles = " ".join(str(r.get("title")) for r in result["results"])
    assert "command: {x: {exec: reboot}}" not in titles
    # every test is one tunewatch exported (its meta names the check): none was injected by a name
    assert all((r.get("meta") or {}).get("check") for r in result["results"]), result["results"]


# What a reader pastes from a report's `fix.command`, run as bash would: the commands tunewatch
# names are functions that log their arguments (the sandbox stubs the others), so nothing runs.
FIX_PROGRAMS = ("umount", "mount", "mv", "ip", "az", "set_irq_affinity_cpulist.sh")


def _fix_commands(report: dict) -> list[str]:
    return [o["fix"]["command"] for c in report["results"] for o in c.get("objects", [])
            if (o.get("fix") or {}).get("command")]


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_report_fix_commands_keep_names_as_one_word(hosts, host, tmp_path):
    """Every `fix.command` of the JSON report, pasted into bash, runs no canary and no reboot,
    and each hostile interface name or mount point it holds arrives as one argument, byte
    for byte (escape.sh): a mount point `/sas$(id>x);reboot` or an interface `a;reboot` is
    a word of the command, never a second command."""
    _sandboxed()
    root, profile = hosts[host], HOSTS[host]
    done = tunewatch("scan", "--root", str(root), "--profile", profile, "--format", "json")
    assert done.returncode in (0, 2), done.stderr.decode(errors="replace")
    report = json.loads(done.stdout)
    commands = _fix_commands(report)
    assert commands, "the hostile snapshot has failing objects with fix commands"
    named = {os.fsencode(o["object"]) for c in report["results"] for o in c.get("objects", [])}
    hostile = {n for n in named if re.search(rb"[^\w@%+=:,./-]", n)}  # what escape.sh quotes
    work = tmp_path / "w"
    work.mkdir()
    log = f"{sandbox.INSIDE}/calls.log"
    body = [f'{name}() {{ printf "%s\\0" {name} "$@" >> {log}; printf "\\n" >> {log}; }}' for name in FIX_PROGRAMS]
    (work / "fixes.sh").write_bytes(("\n".join(body) + "\n").encode()
                                    + b"".join(os.fsencode(cmd) + b"\n" for cmd in commands) + b"echo fixes-done\n")
    run = sandbox.run(work, "bash /mnt/w/fixes.sh")
    _assert_clean(run, host)
    assert "fixes-done" in run["out"], run["out"][-3000:]
    calls = run["calls"]  # the functions' and the stubs' (ethtool, systemctl, sysctl, tuned-adm)
    logged = [cmd for cmd in commands if cmd.split(" ", 1)[0] in FIX_PROGRAMS + sandbox.STUBS]
    assert len(calls) >= len(logged), (calls, commands)  # none was cut short or swallowed by another
    for name in hostile:
        mentioned = [cmd for cmd in commands if sandbox_quoted(name) in os.fsencode(cmd)]
        if mentioned:  # a command that names it passed it whole to the program it runs
            assert any(name in call[1:] for call in calls), (name, mentioned, calls)


def sandbox_quoted(name: bytes) -> bytes:
    """`name` as escape.sh writes it into a command."""
    from tunewatch._escape import sh
    return os.fsencode(sh(os.fsdecode(name)))


def test_serve_keeps_scan_success_on_hostile_names(hosts, tmp_path):
    """`serve` on the snapshot whose interface name is not UTF-8: /metrics answers, every
    label value is UTF-8, promtool accepts it and tunewatch_scan_success is 1."""
    from support.procs import free_port, http_get, managed, wait_until
    from support.prom import check_metrics
    from support.snapshots import serve_argv
    port = free_port()
    argv = serve_argv(hosts["sas"], HOSTS["sas"], port, "1s", "--metrics.detail")
    with managed(argv, tmp_path, name="serve", env=RUN_ENV):
        def scraped():
            try:
                got = http_get(f"http://127.0.0.1:{port}/metrics")
            except OSError:
                return None  # not listening yet
            return got.text if got.status == 200 and "tunewatch_scan_success" in got.text else None
        text = wait_until(scraped, 60)
    assert "\ntunewatch_scan_success 1.0\n" in text, text[-2000:]
    assert 'interface="e\\\\xff' in text  # the byte 0xff as text (\\ escaped by the exposition format)
    checked = check_metrics(text)
    assert checked.returncode == 0 and not checked.stdout.strip(), checked.stdout + checked.stderr
