"""Sysctl writes replayed in order, as the kernel takes them.

Most keys simply hold the last value written. The writeback limits do not: each limit is
one setting written two ways, and writing one form zeroes the other (torvalds/linux
mm/page-writeback.c):
- `dirty_bytes_handler()`: `if (ret == 0 && write && vm_dirty_bytes != old_bytes)
  vm_dirty_ratio = 0;` and `dirty_ratio_handler()` the reverse: only a write that changes
  the value zeroes the other form;
- `dirty_background_bytes_handler()` / `dirty_background_ratio_handler()`: any successful
  write zeroes the other form;
- a write out of range fails and changes nothing: dirty_bytes below `dirty_bytes_min`
  (2 pages; 4 KiB pages assumed), dirty_background_bytes below 1, a ratio above 100
  (the ctl_table `extra1`/`extra2` limits), and anything that is not a number.

So a tuned profile that writes `vm.dirty_ratio` after systemd-sysctl wrote seed 003's
`vm.dirty_bytes` leaves dirty_bytes 0, unless a later consumer (tuned's reapply_sysctl)
writes the bytes again.
"""

from __future__ import annotations

from .._record import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

UNTOLD = "unknown"  # a value a consumer writes that cannot be told (results.UNKNOWN's text; facts sit below results)
ZEROES = "the kernel zeroes"  # the source text of a value set by a write of the other form
PAGE_SIZE = 4096  # x86_64 and most arm64 kernels; the minimum below is 2 pages

# key -> (the other form, zero it only when the value changes, lowest value, highest value,
#         handler, the value the kernel starts with)
_PAIRED: dict[str, tuple[str, bool, int, int | None, str, int]] = {
    "vm.dirty_bytes": ("vm.dirty_ratio", True, 2 * PAGE_SIZE, None, "dirty_bytes_handler()", 0),
    "vm.dirty_ratio": ("vm.dirty_bytes", True, 0, 100, "dirty_ratio_handler()", 20),
    "vm.dirty_background_bytes": ("vm.dirty_background_ratio", False, 1, None,
                                  "dirty_background_bytes_handler()", 0),
    "vm.dirty_background_ratio": ("vm.dirty_background_bytes", False, 0, 100,
                                  "dirty_background_ratio_handler()", 10),
}


class ConfiguredValue(FrozenRecord):
    """A sysctl value at boot and what set it (facts/sysctl.py re-exports it)."""
    __slots__ = ("value", "source", "zeroed_by", "vm_option")
    value: str
    source: str  # "etc/sysctl.d/90-sas.conf:3", "etc/modprobe.d/sunrpc.conf:1", "tuned <profile> (<file>)"
    zeroed_by: ConfiguredValue | None  # the write of the other form that zeroed this one (write())
    vm_option: tuple[str, str] | None  # the tuned [vm] unit and option that wrote it (("vm", "dirty_ratio"))

    def __init__(self, value: str, source: str, zeroed_by: ConfiguredValue | None = None,
                 vm_option: tuple[str, str] | None = None):
        self.value = value
        self.source = source
        self.zeroed_by = zeroed_by
        self.vm_option = vm_option


def other_form(key: str) -> str | None:
    """`vm.dirty_bytes` -> `vm.dirty_ratio` and the reverse (each writeback limit's other
    form, which a write of it zeroes); None for any other key."""
    paired = _PAIRED.get(key)
    return None if paired is None else paired[0]


def initial(key: str) -> str | None:
    """The value the kernel starts a paired key with (mm/page-writeback.c), else None."""
    paired = _PAIRED.get(key)
    return None if paired is None else str(paired[5])


def _number(value: str) -> int | None:
    text = value.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def write(values: dict[str, ConfiguredValue], key: str, cv: ConfiguredValue) -> None:
    """One write of `cv` to `key`, with the kernel's side effects on `values`."""
    paired = _PAIRED.get(key)
    if paired is None:
        values[key] = cv
        return
    other, only_on_change, low, high, handler, initial = paired
    if cv.value == UNTOLD:  # the write may fail or zero the other form: both unknown, unless the other is 0 already
        values[key] = cv
        current = values.get(other)
        if (_number(current.value) if current is not None else _PAIRED[other][5]) != 0:
            values[other] = ConfiguredValue(UNTOLD, f"{cv.source} writing {key} (it may zero {other}: "
                                                    f"mm/page-writeback.c {handler})")
        return
    new = _number(cv.value)
    if new is None or new < low or (high is not None and new > high):
        return  # EINVAL: the kernel keeps the old value and the other form
    before = values.get(key)
    old = _number(before.value) if before is not None else initial
    values[key] = cv
    if only_on_change and new == old:
        return
    current = values.get(other)
    if (_number(current.value) if current is not None else _PAIRED[other][5]) == 0:
        return  # already 0: keep what made it so
    values[other] = ConfiguredValue("0", f"{cv.source} writing {key} = {new} ({ZEROES} {other}: "
                                         f"mm/page-writeback.c {handler})", zeroed_by=cv)


def replay(values: dict[str, ConfiguredValue],
           writes: Iterable[tuple[str, ConfiguredValue]]) -> dict[str, ConfiguredValue]:
    """A copy of `values` after each (key, value) of `writes`, in order."""
    out = dict(values)
    for key, cv in writes:
        write(out, key, cv)
    return out


def systemd_sysctl_order(assignments: Iterable[tuple[str, ConfiguredValue]]) -> list[tuple[str, ConfiguredValue]]:
    """systemd-sysctl applies each key once, after reading every file: an assignment with a
    new value moves the key to the end, the same value keeps its place (systemd
    src/sysctl/sysctl.c `parse_file()`: `ordered_hashmap_remove()` then `_put()`,
    `if (streq_ptr(value, existing->value)) continue;`)."""
    ordered: dict[str, ConfiguredValue] = {}
    for key, cv in assignments:
        if key in ordered:
            if ordered[key].value == cv.value:
                continue
            del ordered[key]
        ordered[key] = cv
    return list(ordered.items())
