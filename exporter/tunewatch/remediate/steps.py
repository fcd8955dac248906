"""What a remediation does, independent of the output format.

A `Step` belongs to one failed (check, object) and one phase: `runtime` changes the running
kernel or services now, `persistent` changes files so the setting comes back at boot,
`manual` is a note for what must not be automated (a remount under load, a hypervisor
setting). Every action is idempotent by construction: runtime commands are guarded by a
probe of the current value, file actions compare before they write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

RUNTIME, PERSISTENT, MANUAL = "runtime", "persistent", "manual"


@dataclass(frozen=True)
class Command:
    """Run `argv` on the live host unless `probe` (a shell snippet printing the current
    value) already prints `want`. Never run against a copy of a snapshot."""
    argv: tuple[str, ...]
    probe: str | None = None
    want: str | None = None


@dataclass(frozen=True)
class PinIrqs:
    """Pin each data IRQ of `iface` (and of the VFs under it) to one CPU of `cpus`, round
    robin. The IRQs are found when the step runs, from the NIC's `device/msi_irqs` and the
    names in /proc/interrupts, skipping names matching `control` (an ERE made of the check's
    control_irq_patterns): IRQ numbers change with every boot and driver reload, so numbers
    from the scan would pin whatever IRQs carry them now."""
    iface: str
    cpus: str
    control: str


@dataclass(frozen=True)
class WriteFile:
    """`path` (relative to the root) holds exactly `content`, with `mode`, owned by root."""
    path: str
    content: str
    mode: str = "0644"


@dataclass(frozen=True)
class EnsureLine:
    """The first line matching `regex` (POSIX ERE) becomes `line`, later matches are dropped;
    `line` is appended when nothing matches. The file is created (mode `mode`) if missing."""
    path: str
    regex: str
    line: str
    mode: str = "0644"


@dataclass(frozen=True)
class CommentOut:
    """Lines matching `regex` (POSIX ERE, anchored so that commented lines do not match)
    are kept as comments."""
    path: str
    regex: str


@dataclass(frozen=True)
class IniSet:
    """`key=value` in `[section]` of an INI file (a NetworkManager keyfile), the section added
    when missing; the file ends with `mode`, owned by root (NetworkManager ignores keyfiles
    that group or others may read, nm-settings-keyfile(5))."""
    path: str
    section: str
    key: str
    value: str
    mode: str = "0600"


@dataclass(frozen=True)
class MaskUnit:
    """`systemctl disable` and `systemctl mask` (with `--root` on a copy of a snapshot)."""
    unit: str


@dataclass(frozen=True)
class EnableUnit:
    unit: str


@dataclass(frozen=True)
class Note:
    text: str


Action = Union[Command, PinIrqs, WriteFile, EnsureLine, CommentOut, IniSet, MaskUnit, EnableUnit, Note]


@dataclass(frozen=True)
class Step:
    check: str
    object: str
    phase: str
    summary: str
    action: Action


@dataclass
class Plan:
    host: str
    profile: str
    root: str
    boot_id: str | None = None  # of the scan: the script refuses another boot (or host) unless forced
    steps: list[Step] = field(default_factory=list)

    def phase(self, phase: str) -> list[Step]:
        return [s for s in self.steps if s.phase == phase]


def change_lines(plan: Plan, fold: int = 3) -> list[str]:
    """One header line per change; more than `fold` steps of one check on one NIC (its IRQs)
    become one line."""
    groups: dict[tuple[str, str, str], list[Step]] = {}
    for step in plan.steps:
        if step.phase != MANUAL:
            groups.setdefault((step.phase, step.check, step.object.split("/")[0]), []).append(step)
    lines = []
    for (phase, check, base), steps in groups.items():
        if len(steps) > fold:
            lines.append(f"[{phase}] {check} {base}: {len(steps)} changes ({' '.join(steps[0].summary.split())}, ...)")
        else:
            lines += [f"[{phase}] {s.check} {s.object}: {' '.join(s.summary.split())}" for s in steps]
    return lines
