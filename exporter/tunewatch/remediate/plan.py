"""The remediation plan of one scan: steps for the failed checks only (and NIC settings or
IRQ pinning that pass for the next boot but are lost when the device is re-added), in a
safe order."""

from __future__ import annotations

from ..errors import FactError, ParseError
from ..results import FAIL
from .hostview import HostView
from .nic import lost_on_readd
from .steps import MANUAL, Command, Note, Plan, Step
from .templates import TEMPLATES, Context, fstab_steps


def _order(step: Step) -> int:
    """Stop services first (irqbalance would undo IRQ pinning), then everything else."""
    stops = isinstance(step.action, Command) and step.action.argv[:2] in (("systemctl", "stop"), ("pkill", "-x"))
    return 0 if stops else 1


def build_plan(view: HostView) -> Plan:
    r = view.result
    plan = Plan(r.host.hostname if r.host else "unknown host", r.profile, r.root, r.host.boot_id if r.host else None)
    ctx = Context(view)
    steps: list[Step] = []
    for result in r.results:
        if result.status != FAIL and not lost_on_readd(result):  # tuned for the next boot, not for a re-add
            continue
        template = TEMPLATES.get(result.kind)
        try:
            steps += list(template(ctx, view.selected(result.check), result)) if template else []
        except (FactError, ParseError) as e:
            steps.append(Step(result.check, "-", MANUAL, f"could not plan: {e}", Note(f"{result.check}: {e}")))
    steps += list(fstab_steps(ctx))
    seen = set()
    for step in sorted(steps, key=_order):
        if (step.phase, step.action) not in seen:  # two checks may ask for the same change
            seen.add((step.phase, step.action))
            plan.steps.append(step)
    return plan
