"""Static checks of the Grafana dashboards in dashboards/ (no Grafana, no Prometheus needed).

Structure (unique ids, grid within 24 columns without overlaps, the `${datasource}` variable
on every panel, target, variable and annotation), metric names (only what docs/metrics.md
documents, recording rules of rules/, or series Prometheus itself makes), and every PromQL
expression parsed by the real `promtool` after substituting Grafana's variables.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((REPO / "dashboards").glob("*.json"))
METRICS_DOC = REPO / "docs" / "metrics.md"
DS_UID = "${datasource}"
PROMETHEUS_OWN = {"up", "ALERTS", "ALERTS_FOR_STATE", "scrape_duration_seconds", "scrape_samples_scraped"}
PANEL_TYPES = {"row", "stat", "timeseries", "table", "state-timeline", "bargauge"}

# Grafana variable -> literal for promtool (PromQL does not know Grafana's $variables).
GRAFANA_VARS = {
    "$__rate_interval": "5m", "${__rate_interval}": "5m", "$__interval": "1m", "${__interval}": "1m",
    "$__range": "1h", "${__range}": "1h", "$__range_s": "3600", "$__interval_ms": "60000",
    "${instance}": "host:19847", "$instance": "host:19847", "${job}": "tunewatch", "$job": "tunewatch",
    "${profile}": "azure-sap-hana",
    "$profile": "azure-sap-hana", "${datasource}": "prometheus", "$datasource": "prometheus",
}

# PromQL words that look like metric names but are not.
PROMQL_WORDS = {
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values",
    "group", "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
    "offset", "time", "vector", "scalar", "rate", "irate", "increase", "delta", "idelta", "changes", "resets",
    "label_replace", "label_join", "absent", "absent_over_time", "timestamp", "sort", "sort_desc", "clamp",
    "clamp_min", "clamp_max", "abs", "ceil", "floor", "round", "ln", "log2", "log10", "exp", "sqrt",
    "max_over_time", "min_over_time", "avg_over_time", "sum_over_time", "count_over_time", "last_over_time",
    "present_over_time", "quantile_over_time", "stddev_over_time", "stdvar_over_time", "histogram_quantile",
    "predict_linear", "deriv", "holt_winters", "day_of_month", "day_of_week", "hour", "minute", "month", "year",
    "days_in_month", "sgn", "inf", "nan", "atan2", "m", "h", "s", "d", "w", "y", "ms",
}


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def all_panels(dashboard: dict) -> list[dict]:
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))  # collapsed rows keep their panels inside
    return out


def queries(dashboard: dict) -> list[tuple[str, str]]:
    """(where, expr) for every panel target, query variable and annotation."""
    found = []
    for panel in all_panels(dashboard):
        for target in panel.get("targets", []):
            found.append((f"panel {panel['id']} {panel.get('title')!r} {target.get('refId')}", target["expr"]))
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            found.append((f"variable {var['name']}", query))
    for ann in dashboard["annotations"]["list"]:
        if ann.get("expr"):
            found.append((f"annotation {ann['name']!r}", ann["expr"]))
    return found


def substitute(expr: str) -> str:
    for var in sorted(GRAFANA_VARS, key=len, reverse=True):
        expr = expr.replace(var, GRAFANA_VARS[var])
    assert "$" not in re.sub(r'"[^"]*"', '""', expr), f"unknown Grafana variable outside a string in {expr!r}"
    assert not re.search(r"\$\{?[a-zA-Z_]", expr), f"unknown Grafana variable in {expr!r}"
    return expr


def label_values_to_promql(expr: str) -> str:
    """`label_values(metric, label)` (a Grafana function) -> a PromQL query over the same metric."""
    m = re.fullmatch(r"\s*label_values\(\s*(.+?)\s*,\s*([a-zA-Z_]\w*)\s*\)\s*", expr)
    if m:
        return f"group by ({m.group(2)}) ({m.group(1)})"
    m = re.fullmatch(r"\s*label_values\(\s*([a-zA-Z_]\w*)\s*\)\s*", expr)
    return f"group by ({m.group(1)}) ({{{m.group(1)}!=\"\"}})" if m else expr


def metric_names(expr: str) -> set[str]:
    """Metric names referenced by a PromQL expression (heuristic tokenizer, good enough for ours)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)          # strings
    text = re.sub(r"\{[^}]*\}", "{}", text)                   # label matchers
    text = re.sub(r"\[[^\]]*\]", "[]", text)                  # ranges
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for m in re.finditer(r"(?<![\w:.])([a-zA-Z_:][\w:]*)", text):
        word = m.group(1)
        rest = text[m.end():].lstrip()
        if word in PROMQL_WORDS or rest.startswith("("):
            continue
        names.add(word)
    return names


