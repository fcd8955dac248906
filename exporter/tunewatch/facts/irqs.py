"""Interrupts: proc/interrupts names and proc/irq/<n>/*affinity_list."""

from __future__ import annotations

from dataclasses import dataclass

from ..fs import FS
from ..parsers.cpulist import parse_cpulist
from ..parsers.interrupts import Interrupts, parse_interrupts


@dataclass(frozen=True)
class IrqAffinity:
    irq: int
    smp: frozenset[int]
    effective: frozenset[int] | None


def read_interrupts(fs: FS) -> Interrupts:
    return parse_interrupts(fs.read_required("proc/interrupts"), "proc/interrupts")


def read_affinity(fs: FS, irq: int) -> IrqAffinity | None:
    """None when the IRQ has no proc/irq entry (mlx4 leaves such msi_irqs behind)."""
    base = f"proc/irq/{irq}"
    smp_text = fs.read_text(f"{base}/smp_affinity_list")
    if smp_text is None:
        return None
    effective_text = fs.read_text(f"{base}/effective_affinity_list")
    effective = parse_cpulist(effective_text, f"{base}/effective_affinity_list") if effective_text else None
    return IrqAffinity(irq, parse_cpulist(smp_text, f"{base}/smp_affinity_list"), effective or None)
