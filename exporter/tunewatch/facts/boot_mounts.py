"""How each mount point is mounted at the next boot, and with which options.

Three mechanisms mount NFS at boot: /etc/fstab (systemd-fstab-generator), systemd
`.mount` units (facts/mount_units.py) and autofs maps (facts/automount.py). A unit in
/etc/systemd/system overrides the generated fstab unit of the same name (the generator
writes to /run/systemd/generator, later in the unit search path, systemd.unit(5)); a
vendor unit does not. autofs counts where neither mounts the path.

mount.nfs then fills options the mount does not give from etc/nfsmount.conf (and
nfsmount.conf.d): `[MountPoint "path"]` first, then `[Server "name"]`, then
`[NFSMount_Global_Options]`; an option already present, or its `no` form, is never
overwritten; `opt=true` adds `opt`, `opt=false` adds `noopt` (`background`/`foreground`
are `bg`/`fg`); a version option is added only when none is given; `default*` options
only set defaults and are not passed on (nfs-utils utils/mount/configfile.c
`conf_get_mntopts()`, `conf_parse_mntopts()`).
"""

from __future__ import annotations

from .._record import FrozenRecord
from ..errors import FactError
from ..host.fs import FS
from ..parsers._text import split_options
from ..parsers.fstab import FstabEntry
from ..parsers.nfs_conf import ConfEntry, read_conf
from .automount import autofs_for, autofs_unread, read_autofs
from .mount_units import dropin_dirs, escape_path, mount_dropins, read_mount_units
from .mounts import fstab_index, read_fstab
from .services import started_by

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .mount_units import MountUnit

NFSMOUNT_CONF = "etc/nfsmount.conf"
_ALIAS = {"background": "bg", "foreground": "fg", "sloppy": "sloppy"}  # configfile.c mnt_alias_tab
_VERSION = ("v3", "v4", "vers", "nfsvers", "minorversion")  # configfile.c version_keys


class BootMount(FrozenRecord):
    __slots__ = ("mount_point", "spec", "fstype", "given", "filled", "source", "fix_file", "fstab", "problem",
                 "map_key", "enable", "map_location")
    mount_point: str
    spec: str
    fstype: str
    given: tuple[tuple[str, str | None], ...]  # the options the mechanism passes to mount
    filled: tuple[tuple[str, str | None, str], ...]  # (key, value, nfsmount.conf line) mount.nfs adds
    source: str  # "/etc/fstab line 5", "/etc/systemd/system/sas-data.mount", "/etc/auto.sas line 2 (autofs)"
    fix_file: str  # the file whose options to change
    fstab: FstabEntry | None
    problem: str | None  # why it does not mount at boot after all
    map_key: str  # the autofs map key ("/sasdata" in a direct map, "sasdata" in an indirect one)
    enable: str | None  # the unit to enable when `problem` is that it does not start
    map_location: str  # an autofs entry's location as the map writes it (`&` in a `*` entry), else ""

    def __init__(self, mount_point: str, spec: str, fstype: str, given: tuple[tuple[str, str | None], ...],
                 filled: tuple[tuple[str, str | None, str], ...], source: str, fix_file: str,
                 fstab: FstabEntry | None = None, problem: str | None = None, map_key: str = "",
                 enable: str | None = None, map_location: str = ""):
        self.mount_point = mount_point
        self.spec = spec
        self.fstype = fstype
        self.given = given
        self.filled = filled
        self.source = source
        self.fix_file = fix_file
        self.fstab = fstab
        self.problem = problem
        self.map_key = map_key
        self.enable = enable
        self.map_location = map_location

    @property
    def options(self) -> tuple[tuple[str, str | None], ...]:
        """What mount.nfs passes on: the given options and those nfsmount.conf filled in."""
        if not self.filled:  # no nfsmount.conf, or it adds nothing: the usual case, per mount and check
            return self.given
        return self.given + tuple((k, v) for k, v, _ in self.filled if not k.lower().startswith("default"))

    @property
    def where(self) -> str:
        if not self.filled:
            return self.source
        conf = sorted({src.rsplit(":", 1)[0] for _, _, src in self.filled})
        return self.source + (f" + /{', /'.join(conf)}" if conf else "")


