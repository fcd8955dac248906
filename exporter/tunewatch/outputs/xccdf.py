"""OpenSCAP interop: XCCDF 1.2 results (`--format xccdf`) and an ARF 1.1 report (`--format arf`).

Both validate with `oscap xccdf validate` / `oscap ds rds-validate` (tests/test_xccdf.py).

- IDs follow XCCDF 1.2 section 6.2.3 (`xccdf_<reverse DNS>_<type>_<name>`): namespace
  `dev.tunewatch` (the domain of the content schemas' `$id`), the name is the check id with
  `-` turned into `_`, the ComplianceAsCode habit. Check ids never hold `_` (check schema),
  so `rule_id_to_check()` reverses it exactly and `--rule` takes either form.
- The XCCDF document is a Benchmark (every check as a Rule, the profile that ran as a
  Profile) with the TestResult at its end, the shape `oscap xccdf eval --results` writes,
  so `oscap xccdf generate report` renders it. The ARF carries the same Benchmark in its
  report-request, the TestResult in its report and the scanned host as an asset.
- One rule-result per check; each object becomes a `message` (error status: severity
  "error", fail: "warning", else "info") naming the object, expected and actual values.
- Status mapping (XCCDF 1.2 section 6.6.4.2): pass, fail, error and notapplicable keep
  their names; waived becomes `informational` ("checked, not a compliance category", left
  out of the score), and each waived object's message names the waiver that accepted the
  failure. `fixed` would claim the host was changed, which tunewatch never does. The spec's
  own record of an accepted result, `override` (6.6.4.3), is not used: oscap 1.3.7's
  schematron (rule M32) then demands an override on every rule-result of the TestResult.
- Score: the default model (7.3.2) over a flat Benchmark: 100 * passing weight / counted
  weight, where notapplicable and informational do not count.
"""

from __future__ import annotations

import datetime as dt
import getpass
import os
import xml.etree.ElementTree as ET

from .. import __version__
from ..content.references import cite
from ..results import CheckResult, ScanResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..content.catalog import Check, Content

XCCDF = "http://checklists.nist.gov/xccdf/1.2"
ARF = "http://scap.nist.gov/schema/asset-reporting-format/1.1"
CORE = "http://scap.nist.gov/schema/reporting-core/1.1"
AI = "http://scap.nist.gov/schema/asset-identification/1.1"
DC = "http://purl.org/dc/elements/1.1/"
ARF_REL = "http://scap.nist.gov/specifications/arf/vocabulary/relationships/1.0#"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"

NAMESPACE = "dev.tunewatch"
BENCHMARK_ID = f"xccdf_{NAMESPACE}_benchmark_tunewatch"
CHECK_SYSTEM = "urn:tunewatch:check-kind"  # rules are decided by tunewatch's kinds, not OVAL
IDENT_SYSTEM = "urn:tunewatch:check-id"
TEST_SYSTEM = f"cpe:/a:tunewatch:tunewatch:{__version__}"

_SEVERITY = {"high": "high", "medium": "medium", "low": "low"}
_RESULT = {"pass": "pass", "fail": "fail", "error": "error", "notapplicable": "notapplicable",
           "waived": "informational"}
_MESSAGE_SEVERITY = {"error": "error", "fail": "warning"}
_UNSCORED = ("notapplicable", "informational", "notchecked", "notselected")

for _prefix, _uri in (("xccdf", XCCDF), ("arf", ARF), ("core", CORE), ("ai", AI), ("dc", DC)):
    ET.register_namespace(_prefix, _uri)


def _name(check_id: str) -> str:
    return check_id.replace("-", "_")


def rule_id(check_id: str) -> str:
    return f"xccdf_{NAMESPACE}_rule_{_name(check_id)}"


def profile_id(profile: str) -> str:
    return f"xccdf_{NAMESPACE}_profile_{_name(profile)}"


def rule_id_to_check(value: str) -> str:
    """`xccdf_dev.tunewatch_rule_nic_queue_count` -> `nic-queue-count`; other text unchanged."""
    prefix = f"xccdf_{NAMESPACE}_rule_"
    return value[len(prefix):].replace("_", "-") if value.startswith(prefix) else value


