"""systemd unit state at the next boot, from the unit file tree (no D-Bus, no systemctl).

systemd.unit(5), "System Unit Search Path": a unit name is loaded from the first
directory that has it, in the order /etc/systemd/system, /run/systemd/system,
/usr/local/lib/systemd/system, /usr/lib/systemd/system (and /lib/systemd/system on
split-usr systems). A unit file that is a link to /dev/null or empty is masked; a mask
hides the unit whatever `.wants` links remain, so masked beats enabled.

/run is a tmpfs emptied at every boot: `systemctl mask --runtime` (a /dev/null link in
/run/systemd/system) and `enable --runtime` (wants links in /run) last only until the next
reboot (systemctl(1), `--runtime`). The state reported is the one the next boot gets:
only /etc, /usr/local/lib, /usr/lib and /lib count; a mask that exists only in /run is
reported as `runtime_mask` beside it. A wants link in /etc adds a dependency on the unit of
its name (systemd load-dropin.c `process_deps()`); the unit is enabled only when a unit
file of that name loads at the next boot: a link into /run (or a dangling one) whose unit
exists nowhere else starts nothing then.

An instance `name@arg.service` with no unit file of its own loads its template
`name@.service` from the same search path (systemd.unit(5): "if a unit file
"getty@tty3.service" is requested and no file by that name is found, systemd will look for
"getty@.service" and instantiate a service from that configuration file if it is found";
systemd `src/shared/unit-file.c` `unit_file_find_fragment()`: the instance name, then
`unit_name_template()`).
"""

from __future__ import annotations

import os

from .._record import FrozenRecord
from ..errors import ParseError
from ..host.fs import FS
from ..parsers.ini import parse_ini_items

UNIT_DIRS = ("etc/systemd/system", "run/systemd/system", "usr/local/lib/systemd/system", "usr/lib/systemd/system",
             "lib/systemd/system")
BOOT_UNIT_DIRS = tuple(d for d in UNIT_DIRS if not d.startswith("run/"))


class UnitState(FrozenRecord):
    __slots__ = ("unit", "installed", "enabled", "masked", "wanted_by", "mask_source", "runtime_mask")
    unit: str
    installed: bool
    enabled: bool  # wanted by a target at the next boot, and not masked then
    masked: bool  # masked at the next boot
    wanted_by: tuple[str, ...]
    mask_source: str | None  # the /dev/null link or empty file that masks it at boot
    runtime_mask: str | None  # a mask in run/ that the next boot will not have

    def __init__(self,
                 unit: str, installed: bool, enabled: bool, masked: bool, wanted_by: tuple[str, ...],
                 mask_source: str | None = None, runtime_mask: str | None = None):
        self.unit = unit
        self.installed = installed
        self.enabled = enabled
        self.masked = masked
        self.wanted_by = wanted_by
        self.mask_source = mask_source
        self.runtime_mask = runtime_mask

    @property
    def state(self) -> str:
        if self.masked:
            return "masked"
        if self.enabled:
            return "enabled"
        return "disabled" if self.installed else "not-installed"


def _first(fs: FS, unit: str, dirs: tuple[str, ...]) -> str | None:
    # listdir, not exists: a unit directory that is a link leading out of the root is an error
    return next((f"{d}/{unit}" for d in dirs if unit in fs.listdir(d) or fs.exists(f"{d}/{unit}")), None)


def _gone_at_boot(fs: FS, rel: str) -> bool:
    """`rel` dangles, or resolves into /run: a tmpfs that is empty when the next boot
    loads units (file-hierarchy(7): "This directory is flushed on boot")."""
    real = fs.path(rel)
    return not os.path.exists(real) or real.startswith(fs.path("run").rstrip("/") + "/")


def _is_mask(fs: FS, rel: str | None) -> bool:
    if rel is None:
        return False
    if fs.readlink(rel) == "/dev/null":
        return True
    try:  # an empty unit file masks too (systemd.unit(5))
        return os.stat(fs.path(rel)).st_size == 0
    except OSError:
        return False


def template_of(unit: str) -> tuple[str, str] | None:
    """(`name@.service`, `arg`) of an instance `name@arg.service`, else None."""
    base, at, rest = unit.partition("@")
    if not at or not base or "." not in rest:
        return None
    arg, _, suffix = rest.rpartition(".")
    return (f"{base}@.{suffix}", arg) if arg else None


