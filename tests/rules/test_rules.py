"""Prometheus rules: promtool validity and unit tests, alert metadata, runbook anchors.

`promtool check rules` and `promtool test rules` run the real Debian promtool (skipped, with
the reason, only when it is not installed). The unit tests themselves are in
rules/tests/*.test.yml.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tunewatch.content.catalog import Content

REPO = Path(__file__).resolve().parents[2]
RULES_DIR = REPO / "rules"
RULE_FILES = sorted(RULES_DIR.glob("*.rules.yml"))
TEST_FILES = sorted((RULES_DIR / "tests").glob("*.yml"))
RUNBOOK = REPO / "docs" / "runbook.md"
METRICS_DOC = REPO / "docs" / "metrics.md"
SPEC_CANDIDATES = [REPO / "shared" / "SPEC.md", REPO.parent / "shared" / "SPEC.md", Path("/work/shared/SPEC.md")]


def runbook_base() -> str:
    """mixin/config.libsonnet's runbookURLBase: every runbook_url and dashboard link starts
    with it."""
    match = re.search(r"^\s*runbookURLBase: '([^']+)',", (REPO / "mixin" / "config.libsonnet").read_text(), re.M)
    assert match, "no runbookURLBase in mixin/config.libsonnet"
    return match.group(1)


RUNBOOK_PREFIX = runbook_base() + "#"

# Check ids from the content itself (they are metric labels: every check needs a runbook
# section); test_check_catalog_matches_spec cross-checks them with SPEC section 3.
CHECK_IDS = sorted(Content().checks)
REQUIRED_ALERTS = {
    "TunewatchCheckFailing", "TuningRevertedAfterReboot", "TuningRevertedAfterDriverUpdate",
    "TuningNotPersistent", "TunewatchExporterDown", "TunewatchExporterAbsent", "TunewatchResultsMissing",
    "TunewatchScanStale", "TunewatchScanErrors",
}


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not installed (Debian package `prometheus`); rules cannot be checked")
    return path


def load_rules() -> list[dict]:
    rules = []
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                rules.append({**rule, "_file": path.name, "_group": group["name"]})
    return rules


def alerts() -> list[dict]:
    return [r for r in load_rules() if "alert" in r]


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces -> '-'."""
    text = re.sub(r"[`*_]", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def runbook_anchors() -> set[str]:
    return {github_anchor(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", RUNBOOK.read_text(), re.M)}


def test_files_present():
    assert {p.name for p in RULE_FILES} == {"tunewatch.rules.yml", "tunewatch-recording.rules.yml"}
    assert TEST_FILES, "no promtool unit tests in rules/tests/"


def test_promtool_check_rules():
    done = subprocess.run([promtool(), "check", "rules", *map(str, RULE_FILES)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FAILED" not in done.stdout + done.stderr


def test_promtool_test_rules():
    done = subprocess.run([promtool(), "test", "rules", *map(str, TEST_FILES)],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("SUCCESS") == len(TEST_FILES), done.stdout


def test_every_rule_file_is_loaded_by_every_alert_test():
    """Reversion alerts read recording rules: a test file that loads only the alert file would
    silently test nothing for them."""
    for path in TEST_FILES:
        doc = yaml.safe_load(path.read_text())
        loaded = {(path.parent / f).resolve() for f in doc["rule_files"]}
        if (RULES_DIR / "tunewatch.rules.yml").resolve() in loaded:
            assert (RULES_DIR / "tunewatch-recording.rules.yml").resolve() in loaded, path.name


def test_required_alerts_exist():
    names = {a["alert"] for a in alerts()}
    assert REQUIRED_ALERTS <= names, REQUIRED_ALERTS - names


@pytest.mark.parametrize("alert", alerts(), ids=lambda a: f"{a['alert']}-{a.get('for', '')}")
def test_alert_metadata(alert):
    labels, annotations = alert.get("labels", {}), alert.get("annotations", {})
    assert labels.get("severity"), "label severity missing"
    for key in ("summary", "description", "runbook_url"):
        assert str(annotations.get(key, "")).strip(), f"annotation {key} missing"
    assert annotations["runbook_url"].startswith(RUNBOOK_PREFIX), annotations["runbook_url"]
    assert "{{ $labels.instance }}" in annotations["summary"] + annotations["description"] \
        or alert["alert"] == "TunewatchExporterAbsent", "description must name the host"
    # Alertmanager's routing severity: a fixed value, never a template (the check's own
    # severity is the series label check_severity)
    assert labels["severity"] in ("critical", "warning", "info"), labels["severity"]
    assert "{{" not in labels["severity"]
    assert "check_severity" not in labels


def test_every_alert_has_a_unit_test():
    tested = set()
    for path in TEST_FILES:
        for test in yaml.safe_load(path.read_text()).get("tests", []):
            for case in test.get("alert_rule_test", []) or []:
                if case.get("exp_alerts"):
                    tested.add(case["alertname"])
    names = {a["alert"] for a in alerts()}
    assert names <= tested, f"alerts never shown firing in rules/tests: {sorted(names - tested)}"


def test_every_alert_has_a_not_firing_case():
    quiet = set()
    for path in TEST_FILES:
        for test in yaml.safe_load(path.read_text()).get("tests", []):
            for case in test.get("alert_rule_test", []) or []:
                if not case.get("exp_alerts"):
                    quiet.add(case["alertname"])
    names = {a["alert"] for a in alerts()}
    assert names <= quiet, f"alerts never shown not firing: {sorted(names - quiet)}"


def test_every_recording_rule_has_a_unit_test():
    records = {r["record"] for r in load_rules() if "record" in r}
    text = "\n".join(p.read_text() for p in TEST_FILES)
    untested = {r for r in records if f"expr: {r}" not in text and f"({r}" not in text and f"{r}{{" not in text}
    assert not untested, f"recording rules without promql_expr_test: {sorted(untested)}"


def test_runbook_anchors_exist():
    anchors = runbook_anchors()
    for alert in alerts():
        url = alert["annotations"]["runbook_url"]
        anchor = url.split("#", 1)[1]
        if "{{" in anchor:
            # Templated by check id (TunewatchCheckFailing): every check id needs a section.
            assert anchor == "{{ $labels.check }}", anchor
            missing = [c for c in CHECK_IDS if c not in anchors]
            assert not missing, f"runbook sections missing for checks: {missing}"
        else:
            assert anchor in anchors, f"{alert['alert']}: #{anchor} not in docs/runbook.md"


def test_runbook_base_is_the_runbook_the_packages_install():
    """The default base points at docs/runbook.md where the .deb and .rpm install it, never
    at a site the project does not control (it used to be github.com/tunewatch/tunewatch,
    which does not exist)."""
    base = runbook_base()
    assert base.startswith("file:///") and "#" not in base, base
    nfpm = yaml.safe_load((REPO / "packaging" / "nfpm.yaml").read_text())
    installed = {c["dst"]: c["src"] for c in nfpm["contents"] if c.get("type") != "symlink"}
    assert installed.get(base[len("file://"):]) == "docs/runbook.md", (base, sorted(installed))


def test_no_link_points_at_a_home_the_project_does_not_have():
    """Rules, their tests, dashboards and the mixin name no URL the project does not control:
    every http(s) link there is an example host (example.com/org/net) or localhost."""
    files = [*RULE_FILES, *TEST_FILES, *sorted((REPO / "dashboards").glob("*.json")),
             *sorted((REPO / "mixin").rglob("*.libsonnet"))]
    for path in files:
        text = path.read_text()
        assert "github.com/tunewatch" not in text, path
        for url in re.findall(r"https?://[^\s\"')]+", text):
            host = re.match(r"https?://([^/:]+)", url).group(1)
            assert host in ("localhost", "127.0.0.1") or re.search(r"(^|\.)example\.(com|org|net)$", host), \
                f"{path.relative_to(REPO)}: {url}"


def test_runbook_covers_every_alert_and_check():
    anchors = runbook_anchors()
    wanted = {a["alert"].lower() for a in alerts()} | set(CHECK_IDS)
    assert wanted <= anchors, sorted(wanted - anchors)


def test_runbook_internal_links_resolve():
    anchors = runbook_anchors()
    links = re.findall(r"\]\(#([^)]+)\)", RUNBOOK.read_text())
    assert links
    assert not [link for link in links if link not in anchors]


def test_check_catalog_matches_spec():
    spec = next((p for p in SPEC_CANDIDATES if p.is_file()), None)
    if spec is None:
        pytest.skip("SPEC.md not reachable from this checkout")
    section = spec.read_text().split("## 3.", 1)[1].split("\n## ", 1)[0]
    ids = re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.M)
    # every check the SPEC names exists; the content may have more than SPEC section 3 lists
    # (nfs-nconnect-persistent, for one)
    assert set(ids) <= set(CHECK_IDS), sorted(set(ids) - set(CHECK_IDS))


def test_rules_use_only_documented_metrics():
    """Every tunewatch_* name in a rule expression or annotation query is in docs/metrics.md."""
    documented = set(re.findall(r"`(tunewatch_[a-z0-9_]+)`", METRICS_DOC.read_text()))
    used = set()
    for rule in load_rules():
        text = rule["expr"] + "\n" + "\n".join(map(str, rule.get("annotations", {}).values()))
        used |= set(re.findall(r"(?<![:\w])(tunewatch_[a-z0-9_]+)", text))
    assert used <= documented, sorted(used - documented)


def test_joins_use_the_labels_the_exporter_emits():
    """Label names in matchers/by/on/without clauses are tunewatch labels, Prometheus target
    labels, or labels the rules create themselves."""
    doc = METRICS_DOC.read_text()
    documented = set()
    for row in re.findall(r"^\| `tunewatch_[a-z0-9_]+` \|([^|]*)\|", doc, re.M):
        documented |= set(re.findall(r"`([a-z_]+)`", row))
    # tunewatch: the target label that contrib/prometheus' scrape config puts on rolled-out
    # textfile hosts (tunewatchTextfileHostSelector)
    allowed = documented | {"instance", "job", "check_severity", "persistent_check", "le", "tunewatch"}
    for rule in load_rules():
        expr = re.sub(r'"[^"]*"', '""', rule["expr"])
        expr = re.sub(r"#.*", "", expr)
        names = set()
        for clause in re.findall(r"\b(?:by|on|without|group_left|group_right)\s*\(([^)]*)\)", expr):
            names |= {n.strip() for n in clause.split(",") if n.strip()}
        names |= set(re.findall(r"[{,]\s*([a-z_]+)\s*(?:=~|!~|!=|=)", expr))
        assert names <= allowed, (rule.get("alert") or rule.get("record"), sorted(names - allowed))
