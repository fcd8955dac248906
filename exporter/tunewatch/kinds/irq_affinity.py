"""Every data IRQ of a NIC is pinned within the allowed CPUs of a NUMA node."""

from __future__ import annotations

import functools

from .._escape import sh
from ..parsers.cpulist import format_cpulist
from ..results import FAIL, NOTAPPLICABLE, PASS, Fix, IrqPlacement, ObjectResult
from .base import Target, per_object
from .nic_irqs import IRQ_VARS, nics_with_data_irqs, no_cpu_fix

# its objects are interfaces (eth1, eth1/irq45): one the kernel could not have named is an error
PER_INTERFACE = True
VARS_SCHEMA = {"type": "object", "additionalProperties": False,
               "properties": {**IRQ_VARS, "check_effective": {"type": "boolean"}}}

# Seed 000's command. The script ships with Mellanox's mlnx-tools (MLNX_OFED, or the
# mlnx-tools package of the distribution) and spreads every IRQ of the NIC round robin over
# the list; irqbalance undoes it within 10 s (irqbalance-disabled).
SCRIPT_NOTE = ("set_irq_affinity_cpulist.sh comes with Mellanox mlnx-tools; without it, write one CPU of "
               "{cpus} to /proc/irq/<irq>/smp_affinity_list for each data IRQ of {nic}, and keep irqbalance stopped")


def _irq_name(nic: str, item: tuple[int, str]) -> str:
    return f"{nic}/irq{item[0]}"


def pin_fix(allowed: frozenset[int], node: int, nic: str) -> Fix:
    """The fix of a NIC whose IRQs leave `allowed` (one command for all its IRQs)."""
    if not allowed:
        return no_cpu_fix(node)
    cpus = format_cpulist(allowed)
    return Fix(command=f"set_irq_affinity_cpulist.sh {cpus} {sh(nic)}", note=SCRIPT_NOTE.format(cpus=cpus, nic=nic))


def evaluate(t: Target) -> list[ObjectResult]:
    results = []
    for iface, allowed, node, irqs in nics_with_data_irqs(t):
        want = f"within {format_cpulist(allowed)} (node {node})"
        fix = pin_fix(allowed, node, iface.name)

        def one(item, iface=iface, allowed=allowed, want=want, fix=fix):
            irq, _name = item
            aff = t.facts.affinity(irq)
            obj = f"{iface.name}/irq{irq}"
            if aff is None:
                return None  # listed in msi_irqs but gone from proc/irq: not a live vector
            actual = format_cpulist(aff.smp)
            on_nodes = {t.facts.topology.node_of(cpu) for cpu in aff.smp}
            # the node holding all its CPUs; None when they span nodes
            placement = IrqPlacement(iface.name, irq, tuple(sorted(aff.smp)),
                                     on_nodes.pop() if len(on_nodes) == 1 else None)
            outside = aff.smp - allowed
            if not outside and t.vars.get("check_effective", True) and aff.effective is not None:
                outside = aff.effective - allowed
                actual += f" (effective {format_cpulist(aff.effective)})"
            if outside:
                return ObjectResult(obj, FAIL, want, actual,
                                    f"{iface.name} IRQ {irq} may run on CPUs {format_cpulist(outside)} outside "
                                    f"{format_cpulist(allowed)}: {fix.command or fix.note}", fix=fix, irq=placement)
            return ObjectResult(obj, PASS, want, actual, f"{iface.name} IRQ {irq} on CPUs {actual}", irq=placement)

        found = [r for r in per_object(irqs, functools.partial(_irq_name, iface.name), one) if r is not None]
        results += found or [ObjectResult(iface.name, NOTAPPLICABLE, want, "no data IRQs",
                                          f"{iface.name} has no data IRQs of its own")]
    return results
