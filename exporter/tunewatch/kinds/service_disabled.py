"""A systemd unit does not start at boot: not installed, disabled or masked."""

from .base import FAIL, PASS, ObjectResult, Target

VARS_SCHEMA = {"type": "object", "required": ["unit"], "additionalProperties": False,
               "properties": {"unit": {"type": "string", "pattern": r"^[\w@.:-]+\.(service|socket|timer)$"},
                              "allowed": {"type": "array", "items": {"enum": ["masked", "disabled", "not-installed"]},
                                          "minItems": 1}}}


def evaluate(t: Target) -> list[ObjectResult]:
    unit = t.vars["unit"]
    allowed = t.vars.get("allowed", ["masked", "disabled", "not-installed"])
    state = t.facts.unit_state(unit)
    expected = " or ".join(allowed)
    if state.state in allowed:
        return [ObjectResult(unit, PASS, expected, state.state, f"{unit} is {state.state}")]
    wants = ", ".join(state.wanted_by) or "-"
    return [ObjectResult(unit, FAIL, expected, state.state,
                         f"{unit} is {state.state} (wanted by {wants}); run: systemctl disable --now {unit}"
                         f" (or systemctl mask {unit})")]
