"""vCenter down, hanging, wrong password, untrusted certificate: `error` results within the
timeout with clear messages; a malformed --vsphere.config is a content error (exit 1)."""

from __future__ import annotations

import socket
import subprocess
import time

import pytest

from tests.support.procs import free_port

from .run import messages, scan_json, tunewatch, verdicts
from .vcsim import PASSWORD, start_vcsim

BIGIP = ("--profile", "bigip-ve-esxi")
CHECKS = {"vmx-nic-options", "vmx-cpu-affinity-avoids-core0", "esxi-hyperthreading-disabled",
          "esxi-power-policy-performance"}


def _all_error(report: dict) -> None:
    assert set(verdicts(report)) == CHECKS
    assert {s for objs in verdicts(report).values() for s in objs.values()} == {"error"}


def _with_url(fleet, tmp_path, port: int, **kw):
    return fleet.config(tmp_path, url=f"https://127.0.0.1:{port}/sdk", **kw)


def test_vcenter_down(fleet, tmp_path):
    code, report = scan_json("--vsphere.config", _with_url(fleet, tmp_path, free_port()), "--vsphere.vm", "bigip-ve",
                             *BIGIP)
    _all_error(report)
    assert all("connection refused (vCenter down or wrong port)" in m for m in messages(report))
    assert code == 2


def test_vcenter_hanging_costs_the_timeout_only(fleet, tmp_path):
    with socket.socket() as listener:  # accepts TCP (kernel backlog), never answers TLS
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        cfg = _with_url(fleet, tmp_path, listener.getsockname()[1], timeout="1500ms")
        started = time.monotonic()
        code, report = scan_json("--vsphere.config", cfg, "--vsphere.vm", "bigip-ve", *BIGIP)
        elapsed = time.monotonic() - started
    _all_error(report)
    assert all("no answer within the timeout of 1.5s" in m for m in messages(report)), messages(report)
    assert elapsed < 1.5 + 4.0, f"took {elapsed:.1f}s with a 1.5s timeout"
    assert code == 2


def test_wrong_password(fleet, tmp_path):
    code, report = scan_json("--vsphere.config", fleet.config(tmp_path, password="not-the-password"),
                             "--vsphere.vm", "bigip-ve", *BIGIP)
    _all_error(report)
    assert all("login refused: wrong user name or password" in m for m in messages(report))
    assert all("not-the-password" not in m for m in messages(report))
    assert code == 2


def test_untrusted_certificate_then_trusted_with_ca_file(tmp_path):
    """vcsim with a certificate of our own: refused without ca_file, accepted with it."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    sim = start_vcsim(tmp_path / "tls", "-tlscert", str(cert), "-tlskey", str(key))
    try:
        vm = "DC0_H0_VM0"
        code, report = scan_json("--vsphere.config", sim.config(tmp_path, insecure_skip_verify=False),
                                 "--vsphere.vm", vm, *BIGIP)
        _all_error(report)
        assert all("TLS certificate not trusted" in m and "ca_file" in m for m in messages(report))
        code, report = scan_json("--vsphere.config", sim.config(tmp_path, insecure_skip_verify=False,
                                                                ca_file=str(cert)), "--vsphere.vm", vm, *BIGIP)
        assert "error" not in {s for objs in verdicts(report).values() for s in objs.values()}, messages(report)
    finally:
        sim.stop()


@pytest.mark.parametrize("text, where", [
    ("url: https://vc.example/sdk\nusername: u\npassword_file: {pw}\ntimeout: 10 s\n", ":4: at /timeout"),
    ("url: https://vc.example/sdk\nusername: u\npasword_file: {pw}\n", ":3: at /pasword_file"),
    ("url: http://vc.example/sdk\nusername: u\npassword_file: {pw}\n", ":1: at /url"),
    ("url: https://vc.example/sdk\nusername: [u\n", ":3: YAML syntax error"),
])
def test_malformed_config_names_file_line_and_key(tmp_path, text, where):
    pw = tmp_path / "pw"
    pw.write_text(PASSWORD)
    cfg = tmp_path / "vsphere.yml"
    cfg.write_text(text.format(pw=pw))
    done = tunewatch("scan", "--vsphere.config", cfg, "--vsphere.vm", "x", *BIGIP)
    assert done.returncode == 1
    assert f"{cfg}{where}" in done.stderr, done.stderr


def test_credentials_from_the_environment_never_in_output(fleet, tmp_path):
    cfg = tmp_path / "env.yml"
    cfg.write_text(f"url: {fleet.url}\ninsecure_skip_verify: true\n")
    code, report = scan_json("--vsphere.config", cfg, "--vsphere.vm", "bigip-ve", *BIGIP,
                             env={"TUNEWATCH_VSPHERE_USERNAME": "tunewatch", "TUNEWATCH_VSPHERE_PASSWORD": PASSWORD})
    assert "error" not in {s for objs in verdicts(report).values() for s in objs.values()}, messages(report)
    done = tunewatch("scan", "--vsphere.config", cfg, "--vsphere.vm", "bigip-ve", *BIGIP, "--format", "text",
                     env={"TUNEWATCH_VSPHERE_USERNAME": "tunewatch", "TUNEWATCH_VSPHERE_PASSWORD": "wrong-pw-xyz"})
    assert "login refused" in done.stdout
    assert "wrong-pw-xyz" not in done.stdout + done.stderr


def test_collect_with_vcenter_down_writes_the_rest_and_exits_1(fleet, tmp_path):
    root = tmp_path / "guest"
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/hostname").write_text("guest\n")
    snap = tmp_path / "snap"
    done = tunewatch("collect", "--root", root, "--vsphere.config", _with_url(fleet, tmp_path, free_port()), snap)
    assert done.returncode == 1
    assert "vSphere facts not written: vSphere https://127.0.0.1:" in done.stderr
    assert "connection refused" in done.stderr
    assert (snap / "proc/sys/kernel/hostname").read_text() == "guest\n"
    assert not (snap / "vmware").exists()