def _x(tag: str) -> str:
    return f"{{{XCCDF}}}{tag}"


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {k.replace("_", "-"): v for k, v in attrs.items()})
    if text is not None:
        element.text = text
    return element


def _text(parent: ET.Element, tag: str, text: str) -> ET.Element:
    element = _sub(parent, _x(tag), text)
    element.set(XML_LANG, "en")
    return element


def _iso(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.timezone.utc).isoformat(timespec="seconds")


def _benchmark(result: ScanResult, content: Content) -> ET.Element:
    """Every check of the content as a Rule; the Profile selects the checks this scan ran."""
    bench = ET.Element(_x("Benchmark"), {"id": BENCHMARK_ID, "resolved": "1", XML_LANG: "en"})
    _sub(bench, _x("status"), "accepted")
    _text(bench, "title", "tunewatch: network and storage tuning that survives the next reboot")
    _text(bench, "description", "Checks of SAP HANA (Azure, VMware), SAS Grid on Azure NetApp Files and "
                                 "BIG-IP VE tuning, runtime and persistent, evaluated by tunewatch.")
    # No <platform>: each check's applicability is decided by tunewatch (notapplicable per rule).
    # oscap 1.3.7 also calls a 1.2 document invalid when its schematron finds nothing at all,
    # and this optional element's absence is what gives that check its one warning.
    _sub(bench, _x("version"), f"{__version__}+content.{result.content_digest}")
    meta = _sub(bench, _x("metadata"))
    _sub(meta, f"{{{DC}}}creator", "tunewatch")
    _sub(meta, f"{{{DC}}}publisher", "tunewatch")
    _sub(meta, f"{{{DC}}}source", "checks/ (tunewatch content)")
    _sub(bench, _x("model"), system="urn:xccdf:scoring:default")
    profile = _sub(bench, _x("Profile"), id=profile_id(result.profile))
    base = content.profiles.get(result.profile)
    _text(profile, "title", base.title if base else result.profile)
    if base:
        _text(profile, "description", base.description)
    for r in result.results:
        _sub(profile, _x("select"), idref=rule_id(r.check), selected="true")
    for check in content.checks.values():
        rule = _sub(bench, _x("Rule"), id=rule_id(check.id), selected="false",
                    severity=_SEVERITY.get(check.severity, "unknown"), weight="1.0")
        _text(rule, "title", check.title)
        _text(rule, "description", check.description)
        for ref in check.references:
            _sub(rule, _x("reference"), cite(ref),
                 **({"href": ref["url"]} if ref.get("url") else {}))
        _text(rule, "rationale", check.rationale)
        _sub(rule, _x("ident"), check.id, system=IDENT_SYSTEM)
        chk = _sub(rule, _x("check"), system=CHECK_SYSTEM)
        _sub(chk, _x("check-content-ref"), href=_content_path(check, content), name=check.kind)
    return bench


def _content_path(check: Check, content: Content) -> str:
    return os.path.relpath(check.doc.path, content.directory).replace(os.sep, "/")


def _rule_result(parent: ET.Element, r: CheckResult, when: str, content_path: str) -> str:
    status = _RESULT.get(r.status, "error")
    rr = _sub(parent, _x("rule-result"), idref=rule_id(r.check), role="full", time=when,
              severity=_SEVERITY.get(r.severity, "unknown"), weight="1.0")
    _sub(rr, _x("result"), status)
    _sub(rr, _x("ident"), r.check, system=IDENT_SYSTEM)
    for o in r.objects:
        detail = f" (expected {o.expected}, actual {o.actual})" if o.expected or o.actual else ""
        waiver = f" (fail accepted by waiver {o.waiver})" if o.status == "waived" else ""
        _sub(rr, _x("message"), f"{o.status} {o.object}: {o.message}{detail}{waiver}",
             severity=_MESSAGE_SEVERITY.get(o.status, "info"))
    _sub(_sub(rr, _x("check"), system=CHECK_SYSTEM), _x("check-content-ref"), href=content_path, name=r.kind)
    return status


