"""A systemd unit does not start at the next boot: not installed, disabled or masked.

Judged on the unit tree the next boot reads (facts/services.py): a mask only in
/run/systemd/system is gone after a reboot and does not count.
"""

from __future__ import annotations

from .._escape import sh
from ..results import FAIL, PASS, Fix, ObjectResult
from .base import Target

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..facts.services import UnitState

VARS_SCHEMA = {"type": "object", "required": ["unit"], "additionalProperties": False,
               "properties": {"unit": {"type": "string", "pattern": r"^[\w@.:-]+\.(service|socket|timer)$"},
                              "allowed": {"type": "array", "items": {"enum": ["masked", "disabled", "not-installed"]},
                                          "minItems": 1}}}


def _source(state: UnitState) -> str:
    if state.masked:
        return f"configured by {state.mask_source} (-> /dev/null)"
    if state.enabled:
        return "configured by " + ", ".join(f"{w}/{state.unit}" for w in state.wanted_by)
    return "not installed" if not state.installed else "disabled: no .wants link starts it"


def evaluate(t: Target) -> list[ObjectResult]:
    unit = t.vars["unit"]
    allowed = t.vars.get("allowed", ["masked", "disabled", "not-installed"])
    state = t.facts.unit_state(unit)
    expected = " or ".join(allowed)
    wants = ", ".join(state.wanted_by) or "-"
    boot: dict[str, Any] = dict(predicted=state.state, source=_source(state))
    runtime = (f"masked only at runtime ({state.runtime_mask} -> /dev/null; /run is emptied at every boot)"
               if state.runtime_mask else "")
    if state.state in allowed:
        how = {"masked": f"masked by {state.mask_source}", "enabled": f"enabled (wanted by {wants})"}
        shown = how.get(state.state, state.state)
        extra = f"; also {runtime}" if runtime else ""
        return [ObjectResult(unit, PASS, expected, state.state, f"{unit} is {shown} at the next boot{extra}", **boot)]
    verb = "mask" if allowed == ["masked"] else "disable"
    fix = Fix(command=f"systemctl {verb} {sh(unit)}" if runtime else f"systemctl {verb} --now {sh(unit)}")
    if runtime:
        return [ObjectResult(unit, FAIL, expected, f"{state.state} at boot, {runtime}",
                             f"{unit} is {runtime}: at the next boot it is {state.state} (wanted by {wants}) again; "
                             f"run: systemctl mask {unit} (writes /etc/systemd/system) or systemctl disable {unit}",
                             fix=fix, **boot)]
    return [ObjectResult(unit, FAIL, expected, state.state,
                         f"{unit} is {state.state} (wanted by {wants}); run: systemctl disable --now {unit}"
                         f" (or systemctl mask {unit})", fix=fix, **boot)]
