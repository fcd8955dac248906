"""The active tuned profile is the wanted one, or a custom profile that includes it, and
tuned.service starts at boot to apply it (etc/tuned/active_profile alone applies nothing)."""

from __future__ import annotations

from .base import FAIL, PASS, ObjectResult, Target

VARS_SCHEMA = {"type": "object", "required": ["profile"], "additionalProperties": False,
               "properties": {"profile": {"type": "string"}}}


def evaluate(t: Target) -> list[ObjectResult]:
    wanted = t.vars["profile"]
    active = t.facts.tuned
    if active is None:
        return [ObjectResult("tuned", FAIL, wanted, "no active profile",
                             f"tuned has no active profile: tuned-adm profile {wanted}")]
    chain = " -> ".join(active.chain)
    if wanted not in active.chain:
        return [ObjectResult("tuned", FAIL, wanted, chain,
                             f"active tuned profile {chain} does not include {wanted}: tuned-adm profile {wanted}")]
    unit = t.facts.unit_state("tuned.service")
    if not unit.enabled:
        return [ObjectResult("tuned", FAIL, wanted, f"{chain} (tuned.service {unit.state})",
                             f"active tuned profile {chain}, but tuned.service is {unit.state}: nothing applies it "
                             "at boot: systemctl enable --now tuned")]
    return [ObjectResult("tuned", PASS, wanted, chain, f"active tuned profile {chain}, tuned.service enabled")]