def _boot_unit_file(fs: FS, unit: str) -> str | None:
    """The file the next boot loads for `unit` (a mask included): the first of
    BOOT_UNIT_DIRS that has it, skipping a link that dangles then (into /run or nowhere);
    for an instance without a file of its own, its template's."""
    tpl = template_of(unit)
    names = (unit, tpl[0]) if tpl else (unit,)
    for name in names:  # load-fragment.c: the instance name first, then the template
        for d in BOOT_UNIT_DIRS:
            rel = f"{d}/{name}"
            if fs.exists(rel) and (_is_mask(fs, rel) or not _gone_at_boot(fs, rel)):
                return rel
    return None


def boot_unit_file(fs: FS, unit: str) -> str | None:
    """The unit file (or template) the next boot loads for `unit`; None when masked or absent."""
    rel = _boot_unit_file(fs, unit)
    return None if rel is None or _is_mask(fs, rel) else rel


def _wants_dirs(fs: FS) -> list[str]:
    return fs.derived(_wants_dirs, lambda: [f"{d}/{name}" for d in BOOT_UNIT_DIRS for name in fs.listdir(d)
                                            if name.endswith((".wants", ".requires"))])


def _wants_entry(fs: FS, rel: str) -> bool:
    """systemd load-dropin.c `process_deps()`: a .wants/.requires entry adds a dependency on
    the unit of the link's NAME (the target is read only to warn about a name mismatch); a
    link to /dev/null is ignored, and so is an entry that is not a link (readlink fails)."""
    target = fs.readlink(rel)
    if target is None or target == "/dev/null":
        return False
    fs.path(rel)  # a link into a network mount: FactError (never followed there), not a verdict
    return True


def read_unit_state(fs: FS, unit: str) -> UnitState:
    """What the next boot does with `unit` (once per scan: several checks ask of tuned)."""
    return fs.derived((read_unit_state, unit), lambda: _unit_state(fs, unit))


def _unit_state(fs: FS, unit: str) -> UnitState:
    at_boot = _boot_unit_file(fs, unit)
    now = _first(fs, unit, UNIT_DIRS)
    masked = _is_mask(fs, at_boot)
    runtime_mask = now if now and now.startswith("run/") and _is_mask(fs, now) and not masked else None
    # the dependency names the unit; the unit itself must be loadable at boot: a wants link
    # left behind by a removed package, or one into /run (empty at boot), starts nothing
    wanted_by = tuple(w.rsplit("/", 1)[1] for w in _wants_dirs(fs) if _wants_entry(fs, f"{w}/{unit}"))
    installed = at_boot is not None
    return UnitState(unit, installed, bool(wanted_by) and installed and not masked, masked, wanted_by,
                     at_boot if masked else None, runtime_mask)


def enabled_units(fs: FS) -> set[str]:
    """Every unit that starts at the next boot: wanted by a target, loadable then and not masked (one pass)."""
    wanted = {name for w in _wants_dirs(fs) for name in fs.listdir(w) if _wants_entry(fs, f"{w}/{name}")}
    return {u for u in wanted if (f := _boot_unit_file(fs, u)) is not None and not _is_mask(fs, f)}


_PULLS = ("Requires", "Wants", "BindsTo", "Upholds")  # [Unit] settings that start the units they name
_MOUNTS_FOR = ("RequiresMountsFor", "WantsMountsFor")  # ... and the mount units of paths


def started_by(fs: FS, unit: str, path: str = "") -> str | None:
    """What makes the next boot start `unit` though no target names it: a .wants/.requires
    link to it, or an enabled unit whose [Unit] `Requires=`, `Wants=`, `BindsTo=` or
    `Upholds=` names it, or (a mount unit for `path`) whose `RequiresMountsFor=` or
    `WantsMountsFor=` lists `path` or a path under it (systemd.unit(5)); None when nothing
    does. Unit files are read only when asked (a `noauto` fstab line)."""
    state = read_unit_state(fs, unit)
    if state.wanted_by and not state.masked:  # a generated unit (no file in the unit directories) counts
        return state.wanted_by[0]
    under = path.rstrip("/") + "/"
    for name in sorted(enabled_units(fs)):
        rel = boot_unit_file(fs, name)
        try:
            items = parse_ini_items(fs.read_text(rel) or "", rel) if rel else []
        except ParseError:
            continue  # systemd skips a unit it cannot parse: it starts nothing
        for section, key, value, _ in items:
            if section != "Unit":
                continue
            if key in _PULLS and unit in value.split():
                return name
            if path and key in _MOUNTS_FOR and any(p == path or p.startswith(under) for p in value.split()):
                return name
    return None