def _test_result(result: ScanResult, content: Content, benchmark_href: str) -> ET.Element:
    start, end = _iso(result.started_at), _iso(result.started_at + result.duration_seconds)
    host = result.host
    hostname = host.hostname if host and host.hostname else "unknown"
    tr = ET.Element(_x("TestResult"), {"id": f"xccdf_{NAMESPACE}_testresult_{_name(result.profile)}",
                                       "start-time": start, "end-time": end, "version": __version__,
                                       "test-system": TEST_SYSTEM})
    _sub(tr, _x("benchmark"), id=BENCHMARK_ID, href=benchmark_href)
    _text(tr, "title", f"tunewatch scan of {hostname} ({result.profile})")
    _sub(tr, _x("identity"), _user(), authenticated="false", privileged="true" if os.geteuid() == 0 else "false")
    _sub(tr, _x("profile"), idref=profile_id(result.profile))
    _sub(tr, _x("target"), hostname)
    facts = _sub(tr, _x("target-facts"))
    for name, value in (("urn:xccdf:fact:asset:identifier:host_name", hostname),
                        ("urn:tunewatch:fact:root", result.root),
                        ("urn:tunewatch:fact:platform", host.platform if host else ""),
                        ("urn:tunewatch:fact:kernel", host.kernel if host else ""),
                        ("urn:tunewatch:fact:os", host.os_name if host else ""),
                        ("urn:tunewatch:fact:content-digest", result.content_digest)):
        if value:
            _sub(facts, _x("fact"), str(value), name=name, type="string")
    counted = passed = 0
    for r in result.results:
        check = content.checks.get(r.check)
        status = _rule_result(tr, r, end, _content_path(check, content) if check else r.check)
        if status not in _UNSCORED:
            counted += 1
            passed += status == "pass"
    score = 100.0 * passed / counted if counted else 100.0
    _sub(tr, _x("score"), f"{score:.6f}", system="urn:xccdf:scoring:default", maximum="100.000000")
    return tr


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return str(os.geteuid())


def _serialise(root: ET.Element) -> str:
    ET.indent(root)
    from .._escape import xml  # only XML 1.0 characters (host names may hold ESC or bytes that are not UTF-8)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + xml(ET.tostring(root, encoding="unicode")) + "\n"


def render_xccdf(result: ScanResult, content: Content) -> str:
    bench = _benchmark(result, content)
    bench.append(_test_result(result, content, f"#{BENCHMARK_ID}"))
    return _serialise(bench)


def render_arf(result: ScanResult, content: Content) -> str:
    """ARF 1.1: the Benchmark as the report request, the TestResult as the report about the host."""
    collection = ET.Element(f"{{{ARF}}}asset-report-collection")
    relationships = _sub(collection, f"{{{CORE}}}relationships")
    for rel, ref in (("createdFor", "tunewatch-request"), ("isAbout", "tunewatch-asset")):
        relationship = _sub(relationships, f"{{{CORE}}}relationship", type=f"arfvocab:{rel}", subject="tunewatch-xccdf")
        _sub(relationship, f"{{{CORE}}}ref", ref)
    request = _sub(_sub(collection, f"{{{ARF}}}report-requests"), f"{{{ARF}}}report-request", id="tunewatch-request")
    _sub(request, f"{{{ARF}}}content").append(_benchmark(result, content))
    asset = _sub(_sub(collection, f"{{{ARF}}}assets"), f"{{{ARF}}}asset", id="tunewatch-asset")
    device = _sub(asset, f"{{{AI}}}computing-device")
    hostname = result.host.hostname if result.host and result.host.hostname else ""
    if hostname:
        _sub(device, f"{{{AI}}}hostname", hostname)
    report = _sub(_sub(collection, f"{{{ARF}}}reports"), f"{{{ARF}}}report", id="tunewatch-xccdf")
    _sub(report, f"{{{ARF}}}content").append(_test_result(result, content, "#tunewatch-request"))
    text = _serialise(collection)
    # ElementTree cannot declare a prefix used only inside an attribute value (type="arfvocab:..."):
    return text.replace("<core:relationships>", f'<core:relationships xmlns:arfvocab="{ARF_REL}">', 1)
