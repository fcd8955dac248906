"""Central mode: `serve --vsphere.config F --vsphere.vm GLOB... --vsphere.tag CAT/TAG...`
judges many VMs at once.

For appliances that run no agent (BIG-IP VE) and fleets that prefer one collector. Each
scan (in serve's scan child, killed at --scan.timeout, so a scrape never waits on
vCenter) logs in once, lists the VMs, keeps those whose name (or inventory path) matches a
GLOB or that carry a TAG (the union; tags.py reads them over the REST API), reads each
VM and its ESXi host (each host once) and runs the profile's VMX/ESXi checks on them: the
same kinds, on the same .vmx/esxcli text a snapshot would hold (render.py). A VM or host
that cannot be read gives `error` results for its checks; the other VMs are judged.

Series budget (docs/vsphere.md): per VM, `tunewatch_check_status` carries the current
status of each check (value 1) and, when that is not pass, status="pass" with value 0 (the
recording rules and alerts sum or match status="fail"/"error"/"pass|waived", which this
state set without its other zero members answers the same, compliance ratios of 0
included), `tunewatch_check_objects` only non-zero fail/error counts, plus
`tunewatch_host_compliant` and `tunewatch_host_info`: 3 x checks + 2 at most, 14 for
bigip-ve-esxi. A VM never
exports more than SERIES_BUDGET (20) series: past that, object counts are dropped first
and `tunewatch_vsphere_series_dropped` counts what was left out. Every VM series has
`instance` and `vm` set to the VM name (scrape with `honor_labels: true`).
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from ..errors import FactError
from ..facts import vmware as vmware_facts
from .client import Session
from .config import VsphereConfig
from .source import Files, error_files, identity_files, vm_files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..content.catalog import Content, ResolvedProfile
    from ..content.waivers import Waiver
    from ..host.fs import FS
    from ..results import ScanResult
    from ..serve.scanjob import ScanOutput

HYPERVISOR_KINDS = ("vmx_option", "vmx_cpu_affinity", "esxcli_setting")
SERIES_BUDGET = 20


def hypervisor_only(profile):
    """The profile's VMX/ESXi checks: the only ones vSphere facts can decide for a VM."""
    return profile.replace(checks=[s for s in profile.checks if s.check.kind in HYPERVISOR_KINDS])


class StaticSource:
    """A source whose files are already read (central mode, scan --vsphere.vm)."""

    def __init__(self, files: Files, identity: Files):
        self.files, self.identity = files, identity

    def overlay(self, fs):
        from .source import OverlayFS
        return OverlayFS(fs, lambda: self.files, self.identity)


def scan_vm(content: Content, profile: ResolvedProfile, files: Files, vm_name: str,
            waivers: list[Waiver] | None = None, fs: FS | None = None) -> ScanResult:
    """One VM judged from its vSphere files alone, over an empty root (nothing of this host):
    `fs`, a view of one empty root that a fleet's VMs share, or one made here."""
    from ..scan import engine
    root = None
    if fs is None:
        root = tempfile.mkdtemp(prefix="tunewatch-vsphere-")
    try:
        vmware_facts.use_source(StaticSource(files, identity_files(vm_name)))
        return engine.scan(content, profile, root or fs.root, waivers, fs=fs)  # type: ignore[union-attr]  # no fs: a root
    finally:
        vmware_facts.use_source(None)
        if root is not None:
            os.rmdir(root)


@dataclass
class FleetResult:
    endpoint: str
    error: str | None = None
    vms: list[tuple[str, Any]] = field(default_factory=list)  # (VM name, ScanResult)


def read_fleet(cfg: VsphereConfig, patterns: list[str],
               tags: list[str] | None = None) -> tuple[dict[str, Files], str | None]:
    """{VM name: files} of the VMs the globs or tags select, or ({}, why) when vCenter (or
    its tag API, or a tag name) cannot be read."""
    from .tags import select_vms
    try:
        session = Session(cfg).connect()
    except FactError as e:
        return {}, str(e)
    try:
        try:
            chosen = select_vms(cfg, session.list_vms(), patterns, list(tags or []))
        except FactError as e:
            return {}, str(e)
        ordered = sorted(chosen, key=lambda vm: vm[1])
        try:
            vms, hosts = session.read_fleet([ref for ref, _name, _uuid, _path in ordered])
        except FactError as e:  # the whole read: every selected VM says why
            return {name: error_files(str(e), name) for _ref, name, _uuid, _path in ordered}, None
        found: dict[str, Files] = {}
        for (_ref, name, _uuid, _path), vm in zip(ordered, vms):
            found[name] = error_files(str(vm), name) if isinstance(vm, FactError) else vm_files(session, vm, hosts)
        return found, None
    finally:
        session.close()