def documented_metrics() -> set[str]:
    return set(re.findall(r"`(tunewatch_[a-z0-9_]+)`", METRICS_DOC.read_text()))


def recorded_metrics() -> set[str]:
    names = set()
    for path in (REPO / "rules").glob("*.rules.yml"):
        for group in yaml.safe_load(path.read_text())["groups"]:
            names |= {r["record"] for r in group["rules"] if "record" in r}
    return names


def alert_names() -> set[str]:
    names = set()
    for path in (REPO / "rules").glob("*.rules.yml"):
        for group in yaml.safe_load(path.read_text())["groups"]:
            names |= {r["alert"] for r in group["rules"] if "alert" in r}
    return names


@pytest.fixture(scope="module", params=DASHBOARDS, ids=lambda p: p.name)
def dashboard(request) -> dict:
    return load(request.param)


def test_both_dashboards_exist():
    assert {p.name for p in DASHBOARDS} == {"tunewatch-fleet.json", "tunewatch-host.json"}


def test_top_level(dashboard):
    assert dashboard["uid"] and len(dashboard["uid"]) <= 40
    assert dashboard["title"]
    assert 36 <= dashboard["schemaVersion"] <= 41
    assert dashboard.get("id") is None, "exported dashboards must not carry a database id"
    assert "tunewatch" in dashboard["tags"]


def test_unique_uids():
    uids = [load(p)["uid"] for p in DASHBOARDS]
    assert len(uids) == len(set(uids))


def test_unique_panel_ids(dashboard):
    ids = [p["id"] for p in all_panels(dashboard)]
    assert len(ids) == len(set(ids)), ids
    assert all(isinstance(i, int) and i > 0 for i in ids)


def test_panel_types(dashboard):
    assert {p["type"] for p in all_panels(dashboard)} <= PANEL_TYPES
    # Every requested visualisation is there at least once across both dashboards (see below).


def test_all_requested_panel_types_used():
    used = set()
    for path in DASHBOARDS:
        used |= {p["type"] for p in all_panels(load(path))}
    assert PANEL_TYPES <= used, PANEL_TYPES - used


def test_grid_within_24_columns_and_no_overlap(dashboard):
    """The dashboard as it opens (top-level panels), and each collapsed row's panels as they
    lie once it is expanded: within 24 columns, below their row, none overlapping."""
    layers = [[p for p in dashboard["panels"]]]
    layers += [[row, *row["panels"]] for row in dashboard["panels"] if row["type"] == "row" and row.get("collapsed")]
    for layer in layers:
        boxes = []
        for panel in layer:
            g = panel["gridPos"]
            assert set(g) >= {"x", "y", "w", "h"}, panel["id"]
            assert g["x"] >= 0 and g["y"] >= 0 and g["w"] > 0 and g["h"] > 0, panel["id"]
            assert g["x"] + g["w"] <= 24, (panel["id"], g)
            assert g["y"] >= layer[0]["gridPos"]["y"] or layer is layers[0], (panel["id"], g)
            boxes.append((panel["id"], g))
        for (a, ga), (b, gb) in itertools.combinations(boxes, 2):
            overlap_x = ga["x"] < gb["x"] + gb["w"] and gb["x"] < ga["x"] + ga["w"]
            overlap_y = ga["y"] < gb["y"] + gb["h"] and gb["y"] < ga["y"] + ga["h"]
            assert not (overlap_x and overlap_y), f"panels {a} and {b} overlap: {ga} {gb}"


