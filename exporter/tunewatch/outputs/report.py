"""Machine reports of a scan: JSON (the stable shape docs/snapshot-contract.md describes) and
JUnit XML. The text report for a terminal is in text.py."""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _quote  # json.dumps' own (C) string encoder

from ..results import ScanResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
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
    return dumps_indented(to_dict(result)) + "\n"


class _NotPlainJSON(Exception):
    """A value _emit leaves to json.dumps: another type, a subclass, a key that is no str."""


_INFINITY = float("inf")


def dumps_indented(value: Any) -> str:
    """json.dumps(value, indent=2), byte for byte, in about a third of its time.

    With an indent, json.dumps uses its pure-Python encoder (the C one cannot indent before
    Python 3.13): generators nested per level, ~1.2 ms of an example's report, the
    largest part of `--format json` after the scan (docs/architecture.md#start-up-cost).
    The report is only dicts with str keys, lists and plain scalars; anything else is
    handed to json.dumps itself, so the result is always json.dumps'."""
    parts: list[str] = []
    try:
        _emit(value, parts, "\n")
    except (_NotPlainJSON, RecursionError):
        return json.dumps(value, indent=2)
    return "".join(parts)


def _emit(value: Any, parts: list[str], newline: str) -> None:
    """Append `value` as JSON indented below `newline` (a newline and the current indent)."""
    kind = type(value)
    if kind is str:
        parts.append(_quote(value))
    elif kind is dict:
        if not value:
            parts.append("{}")
            return
        inner = newline + "  "
        separator = "{" + inner
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlainJSON
            if type(item) is str:
                parts.append(separator + _quote(key) + ": " + _quote(item))
            else:
                parts.append(separator + _quote(key) + ": ")
                _emit(item, parts, inner)
            separator = "," + inner
        parts.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            parts.append("[]")
            return
        inner = newline + "  "
        separator = "[" + inner
        for item in value:
            parts.append(separator)
            _emit(item, parts, inner)
            separator = "," + inner
        parts.append(newline + "]")
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif kind is int:
        parts.append(int.__repr__(value))
    elif kind is float:
        parts.append("NaN" if value != value else "Infinity" if value == _INFINITY
                     else "-Infinity" if value == -_INFINITY else float.__repr__(value))
    else:
        raise _NotPlainJSON


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
