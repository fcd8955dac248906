"""vcsim (govmomi's vCenter simulator) and govc for the vSphere tests.

`.ci/install-go-tools` builds both (govmomi v0.46.0) into TOOLS_DIR. A vcsim listens on a
random 127.0.0.1 port (`-l 127.0.0.1:0`; it prints the URL it bound) and is stopped by its
PID. Under CI=true a missing vcsim/govc fails the test; otherwise it is skipped.

vcsim has no API to change a host's hyperthreading or power policy (HostCpuSchedulerSystem
and HostPowerSystem methods are not simulated), so `clone_with_hosts` saves a running
inventory with `govc object.save`, edits those host properties in the saved XML and loads
it into a second vcsim (`vcsim -load`). The loaded copy has no per-host OptionManager, so
its hosts' configManager.advancedOption is removed (tunewatch then collects no advanced
option from them: NetQueue checks are judged on the first vcsim).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.procs import ManagedProcess, wait_until

TOOLS_DIR = os.environ.get("TUNEWATCH_GO_TOOLS", "/usr/local/lib/tunewatch-go-tools/bin")
USER, PASSWORD = "tunewatch", "s3cret-vsphere-pw"


def tool(name: str) -> str:
    for candidate in (os.path.join(TOOLS_DIR, name), shutil.which(name) or "",
                      os.path.expanduser(f"~/go/bin/{name}")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    reason = f"{name} not installed (run .ci/install-go-tools)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the vSphere tests must run)")
    pytest.skip(reason)
    raise AssertionError  # unreachable


@dataclass
class Vcsim:
    process: ManagedProcess
    port: int
    workdir: Path

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/sdk"

    def govc(self, *args: str, timeout: float = 60) -> str:
        env = {**os.environ, "GOVC_URL": f"https://{USER}:{PASSWORD}@127.0.0.1:{self.port}/sdk",
               "GOVC_INSECURE": "1"}
        done = subprocess.run([tool("govc"), *args], env=env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"govc {' '.join(args)}: {done.stderr}"
        return done.stdout

    def config(self, directory: Path, name: str = "vsphere.yml", **overrides) -> Path:
        """A --vsphere.config file for this vcsim (TLS verification off unless overridden)."""
        pw = directory / f"{name}.password"
        pw.write_text(overrides.pop("password", PASSWORD) + "\n")
        doc = {"url": self.url, "username": USER, "password_file": str(pw), "insecure_skip_verify": True,
               "timeout": "5s", **overrides}
        path = directory / name
        path.write_text("".join(f"{k}: {v if not isinstance(v, bool) else str(v).lower()}\n" for k, v in doc.items()))
        return path

    def stop(self) -> None:
        self.process.stop()


def start_vcsim(workdir: Path, *extra: str) -> Vcsim:
    workdir.mkdir(parents=True, exist_ok=True)
    process = ManagedProcess([tool("vcsim"), "-l", "127.0.0.1:0", "-username", USER, "-password", PASSWORD,
                              *extra], workdir, "vcsim").start()
    try:
        def bound():
            m = re.search(r"GOVC_URL=https://[^@]*@127\.0\.0\.1:(\d+)/sdk", process.stdout_path.read_text())
            assert process.alive(), process.describe()
            return int(m.group(1)) if m else None
        port = wait_until(bound, 30, 0.1, process.describe)
    except BaseException:
        process.stop()
        raise
    return Vcsim(process, port, workdir)


NIC = ("-net", "/DC0/network/VM Network", "-net.adapter", "vmxnet3")


def create_vm(sim: Vcsim, name: str, host: str, nics: int, extra: dict[str, str]) -> None:
    pool = "/DC0/host/DC0_H0/Resources" if host == "DC0_H0" else "/DC0/host/DC0_C0/Resources"
    sim.govc("vm.create", "-on=false", *NIC, "-host", host, "-pool", pool, "-ds", "LocalDS_0", name)
    for _ in range(nics - 1):
        sim.govc("vm.network.add", "-vm", name, *NIC)
    if extra:
        sim.govc("vm.change", "-vm", name, *[a for k, v in extra.items() for a in ("-e", f"{k}={v}")])


def host_xml(directory: Path, host: str) -> Path:
    for path in directory.glob("*-HostSystem-*.xml"):
        if re.search(rf"<name>name</name>\s*<val[^>]*>{re.escape(host)}</val>", path.read_text()):
            return path
    raise AssertionError(f"no saved HostSystem {host} in {directory}")


def clone_with_hosts(sim: Vcsim, workdir: Path, hosts: dict[str, tuple[bool, bool, str]]) -> Vcsim:
    """A second vcsim with `sim`'s inventory whose hosts have {name: (HT active, HT
    configured, power policy shortName)}."""
    saved = workdir / "inventory"
    sim.govc("object.save", "-d", str(saved), timeout=120)
    for host, (active, configured, policy) in hosts.items():
        path = host_xml(saved, host)
        text = path.read_text()
        text = re.sub(r"<hyperThread>.*?</hyperThread>",
                      f"<hyperThread><available>true</available><active>{str(active).lower()}</active>"
                      f"<config>{str(configured).lower()}</config></hyperThread>", text, flags=re.S)
        text = re.sub(r"(<currentPolicy>.*?<shortName>)[^<]*(</shortName>)", rf"\g<1>{policy}\g<2>", text, flags=re.S)
        text = re.sub(r"\s*<advancedOption type=\"OptionManager\">[^<]*</advancedOption>", "", text)
        path.write_text(text)
    return start_vcsim(workdir / "clone", "-load", str(saved))