def _fill(entries: list[ConfEntry], spec: str, mount_point: str,
          given: tuple[tuple[str, str | None], ...]) -> tuple[tuple[str, str | None, str], ...]:
    have = {k.lower() for k, _ in given}
    has_version = any(k in _VERSION or k.startswith("v4.") for k in have)
    filled: list[tuple[str, str | None, str]] = []
    server = spec.split(":", 1)[0]
    for section, arg in (("MountPoint", mount_point), ("Server", server), ("NFSMount_Global_Options", None)):
        # conf_get_tag_list(): bindings are kept newest first; the last assignment of a tag counts
        latest: dict[str, ConfEntry] = {}
        for e in entries:
            if e.section.lower() == section.lower() and (arg is None or (e.arg or "").lower() == arg.lower()):
                latest.pop(e.tag.lower(), None)
                latest[e.tag.lower()] = e
        for tag, e in reversed(list(latest.items())):
            field = _ALIAS.get(tag, tag)
            if field in have or (field.startswith("no") and field[2:] in have) or f"no{field}" in have:
                continue
            if (field == "fg" and "bg" in have) or (field == "bg" and "fg" in have):
                continue
            if field in _VERSION or field.startswith("v4."):
                if has_version:
                    continue
                has_version = True
            value = e.value.strip()
            if value.lower() == "false":
                if tag not in _ALIAS:
                    key, val = f"no{field}", None
                elif field in ("bg", "fg"):
                    key, val = ("fg" if field == "bg" else "bg"), None
                else:
                    continue
            elif value.lower() == "true":
                key, val = field, None
            else:
                key, val = field, _convert(value)
            filled.append((key, val, e.source))
            have.add(key.lower())
    return tuple(filled)


def _convert(value: str) -> str:
    """configfile.c `mountopts_convert()`: 8k, 1m, 1g become bytes."""
    factor = {"k": 1024, "m": 1048576, "g": 1073741824}.get(value[-1:].lower())
    if factor is None:
        return value
    digits = value[:-1]
    try:
        num = int(digits, 16) if digits.startswith("0x") else int(digits, 8) if digits.startswith("0") and \
            len(digits) > 1 else int(digits or "0")
    except ValueError:
        return value
    return str(num * factor)


def read_boot_mounts(fs: FS) -> dict[str, BootMount]:
    """Mount point (as fstab writes it, no trailing slash) -> how it mounts at boot; autofs
    wildcard entries are looked up with `boot_mount_for()`."""
    fstab = read_fstab(fs)
    units = read_mount_units(fs)
    out: dict[str, BootMount] = {}
    for point, a in read_autofs(fs).items():
        fstype, given = _autofs_options(a.options)
        out[point] = BootMount(point, a.location, fstype, given, (),
                               f"/{a.map_file} line {a.line} (autofs, {a.master})", f"/{a.map_file}", problem=a.problem,
                               map_key=a.key, enable=a.enable, map_location=a.written)
    # a unit systemd refuses (Where= not its name) shadows nothing: its name is no mount point's
    overrides = {p: u for p, u in units.items() if u.file.startswith("etc/") and not _refused(u)}
    for point, u in units.items():
        if point not in overrides:
            out[point] = _unit(u)
    # by mount point, once: of several lines for one point, the first (fstab_index)
    for point, entry in fstab_index(fstab).items():
        out[point] = _fstab(fs, point, entry)
    for point, u in overrides.items():
        out[point] = _unit(u)
    conf = read_conf(fs, NFSMOUNT_CONF)
    if conf:
        for point, m in list(out.items()):
            if m.fstype.startswith("nfs"):
                out[point] = m.replace(filled=_fill(conf, m.spec, point, m.given))
    return out


