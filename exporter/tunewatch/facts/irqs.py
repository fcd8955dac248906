"""Interrupts: proc/interrupts names and proc/irq/<n>/*affinity_list."""

from __future__ import annotations

from .._record import FrozenRecord
from ..errors import FactError
from ..host.fs import FS, INTERRUPTS_MAX_BYTES
from ..parsers.cpulist import parse_cpulist
from ..parsers.interrupts import Interrupts, parse_interrupt_lines, stream_rows

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Container


class IrqAffinity(FrozenRecord):
    __slots__ = ("irq", "smp", "effective")
    irq: int
    smp: frozenset[int]
    effective: frozenset[int] | None

    def __init__(self, irq: int, smp: frozenset[int], effective: frozenset[int] | None):
        self.irq = irq
        self.smp = smp
        self.effective = effective


def read_interrupts(fs: FS, wanted: Container[int] | None = None) -> Interrupts:
    """One streaming pass: 66 MB at 1,664 CPUs is never held whole. With `wanted`, only
    those IRQs' rows are parsed: a garbled row of an IRQ no check reads is no error."""
    chunks = fs.iter_chunks("proc/interrupts", INTERRUPTS_MAX_BYTES)
    if chunks is None:
        raise FactError(f"proc/interrupts does not exist under {fs.root}")
    return parse_interrupt_lines(stream_rows(chunks, "proc/interrupts", wanted), "proc/interrupts")


def prefetch_affinities(fs: FS, irqs: list[int]) -> None:
    """The affinity lists of these IRQs read in one pass (FS.prefetch: proc/irq opened
    once, as for 3,000 proc/<pid>/comm), for read_affinity() to find them read."""
    fs.prefetch("proc/irq", [str(irq) for irq in irqs], ("smp_affinity_list", "effective_affinity_list"))


def read_affinity(fs: FS, irq: int) -> IrqAffinity | None:
    """None when the IRQ has no proc/irq entry (mlx4 leaves such msi_irqs behind)."""
    base = f"proc/irq/{irq}"
    smp_text = fs.read_text(f"{base}/smp_affinity_list")
    if smp_text is None:
        return None
    effective_text = fs.read_text(f"{base}/effective_affinity_list")
    effective = parse_cpulist(effective_text, f"{base}/effective_affinity_list") if effective_text else None
    return IrqAffinity(irq, parse_cpulist(smp_text, f"{base}/smp_affinity_list"), effective or None)
