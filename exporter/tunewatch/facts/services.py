"""systemd unit state from the unit file tree (no D-Bus, no systemctl).

Masked beats enabled: a unit linked to /dev/null in etc/systemd/system (or run/) is masked
whatever stale `.wants` links remain.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..fs import FS

_UNIT_DIRS = ("etc/systemd/system", "run/systemd/system", "usr/lib/systemd/system", "lib/systemd/system")
_MASK_DIRS = ("etc/systemd/system", "run/systemd/system")


@dataclass(frozen=True)
class UnitState:
    unit: str
    installed: bool
    enabled: bool
    masked: bool
    wanted_by: tuple[str, ...]

    @property
    def state(self) -> str:
        if self.masked:
            return "masked"
        if self.enabled:
            return "enabled"
        return "disabled" if self.installed else "not-installed"


def read_unit_state(fs: FS, unit: str) -> UnitState:
    masked = any(fs.readlink(f"{d}/{unit}") == "/dev/null" for d in _MASK_DIRS)
    installed = any(fs.exists(f"{d}/{unit}") for d in _UNIT_DIRS) and not masked
    wanted_by = tuple(
        name
        for d in ("etc/systemd/system", "usr/lib/systemd/system", "lib/systemd/system")
        for name in fs.listdir(d)
        if name.endswith((".wants", ".requires")) and fs.exists(f"{d}/{name}/{unit}")
    )
    return UnitState(unit, installed or masked, bool(wanted_by) and not masked, masked, wanted_by)
