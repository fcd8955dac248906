"""export goss with vSphere facts: the guest checks its VM's VMX/ESXi settings through a
`tunewatch scan --vsphere.config` command test, run by the real goss; without a way to
express anything, no gossfile is written and the exit code is 1."""

from __future__ import annotations

import json
import os
import sys

import yaml

from tests.test_goss import goss_binary

from .run import EXPORTER, tunewatch
from .test_scan import _bios_uuid, _guest_root

BIGIP = ("--profile", "bigip-ve-esxi")


def test_bigip_guest_exports_command_tests_that_goss_runs(hosts, tmp_path):
    goss = goss_binary()
    root = _guest_root(tmp_path, _bios_uuid(hosts, "bigip-ve"))
    cfg = hosts.config(tmp_path)
    gossfile = tmp_path / "goss.yaml"
    done = tunewatch("export", "goss", "--root", root, "--vsphere.config", cfg, *BIGIP, "--allow-command",
                     "--output", gossfile)
    assert done.returncode == 0, done.stderr
    commands = yaml.safe_load(gossfile.read_text())["command"]
    assert {spec["meta"]["check"] for spec in commands.values()} == {
        "vmx-nic-options", "vmx-cpu-affinity-avoids-core0", "esxi-hyperthreading-disabled",
        "esxi-power-policy-performance"}
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "tunewatch"  # what `pip install` puts on PATH, for this checkout
    # The guest's own root is the snapshot here; on a real guest it is / (the default).
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m tunewatch "$@" --root {root}\n')
    wrapper.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "PYTHONPATH": EXPORTER}
    import subprocess
    out = subprocess.run([goss, "-g", str(gossfile), "validate", "--format", "json", "--no-color"],
                         capture_output=True, text=True, timeout=300, env=env)
    results = json.loads(out.stdout)["results"]
    assert {r["meta"]["check"]: r["result"] for r in results if r["property"] == "exit-status"} == dict.fromkeys(
        ["vmx-nic-options", "vmx-cpu-affinity-avoids-core0", "esxi-hyperthreading-disabled",
         "esxi-power-policy-performance"], 0)  # goss: 0 = success, as tunewatch judged them: pass
    assert out.returncode == 0, out.stdout[-2000:]


def test_nothing_expressible_writes_no_gossfile(hosts, tmp_path):
    root = _guest_root(tmp_path, _bios_uuid(hosts, "bigip-ve"))
    gossfile = tmp_path / "goss.yaml"
    done = tunewatch("export", "goss", "--root", root, "--vsphere.config", hosts.config(tmp_path), *BIGIP,
                     "--output", gossfile)
    assert done.returncode == 1
    assert "nothing in it can be expressed as a goss test" in done.stderr
    assert "--allow-command it is exported as a `tunewatch scan --vsphere.config` command test" in done.stderr
    assert not gossfile.exists()
