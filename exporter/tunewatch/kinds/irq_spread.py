"""A NIC's data IRQs each sit on one CPU, spread evenly over the allowed CPUs.

No CPU may hold more than ceil(data IRQs / allowed CPUs) of one NIC's IRQs: distinct CPUs
while there are enough. Two NICs may share CPUs.

The fix of each failing IRQ is one CPU of a plan for the whole NIC: passing IRQs stay, a
failing IRQ keeps its CPU when that CPU still has room, else goes to the least loaded
allowed CPU. Applying every fix of the NIC makes every IRQ pass: while an IRQ is being
placed fewer than N IRQs sit on the A allowed CPUs, and N <= A * limit, so one of them
holds fewer than `limit`.
"""

from __future__ import annotations

from collections import Counter

from ..parsers.cpulist import format_cpulist
from ..results import FAIL, NOTAPPLICABLE, PASS, Fix, ObjectResult, error_result
from .base import Target
from .nic_irqs import IRQ_VARS, nics_with_data_irqs, no_cpu_fix

# its objects are interfaces (eth1, eth1/irq45): one the kernel could not have named is an error
PER_INTERFACE = True
VARS_SCHEMA = {"type": "object", "additionalProperties": False, "properties": IRQ_VARS}


def _plan(placed: dict[int, frozenset[int]], failing: set[int], allowed: frozenset[int],
          limit: int) -> dict[int, int]:
    """A CPU for every failing IRQ (none when no CPU is allowed)."""
    load = Counter(next(iter(cpus)) for irq, cpus in placed.items() if irq not in failing)
    plan: dict[int, int] = {}
    for irq in sorted(failing):
        cpus = placed[irq]
        own = next(iter(cpus)) if len(cpus) == 1 else None
        if own in allowed and load[own] < limit:
            cpu = own
        elif allowed:
            cpu = min(allowed, key=lambda c: (load[c], c))
        else:
            continue
        plan[irq] = cpu
        load[cpu] += 1
    return plan


def _fix(irq: int, cpus: frozenset[int], plan: dict[int, int], node: int, nic: str) -> Fix:
    cpu = plan.get(irq)
    if cpu is None:
        return no_cpu_fix(node)
    why = (f"IRQ {irq} stays on CPU {cpu}; the other fixes of {nic} move the rest" if cpus == {cpu}
           else f"apply every fix of {nic}: together they spread its IRQs")
    return Fix(command=f"echo {cpu} > /proc/irq/{irq}/smp_affinity_list",
               note=f"{why}; irqbalance moves them again unless it is stopped")


def evaluate(t: Target) -> list[ObjectResult]:
    results = []
    for iface, allowed, node, irqs in nics_with_data_irqs(t):
        placed: dict[int, frozenset[int]] = {}
        for irq, _name in irqs:
            try:
                aff = t.facts.affinity(irq)
            except Exception as e:  # one unreadable IRQ must not hide the others
                results.append(error_result(f"{iface.name}/irq{irq}", e))
                continue
            if aff is not None:
                placed[irq] = aff.smp
        if not placed:
            results.append(ObjectResult(iface.name, NOTAPPLICABLE, "one CPU per IRQ", "no data IRQs",
                                        f"{iface.name} has no data IRQs of its own"))
            continue
        per_cpu_limit = -(-len(placed) // max(len(allowed), 1))  # the ceiling, in integers: no math import
        load = Counter(next(iter(cpus)) for cpus in placed.values() if len(cpus) == 1)
        failing = {irq for irq, cpus in placed.items() if len(cpus) != 1 or load[next(iter(cpus))] > per_cpu_limit}
        plan = _plan(placed, failing, allowed, per_cpu_limit)
        want = f"1 CPU, <= {per_cpu_limit} IRQs of {iface.name} per CPU"
        for irq, cpus in placed.items():
            obj, shown = f"{iface.name}/irq{irq}", format_cpulist(cpus)
            if irq not in failing:
                results.append(ObjectResult(obj, PASS, want, shown,
                                            f"{iface.name} IRQ {irq} alone enough on CPU {next(iter(cpus))}"))
                continue
            fix = _fix(irq, cpus, plan, node, iface.name)
            how = fix.command or fix.note
            if len(cpus) != 1:
                results.append(ObjectResult(obj, FAIL, want, shown,
                                            f"{iface.name} IRQ {irq} may run on {len(cpus)} CPUs ({shown}); "
                                            f"pin it to one: {how}", fix=fix))
            else:
                cpu = next(iter(cpus))
                results.append(ObjectResult(obj, FAIL, want, f"{shown} (shared by {load[cpu]} IRQs)",
                                            f"CPU {cpu} holds {load[cpu]} IRQs of {iface.name}; at most "
                                            f"{per_cpu_limit} with {len(allowed)} allowed CPUs: {how}", fix=fix))
    return results