def scan_fleet(cfg: VsphereConfig, patterns: list[str], content: Content, profile: ResolvedProfile,
               waivers: list[Waiver] | None = None, tags: list[str] | None = None,
               progress: Callable[[str], None] | None = None) -> FleetResult:
    """Every selected VM judged; `progress(text)` hears how far (a terminal's status line)."""
    from ..host.fs import FS
    from ..scan.hangsafe import read_host_mountinfo
    if progress is not None:
        progress("vSphere: reading the selected VMs and their hosts")
    files, error = read_fleet(cfg, patterns, tags)
    profile = hypervisor_only(profile)
    root = tempfile.mkdtemp(prefix="tunewatch-vsphere-")  # one empty root for the fleet, not one per VM
    try:
        fs = FS(root, read_host_mountinfo())  # its mount guard (this host's mountinfo) worked out once
        judged = []
        for n, (name, f) in enumerate(files.items(), 1):
            judged.append((name, scan_vm(content, profile, f, name, waivers, fs)))
            if progress is not None:  # counts only: VM names are host data
                progress(f"vSphere: judged {n} of {len(files)} VMs")
        return FleetResult(cfg.endpoint, error, judged)
    finally:
        os.rmdir(root)


# -- exposition ------------------------------------------------------------------------------


def _vm_series(name: str, result: ScanResult) -> list[tuple[str, dict[str, str], float, int]]:
    """(metric, labels, value, priority) of one VM; lower priority is dropped first."""
    base = {"instance": name, "vm": name}
    out = []
    for check in result.results:
        labels = {**base, "check": check.check, "check_severity": check.severity, "profile": result.profile}
        if check.status not in ("pass", "notapplicable"):  # pass=0 keeps the compliance ratios at 0, not absent
            out.append(("tunewatch_check_status", {**labels, "status": "pass"}, 0.0, 2))
        out.append(("tunewatch_check_status", {**labels, "status": check.status}, 1.0, 2))
        for status in ("fail", "error"):
            n = sum(1 for o in check.objects if o.status == status)
            if n:
                out.append(("tunewatch_check_objects", {**base, "check": check.check, "status": status}, float(n), 0))
    out.append(("tunewatch_host_compliant", {**base, "profile": result.profile},
                0.0 if not result.compliant else 1.0, 3))
    out.append(("tunewatch_host_info", {**base, "hostname": name, "platform": "vmware", "kernel": "", "os": ""},
                1.0, 1))
    return out


HELP = {
    "tunewatch_check_status": "Current status of each selected check (value 1; central mode exports the "
                              "current member of the state set, and pass=0 when that is not pass).",
    "tunewatch_check_objects": "Number of the check's objects in status fail or error (non-zero only).",
    "tunewatch_host_compliant": "1 when no selected check fails or errors, else 0.",
    "tunewatch_host_info": "Host identity; in central mode the host is the VM.",
    "tunewatch_vsphere_up": "1 when vCenter (and its tag API, for --vsphere.tag) answered the last scan, else 0 "
                            "(then no VM is judged).",
    "tunewatch_vsphere_vms": "VMs the --vsphere.vm globs and --vsphere.tag tags selected in the last scan.",
    "tunewatch_vsphere_series_dropped": "VM series left out by the per-VM budget in the last scan.",
}


def families(fleet: FleetResult, budget: int = SERIES_BUDGET) -> list:
    from prometheus_client.core import GaugeMetricFamily
    rows: list[tuple[str, dict[str, str], float]] = []
    dropped = 0
    for name, result in fleet.vms:
        series = _vm_series(name, result)
        keep = sorted(series, key=lambda s: -s[3])[:budget]
        dropped += len(series) - len(keep)
        rows += [(m, labels, v) for m, labels, v, _p in series if (m, labels, v, _p) in keep]
    rows += [("tunewatch_vsphere_up", {"vcenter": fleet.endpoint}, 0.0 if fleet.error else 1.0),
             ("tunewatch_vsphere_vms", {"vcenter": fleet.endpoint}, float(len(fleet.vms))),
             ("tunewatch_vsphere_series_dropped", {"vcenter": fleet.endpoint}, float(dropped))]
    out: dict[str, Any] = {}
    for metric, labels, value in rows:
        fam = out.get(metric)
        if fam is None:
            fam = out[metric] = GaugeMetricFamily(metric, HELP[metric], labels=list(labels))
        fam.add_metric([labels[k] for k in fam._labelnames], value)
    return list(out.values())


def render_output(fleet: FleetResult, detail: bool = False) -> ScanOutput:
    """scanjob.ScanOutput of a fleet scan (serve's `prepare` in central mode)."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

    from ..outputs.report import to_dict
    from ..serve.scanjob import OPENMETRICS_EOF, ScanOutput, _Families
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(families(fleet)))
    openmetrics = generate_openmetrics(registry)
    if openmetrics.endswith(OPENMETRICS_EOF):
        openmetrics = openmetrics[:-len(OPENMETRICS_EOF)]
    report = {"vcenter": fleet.endpoint, "error": fleet.error, "vms": {n: to_dict(r) for n, r in fleet.vms}}
    return ScanOutput(generate_latest(registry), openmetrics,
                      gzip.compress(json.dumps(report, indent=2).encode("utf-8"), compresslevel=6, mtime=0))
