"""Data IRQs of a NIC and the CPUs they may use (shared by the IRQ kinds).

Control vectors (mlx5_async, vmxnet3 -event-, virtio -config) are excluded by name
patterns that are content (`control_irq_patterns`), not code.
"""

from __future__ import annotations

import re

from ..errors import FactError, ParseError
from ..facts.interfaces import Interface
from ..parsers.cpulist import parse_cpulist
from ..results import Fix

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

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


def nics_with_data_irqs(target: Target) -> Iterator[tuple[Interface, frozenset[int], int, list[tuple[int, str]]]]:
    """The check's NICs, each with the CPUs its data IRQs may use, their NUMA node
    (allowed_cpus()) and its data IRQs (data_irqs()), every data IRQ's affinity read in one
    pass first (Facts.prefetch_affinities). A NIC's errors come in the order the checks
    always met them: its allowed CPUs first, then its data IRQs."""
    found: list[tuple[Interface, list[tuple[int, str]], FactError | ParseError | None]] = []
    for iface in target.interfaces():
        try:
            found.append((iface, data_irqs(target, iface), None))
        except (FactError, ParseError) as e:  # raised below, where the check met it before
            found.append((iface, [], e))
    target.facts.prefetch_affinities([irq for _iface, irqs, _error in found for irq, _name in irqs])
    for iface, irqs, error in found:
        allowed, node = allowed_cpus(target, iface)
        if error is not None:
            raise error
        yield iface, allowed, node, irqs


def no_cpu_fix(node: int) -> Fix:
    """The fix when `exclude_cpus` leaves the wanted node no CPU: nothing to pin to."""
    return Fix(note=f"no CPU of NUMA node {node} is left after exclude_cpus: change node or exclude_cpus "
                    "(tailoring)")


def allowed_cpus(target: Target, iface: Interface) -> tuple[frozenset[int], int]:
    node = target.vars.get("node", 0)
    node = iface.node_or_zero() if node == "nic" else node
    excluded = parse_cpulist(target.vars.get("exclude_cpus", ""), "exclude_cpus")
    return target.facts.topology.node_cpus(node) - excluded, node
