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
_NUMBERISH = re.compile(r"[-+]?[0-9]")  # a count gone wrong, not the start of the chip text
# A row whose IRQ has no action ends with the trigger: `2-edge`, `9-fasteoi`, ARM's `Level`.
_TRIGGER = re.compile(r"(?:[0-9]*-)?(?:edge|level|fasteoi|simple|percpu(?:_devid)?)", re.I)


@dataclass(frozen=True)
class IrqLine:
    irq: int
    count_words: tuple[str, ...]  # validated digits; converted only when asked for
    chip: str
    name: str

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(map(int, self.count_words))


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


def _is_count(word: str) -> bool:
    return word.isascii() and word.isdigit() and len(word) <= 20


def _row(irq: int, rest: str, cpus: int, source: str, n: int) -> IrqLine:
    # A 416-CPU host has ~1,000 rows of 416 counts: index, don't pop or regex per word.
    words = rest.split()
    limit = min(cpus, len(words))
    head = "".join(words[:limit])
    usual = head.isascii() and head.isdigit() and max(map(len, words[:limit])) <= 20
    k = limit if usual else 0  # the usual full row, checked at C speed
    while k < limit and _is_count(words[k]):
        k += 1
    if k < limit and _NUMBERISH.match(words[k]):
        raise ParseError(source, f"IRQ {irq}: count {words[k][:40]!r} is not an integer", n)
    if k == 0:
        raise ParseError(source, f"IRQ {irq} has no counts", n)
    chip, name = _chip_and_name(words[k:])
    return IrqLine(irq, tuple(words[:k]), chip, name)


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
        if not sep or not _is_count(label):
            continue
        irqs[int(label)] = _row(int(label), rest, len(columns), source, n)
    return Interrupts(cpus=len(columns), irqs=irqs)
