"""/proc/interrupts: the CPU header, then one row per IRQ.

A numeric row is `<irq>: <count per CPU> <chip text> <action names>`; the kernel pads
the chip text with spaces and, on x86, glues the hardware IRQ number to the flow handler
(`PCI-MSI 1572864-edge`), so only the action names are told apart, as the last word or a
comma-separated list (`ehci_hcd:usb1, i801_smbus`). Named rows (NMI, LOC, ERR) are
per-CPU counters, not IRQs, and are skipped. A row cut short (a truncated copy) keeps
the counts it has; only a numeric row with no count at all is rejected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ParseError
from ._text import lines

_CPU = re.compile(r"CPU[0-9]+")
_COUNT = re.compile(r"[0-9]{1,20}")
_NUMBERISH = re.compile(r"[-+]?[0-9]")  # a count gone wrong, not the start of the chip text
# A row whose IRQ has no action ends with the trigger: `2-edge`, `9-fasteoi`, ARM's `Level`.
_TRIGGER = re.compile(r"(?:[0-9]*-)?(?:edge|level|fasteoi|simple|percpu(?:_devid)?)", re.I)


@dataclass(frozen=True)
class IrqLine:
    irq: int
    counts: tuple[int, ...]
    chip: str
    name: str


@dataclass(frozen=True)
class Interrupts:
    cpus: int
    irqs: dict[int, IrqLine]


def _chip_and_name(words: list[str]) -> tuple[str, str]:
    for k, word in enumerate(words):
        if word.endswith(","):
            return " ".join(words[:k]), " ".join(words[k:])
    if len(words) < 2 or _TRIGGER.fullmatch(words[-1]):
        return " ".join(words), ""
    return " ".join(words[:-1]), words[-1]


def _row(irq: int, rest: str, cpus: int, source: str, n: int) -> IrqLine:
    words = rest.split()
    counts: list[int] = []
    while words and len(counts) < cpus:
        if _COUNT.fullmatch(words[0]):
            counts.append(int(words.pop(0)))
        elif _NUMBERISH.match(words[0]):
            raise ParseError(source, f"IRQ {irq}: count {words[0][:40]!r} is not an integer", n)
        else:
            break  # a truncated row: fewer counts than CPUs, then the chip text
    if not counts:
        raise ParseError(source, f"IRQ {irq} has no counts", n)
    chip, name = _chip_and_name(words)
    return IrqLine(irq, tuple(counts), chip, name)


def parse_interrupts(text: str, source: str) -> Interrupts:
    numbered = [(n, line) for n, line in lines(text) if line.strip()]
    if not numbered:
        raise ParseError(source, "empty")
    n, header = numbered[0]
    columns = header.split()
    if not all(_CPU.fullmatch(c) for c in columns):
        raise ParseError(source, "first line is not a CPU header (CPU0 CPU1 ...)", n)
    irqs: dict[int, IrqLine] = {}
    for n, line in numbered[1:]:
        label, sep, rest = line.partition(":")
        label = label.strip()
        if not sep or not _COUNT.fullmatch(label):
            continue
        irqs[int(label)] = _row(int(label), rest, len(columns), source, n)
    return Interrupts(cpus=len(columns), irqs=irqs)
