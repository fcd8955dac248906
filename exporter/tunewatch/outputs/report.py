"""Human and machine reports of a scan: text, JSON (the stable shape of SPEC §4), JUnit XML."""

from __future__ import annotations

import json

from ..engine import ScanResult

_MAX_OBJECTS = 8
_COLOURS = {"pass": "32", "fail": "31", "error": "35", "waived": "36", "notapplicable": "90"}


def to_dict(result: ScanResult) -> dict:
    host = result.host
    return {
        "tool": result.tool, "version": result.version, "profile": result.profile, "root": result.root,
        "content_digest": result.content_digest,
        "host": {"hostname": host.hostname, "platform": host.platform, "kernel": host.kernel, "os": host.os_name,
                 "boot_time": host.boot_time} if host else None,
        "summary": result.summary,
        "scan": {"started_at": result.started_at, "duration_seconds": round(result.duration_seconds, 6)},
        "results": [{
            "check": r.check, "title": r.title, "severity": r.severity, "kind": r.kind, "status": r.status,
            "objects": [_object_dict(o) for o in r.objects]}
            for r in result.results],
    }


def _object_dict(o) -> dict:
    d = {"object": o.object, "status": o.status, "expected": o.expected, "actual": o.actual, "message": o.message}
    if o.predicted is not None:
        d["predicted"], d["source"] = o.predicted, o.source
    if o.fix is not None:
        d["fix"] = o.fix.to_dict()
    if o.waiver:
        d["waiver"] = o.waiver
    return d


def render_json(result: ScanResult) -> str:
    return json.dumps(to_dict(result), indent=2) + "\n"


def render_text(result: ScanResult, colour: bool = False, verbose: bool = False) -> str:
    """Checks grouped by status, worst first; passing objects only with `verbose`."""
    paint = (lambda s, st: f"\033[{_COLOURS[st]}m{s}\033[0m") if colour else (lambda s, st: s)
    host = result.host
    lines = [f"tunewatch {result.version}  profile {result.profile}  root {result.root}",
             f"host {host.hostname} ({host.platform}, {host.os_name}, kernel {host.kernel})" if host else "host unknown",
             ""]
    order = ("fail", "error", "waived", "pass", "notapplicable")
    for status in order:
        for r in (r for r in result.results if r.status == status):
            lines.append(f"{paint(status.upper().ljust(13), status)} {r.check} [{r.severity}] {r.title}")
            if status == "notapplicable" and not verbose:
                continue
            shown = [o for o in r.objects if verbose or o.status != "pass"]
            for o in shown if verbose else shown[:_MAX_OBJECTS]:
                lines.append(f"    {paint(o.status.ljust(13), o.status)} {o.message}")
            if not verbose and len(shown) > _MAX_OBJECTS:
                lines.append(f"    ... and {len(shown) - _MAX_OBJECTS} more (--verbose or --format json lists all)")
    s = result.summary
    lines += ["", "summary: " + ", ".join(f"{s[k]} {k}" for k in order)
              + f" ({len(result.results)} checks, {result.duration_seconds * 1000:.0f} ms)"]
    return "\n".join(lines) + "\n"


def render_junit(result: ScanResult) -> str:
    """One testsuite per scan, one testcase per check object (CI dashboards count objects)."""
    import xml.etree.ElementTree as ET  # here: the JSON and text reports do not need it

    cases = [(r, o) for r in result.results for o in r.objects]
    suite = ET.Element("testsuite", name=f"tunewatch.{result.profile}", tests=str(len(cases)),
                       failures=str(sum(o.status == "fail" for _, o in cases)),
                       errors=str(sum(o.status == "error" for _, o in cases)),
                       skipped=str(sum(o.status in ("notapplicable", "waived") for _, o in cases)),
                       time=f"{result.duration_seconds:.6f}",
                       hostname=result.host.hostname if result.host else "unknown")
    for r, o in cases:
        case = ET.SubElement(suite, "testcase", classname=f"tunewatch.{r.check}", name=o.object)
        detail = f"expected: {o.expected}\nactual: {o.actual}"
        if o.status == "fail":
            ET.SubElement(case, "failure", message=o.message, type=r.severity).text = detail
        elif o.status == "error":
            ET.SubElement(case, "error", message=o.message).text = detail
        elif o.status in ("notapplicable", "waived"):
            ET.SubElement(case, "skipped", message=o.message)
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
