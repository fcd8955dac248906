"""/proc/interrupts: the CPU header, then one row per IRQ.

A numeric row is `<irq>: <count per CPU> <chip text> <action names>`; the kernel pads
the chip text with spaces and, on x86, glues the hardware IRQ number to the flow handler
(`PCI-MSI 1572864-edge`), so only the action names are told apart, as the last word or a
comma-separated list (`ehci_hcd:usb1, i801_smbus`). Named rows (NMI, LOC, ERR) are
per-CPU counters, not IRQs, and are skipped. A row cut short (a truncated copy) is kept
with the counts it has; only a numeric row with no count at all, or a count that is not a
number, is rejected. Only IRQ number -> names is kept: the counts grow as CPUs x IRQs
(60 MB at 1,664 CPUs) and nothing reads them.
"""

from __future__ import annotations

import re

from .._lazyre import lazy
from .._record import FrozenRecord
from ..errors import ParseError
from ._text import lines

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:
    from collections.abc import Container, Iterable, Iterator


def _is_cpu_column(word: str) -> bool:
    """`CPU` and ASCII digits (`CPU[0-9]+` without compiling it: docs/architecture.md#start-up-cost)."""
    number = word[3:]
    return word.startswith("CPU") and number.isdigit() and number.isascii()


_NUMBERISH = lazy(r"[-+]?[0-9]")  # a count gone wrong, not the start of the chip text
# A row whose IRQ has no action ends with the trigger: `2-edge`, `9-fasteoi`, ARM's `Level`.
_TRIGGER = lazy(r"(?:[0-9]*-)?(?:edge|level|fasteoi|simple|percpu(?:_devid)?)", re.I)
_TRIGGERS = frozenset(("edge", "level", "fasteoi", "simple", "percpu", "percpu_devid"))


def _is_trigger(word: str) -> bool:
    """_TRIGGER.fullmatch(word), with string tests for the ASCII words /proc/interrupts
    holds (docs/architecture.md#start-up-cost); re.I folds some non-ASCII letters too
    (the Kelvin sign as k), so any other word asks the pattern."""
    if not word.isascii():
        return _TRIGGER.fullmatch(word) is not None
    digits, dash, name = word.lower().partition("-")
    return name in _TRIGGERS and (digits == "" or digits.isdigit()) if dash else digits in _TRIGGERS


class IrqLine(FrozenRecord):
    __slots__ = ("irq", "chip", "name")
    irq: int
    chip: str
    name: str

    def __init__(self, irq: int, chip: str, name: str):
        self.irq = irq
        self.chip = chip
        self.name = name


class Interrupts(FrozenRecord):
    __slots__ = ("cpus", "irqs")
    cpus: int
    irqs: dict[int, IrqLine]

    def __init__(self, cpus: int, irqs: dict[int, IrqLine]):
        self.cpus = cpus
        self.irqs = irqs


def _chip_and_name(words: list[str]) -> tuple[str, str]:
    for k, word in enumerate(words):
        if word.endswith(","):
            return " ".join(words[:k]), " ".join(words[k:])
    if len(words) < 2 or _is_trigger(words[-1]):
        return " ".join(words), ""
    return " ".join(words[:-1]), words[-1]


def _is_count(word: str) -> bool:
    return word.isascii() and word.isdigit() and len(word) <= 20


def _row_tail(irq: int, rest: str, cpus: int, source: str, n: int) -> str:
    """The text after the counts, with every count checked word by word (any layout)."""
    words = rest.split(None, cpus)
    limit = min(cpus, len(words))
    k = 0
    while k < limit and _is_count(words[k]):
        k += 1
    tail = words[k:]
    if k < limit and _NUMBERISH.match(words[k]):
        raise ParseError(source, f"IRQ {irq}: count {words[k][:40]!r} is not an integer", n)
    if k == 0:
        raise ParseError(source, f"IRQ {irq} has no counts", n)
    return " ".join(tail)


_COUNT_CHARS = b" 0123456789"


