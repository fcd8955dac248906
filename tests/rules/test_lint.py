"""The shipped rules and dashboards: rendered from mixin/ and clean for the ecosystem's linters.

* `mixin/render.py` re-renders rules/*.rules.yml and dashboards/*.json from the jsonnet mixin
  into a temp dir: they must equal the shipped files (no hand edits, nothing stale).
* A changed `_config` (another selector and runbook base) reaches every rule and panel.
* `pint lint` with the repository's .pint.hcl (mixin conventions): 0 findings.
* `dashboard-linter lint --strict` on every dashboard: 0 findings.

The linters come from PATH or ../shared/tools (tests/support/tools.py rule): skipped with the
reason when missing, a failure under CI=true.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
RENDER = REPO / "mixin" / "render.py"
DASHBOARDS = sorted((REPO / "dashboards").glob("*.json"))
RULE_FILES = sorted((REPO / "rules").glob("*.rules.yml"))


def tool(name: str) -> str:
    """A linter from PATH or ../shared/tools; skip (fail under CI=true) when missing."""
    found = shutil.which(name)
    for candidate in (REPO.parent / "shared" / "tools" / name, REPO / ".." / "shared" / "tools" / name):
        if not found and candidate.is_file() and os.access(candidate, os.X_OK):
            found = str(candidate.resolve())
    if found:
        return found
    message = f"{name} not on PATH nor in ../shared/tools (see shared/tools/README.md)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def need_jsonnet() -> None:
    if shutil.which("jsonnet") is None:
        try:
            import _jsonnet  # noqa: F401
        except ImportError:
            message = "jsonnet not installed (Debian package jsonnet, or pip install jsonnet)"
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(message)
            pytest.skip(message)


def render(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RENDER), "--out", str(out), *extra], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


def test_shipped_files_are_rendered_from_the_mixin(tmp_path):
    need_jsonnet()
    done = render(tmp_path)
    assert done.returncode == 0, done.stderr
    rendered = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    shipped = [p.relative_to(REPO) for p in RULE_FILES + DASHBOARDS]
    assert rendered == sorted(shipped)
    stale = [str(rel) for rel in rendered if (tmp_path / rel).read_text() != (REPO / rel).read_text()]
    assert not stale, f"shipped files differ from the mixin: {stale}; run python3 mixin/render.py"
    done = subprocess.run([sys.executable, str(RENDER), "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_config_sets_selectors_and_runbook_in_one_place(tmp_path):
    """Override _config like a user's jsonnet would: every selector and URL follows."""
    need_jsonnet()
    mixin = tmp_path / "mixin"
    shutil.copytree(REPO / "mixin", mixin)
    (mixin / "config.libsonnet").write_text((REPO / "mixin" / "config.libsonnet").read_text() + """
+ { _config+:: { tunewatchSelector: 'job="tuning", env="prod"', tunewatchServeSelector: 'job="tuning"',
                 runbookURLBase: 'https://wiki.example.com/tunewatch/runbook' } }
""")
    done = subprocess.run([sys.executable, str(mixin / "render.py"), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rules = [r for f in sorted((tmp_path / "out" / "rules").glob("*.yml"))
             for g in yaml.safe_load(f.read_text())["groups"] for r in g["rules"]]
    for rule in rules:
        assert 'job=~"tunewatch|node"' not in rule["expr"], rule
        if "tunewatch_" in rule["expr"]:
            assert 'job="tuning", env="prod"' in rule["expr"], rule
        if "alert" in rule:
            assert rule["annotations"]["runbook_url"].startswith("https://wiki.example.com/tunewatch/runbook#")
    for path in (tmp_path / "out" / "dashboards").glob("*.json"):
        text = path.read_text()
        assert 'job=\\"tuning\\", env=\\"prod\\"' in text  # the job variable's query
        assert "https://wiki.example.com/tunewatch/runbook#${__value.raw}" in text


def test_pint_lint_finds_nothing():
    pint = tool("pint")
    done = subprocess.run([pint, "--offline", "--no-color", "lint", *map(str, RULE_FILES)], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Loading configuration file" in output and ".pint.hcl" in output, output
    assert "Problems found" not in output, output


def test_pint_config_enforces_the_mixin_conventions(tmp_path):
    """The shipped .pint.hcl really catches what it claims to: a templated severity, a
    missing runbook_url, a short `for`, an aggregation dropping `job`."""
    pint = tool("pint")
    bad = {"groups": [{"name": "bad", "rules": [
        {"alert": "Templated", "expr": "up == 0", "for": "5m",
         "labels": {"severity": '{{ if eq $labels.x "y" }}critical{{ end }}'},
         "annotations": {"summary": "s", "description": "d", "runbook_url": "https://x/docs/runbook.md#a"}},
        {"alert": "NoRunbook", "expr": "up == 0", "for": "5m", "labels": {"severity": "warning"},
         "annotations": {"summary": "s", "description": "d"}},
        {"alert": "TooQuick", "expr": "up == 0", "for": "10s", "labels": {"severity": "warning"},
         "annotations": {"summary": "s", "description": "d", "runbook_url": "https://x/docs/runbook.md#a"}},
        {"record": "instance:x:sum", "expr": "sum by (instance) (up)"},
    ]}]}
    (tmp_path / "bad.rules.yml").write_text(yaml.safe_dump(bad))
    shutil.copy(REPO / ".pint.hcl", tmp_path / ".pint.hcl")
    done = subprocess.run([pint, "--offline", "--no-color", "lint", "bad.rules.yml"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    for check in ("rule/label", "alerts/annotation", "rule/for", "promql/aggregate"):
        assert check in output, (check, output)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_linter_strict_finds_nothing(path):
    linter = tool("dashboard-linter")
    done = subprocess.run([linter, "lint", "--strict", str(path)], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "\u274c" not in output and "\u26a0" not in output, output
    # one exclusion only: the host dashboard's instance variable is single-select by design (issue 21)
    import yaml
    exclusions = yaml.safe_load((path.parent / ".lint").read_text())["exclusions"]
    assert list(exclusions) == ["template-instance-rule"], exclusions
    assert exclusions["template-instance-rule"]["entries"] == [{"dashboard": "tunewatch / Host tuning detail"}]
    json.loads(path.read_text())
