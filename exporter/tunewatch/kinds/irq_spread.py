"""A NIC's data IRQs each sit on one CPU, spread evenly over the allowed CPUs.

No CPU may hold more than ceil(data IRQs / allowed CPUs) of one NIC's IRQs: distinct CPUs
while there are enough. Two NICs may share CPUs.
"""

from __future__ import annotations

import math
from collections import Counter

from ..parsers.cpulist import format_cpulist
from .base import FAIL, NOTAPPLICABLE, PASS, ObjectResult, Target, error_result
from .nic_irqs import IRQ_VARS, allowed_cpus, data_irqs

VARS_SCHEMA = {"type": "object", "additionalProperties": False, "properties": IRQ_VARS}


def evaluate(t: Target) -> list[ObjectResult]:
    results = []
    for iface in t.interfaces():
        allowed, _node = allowed_cpus(t, iface)
        placed: dict[int, frozenset[int]] = {}
        for irq, _name in data_irqs(t, iface):
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
        per_cpu_limit = math.ceil(len(placed) / max(len(allowed), 1))
        load = Counter(next(iter(cpus)) for cpus in placed.values() if len(cpus) == 1)
        want = f"1 CPU, <= {per_cpu_limit} IRQs of {iface.name} per CPU"
        for irq, cpus in placed.items():
            obj, shown = f"{iface.name}/irq{irq}", format_cpulist(cpus)
            if len(cpus) != 1:
                results.append(ObjectResult(obj, FAIL, want, shown,
                                            f"{iface.name} IRQ {irq} may run on {len(cpus)} CPUs ({shown}); pin it to one"))
            elif load[(cpu := next(iter(cpus)))] > per_cpu_limit:
                results.append(ObjectResult(obj, FAIL, want, f"{shown} (shared by {load[cpu]} IRQs)",
                                            f"CPU {cpu} holds {load[cpu]} IRQs of {iface.name}; at most "
                                            f"{per_cpu_limit} with {len(allowed)} allowed CPUs"))
            else:
                results.append(ObjectResult(obj, PASS, want, shown, f"{iface.name} IRQ {irq} alone enough on CPU {cpu}"))
    return results
