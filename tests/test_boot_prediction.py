"""Boot prediction as data: every object of a `-persistent` check says what the value will
be after the next boot and where that comes from, and every failing object of the kinds
with a persistent form carries a structured fix (outputs never parse message text)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tunewatch import engine
from tunewatch.content import Content

from test_scenarios import ALL, run_scenario

EXAMPLES = Path(__file__).parent / "snapshots" / "examples"
# the kinds with a `-persistent` form (SPEC section 3); their runtime forms get `fix` too
PERSISTENT_KINDS = {"irq_affinity_persistent", "nic_settings_persistent", "service_disabled", "sysctl",
                    "nfs_mount_options", "nfs_nconnect"}
SOURCES = ("configured by ", "driver default", "module default", "kernel default", "never applied: ", "not configured",
           "not installed", "disabled", "nothing required", "could not predict")


@pytest.fixture(scope="module")
def content() -> Content:
    return Content()


def _assert_data(result) -> None:
    if result.kind not in PERSISTENT_KINDS:
        return  # udev_attr (nfs-readahead-persistent) belongs to the udev engine's work
    persistent = result.runtime_check is not None
    for o in result.objects:
        if persistent and o.status != "notapplicable" or o.predicted is not None:
            assert o.predicted, f"{result.check} {o.object}: no predicted value ({o.message})"
            assert o.source, f"{result.check} {o.object}: no source"
            # several settings of one object: "key: source; key: source"
            parts = [re.sub(r"^(channels|rings|coalesce|features)\.[\w-]+: ", "", p)
                     for p in re.split(r"; (?=(?:channels|rings|coalesce|features)\.[\w-]+: )", o.source)]
            assert all(p.startswith(SOURCES) for p in parts), f"{result.check} {o.object}: source {o.source!r}"
        if o.status == "fail":
            assert o.fix is not None and o.fix.to_dict(), f"{result.check} {o.object}: failing without a fix"


@pytest.mark.parametrize("directory", [d for d in ALL if d.parent.name in PERSISTENT_KINDS],
                         ids=lambda d: f"{d.parent.name}/{d.name}")
def test_scenario_objects_carry_prediction_and_fix(content: Content, directory: Path) -> None:
    _meta, _check, result = run_scenario(content, directory)
    _assert_data(result)


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()))
def test_example_objects_carry_prediction_and_fix(content: Content, example: str) -> None:
    scan = engine.scan(content, content.resolve("auto"), str(EXAMPLES / example))
    for result in scan.results:
        _assert_data(result)