def _fstab(fs: FS, point: str, entry: FstabEntry) -> BootMount:
    """The unit systemd-fstab-generator makes of an fstab line, with the [Mount] settings of
    its drop-ins (an `Options=` there replaces the line's: then the fix goes in the drop-in)."""
    source, problem = f"/etc/fstab line {entry.line}", None
    if noauto(entry.options):  # add_mount() links the unit into no target: only a unit that needs it starts it
        unit = f"{escape_path(point)}.mount"
        by = started_by(fs, unit, point)
        if by:
            source += f" (noauto: {by} starts {unit})"
        else:
            problem = (f"the line has noauto: systemd-fstab-generator does not make remote-fs.target pull {unit} "
                       "in, and no enabled unit requires it, so nothing mounts it at boot")
    mount = BootMount(point, entry.spec, entry.vfstype, entry.options, (), source, "/etc/fstab", entry, problem)
    if not dropin_dirs(fs):  # the usual host: no unit name to escape for 1,000 lines
        return mount
    for dropin, settings in mount_dropins(fs, f"{escape_path(point)}.mount"):
        if "Options" in settings:
            mount = mount.replace(given=tuple(split_options(settings["Options"])), fstab=None, fix_file=f"/{dropin}")
        if settings.get("What"):
            mount = mount.replace(spec=settings["What"])
        if settings.get("Type"):
            mount = mount.replace(fstype=settings["Type"])
        if settings.keys() & {"Options", "What", "Type"}:
            mount = mount.replace(source=f"{mount.source} + /{dropin}")
    return mount


def noauto(options: Iterable[tuple[str, str | None]]) -> bool:
    """systemd-fstab-generator `parse_fstab()`: the last of `noauto`/`auto` decides
    (`fstab_test_yes_no_option()`), and `x-systemd.automount` (or
    `comment=systemd.automount`) mounts it on first access all the same."""
    if ("noauto", None) not in options:  # the usual line: one scan in C
        return False
    off = automount = False
    for key, value in options:
        if value is None and key in ("noauto", "auto"):
            off = key == "noauto"
        elif (key, value) in (("x-systemd.automount", None), ("comment", "systemd.automount")):
            automount = True
    return off and not automount


def _autofs_options(options: Iterable[str]) -> tuple[str, tuple[tuple[str, str | None], ...]]:
    """autofs takes `fstype=` itself (mount -t) and passes the rest to mount; nfs by default
    (autofs(5) "fstype=")."""
    pairs = split_options(",".join(options))
    fstype = next((v for k, v in pairs if k == "fstype" and v), "nfs")
    return fstype, tuple((k, v) for k, v in pairs if k != "fstype")


def _refused(u: MountUnit) -> bool:
    return (u.problem or "").endswith("systemd refuses it")


def _unit(u: MountUnit) -> BootMount:
    source = f"/{u.file}" if u.options_file == u.file else f"/{u.file} + /{u.options_file}"
    return BootMount(u.where, u.what, u.fstype, tuple(split_options(u.options)), (), source, f"/{u.options_file}",
                     problem=u.problem, enable=u.unit if u.problem and not u.enabled else None)


def boot_mount_for(mounts: dict[str, BootMount], fs: FS, mount_point: str) -> BootMount | None:
    want = mount_point.rstrip("/") or "/"
    found = mounts.get(want)
    if found is not None:
        return found
    wild = autofs_for(fs, want)  # an indirect map's `*` entry
    if wild is None:
        unread = autofs_unread(fs, want)
        if unread:  # the path's own mount, not known here: that object is an error, not "not configured"
            raise FactError(f"{want} may be mounted at boot by autofs from a map tunewatch cannot read: {unread}")
        return None
    fstype, given = _autofs_options(wild.options)
    conf = read_conf(fs, NFSMOUNT_CONF)
    return BootMount(want, wild.location, fstype, given, _fill(conf, wild.location, want, given) if conf else (),
                     f"/{wild.map_file} line {wild.line} (autofs `*`, {wild.master})", f"/{wild.map_file}",
                     problem=wild.problem, map_key="*", enable=wild.enable, map_location=wild.written)


__all__ = ["BootMount", "boot_mount_for", "escape_path", "noauto", "read_boot_mounts"]
