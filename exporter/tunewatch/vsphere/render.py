"""vSphere facts as the files the snapshot readers parse (docs/snapshot-contract.md, hypervisor side).

A VM becomes `vmware/<name>.vmx`: its extraConfig keys as they are, plus the keys a .vmx
has for what the API reports as typed configuration: `ethernetN.present`/`virtualDev` per
virtual NIC and `sched.cpu.affinity` from config.cpuAffinity. Its ESXi host becomes
`vmware/esxcli/advanced.txt` (the shape of `esxcli system settings advanced list`) and
`vmware/esxcli/cpu-global.txt` (`esxcli hardware cpu global get`). The same readers
(facts/vmware.py) then give the same facts whether they came from a snapshot, from
`collect --vsphere.config` or live from vCenter, so check kinds do not change.
"""

from __future__ import annotations

import re

from .._escape import comment
from .client import HostFacts, VmFacts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

# config.powerSystemInfo.currentPolicy.shortName -> the /Power/CpuPolicy string esxcli
# shows (vSphere Resource Management, "Host Power Management Policies").
POWER_POLICIES = {"static": "High Performance", "dynamic": "Balanced", "low": "Low Power", "custom": "Custom"}
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def file_name(vm_name: str) -> str:
    """A file name for the VM (the object name checks report: `<name>.vmx:ethernet1`)."""
    return (_SAFE_NAME.sub("_", vm_name).strip("._") or "vm") + ".vmx"


def _quote(value: str) -> str:
    # VMware writes special characters inside quotes as |XX hex (parsers/vmx.py decodes it)
    return '"' + "".join(f"|{ord(c):02X}" if c in '"|#' or ord(c) < 32 else c for c in value) + '"'


def _cpulist(cpus: Iterable[int]) -> str:
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    prev = 0  # set with start
    for c in sorted(cpus):
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            ranges.append((start, prev))
            start = prev = c
    if start is not None:
        ranges.append((start, prev))
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def render_vmx(vm: VmFacts) -> str:
    lines = [f"# {comment(vm.name)}: read from vSphere (config.extraConfig, config.cpuAffinity, virtual NICs)",
             f"uuid.bios = {_quote(vm.uuid)}"]
    typed = {f"ethernet{n}.present" for n, _ in vm.nics} | {f"ethernet{n}.virtualdev" for n, _ in vm.nics}
    for n, dev in vm.nics:
        lines += [f'ethernet{n}.present = "TRUE"', f"ethernet{n}.virtualDev = {_quote(dev)}"]
    if vm.cpu_affinity:
        typed.add("sched.cpu.affinity")
        lines.append(f"sched.cpu.affinity = {_quote(_cpulist(vm.cpu_affinity))}")
    for key in sorted(vm.extra_config):
        if key.lower() in typed or key.lower() == "uuid.bios" or not re.fullmatch(r"[^\s\"“”=#]+", key):
            continue  # the typed configuration wins, as vCenter filters those keys itself
        lines.append(f"{key} = {_quote(vm.extra_config[key])}")
    return "\n".join(lines) + "\n"


def _advanced(path: str, value: str, kind: str) -> str:
    int_value = value if kind == "integer" else "0"
    string_value = value if kind == "string" else ""
    return (f"   Path: {path}\n   Type: {kind}\n   Int Value: {int_value}\n   String Value: {string_value}\n"
            "   Description: read from vSphere\n\n")


def render_advanced(host: HostFacts) -> str:
    """Advanced options as `esxcli system settings advanced list` prints them."""
    out = [f"# ESXi host {comment(host.name)}: read from vSphere (OptionManager, config.powerSystemInfo)\n"]
    for key in sorted(host.options):
        value = host.options[key]
        kind = "integer" if re.fullmatch(r"-?\d+", value) else "string"
        out.append(_advanced("/" + key.replace(".", "/", 1), value, kind))
    if host.power_policy is not None:
        out.append(_advanced("/Power/CpuPolicy", POWER_POLICIES.get(host.power_policy, host.power_policy), "string"))
    return "".join(out)


def _flag(value: bool | None) -> str:
    return "" if value is None else str(value).lower()


def render_cpu_global(host: HostFacts) -> str:
    """`esxcli hardware cpu global get`. `Hyperthreading Enabled` is the configured state
    (config.hyperThread.config), which takes effect at the next reboot: differing from
    `Hyperthreading Active` means a change is pending."""
    return (f"# ESXi host {comment(host.name)}: read from vSphere (config.hyperThread)\n"
            f"   Hyperthreading Active: {_flag(host.ht_active)}\n"
            f"   Hyperthreading Supported: {_flag(host.ht_available)}\n"
            f"   Hyperthreading Enabled: {_flag(host.ht_config)}\n")


def render_files(vm: VmFacts, host: HostFacts | None) -> dict[str, str]:
    files = {f"vmware/{file_name(vm.name)}": render_vmx(vm)}
    if host is not None:
        files["vmware/esxcli/advanced.txt"] = render_advanced(host)
        files["vmware/esxcli/cpu-global.txt"] = render_cpu_global(host)
    return files
