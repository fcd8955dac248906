"""What adding a check or a kind must not get wrong silently (docs/architecture.md, recipes).

- kinds.PROVIDES is the one list of kinds: each has its module, its remediation template and
  its goss test, or a stated reason why not; the tables of remediate/ and outputs/goss.py
  follow it.
- Check folders are discovered: a check in a new folder under checks/ is loaded, and `auto`
  (select: all) selects it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tunewatch import kinds
from tunewatch.content.catalog import Content
from tunewatch.outputs import goss
from tunewatch.remediate import templates

PACKAGE = Path(kinds.__file__).resolve().parent
REPO = PACKAGE.parent.parent.parent
NOT_KINDS = {"__init__", "base", "selectors", "_predict", "nic_irqs"}  # helpers beside the kind modules
NONE = "none: "


def test_every_kind_module_has_a_row_and_every_row_a_module():
    modules = {p.stem for p in PACKAGE.glob("*.py")} - NOT_KINDS
    assert modules == set(kinds.PROVIDES), "kinds/ and kinds.PROVIDES differ"
    for name in kinds.PROVIDES:
        module = kinds.KINDS[name]
        assert isinstance(module.VARS_SCHEMA, dict) and callable(module.evaluate), name


def test_every_kind_has_a_remediation_or_says_why_not():
    for name, (remediation, _) in kinds.PROVIDES.items():
        if remediation.startswith(NONE):
            assert remediation[len(NONE):].strip(), f"{name}: no remediation and no reason"
            assert name not in templates.TEMPLATES, name
        else:
            assert templates.TEMPLATES[name].__name__ == remediation, name
    assert set(templates.TEMPLATES) <= set(kinds.PROVIDES)


def test_every_kind_has_a_goss_test_or_says_why_not():
    for name, (_, test) in kinds.PROVIDES.items():
        if test.startswith(NONE):
            assert test[len(NONE):].strip(), f"{name}: no goss test and no reason"
            assert name not in goss.TEMPLATES and goss.NOT_EXPRESSIBLE[name] == test[len(NONE):], name
        else:
            assert goss.TEMPLATES[name].__name__ == test, name
    assert set(goss.TEMPLATES) <= set(kinds.PROVIDES)


def test_every_check_names_a_registered_kind():
    assert {c.kind for c in Content().checks.values()} <= set(kinds.PROVIDES)


def test_a_check_in_a_new_folder_is_loaded_and_selected(tmp_path):
    content_dir = tmp_path / "checks"
    shutil.copytree(REPO / "checks", content_dir)
    (content_dir / "kernel").mkdir()
    (content_dir / "kernel" / "somaxconn.yaml").write_text(
        "id: somaxconn\ntitle: The listen backlog is long enough\ndescription: net.core.somaxconn 4096.\n"
        "rationale: A short accept queue drops connections in a burst.\nseverity: low\n"
        'references:\n  - {seed: "003", section: "Kernel Tunables (via custom tuned profile)"}\n'
        "kind: sysctl\nvars:\n  source: runtime\n  settings:\n    net.core.somaxconn: 4096\n")
    content = Content(str(content_dir), use_cache=False)
    assert "somaxconn" in content.checks
    assert "somaxconn" in [sel.check.id for sel in content.resolve("auto").checks]