def test_host_dashboard_opens_on_one_host_with_detail_rows_collapsed():
    host = load(REPO / "dashboards" / "tunewatch-host.json")
    instance = next(v for v in host["templating"]["list"] if v["name"] == "instance")
    assert not instance["multi"] and not instance["includeAll"] and "allValue" not in instance
    assert instance["current"] == {}  # Grafana then selects the first host
    rows = [p for p in host["panels"] if p["type"] == "row"]
    detail = [r for r in rows if "--metrics.detail" in r["title"]]
    assert len(detail) == 3 and all(r["collapsed"] and r["panels"] for r in detail)
    assert all(r["title"].startswith("Detail, needs --metrics.detail") for r in detail)
    assert sum(len(r["panels"]) for r in detail) == 11  # every detail panel, none left expanded
    for row in detail:
        for panel in row["panels"]:
            assert "Needs --metrics.detail" in panel["description"], panel["title"]
    top = [p for p in host["panels"] if p not in detail]
    assert all("--metrics.detail" not in p["title"] for p in top)
    ids = [p["id"] for p in all_panels(host)]
    assert len(ids) == len(set(ids))


def test_fleet_panels_do_not_read_alerts():
    fleet = load(REPO / "dashboards" / "tunewatch-fleet.json")
    for panel in all_panels(fleet):
        for target in panel.get("targets", []):
            assert "ALERTS" not in target["expr"], panel["title"]


def test_datasource_variable_everywhere(dashboard):
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    ds = variables["datasource"]
    assert ds["type"] == "datasource" and ds["query"] == "prometheus"
    for panel in all_panels(dashboard):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": DS_UID}, panel["id"]
        assert panel["targets"], f"panel {panel['id']} has no query"
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), panel["id"]
        for target in panel["targets"]:
            assert target["datasource"] == {"type": "prometheus", "uid": DS_UID}, (panel["id"], target["refId"])
            assert target["expr"].strip()
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            assert var["datasource"] == {"type": "prometheus", "uid": DS_UID}, var["name"]
    for ann in dashboard["annotations"]["list"]:
        if ann.get("builtIn"):
            continue
        assert ann["datasource"] == {"type": "prometheus", "uid": DS_UID}, ann["name"]


def test_template_variables(dashboard):
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert list(variables) == ["datasource", "job", "instance", "profile"]
    # the job variable carries the mixin's tunewatchSelector: both routes by default
    assert variables["job"]["definition"] == 'label_values(tunewatch_build_info{job=~"tunewatch|node"}, job)'
    assert variables["instance"]["definition"] == 'label_values(tunewatch_build_info{job=~"$job"}, instance)'
    assert variables["profile"]["definition"] == \
        'label_values(tunewatch_check_status{job=~"$job", instance=~"$instance"}, profile)'
    for name in ("job", "instance", "profile"):
        if name == "instance" and dashboard["uid"] == "tunewatch-host":
            continue  # one host at a time (test_host_dashboard_opens_on_one_host_with_detail_rows_collapsed)
        assert variables[name]["multi"] and variables[name]["includeAll"] and variables[name]["allValue"] == ".+"
    for where, expr in queries(dashboard):
        if where.startswith("panel") or where.startswith("annotation"):
            assert 'job=~"$job"' in expr and 'instance=~"$instance"' in expr, (where, expr)


def test_every_panel_has_a_unit_and_a_description(dashboard):
    for panel in all_panels(dashboard):
        if panel["type"] == "row":
            continue
        assert panel.get("description", "").strip(), panel["title"]
        assert panel["fieldConfig"]["defaults"].get("unit"), panel["title"]


