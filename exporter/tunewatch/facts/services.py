"""systemd unit state from the unit file tree (no D-Bus, no systemctl).

Masked beats enabled: a unit linked to /dev/null in etc/systemd/system (or run/) is masked
whatever stale `.wants` links remain.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..fs import FS

UNIT_DIRS = ("etc/systemd/system", "run/systemd/system", "usr/lib/systemd/system", "lib/systemd/system")
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


def _wants_dirs(fs: FS) -> list[str]:
    return [f"{d}/{name}" for d in ("etc/systemd/system", "usr/lib/systemd/system", "lib/systemd/system")
            for name in fs.listdir(d) if name.endswith((".wants", ".requires"))]


def _masked(fs: FS, unit: str) -> bool:
    return any(fs.readlink(f"{d}/{unit}") == "/dev/null" for d in _MASK_DIRS)


def read_unit_state(fs: FS, unit: str) -> UnitState:
    masked = _masked(fs, unit)
    installed = any(fs.exists(f"{d}/{unit}") for d in UNIT_DIRS) and not masked
    # a wants link left behind by a removed package dangles: systemd ignores it
    wanted_by = tuple(w.rsplit("/", 1)[1] for w in _wants_dirs(fs) if fs.resolves(f"{w}/{unit}"))
    return UnitState(unit, installed or masked, bool(wanted_by) and not masked, masked, wanted_by)


def enabled_units(fs: FS) -> set[str]:
    """Every unit that starts at boot: wanted by a target and not masked (one pass)."""
    wanted = {name for w in _wants_dirs(fs) for name in fs.listdir(w) if fs.resolves(f"{w}/{name}")}
    return {u for u in wanted if not _masked(fs, u)}
