"""Named scenarios per check kind (ComplianceAsCode `templates/*/tests` style).

Each tests/scenarios/<kind>/<what>.<status>/ holds a scenario.yaml and a tiny snapshot
root/; the directory name states the verdict. The scenario's check is evaluated alone
(with its profile's variables and scope, plus the scenario's overrides) through
`engine.scan`, and its status must equal the suffix; `objects:` pins per-object statuses.
`after_readd:` pins the
status each object's `after_readd` gets (the value after the device is re-added without a
reboot). A scenario with `xfail:` documents a known scanner bug (strict xfail).
"""

from __future__ import annotations

import os
from pathlib import Path

import jsonschema
import pytest
import yaml

from tunewatch import kinds
from tunewatch.scan import engine
from tunewatch.content.catalog import Content, ResolvedProfile, SelectedCheck
from tunewatch.host.fs import FS
from tunewatch.results import STATUSES

SCENARIOS = Path(__file__).parent / "scenarios"
KEYS = {"description", "check", "profile", "vars", "scope", "objects", "after_readd", "xfail"}


def _discover() -> list[Path]:
    return sorted(p.parent for p in SCENARIOS.glob("*/*/scenario.yaml"))


ALL = _discover()


def _param(directory: Path):
    meta = yaml.safe_load((directory / "scenario.yaml").read_text())
    marks = [pytest.mark.xfail(strict=True, reason=meta["xfail"])] if meta.get("xfail") else []
    return pytest.param(directory, id=f"{directory.parent.name}/{directory.name}", marks=marks)


@pytest.fixture(scope="module")
def content() -> Content:
    return Content()


def run_scenario(content: Content, directory: Path):
    meta = yaml.safe_load((directory / "scenario.yaml").read_text())
    assert set(meta) <= KEYS, f"unknown keys {set(meta) - KEYS} in {directory}/scenario.yaml"
    resolved = content.resolve(meta.get("profile", "auto"))
    sel = next((s for s in resolved.checks if s.check.id == meta["check"]), None)
    assert sel is not None, f"profile {resolved.id} does not select {meta['check']}"
    variables = {**sel.vars, **meta.get("vars", {})}
    jsonschema.validate(variables, kinds.KINDS[sel.check.kind].VARS_SCHEMA)
    scope = meta.get("scope", resolved.scope)
    only = ResolvedProfile(resolved.id, resolved.base, resolved.title, [SelectedCheck(sel.check, variables)], scope)
    scan = engine.scan(content, only, str(directory / "root"))
    assert len(scan.results) == 1
    return meta, sel.check, scan.results[0]


@pytest.mark.parametrize("directory", [_param(d) for d in ALL])
def test_scenario(content: Content, directory: Path) -> None:
    meta, check, result = run_scenario(content, directory)
    kind_dir = directory.parent.name
    assert check.kind == kind_dir, f"{check.id} is kind {check.kind}, filed under {kind_dir}/"
    want = directory.name.rsplit(".", 1)[1]
    shown = "\n".join(f"  {o.status:13} {o.object}: {o.message}" for o in result.objects)
    assert result.status == want, f"{check.id} is {result.status}, scenario says {want}:\n{shown}"
    got = {o.object: o.status for o in result.objects}
    for obj, status in (meta.get("objects") or {}).items():
        assert obj in got, f"no object {obj!r}; objects: {sorted(got)}"
        assert got[obj] == status, f"{obj} is {got[obj]}, scenario says {status}:\n{shown}"
    readd = {o.object: o.after_readd for o in result.objects}
    for obj, status in (meta.get("after_readd") or {}).items():
        assert obj in readd, f"no object {obj!r}; objects: {sorted(readd)}"
        after = readd[obj]
        assert after is not None, f"{obj}: no after_readd"
        assert after.status == status, f"{obj} after a re-add is {after.status} ({after.predicted}: {after.source}), " \
                                       f"scenario says {status}"
    for o in result.objects:  # every verdict comes with a message a person can act on
        assert o.status in STATUSES and o.message.strip()


def test_every_kind_has_pass_and_fail_scenarios() -> None:
    by_kind: dict[str, set[str]] = {}
    for d in ALL:
        meta = yaml.safe_load((d / "scenario.yaml").read_text())
        if not meta.get("xfail"):
            by_kind.setdefault(d.parent.name, set()).add(d.name.rsplit(".", 1)[1])
    for kind in kinds.KINDS:
        assert {"pass", "fail"} <= by_kind.get(kind, set()), f"kind {kind} lacks a pass or fail scenario"


def test_scenario_names_state_a_status() -> None:
    for d in ALL:
        assert d.name.count(".") == 1 and d.name.rsplit(".", 1)[1] in STATUSES, d


def test_scenario_symlinks_resolve_inside_their_root() -> None:
    """Committed symlinks (relative or absolute) never lead out of the scenario root."""
    for d in ALL:
        root = d / "root"
        fs = FS(str(root))
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                if path.is_symlink():
                    rel = str(path.relative_to(root))
                    resolved = fs.path(rel)
                    assert os.path.commonpath([resolved, str(root.resolve())]) == str(root.resolve()), (rel, resolved)
