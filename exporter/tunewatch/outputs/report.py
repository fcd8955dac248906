"""Machine reports of a scan: JSON (the stable shape docs/snapshot-contract.md describes) and
JUnit XML. The text report for a terminal is in text.py."""

from __future__ import annotations

import json

from ..results import ScanResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from ..results import ObjectResult


def to_dict(result: ScanResult) -> dict:
    host = result.host
    return {
        "tool": result.tool, "version": result.version, "profile": result.profile, "root": result.root,
        "content_digest": result.content_digest,
        "host": {"hostname": host.hostname, "platform": host.platform, "kernel": host.kernel, "os": host.os_name,
                 "boot_time": host.boot_time, "boot_id": host.boot_id} if host else None,
        "summary": result.summary,
        "scan": {"started_at": result.started_at, "duration_seconds": round(result.duration_seconds, 6)},
        "results": [{
            "check": r.check, "title": r.title, "severity": r.severity, "kind": r.kind, "status": r.status,
            "objects": [_object_dict(o) for o in r.objects]}
            for r in result.results],
    }


def _object_dict(o: ObjectResult) -> dict:
    d: dict[str, object] = {"object": o.object, "status": o.status, "expected": o.expected, "actual": o.actual,
                            "message": o.message}
    if o.predicted is not None:
        d["predicted"], d["source"] = o.predicted, o.source
    if o.after_readd is not None:
        d["after_readd"] = o.after_readd.to_dict()
    if o.fix is not None:
        d["fix"] = o.fix.to_dict()
    if o.waiver:
        d["waiver"] = o.waiver
    return d


def render_json(result: ScanResult) -> str:
    return json.dumps(to_dict(result), indent=2) + "\n"


def render_junit(result: ScanResult) -> str:
    """One testsuite per scan, one testcase per check object (CI dashboards count objects)."""
    import xml.etree.ElementTree as ET  # here: the JSON and text reports do not need it

    suite = junit_suite(result)
    ET.indent(suite)
    from .._escape import xml  # only XML 1.0 characters (host names may hold ESC or bytes that are not UTF-8)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + xml(ET.tostring(suite, encoding="unicode")) + "\n"


def junit_suite(result: ScanResult, name: str | None = None) -> Element:
    """The scan's <testsuite> element; `name` (a VM of a fleet report) replaces the hostname."""
    import xml.etree.ElementTree as ET

    cases = [(r, o) for r in result.results for o in r.objects]
    suite = ET.Element("testsuite", name=f"tunewatch.{result.profile}" + (f".{name}" if name else ""),
                       tests=str(len(cases)),
                       failures=str(sum(o.status == "fail" for _, o in cases)),
                       errors=str(sum(o.status == "error" for _, o in cases)),
                       skipped=str(sum(o.status in ("notapplicable", "waived") for _, o in cases)),
                       time=f"{result.duration_seconds:.6f}",
                       hostname=name or (result.host.hostname if result.host else "unknown"))
    for r, o in cases:
        case = ET.SubElement(suite, "testcase", classname=f"tunewatch.{r.check}", name=o.object)
        detail = f"expected: {o.expected}\nactual: {o.actual}"
        if o.status == "fail":
            ET.SubElement(case, "failure", message=o.message, type=r.severity).text = detail
        elif o.status == "error":
            ET.SubElement(case, "error", message=o.message).text = detail
        elif o.status in ("notapplicable", "waived"):
            ET.SubElement(case, "skipped", message=o.message)
    return suite
