"""systemd `.mount` units (systemd.mount(5)) that mount a path at boot, keyed by mount point.

A mount unit is named after its mount point (`systemd-escape --path`): `/sas/data` is
`sas-data.mount`; a unit whose `Where=` does not match its name is refused ("Where=
setting doesn't match unit name. Refusing."), as is one without `What=` or `Where=`.
It mounts at boot when it is enabled (a `.wants` link) and not masked. `Options=` are
the options passed to mount(8) (`What=` is the source, `Type=` the file system type).
Units are read from the unit search path; the first directory that has a name wins
(facts/services.py); fstab lines become units in /run/systemd/generator, which an
/etc/systemd/system unit of the same name overrides and a vendor one does not.
"""

from __future__ import annotations

import string

from .._record import FrozenRecord
from ..errors import ParseError
from ..host.fs import FS
from ..parsers.ini import parse_ini_items
from .services import BOOT_UNIT_DIRS, read_unit_state

_PLAIN = set(string.ascii_letters + string.digits + ":_.")


def escape_path(path: str) -> str:
    """systemd-escape --path (basic/unit-name.c `unit_name_path_escape()`)."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return "-"
    out = []
    for i, ch in enumerate("/".join(parts)):
        if ch == "/":
            out.append("-")
        elif ch in _PLAIN and not (i == 0 and ch == "."):
            out.append(ch)
        else:
            out.append("".join(f"\\x{b:02x}" for b in ch.encode()))
    return "".join(out)


class MountUnit(FrozenRecord):
    __slots__ = ("unit", "file", "what", "where", "fstype", "options", "enabled", "problem", "options_file")
    unit: str
    file: str
    what: str
    where: str
    fstype: str
    options: str
    enabled: bool
    problem: str | None  # why systemd refuses or never starts it at boot
    options_file: str  # the file whose Options= counts: the unit, or the drop-in applied last that sets it

    def __init__(self, unit: str, file: str, what: str, where: str, fstype: str, options: str, enabled: bool,
                 problem: str | None, options_file: str = ""):
        self.unit = unit
        self.file = file
        self.what = what
        self.where = where
        self.fstype = fstype
        self.options = options
        self.enabled = enabled
        self.problem = problem
        self.options_file = options_file or file


def _prefixes(unit: str) -> list[str]:
    """The dash-prefix unit names whose drop-ins also apply to `unit` (shared/dropin.c
    `unit_file_find_dirs()`): `sas-vol-data.mount` -> `sas-vol-.mount`, `sas-.mount`."""
    names: list[str] = []
    prefix, _, suffix = unit.rpartition(".")
    while True:
        chopped = False
        while True:  # a trailing dash is chopped once; a leading one ends the search
            dash = prefix.rfind("-")
            if dash <= 0:
                return names
            if dash + 1 < len(prefix) or chopped:
                prefix = prefix[:dash + 1]
                break
            prefix, chopped = prefix[:dash], True
        names.append(f"{prefix}.{suffix}")


def dropin_dirs(fs: FS) -> set[tuple[str, str]]:
    """(unit directory, `*.mount.d` name) of every mount unit drop-in directory, once per FS:
    empty on the usual host, which then pays nothing per fstab line."""
    return fs.derived(dropin_dirs, lambda: {(d, n) for d in BOOT_UNIT_DIRS for n in fs.listdir(d)
                                             if n.endswith(".mount.d")})


def mount_dropins(fs: FS, unit: str) -> list[tuple[str, dict[str, str]]]:
    """The drop-ins of `unit` as systemd applies them (systemd.unit(5); shared/dropin.c
    `unit_file_find_dropin_paths()`): `<unit>.d/*.conf` and the dash-prefix `.d`
    directories in each unit directory that survives a reboot, the same file name taken
    from the first directory (most specific name first within a directory), a link to
    /dev/null masking it, all applied in the lexical order of their names. Each is (file,
    its [Mount] settings, the last assignment of each); a file systemd cannot parse is
    skipped, as systemd skips it."""
    present = dropin_dirs(fs)
    if not present:
        return []
    names = [unit, *_prefixes(unit)]
    dirs = [f"{d}/{n}.d" for d in BOOT_UNIT_DIRS for n in names if (d, f"{n}.d") in present]
    chosen: dict[str, str] = {}
    for d in dirs:
        for rel in fs.glob(d, "*.conf"):
            chosen.setdefault(rel.rsplit("/", 1)[1], rel)
    out = []
    for name in sorted(chosen):
        rel = chosen[name]
        if fs.readlink(rel) == "/dev/null":
            continue
        try:
            items = parse_ini_items(fs.read_required(rel), rel)
        except ParseError:
            continue
        out.append((rel, {k: v for section, k, v, _ in items if section == "Mount"}))
    return out


def read_mount_units(fs: FS) -> dict[str, MountUnit]:
    """Mount point -> the `.mount` unit for it; units of no mount point are skipped."""
    chosen: dict[str, str] = {}
    for d in BOOT_UNIT_DIRS:
        for rel in fs.glob(d, "*.mount"):
            chosen.setdefault(rel.rsplit("/", 1)[1], rel)
    out: dict[str, MountUnit] = {}
    for unit, rel in sorted(chosen.items()):
        if fs.readlink(rel) == "/dev/null":
            continue
        try:
            items = parse_ini_items(fs.read_required(rel), rel)
        except ParseError:
            continue  # systemd logs and skips a unit it cannot parse; nothing mounts from it
        mount = {k: v for s, k, v, _ in items if s == "Mount"}  # the last assignment wins
        options_file = rel
        for dropin, settings in mount_dropins(fs, unit):
            mount.update(settings)
            options_file = dropin if "Options" in settings else options_file
        where, what = mount.get("Where", ""), mount.get("What", "")
        problem = None
        if not where or not what:
            problem = f"{rel} has no {'Where=' if not where else 'What='}: systemd refuses it"
        elif escape_path(where) + ".mount" != unit:
            problem = f"{rel}: Where={where} is not its name ({escape_path(where)}.mount): systemd refuses it"
        state = read_unit_state(fs, unit)
        if problem is None and not state.enabled:
            problem = f"{unit} is {state.state}: nothing mounts it at boot"
        key = "/" + "/".join(p for p in where.split("/") if p) if where else "/" + unit[:-6].replace("-", "/")
        out[key] = MountUnit(unit, rel, what, key, mount.get("Type", ""), mount.get("Options", ""),
                             state.enabled, problem, options_file)
    return out
