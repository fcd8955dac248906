"""OpenSCAP interop: the XCCDF 1.2 results and the ARF 1.1 report that one scan writes are
accepted by the real `oscap` (Debian openscap-scanner): `oscap xccdf validate` (XML Schema +
schematron), `oscap ds rds-validate`, `oscap info`, `oscap xccdf generate report`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tunewatch.content.catalog import Content
from tunewatch.outputs import xccdf

TESTS = Path(__file__).resolve().parent
EXAMPLE = TESTS / "snapshots" / "examples" / "azure-m-rebooted"
NS = {"x": xccdf.XCCDF, "arf": xccdf.ARF, "core": xccdf.CORE, "ai": xccdf.AI}
RESULT = {"pass": "pass", "fail": "fail", "error": "error", "notapplicable": "notapplicable",
          "waived": "informational"}


def oscap(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    path = shutil.which("oscap")
    if path is None:
        pytest.skip("oscap not installed (Debian package openscap-scanner)")
    run = subprocess.run([path, *args], capture_output=True, text=True, timeout=120)
    if ok:
        assert run.returncode == 0, f"oscap {' '.join(args)}: rc {run.returncode}\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    """One scan writes json, xccdf and arf; a waiver (unquoted YAML date) makes one check `waived`."""
    out = tmp_path_factory.mktemp("xccdf")
    waivers = out / "waivers.yaml"
    waivers.write_text("waivers:\n  - check: irqbalance-disabled\n"
                       "    justification: irqbalance stays until the vendor case is closed\n"
                       "    expires: 2099-12-31\n")
    run = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "scan", "--root", str(EXAMPLE), "--profile",
                          "azure-sap-hana", "--waivers", str(waivers), "--format", "json", "--output",
                          str(out / "r.json"), "--output-xccdf", str(out / "r.xccdf.xml"),
                          "--report", f"arf={out / 'r.arf.xml'}"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr  # the rebooted host fails checks
    return out, json.loads((out / "r.json").read_text())


def test_xccdf_results_validate_and_hold_one_rule_result_per_check(scan):
    out, report = scan
    check = oscap("xccdf", "validate", str(out / "r.xccdf.xml"))
    assert "Error" not in check.stdout + check.stderr
    root = ET.parse(out / "r.xccdf.xml").getroot()
    assert root.tag == f"{{{xccdf.XCCDF}}}Benchmark"
    test_result = root.find("x:TestResult", NS)
    assert test_result.find("x:profile", NS).get("idref") == "xccdf_dev.tunewatch_profile_azure_sap_hana"
    assert test_result.find("x:target", NS).text == "hanadb01"
    rule_results = test_result.findall("x:rule-result", NS)
    assert [rr.get("idref") for rr in rule_results] == [xccdf.rule_id(r["check"]) for r in report["results"]]
    rules = {rule.get("id") for rule in root.findall("x:Rule", NS)}
    assert {rr.get("idref") for rr in rule_results} <= rules  # every result points at a Rule
    assert len(rules) == len(Content().checks)
    selected = [s.get("idref") for s in root.findall("x:Profile/x:select", NS)]
    assert selected == [rr.get("idref") for rr in rule_results]
    for rr, r in zip(rule_results, report["results"]):
        assert rr.find("x:result", NS).text == RESULT[r["status"]], r["check"]
        assert rr.get("severity") == r["severity"]
        messages = [m.text for m in rr.findall("x:message", NS)]
        assert len(messages) == len(r["objects"])  # one message per object
        for m, o in zip(messages, r["objects"]):
            assert m.startswith(f"{o['status']} {o['object']}: ")
    waived = next(rr for rr in rule_results if rr.get("idref") == xccdf.rule_id("irqbalance-disabled"))
    assert waived.find("x:result", NS).text == "informational"
    assert "accepted by waiver" in waived.find("x:message", NS).text
    counted = [r for r in report["results"] if r["status"] not in ("notapplicable", "waived")]
    expected = 100 * sum(r["status"] == "pass" for r in counted) / len(counted)
    assert float(test_result.find("x:score", NS).text) == pytest.approx(expected)


def test_arf_validates_and_carries_the_same_results(scan, tmp_path):
    out, report = scan
    oscap("ds", "rds-validate", str(out / "r.arf.xml"))
    info = oscap("info", str(out / "r.arf.xml")).stdout
    assert "Result Data Stream" in info and "xccdf_dev.tunewatch_profile_azure_sap_hana" in info
    root = ET.parse(out / "r.arf.xml").getroot()
    assert root.find("arf:assets/arf:asset/ai:computing-device/ai:hostname", NS).text == "hanadb01"
    benchmark = root.find("arf:report-requests/arf:report-request/arf:content/x:Benchmark", NS)
    test_result = root.find("arf:reports/arf:report/arf:content/x:TestResult", NS)
    results = [rr.find("x:result", NS).text for rr in test_result.findall("x:rule-result", NS)]
    assert results == [RESULT[r["status"]] for r in report["results"]]
    # rds-validate checks the ARF envelope; the XCCDF inside must be valid too
    benchmark.append(test_result)
    inner = tmp_path / "inner.xml"
    ET.ElementTree(benchmark).write(inner, encoding="UTF-8", xml_declaration=True)
    oscap("xccdf", "validate", str(inner))


def test_oscap_renders_its_own_report_from_our_results(scan, tmp_path):
    out, report = scan
    for name in ("r.xccdf.xml", "r.arf.xml"):
        html = tmp_path / f"{name}.html"
        oscap("xccdf", "generate", "report", "--output", str(html), str(out / name))
        text = html.read_text()
        for r in report["results"]:
            assert r["title"].replace("'", "&#39;") in text or r["title"] in text, (name, r["check"])


def test_rule_ids_follow_xccdf_12_and_map_back_to_check_ids():
    for cid in Content().checks:
        rid = xccdf.rule_id(cid)
        assert rid.startswith("xccdf_dev.tunewatch_rule_") and "-" not in rid.split("_rule_")[1]
        assert xccdf.rule_id_to_check(rid) == cid
    assert xccdf.rule_id_to_check("nic-queue-count") == "nic-queue-count"


def test_rule_filters_accept_xccdf_rule_ids(tmp_path):
    out = tmp_path / "r.xml"
    run = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "scan", "--root", str(EXAMPLE), "--profile",
                          "azure-sap-hana", "--rule", "xccdf_dev.tunewatch_rule_nic_queue_count",
                          "--format", "xccdf", "--output", str(out)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    oscap("xccdf", "validate", str(out))
    idrefs = [rr.get("idref") for rr in ET.parse(out).getroot().iterfind("x:TestResult/x:rule-result", NS)]
    assert idrefs == ["xccdf_dev.tunewatch_rule_nic_queue_count"]


def test_every_status_maps_and_still_validates(tmp_path):
    """pass, fail, error, notapplicable and waived, each on a check, in one TestResult."""
    from tunewatch.scan import engine
    content = Content()
    result = engine.scan(content, content.resolve("azure-sap-hana"), str(EXAMPLE))
    statuses = ["pass", "fail", "error", "notapplicable", "waived"]
    for r, status in zip(result.results, statuses):
        r.status = status
        for o in r.objects:
            o.status, o.waiver = status, ("waivers.yaml:3" if status == "waived" else None)
    for render, name in ((xccdf.render_xccdf, "all.xccdf.xml"), (xccdf.render_arf, "all.arf.xml")):
        (tmp_path / name).write_text(render(result, content))
    oscap("xccdf", "validate", str(tmp_path / "all.xccdf.xml"))
    oscap("ds", "rds-validate", str(tmp_path / "all.arf.xml"))
    root = ET.parse(tmp_path / "all.xccdf.xml").getroot()
    got = [rr.find("x:result", NS).text for rr in root.iterfind("x:TestResult/x:rule-result", NS)][:5]
    assert got == ["pass", "fail", "error", "notapplicable", "informational"]
    error = root.findall("x:TestResult/x:rule-result", NS)[2]
    assert {m.get("severity") for m in error.findall("x:message", NS)} == {"error"}
    # scored: pass and fail and error count, notapplicable and informational (waived) do not
    counted = [r.status for r in result.results if r.status not in ("notapplicable", "waived")]
    score = float(root.find("x:TestResult/x:score", NS).text)
    assert score == pytest.approx(100 * counted.count("pass") / len(counted))
