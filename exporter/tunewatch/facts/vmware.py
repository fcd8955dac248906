"""Hypervisor-side facts shipped with a snapshot: .vmx files and esxcli output."""

from __future__ import annotations

from ..host.fs import FS
from ..parsers.esxcli import parse_esxcli
from ..parsers.vmx import VmxEntry, parse_vmx

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Set by the command line for --vsphere.config (vsphere.source.VsphereSource): the VMX and
# ESXi facts then come from the vSphere API, served under vmware/ of the root by an
# overlay, so these readers and the check kinds stay the same. Forked scan children
# inherit it.
_SOURCE = None


def use_source(source: Any) -> None:
    global _SOURCE
    _SOURCE = source


def source_fs(fs: FS) -> FS:
    """`fs`, or `fs` with vmware/ served from vSphere when a source is configured."""
    return fs if _SOURCE is None else _SOURCE.overlay(fs)


def read_vmx_files(fs: FS) -> dict[str, dict[str, VmxEntry]]:
    return {rel: parse_vmx(fs.read_required(rel), rel) for rel in fs.glob("vmware", "*.vmx")}


def read_esxcli(fs: FS) -> dict[str, dict[str, str]]:
    """Settings keyed by name: advanced options by Path ("/Power/CpuPolicy"), CPU facts by
    their label ("Hyperthreading Active"). File names are free; content tells the kind."""
    settings: dict[str, dict[str, str]] = {}
    for rel in fs.glob("vmware/esxcli", "*.txt"):
        output = parse_esxcli(fs.read_required(rel), rel)
        if output.kind == "advanced":
            for record in output.records:
                if "Path" in record:
                    settings[record["Path"]] = {**record, "_source": rel}
        elif output.kind == "cpu_global":
            for record in output.records:
                for key, value in record.items():
                    settings[key] = {"Value": value, "_source": rel}
    return settings
