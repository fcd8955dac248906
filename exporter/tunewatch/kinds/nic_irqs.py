"""Data IRQs of a NIC and the CPUs they may use (shared by the IRQ kinds).

Control vectors (mlx5_async, vmxnet3 -event-, virtio -config) are excluded by name
patterns that are content (`control_irq_patterns`), not code.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts.interfaces import Interface
from ..parsers.cpulist import parse_cpulist
from ..results import Fix

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .base import Target

IRQ_VARS = {
    "node": {"oneOf": [{"type": "integer", "minimum": 0}, {"const": "nic"}],
             "description": "NUMA node the IRQs belong on; 'nic' = the NIC's own node"},
    "exclude_cpus": {"type": "string", "pattern": r"^(\d+(-\d+)?)(,\d+(-\d+)?)*$|^$"},
    "control_irq_patterns": {"type": "array", "items": {"type": "string", "format": "regex"}},
}


def data_irqs(target: Target, iface: Interface) -> list[tuple[int, str]]:
    """(irq, name) of every data vector, including vectors beyond the channel count."""
    names = target.facts.interrupts.irqs
    control = [re.compile(p) for p in target.vars.get("control_irq_patterns", [])]
    found = []
    for irq in iface.msi_irqs:
        entry = names.get(irq)
        if entry is None:
            if target.facts.affinity(irq) is None:
                continue  # a stale msi_irqs entry (mlx4 leaves them): not a live vector
            raise ParseError("proc/interrupts", f"live IRQ {irq} of {iface.name} has no row (truncated?): "
                             "cannot tell a data vector from a control vector")
        name = entry.name
        if any(p.search(name) for p in control):
            continue
        found.append((irq, name))
    return found


def read_affinities_ahead(target: Target, ifaces: list[Interface]) -> None:
    """Every data IRQ's affinity of these NICs read in one pass (Facts.read_affinities_ahead:
    proc/irq opened once per scan), before the check asks IRQ by IRQ. A NIC whose data IRQs
    cannot be told is left to the check, which reports it where it always did."""
    irqs: list[int] = []
    for iface in ifaces:
        try:
            irqs += [irq for irq, _name in data_irqs(target, iface)]
        except ParseError:
            continue
    target.facts.read_affinities_ahead(irqs)


def no_cpu_fix(node: int) -> Fix:
    """The fix when `exclude_cpus` leaves the wanted node no CPU: nothing to pin to."""
    return Fix(note=f"no CPU of NUMA node {node} is left after exclude_cpus: change node or exclude_cpus "
                    "(tailoring)")


def allowed_cpus(target: Target, iface: Interface) -> tuple[frozenset[int], int]:
    node = target.vars.get("node", 0)
    node = iface.node_or_zero() if node == "nic" else node
    excluded = parse_cpulist(target.vars.get("exclude_cpus", ""), "exclude_cpus")
    return target.facts.topology.node_cpus(node) - excluded, node
