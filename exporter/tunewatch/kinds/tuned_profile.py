"""The active tuned profile is the wanted one, or a custom profile that includes it, and
tuned.service starts at boot to apply it (etc/tuned/active_profile alone applies nothing)."""

from __future__ import annotations

from .._escape import sh
from ..results import FAIL, PASS, Fix, ObjectResult
from .base import Target

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..facts.tuned import TunedProfile

VARS_SCHEMA = {"type": "object", "required": ["profile"], "additionalProperties": False,
               "properties": {"profile": {"type": "string"}}}


def _move(t: Target, active: TunedProfile) -> Fix | None:
    """A missing profile left in the directory of another tuned layout (etc/tuned/<name> after
    an update to tuned >= 2.24): move it, as tuned.spec's %post does on Fedora and RHEL 10."""
    name = active.missing[0].lstrip("-")
    fs = t.facts.fs
    for d in ("etc/tuned", "etc/tuned/profiles"):
        if d not in active.dirs and fs.exists(f"{d}/{name}/tuned.conf"):
            return Fix(command=f"mv {sh(f'/{d}/{name}')} {sh(f'/{active.dirs[-1]}/')}")
    return None


def evaluate(t: Target) -> list[ObjectResult]:
    wanted = t.vars["profile"]
    select = Fix(command=f"tuned-adm profile {sh(wanted)}")
    active = t.facts.tuned
    if active is None:
        return [ObjectResult("tuned", FAIL, wanted, "no active profile",
                             f"tuned has no active profile: {select.command}", fix=select)]
    chain = " -> ".join(active.chain)
    if active.missing:
        # loader.py `_load_profile()` raises for a name found nowhere: tuned applies no profile
        dirs = ", ".join(f"/{d}" for d in active.dirs)
        fix = _move(t, active) or select
        return [ObjectResult("tuned", FAIL, wanted, f"{active.name} (cannot load {', '.join(active.missing)})",
                             f"tuned cannot find profile {', '.join(active.missing)} in {dirs}: it loads no profile "
                             f"at all, {active.name} included: {fix.command}", fix=fix)]
    if wanted not in active.chain:
        return [ObjectResult("tuned", FAIL, wanted, chain,
                             f"active tuned profile {chain} does not include {wanted}: {select.command}", fix=select)]
    unit = t.facts.unit_state("tuned.service")
    if not unit.enabled:
        enable = Fix(command="systemctl enable --now tuned")
        return [ObjectResult("tuned", FAIL, wanted, f"{chain} (tuned.service {unit.state})",
                             f"active tuned profile {chain}, but tuned.service is {unit.state}: nothing applies it "
                             f"at boot: {enable.command}", fix=enable)]
    return [ObjectResult("tuned", PASS, wanted, chain, f"active tuned profile {chain}, tuned.service enabled")]
