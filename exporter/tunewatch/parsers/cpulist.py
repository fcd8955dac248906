"""The kernel's cpulist syntax: `0-3,8,10-11`, as in sysfs `cpulist` and `*_affinity_list`.

Besides plain ranges the kernel's bitmap_parselist() takes `a-b:used/group` (in each
group of `group` CPUs from `a`, the first `used`). The shorthand `a-b:step` (every
step-th CPU, the same as `a-b:1/step`) is accepted too, as people write it that way.
"""

from __future__ import annotations

from ..errors import ParseError
from ._text import uint

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:
    from collections.abc import Iterable

MAX_CPU = (1 << 13) - 1  # NR_CPUS is at most 8192 (x86 CONFIG_MAXSMP): ids 0-8191; bounds a hostile file
MAX_TEXT = 64 << 10  # "0,2,4,...,8190" is 19 KB: a longer list is not from the kernel
MAX_WORK = 4 * (MAX_CPU + 1)  # CPU ids produced over all ranges (overlaps allowed, not 20,000 of them)


def _chunk_fields(chunk: str) -> tuple[str, str | None, str | None, str | None] | None:
    """(a, b, used, group) of `a`, `a-b`, `a-b:used` or `a-b:used/group`, each ASCII digits,
    else None: the fullmatch of `([0-9]+)(?:-([0-9]+)(?::([0-9]+)(?:/([0-9]+))?)?)?`
    without compiling it (docs/architecture.md#start-up-cost)."""
    head, colon, stride = chunk.partition(":")
    start, dash, end = head.partition("-")
    used, slash, group = stride.partition("/")
    if colon and not dash:
        return None
    fields = (start, end if dash else None, used if colon else None, group if slash else None)
    if all(f is None or (f.isdigit() and f.isascii()) for f in fields):
        return fields
    return None


def _cpu(text: str, source: str) -> int:
    value = uint(text, source, None, "CPU id")
    if value > MAX_CPU:
        raise ParseError(source, f"CPU id {value} is above {MAX_CPU}")
    return value


_KEPT_TEXT = 256  # lists up to this long are remembered: a host's IRQs share a few affinity lists
_parsed: dict[str, frozenset[int] | str] = {}  # text -> CPUs, or why it is not a CPU list


def parse_cpulist(text: str, source: str) -> frozenset[int]:
    text = text.strip()
    if len(text) > _KEPT_TEXT:
        return _parse(text, source)
    kept = _parsed.get(text)
    if kept is None:
        try:
            kept = _parse(text, source)
        except ParseError as e:
            kept = e.reason
        if len(_parsed) >= 4096:  # bounded: a scan of 1,664 CPUs has a few hundred distinct lists
            _parsed.clear()
        _parsed[text] = kept
    if isinstance(kept, str):
        raise ParseError(source, kept)
    return kept


def _parse(text: str, source: str) -> frozenset[int]:
    if not text:
        return frozenset()
    if len(text) > MAX_TEXT:
        raise ParseError(source, f"CPU list of {len(text)} characters is longer than any kernel writes ({MAX_TEXT})")
    cpus: set[int] = set()
    work = 0
    for chunk in text.split(","):
        fields = _chunk_fields(chunk.strip())
        if fields is None:
            raise ParseError(source, f"not a CPU list item: {chunk[:40]!r}")
        first, last, used_text, group_text = fields
        start = _cpu(first, source)
        end = start if last is None else _cpu(last, source)
        if end < start:
            raise ParseError(source, f"reversed range {chunk.strip()!r}")
        if used_text is None:
            used, group = 1, 1
        elif group_text is None:
            used, group = 1, _cpu(used_text, source)
        else:
            used, group = _cpu(used_text, source), _cpu(group_text, source)
        if used == 0 or group == 0 or used > group:
            raise ParseError(source, f"bad stride in {chunk.strip()!r}")
        groups = (end - start) // group + 1
        work += groups * used
        if work > MAX_WORK:
            raise ParseError(source, f"CPU list names more than {MAX_WORK} CPU ids (ranges overlap over and over)")
        if used < groups:  # loop over the fewer of offsets and groups: a few hundred at most
            for offset in range(used):
                cpus.update(range(start + offset, end + 1, group))
        else:
            for base in range(start, end + 1, group):
                cpus.update(range(base, min(base + used, end + 1)))
    return frozenset(cpus)


_formatted: dict[frozenset[int], str] = {}  # a host's IRQs share a few CPU sets


def format_cpulist(cpus: Iterable[int]) -> str:
    if cpus.__class__ is not frozenset:
        return _format(cpus)
    text = _formatted.get(cpus)
    if text is None:
        if len(_formatted) >= 4096:  # bounded, as _parsed
            _formatted.clear()
        text = _formatted[cpus] = _format(cpus)
    return text


def _format(cpus: Iterable[int]) -> str:
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)