def test_links_to_host_dashboard_and_runbook():
    """Fleet: a host row opens the host dashboard; a failing check opens its runbook section."""
    fleet, host = (load(REPO / "dashboards" / n) for n in ("tunewatch-fleet.json", "tunewatch-host.json"))

    def links(dashboard, title, column):
        panel = next(p for p in all_panels(dashboard) if p["title"] == title and p["type"] != "row")
        for override in panel["fieldConfig"]["overrides"]:
            if override["matcher"] == {"id": "byName", "options": column}:
                return [v for prop in override["properties"] if prop["id"] == "links" for v in prop["value"]]
        return []
    for title in ("Failing checks", "Hosts", "Hosts whose settings reverted"):
        [link] = links(fleet, title, "instance")
        assert link["url"].startswith(f"/d/{host['uid']}/") and "var-instance=${__value.raw}" in link["url"]
        assert "var-job=${__data.fields.job}" in link["url"]
    anchors = _runbook_anchors()
    for dashboard, title in ((fleet, "Failing checks"), (fleet, "Hosts whose settings reverted"),
                             (host, "Checks now"), (host, "Objects")):
        [link] = links(dashboard, title, "check")
        base, anchor = link["url"].split("#", 1)
        assert base == runbook_base() and anchor == "${__value.raw}", link
    # the value is a check id: every check id has a runbook section
    from rules.test_rules import CHECK_IDS
    assert set(CHECK_IDS) <= anchors


def runbook_base() -> str:
    from rules.test_rules import runbook_base as base
    return base()


def _runbook_anchors() -> set[str]:
    from rules.test_rules import runbook_anchors
    return runbook_anchors()


def test_reboot_and_driver_annotations(dashboard):
    exprs = " ".join(a.get("expr", "") for a in dashboard["annotations"]["list"])
    assert "changes(tunewatch_boot_time_seconds" in exprs
    assert not load(REPO / "dashboards" / "tunewatch-fleet.json")["editable"]
    assert "tunewatch_nic_info" in exprs


def test_only_known_metrics(dashboard):
    known = documented_metrics() | recorded_metrics() | PROMETHEUS_OWN
    for where, expr in queries(dashboard):
        expr = label_values_to_promql(substitute(expr))
        unknown = metric_names(expr) - known
        assert not unknown, f"{where}: unknown metric(s) {sorted(unknown)} in {expr!r}"


def test_alerts_referenced_exist(dashboard):
    names = alert_names()
    for where, expr in queries(dashboard):
        for m in re.finditer(r'alertname=~?"([^"]+)"', expr):
            pattern = re.compile(m.group(1))
            assert any(pattern.fullmatch(n) for n in names), f"{where}: no alert matches {m.group(1)!r}"


def test_tokenizer_sanity():
    assert metric_names('sum by (instance) (rate(foo_total{a="b"}[5m])) / on(instance) bar') == {"foo_total", "bar"}
    assert metric_names("instance:tunewatch_compliance:ratio{x=\"y\"} > 0") == {"instance:tunewatch_compliance:ratio"}


def test_every_expression_parses_with_promtool(tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian package `prometheus`): cannot parse the PromQL")
    rules, where = [], []
    for path in DASHBOARDS:
        for place, expr in queries(load(path)):
            rules.append({"record": f"dashboard:expr_{len(rules)}:check", "expr": label_values_to_promql(substitute(expr))})
            where.append(f"{path.name} {place}")
    rules_file = tmp_path / "dashboard-exprs.rules.yml"
    rules_file.write_text(yaml.safe_dump({"groups": [{"name": "dashboard-exprs", "rules": rules}]}, sort_keys=False))
    done = subprocess.run([promtool, "check", "rules", str(rules_file)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        # Name the offending queries: promtool reports them by index within the group.
        bad = [where[int(i)] for i in re.findall(r"dashboard:expr_(\d+):check", done.stdout + done.stderr)]
        pytest.fail(f"promtool rejects dashboard queries {bad}:\n{done.stdout}{done.stderr}")
    assert f"SUCCESS: {len(rules)} rules found" in done.stdout, done.stdout


def test_provisioning_files():
    ds = yaml.safe_load((REPO / "dashboards/provisioning/datasources/tunewatch.yml").read_text())
    assert ds["apiVersion"] == 1 and ds["datasources"][0]["type"] == "prometheus"
    prov = yaml.safe_load((REPO / "dashboards/provisioning/dashboards/tunewatch.yml").read_text())
    assert prov["apiVersion"] == 1
    provider = prov["providers"][0]
    assert provider["type"] == "file" and provider["options"]["path"]


def test_readme_explains_import_and_provisioning():
    text = (REPO / "dashboards/README.md").read_text()
    assert "Import" in text and "provisioning" in text.lower()
