"""Reports of a fleet scan: several VMs judged from vSphere facts in one `scan --vsphere.vm GLOB`.

One report, one section per VM, in VM name order:
- text: each VM's text report under a `== VM name` line, then one fleet summary line (last,
  so `tail -1` is the verdict);
- json: {"vcenter", "error", "vms": {name: the scan's JSON report}}, the shape `serve`'s
  /report has in central mode;
- junit: <testsuites> with one <testsuite> per VM.
`error` is set when vCenter (or its tag API) could not be read: then no VM is judged.
"""

from __future__ import annotations

import json

from ..results import ScanResult

FLEET_FORMATS = ("text", "json", "junit")


def render_fleet(fmt: str, endpoint: str, error: str | None, vms: list[tuple[str, ScanResult]],
                 colour: bool = False) -> str:
    if fmt == "json":
        from .report import to_dict
        return json.dumps({"vcenter": endpoint, "error": error, "vms": {n: to_dict(r) for n, r in vms}},
                          indent=2) + "\n"
    if fmt == "junit":
        import xml.etree.ElementTree as ET

        from .report import junit_suite
        suites = ET.Element("testsuites", name=f"tunewatch fleet {endpoint}")
        for name, result in vms:
            suites.append(junit_suite(result, name))
        ET.indent(suites)
        from .._escape import xml  # only XML 1.0 characters: VM names are host data
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + xml(ET.tostring(suites, encoding="unicode")) + "\n"
    if fmt == "text":
        from .._escape import text  # VM names and vCenter's messages are host data: no raw control byte
        from .text import render_text
        parts = [f"== VM {text(name)}\n{render_text(result, colour=colour)}" for name, result in vms]
        bad = [name for name, result in vms if not result.compliant]
        verdict = (f"fleet summary: {len(vms)} VMs from {text(endpoint)}, {len(vms) - len(bad)} compliant, "
                   f"{len(bad)} not")
        if error:
            verdict = f"fleet summary: vSphere {text(endpoint)} could not be read: {text(error)}"
        return "\n".join(parts) + ("\n" if parts else "") + verdict + "\n"
    raise ValueError(f"a fleet report is {', '.join(FLEET_FORMATS)}, not {fmt}")
