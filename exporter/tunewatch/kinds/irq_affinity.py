"""Every data IRQ of a NIC is pinned within the allowed CPUs of a NUMA node."""

from __future__ import annotations

from ..parsers.cpulist import format_cpulist
from .base import FAIL, NOTAPPLICABLE, PASS, ObjectResult, Setting, Target, per_object
from .nic_irqs import IRQ_VARS, allowed_cpus, data_irqs

VARS_SCHEMA = {"type": "object", "additionalProperties": False,
               "properties": {**IRQ_VARS, "check_effective": {"type": "boolean"}}}


def evaluate(t: Target) -> list[ObjectResult]:
    results = []
    for iface in t.interfaces():
        allowed, node = allowed_cpus(t, iface)
        want = f"within {format_cpulist(allowed)} (node {node})"
        irqs = data_irqs(t, iface)

        def one(item, iface=iface, allowed=allowed, want=want):
            irq, _name = item
            aff = t.facts.affinity(irq)
            obj = f"{iface.name}/irq{irq}"
            if aff is None:
                return None  # listed in msi_irqs but gone from proc/irq: not a live vector
            actual = format_cpulist(aff.smp)
            on_nodes = {t.facts.topology.node_of(cpu) for cpu in aff.smp}
            placement = [Setting("affinity_cpus", len(aff.smp), None),
                         Setting("affinity_first_cpu", min(aff.smp) if aff.smp else None, None),
                         # the node holding all its CPUs; None when they span nodes
                         Setting("affinity_node", on_nodes.pop() if len(on_nodes) == 1 else None, node)]
            outside = aff.smp - allowed
            if not outside and t.vars.get("check_effective", True) and aff.effective is not None:
                outside = aff.effective - allowed
                actual += f" (effective {format_cpulist(aff.effective)})"
            if outside:
                return ObjectResult(obj, FAIL, want, actual,
                                    f"{iface.name} IRQ {irq} may run on CPUs {format_cpulist(outside)} outside "
                                    f"{format_cpulist(allowed)}: set_irq_affinity_cpulist.sh "
                                    f"{format_cpulist(allowed)} {iface.name}", placement)
            return ObjectResult(obj, PASS, want, actual, f"{iface.name} IRQ {irq} on CPUs {actual}", placement)

        found = [r for r in per_object(irqs, lambda i, n=iface.name: f"{n}/irq{i[0]}", one) if r is not None]
        results += found or [ObjectResult(iface.name, NOTAPPLICABLE, want, "no data IRQs",
                                          f"{iface.name} has no data IRQs of its own")]
    return results