class _Grid:
    """The kernel's own layout: every count is `%10u` in an 11-character column (a space
    before it in 6.x, after it before), so `rest[11*i]` is a space for i in 0..cpus and the
    counts span rest[:11*cpus]. Checked on bytes at C speed (slices and one translate)
    instead of splitting 1,664 words per row; any other layout (hand-made, truncated,
    garbage) takes the word-by-word path, which says what is wrong."""

    def __init__(self, cpus: int):
        self.width = 11 * cpus
        self.spaces = b" " * (cpus + 1)

    def tail(self, rest: bytes) -> bytes | None:
        width = self.width
        if (len(rest) <= width or rest[0:width + 1:11] != self.spaces or not rest[10:width:11].isdigit()
                or rest[:width].translate(None, _COUNT_CHARS)):
            return None
        return rest[width + 1:]


def parse_interrupt_lines(numbered: Iterable[tuple[int, bytes]], source: str) -> Interrupts:
    """IRQ number -> chip and action names from (line number, line bytes) pairs, one pass;
    the per-CPU counts are checked but not kept (nothing uses them), and only the text
    after them is decoded. stream_rows() leaves out the rows nobody asked for."""
    it = iter(numbered)
    for n, header in it:  # noqa: B007 - n names the header line in the error below
        if header.strip():
            break
    else:
        raise ParseError(source, "empty")
    columns = header.decode("utf-8", "replace").split()
    if not all(_is_cpu_column(c) for c in columns):
        raise ParseError(source, "first line is not a CPU header (CPU0 CPU1 ...)", n)
    cpus = len(columns)
    grid = _Grid(cpus)
    irqs: dict[int, IrqLine] = {}
    for n, line in it:
        colon = line.find(b":")
        if colon < 0:
            continue
        label = line[:colon].strip()
        if not (label.isdigit() and len(label) <= 20):
            continue  # blank lines and the named per-CPU counters (NMI, LOC, ERR)
        irq = int(label)
        rest = line[colon + 1:]
        tail = grid.tail(rest)
        text = tail.decode("utf-8", "replace") if tail is not None else \
            _row_tail(irq, rest.decode("utf-8", "replace"), cpus, source, n)
        irqs[irq] = IrqLine(irq, *_chip_and_name(text.split()))
    return Interrupts(cpus=cpus, irqs=irqs)


def parse_interrupts(text: str, source: str) -> Interrupts:
    return parse_interrupt_lines(((n, line.encode("utf-8", "replace")) for n, line in lines(text)), source)


MAX_LINE = 1 << 20  # a streamed line: 8,192 CPUs x 11 characters is 90 KB


def stream_rows(chunks: Iterable[bytes], source: str, wanted: Container[int] | None = None
                ) -> Iterator[tuple[int, bytes]]:
    """(number, line) pairs of a file read in chunks, split and numbered as _text.lines()
    does (on "\\n" only, CR of CRLF and a leading BOM removed). With `wanted`, the row of an
    IRQ not in it is counted and skipped without being copied out of its chunk: at 416
    CPUs that is 5 MB of counts nobody reads."""
    n, pending = 0, b""
    for chunk in chunks:
        buf = pending + chunk if pending else chunk
        pos = 0
        while (nl := buf.find(b"\n", pos)) >= 0:
            n += 1
            if wanted is not None and n > 1:
                colon = buf.find(b":", pos, nl)
                label = buf[pos:colon].strip() if colon >= 0 else b""
                if label.isdigit() and len(label) <= 20 and int(label) not in wanted:
                    pos = nl + 1
                    continue
            yield n, _row(buf[pos:nl], n)
            pos = nl + 1
        pending = buf[pos:]
        if len(pending) > MAX_LINE:
            raise ParseError(source, f"a line longer than {MAX_LINE} bytes", n + 1)
    if pending:
        yield n + 1, _row(pending, n + 1)


def _row(line: bytes, n: int) -> bytes:
    if n == 1 and line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    return line[:-1] if line.endswith(b"\r") else line
