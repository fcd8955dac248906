"""The active tuned profile is the wanted one, or a custom profile that includes it."""

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
    if wanted in active.chain:
        return [ObjectResult("tuned", PASS, wanted, chain, f"active tuned profile {chain}")]
    return [ObjectResult("tuned", FAIL, wanted, chain,
                         f"active tuned profile {chain} does not include {wanted}: tuned-adm profile {wanted}")]
