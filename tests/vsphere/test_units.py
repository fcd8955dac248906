"""The vSphere pieces that need no vCenter: config file, UUID byte order, rendering to the
snapshot formats (read back by the snapshot parsers), lazy import of pyVmomi."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tunewatch.errors import ContentError
from tunewatch.parsers.esxcli import parse_esxcli
from tunewatch.parsers.vmx import parse_vmx
from tunewatch.vsphere.client import HostFacts, VmFacts, _ethernet_index
from tunewatch.vsphere.config import load_config
from tunewatch.vsphere.render import render_files
from tunewatch.vsphere.source import uuid_forms

from .run import EXPORTER
from .test_scan import BIGIP  # noqa: F401 - same profile names as the vcsim tests


def _write(tmp_path, text: str):
    (tmp_path / "pw").write_text("pa55word\n")
    path = tmp_path / "vsphere.yml"
    path.write_text(text.replace("PW", str(tmp_path / "pw")))
    return str(path)


def test_config_defaults_and_password_kept_out_of_repr(tmp_path):
    cfg = load_config(_write(tmp_path, "url: https://vc.example:8443/sdk\nusername: ro@vsphere.local\n"
                                       "password_file: PW\n"), env={})
    assert (cfg.host, cfg.port, cfg.username, cfg.password) == ("vc.example", 8443, "ro@vsphere.local", "pa55word")
    assert (cfg.timeout, cfg.insecure_skip_verify, cfg.ca_file) == (10.0, False, None)
    assert "pa55word" not in repr(cfg)


def test_config_credentials_from_the_environment(tmp_path):
    cfg = load_config(_write(tmp_path, "url: https://vc.example/sdk\ntimeout: 2m\n"),
                      env={"TUNEWATCH_VSPHERE_USERNAME": "env-user", "TUNEWATCH_VSPHERE_PASSWORD": "env-pw"})
    assert (cfg.username, cfg.password, cfg.port, cfg.timeout) == ("env-user", "env-pw", 443, 120.0)


@pytest.mark.parametrize("text, line, pointer, words", [
    ("url: https://vc/sdk\nusername: u\npassword_file: PW\ninsecure_skip_verify: yes please\n", 4,
     "/insecure_skip_verify", "true or false"),
    ("url: https://u:p@vc/sdk\nusername: u\npassword_file: PW\n", 1, "/url", "without credentials"),
    ("url: https://vc/sdk\nusername: u\npassword_file: /nonexistent/pw\n", 3, "/password_file", "cannot read"),
    ("url: https://vc/sdk\nusername: u\npassword_file: PW\nca_file: /nonexistent.pem\n", 4, "/ca_file",
     "is not a file"),
    ("url: https://vc/sdk\nusername: u\n", 1, "/", "password_file is required"),
])
def test_config_errors_name_line_and_key(tmp_path, text, line, pointer, words):
    path = _write(tmp_path, text)
    with pytest.raises(ContentError) as e:
        load_config(path, env={})
    assert (e.value.path, e.value.line, e.value.pointer) == (path, line, pointer)
    assert words in str(e.value)
    assert "u:p@" not in str(e.value)


def test_uuid_forms_swap_the_first_three_fields():
    # SMBIOS >= 2.6: time_low, time_mid, time_hi_and_version little-endian (DSP0134 7.2.1)
    assert uuid_forms("00112233-4455-6677-8899-AABBCCDDEEFF") == {
        "00112233-4455-6677-8899-aabbccddeeff", "33221100-5544-7766-8899-aabbccddeeff"}
    assert uuid_forms("not a uuid") == set()


def test_ethernet_index_follows_the_pci_unit_number():
    assert _ethernet_index(7, 4000, 0) == 0
    assert _ethernet_index(10, 206, 3) == 3  # vcsim's keys; the unit number decides
    assert _ethernet_index(None, 4002, 0) == 2
    assert _ethernet_index(45, 13000, 1) == 1  # SR-IOV unit: neither rule, position


def test_rendered_files_read_back_by_the_snapshot_parsers():
    vm = VmFacts("BIG-IP ve/01", "u", {"ethernet1.ctxPerDev": "1", "note": 'say "hi" | #1',
                                       "ethernet1.present": "FALSE"}, (1, 2, 3, 7), ((0, "vmxnet3"), (1, "vmxnet3")))
    host = HostFacts("esx1", {"Net.NetNetqRxQueueFeatPairEnable": "0"}, True, True, False, "static")
    files = render_files(vm, host)
    assert set(files) == {"vmware/BIG-IP_ve_01.vmx", "vmware/esxcli/advanced.txt", "vmware/esxcli/cpu-global.txt"}
    vmx = parse_vmx(files["vmware/BIG-IP_ve_01.vmx"], "x")
    assert vmx["note"].value == 'say "hi" | #1'
    assert vmx["ethernet1.present"].value == "TRUE"  # the device list wins over a stale extraConfig key
    assert vmx["sched.cpu.affinity"].value == "1-3,7"
    advanced = {r["Path"]: r["Value"] for r in parse_esxcli(files["vmware/esxcli/advanced.txt"], "a").records}
    assert advanced == {"/Net/NetNetqRxQueueFeatPairEnable": "0", "/Power/CpuPolicy": "High Performance"}
    (cpu,) = parse_esxcli(files["vmware/esxcli/cpu-global.txt"], "c").records
    assert (cpu["Hyperthreading Active"], cpu["Hyperthreading Enabled"]) == ("true", "false")


def test_a_plain_scan_does_not_import_pyvmomi(tmp_path):
    code = ("import sys; from tunewatch.cli.main import main; "
            f"rc = main(['scan', '--root', {str(tmp_path)!r}, '--profile', 'bigip-ve-esxi', '--format', 'json']); "
            "print('pyVmomi' in sys.modules, 'tunewatch.vsphere.client' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": EXPORTER, "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip().splitlines()[-1] == "False False", out.stderr
