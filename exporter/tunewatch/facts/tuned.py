"""The active tuned profile(s), merged as tuned merges them.

tuned's own rules (redhat-performance/tuned, tuned/profiles/):
- `etc/tuned/active_profile` holds one or more names, loaded in order and merged, a later
  one overriding an earlier (loader.py `load()`: `profile_names.split()`, names not of
  `^[a-zA-Z0-9_.-]+$` dropped; merger.py `_merge_two()`).
- each name is looked for as `<dir>/<name>/tuned.conf` in the profile directories, the
  last directory first (locator.py `get_config()`); a file already loaded is skipped, so a
  profile in /etc may include the vendor profile of the same name; `-name` is optional.
  A name found nowhere fails the whole load: tuned applies no profile at all.
- `include=` (split on `,` or `;`) loads the included profiles first, then the profile
  itself (loader.py `_load_profile()`).
- the directories are `profile_dirs` of tuned-main.conf, else the layout the package was
  built with (content, checks/layouts/tuned.yaml: tuned >= 2.24 moved them to
  `profiles/` subdirectories).
- units merge by name: options of the newer unit update the older one's, `replace=1`
  drops the older unit, `drop=` removes options; `type`, `enabled` and `devices` come
  from the newer unit (merger.py `_merge_two()`; unit.py pops these control options).
"""

from __future__ import annotations

import os
import re

from .._lazyre import lazy
from .._record import FrozenRecord
from ..errors import FactError, ParseError
from ..host.fs import FS
from .sysctl_writes import PAGE_SIZE  # getconf PAGESIZE: 4 KiB pages assumed there too
from .tuned_vars import TRUE as _TRUE
from .tuned_vars import UNIT_CONTROL as _CONTROL  # unit.py `Unit.__init__` pops these: never plugin options
from .tuned_vars import calls_function
from .tuned_version import TunedVersion, read_tuned_version, version_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .tuned_vars import TunedVariables

TUNED_MAIN = "etc/tuned/tuned-main.conf"
_SAFE_NAME = lazy(r"^[a-zA-Z0-9_.-]+$")


class TunedProfile(FrozenRecord):
    __slots__ = ("name", "chain", "sysctl", "units", "missing", "dirs", "steps", "applied", "unit_files", "version",
                 "unknown_start")
    name: str  # the active names as tuned names the merged profile: "sap-hana sas"
    chain: tuple[str, ...]  # every profile loaded, each active name followed by what it includes
    sysctl: dict[str, tuple[str, str]]  # key -> (value, source), in the order tuned writes them
    units: dict[str, dict[str, str]]  # merged units: name -> options, with `type`, `enabled`, `devices`
    missing: tuple[str, ...]  # names tuned cannot find: then it applies nothing
    dirs: tuple[str, ...]  # profile directories searched, in tuned's order (a later one wins)
    # the units that write sysctls, in the order tuned applies them:
    # ("sysctl" | "vm", ((key, value, source), ...), the unit's name)
    steps: tuple[tuple[str, tuple[tuple[str, str, str], ...], str], ...]
    applied: tuple[str, ...]  # the units tuned starts, in its order (_applied()); none when a name is missing
    unit_files: dict[str, str]  # unit -> the file of its newest definition
    version: TunedVersion | None  # the installed tuned's, read when a [vm] unit has a dirty_* option
    unknown_start: dict[str, str]  # unit -> why whether tuned starts it is not known here (in `steps`, not `applied`)

    def __init__(self, name: str, chain: tuple[str, ...], sysctl: dict[str, tuple[str, str]] | None = None,
                 units: dict[str, dict[str, str]] | None = None, missing: tuple[str, ...] = (),
                 dirs: tuple[str, ...] = (), steps: tuple = (), applied: tuple[str, ...] = (),
                 unit_files: dict[str, str] | None = None, version: TunedVersion | None = None,
                 unknown_start: dict[str, str] | None = None):
        self.name = name
        self.chain = chain
        self.sysctl = {} if sysctl is None else sysctl
        self.units = {} if units is None else units
        self.missing = missing
        self.dirs = dirs
        self.steps = steps if steps else (("sysctl", tuple((k, v, src) for k, (v, src) in self.sysctl.items()),
                                           "sysctl"),)
        self.applied = applied
        self.unit_files = {} if unit_files is None else unit_files
        self.version = version
        self.unknown_start = {} if unknown_start is None else unknown_start


def read_tuned_main(fs: FS) -> dict[str, str]:
    """tuned-main.conf's options; tuned falls back to its defaults when the file is missing
    or does not parse (global_config.py `load_config()` logs the error and goes on)."""
    text = fs.read_text(TUNED_MAIN)
    if text is None:
        return {}
    from ..parsers.tuned_conf import parse_tuned_main  # only a host with tuned (start-up cost)

    try:
        return parse_tuned_main(text, TUNED_MAIN)
    except ParseError:
        return {}


def profile_dirs(fs: FS, layouts: dict | None) -> tuple[tuple[str, ...], str]:
    """(directories in tuned's order, why these). `layouts`: content's checks/layouts/tuned.yaml
    (Facts.defaults.layouts["tuned"]); FactError without it when tuned-main.conf sets none."""
    configured = read_tuned_main(fs).get("profile_dirs")
    if configured is not None:
        dirs = [d.strip().strip("/") for d in re.split(r",|;", configured) if d.strip()]
        return tuple(dirs), f"profile_dirs in {TUNED_MAIN}"
    if not layouts:
        raise FactError("tuned's profile directories: no tuned layout given (content checks/layouts/tuned.yaml)")
    table = layouts["layouts"]
    for layout in table:
        if fs.is_dir(layout["system_dir"]):
            return tuple(layout["profile_dirs"]), f"{layout['name']}: {layout['system_dir']} exists"
    # no tuned profiles installed at all: every layout's directories, newest layout last so it wins
    dirs = [d for layout in reversed(table) for d in layout["profile_dirs"]]
    return tuple(dict.fromkeys(dirs)), "no tuned system profile directory found: every known layout"


class _Loader:
    def __init__(self, fs: FS, dirs: tuple[str, ...]):
        self.fs, self.dirs = fs, dirs
        self.processed: list[str] = []
        self.loaded: list[tuple[str, str, dict]] = []  # (name, file, sections) in tuned's merge order
        self.chain: list[str] = []
        self.missing: list[str] = []

    def locate(self, name: str) -> str | None:
        """locator.py `get_config()`: "" = skip (optional, or already loaded), None = not found."""
        optional = name.startswith("-")
        name = name[1:] if optional else name
        found = None
        for d in reversed(self.dirs):
            rel = f"{d}/{name.rsplit('/', 1)[-1]}/tuned.conf"
            if rel in self.processed:
                found = ""
                continue
            if self.fs.resolves(rel) and not self.fs.is_dir(rel):  # os.path.isfile()
                return rel
        return "" if optional and found is None else found

    def load(self, names: list[str]) -> None:
        for name in names:
            rel = self.locate(name)
            if rel == "":
                continue
            if rel is None:
                self.missing.append(name)
                continue
            self.processed.append(rel)
            self.chain.append(name.lstrip("-"))
            from ..parsers.tuned_conf import parse_tuned_conf  # only a host with tuned profiles (start-up cost)
            from .tuned_vars import with_profile_dir

            sections = {unit: {k: with_profile_dir(v, rel) for k, v in options.items()}
                        for unit, options in parse_tuned_conf(self.fs.read_required(rel), rel).items()}
            include = sections.get("main", {}).pop("include", None)
            if include:
                self.load([n for n in re.split(r"\s*[,;]\s*", include.strip()) if n])
            self.loaded.append((name.lstrip("-"), rel, sections))


def _merge(loaded: list[tuple[str, str, dict]]
           ) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]], dict[str, str]]:
    """merger.py `_merge_two()` over every loaded profile: (units, source file of each
    option, file of each unit's newest definition)."""
    units: dict[str, dict[str, str]] = {}
    sources: dict[str, dict[str, str]] = {}
    files: dict[str, str] = {}
    for _name, rel, sections in loaded:
        for unit, options in sections.items():
            if unit == "main":
                continue
            files[unit] = rel
            options = dict(options)
            control = {k: options.pop(k) for k in _CONTROL if k in options}
            head = {"type": control.get("type", unit), "enabled": "1" if control.get("enabled", "1") in _TRUE else "0",
                    "devices": control.get("devices", "*")}
            head.update({k: control[k] for k in _KEPT_CONTROL if k in control})
            if control.get("replace", "0") in _TRUE or unit not in units:
                units[unit], sources[unit] = {}, {}
            for option in (o.strip() for o in control.get("drop", "").split(",") if o.strip()):
                units[unit].pop(option, None)
                sources[unit].pop(option, None)
            units[unit].update(head)
            units[unit].update(options)
            sources[unit].update({k: rel for k in options})
    return units, sources, files


def read_active_tuned(fs: FS, layouts: dict | None) -> TunedProfile | None:
    """The active profile as tuned loads and merges it, once per scan (FS.derived) for a
    layout table: the sysctl and tuned facts and the [net] plugin (facts/tuned_net.py) share
    it. The profile is read, never changed, by its users."""
    return fs.derived(("tuned", repr(layouts)), lambda: _read_active_tuned(fs, layouts))


def _read_active_tuned(fs: FS, layouts: dict | None) -> TunedProfile | None:
    active = fs.read_text("etc/tuned/active_profile")
    names = [n for n in (active or "").split() if _SAFE_NAME.match(n)]
    if not names:
        return None
    dirs, _why = profile_dirs(fs, layouts)
    loader = _Loader(fs, dirs)
    loader.load(names)
    units, sources, files = _merge(loader.loaded)
    sysctl: dict[str, tuple[str, str]] = {}
    steps = []
    applied: list[str] = []
    unknown: dict[str, str] = {}
    if not loader.missing:  # tuned loads all or nothing
        from .tuned_vars import profile_variables, unquote

        variables = profile_variables(fs, loader.loaded)
        _expand_selectors(units, variables)
        for unit, options, why in _applied(units, _Selected(fs)):
            if why:
                unknown[unit] = why  # its writes are in `steps`: facts/sysctl.py takes both outcomes
            else:
                applied.append(unit)
            # the value each option writes: a [sysctl] value unquoted, then the variables in (facts/tuned_vars.py)
            unquoted = unquote if options["type"] == "sysctl" else str
            writes = tuple((k, variables.expand(unquoted(v)), sources[unit][k]) for k, v in options.items()
                           if k not in _HEAD)
            if options["type"] == "sysctl":
                if not why:
                    sysctl.update({k: (v, src) for k, v, src in writes})
                steps.append(("sysctl", writes, unit))
            elif options["type"] == "vm":  # in the plugin's command order, not the file's
                steps.append(("vm", tuple(sorted((w for w in writes if w[0] in _VM_DIRTY),
                                                 key=lambda w: _VM_DIRTY.index(w[0]))), unit))
    # what a [vm] dirty_* option does depends on the version (vm_dirty_option): read only then
    version = read_tuned_version(fs, layouts) if any(kind == "vm" and w for kind, w, _u in steps) else None
    return TunedProfile(" ".join(names), tuple(loader.chain), sysctl, units, tuple(loader.missing), dirs,
                        tuple(steps) or (("sysctl", (), "sysctl"),), tuple(applied), files, version, unknown)


def _expand_selectors(units: dict[str, dict[str, str]], variables: TunedVariables) -> None:
    """The variables in what selects a unit and its devices (loader.py `load()`:
    `_expand_vars_in_devices()`, `_expand_vars_in_regexes()`, after the merge), and in a
    [net] unit's values (plugins/base.py `_execute_all_device_commands()` expands each at
    apply time; the other units' values are expanded where they are written, above)."""
    for options in units.values():
        net = options["type"] == "net"
        for key, value in options.items():
            if key in _SELECTORS or (net and key not in _HEAD):
                options[key] = variables.expand(value)


# control options kept in a merged unit besides type, enabled and devices (what selects it and its devices)
_KEPT_CONTROL = ("priority", "uname_regex", "cpuinfo_regex", "devices_udev_regex")
_HEAD = ("type", "enabled", "devices", *_KEPT_CONTROL)
_SELECTORS = ("devices", "uname_regex", "cpuinfo_regex")
# plugin_vm.py (tuned >= 2.25, commit "vm: Add support for dirty_(bytes|ratio)"): these
# options write /proc/sys/vm/<option> (throughput-performance and virtual-guest set the
# ratio there since, commit 155f232). A unit runs them in this order whatever the file's
# (plugins/base.py `_autoregister_commands()`: the class's methods in definition order,
# stably sorted by priority, 0 for all four), so a merged [vm] with `dirty_ratio = 40` from
# an included profile and `dirty_bytes = N` of its own writes the bytes first and the ratio
# zeroes them.
_VM_DIRTY = ("dirty_bytes", "dirty_ratio", "dirty_background_bytes", "dirty_background_ratio")
# tuned >= 2.26 ("vm: Deprecate dirty_ratio in favour of dirty_bytes with %"): `dirty_bytes = 40%`
# writes dirty_ratio (its throughput-performance and virtual-guest say so), and each value is
# written only when int() takes it and it is in range (_check_ratio, _check_twice_pagesize,
# _check_positive); else tuned logs an error and writes nothing.
_VM_PERCENT_OF = {"dirty_bytes": "dirty_ratio", "dirty_background_bytes": "dirty_background_ratio"}


# tuned versions that take a [vm] dirty_* option differently (facts/tuned_version.py): one
# before the options (2.24 drops them), the first with them (2.25: integers only), and 2.26 (N%)
VM_DIRTY_VERSIONS = ((2, 24, 0), (2, 25, 0), (2, 26, 0))


def vm_dirty_option(option: str, value: str, version: tuple[int, int, int] = (2, 26, 0)
                    ) -> tuple[str, str, str | None]:
    """(option written, value written, why tuned writes nothing or None) for one [vm] dirty_*
    option, as plugin_vm.py `_dirty_bytes()` .. `_dirty_option()` of tuned `version` take it.
    A value that runs a tuned function is passed on whole: it cannot be checked here
    (facts/sysctl.py says so)."""
    if version < (2, 25):  # plugins/base.py `_get_effective_options()`: not a config option of plugin_vm
        return option, value, (f"tuned {version_text(version)} has no [vm] {option} (plugin_vm.py has it "
                               "from 2.25): it warns \"Unknown option\" and writes nothing")
    if version >= (2, 26) and option in _VM_PERCENT_OF and value.strip().endswith("%"):
        option, value = _VM_PERCENT_OF[option], value.strip().rstrip("%")
    if calls_function(value):
        return option, value, None
    try:
        number = int(value)
    except ValueError:
        if vm_unit_stops(option, value, version):
            return option, value, (f"{option} = {value!r} is not an integer (tuned {version_text(version)} "
                                   "takes N% from 2.26), and the error ends the unit")
        return option, value, f"{option} = {value!r} is not an integer"
    if option.endswith("_ratio"):
        ok, rule = 0 <= number <= 100, "between 0 and 100"
    elif option == "dirty_bytes":
        ok, rule = number >= 2 * PAGE_SIZE, f"at least twice the page size ({2 * PAGE_SIZE})"
    else:
        ok, rule = number > 0, "positive"
    return option, value, None if ok else f"{option} = {value!r} must be {rule}"


def vm_unit_stops(option: str, value: str, version: tuple[int, int, int]) -> bool:
    """tuned 2.25's `_dirty_option()` logs a value int() refuses ("must be an integer") and
    goes on to test the unset `int_value`: the UnboundLocalError ends the unit's commands
    (units/manager.py `_try_call()` catches it per unit), so its later dirty_* options are
    not run. 2.26 returns there instead."""
    if version[:2] != (2, 25) or calls_function(value):
        return False
    try:
        int(value)
    except ValueError:
        return True
    return False


class _Selected:
    """What tuned matches a unit's uname_regex and cpuinfo_regex against (units/manager.py
    `_unit_matches_uname()`, `_unit_matches_cpuinfo()`): tuned-main.conf `uname_string` and
    `cpuinfo_string` when set, else `" ".join(os.uname())` and /proc/cpuinfo. os.uname()'s
    five fields are the kernel's utsname, which proc/sys/kernel shows (kernel/utsname_sysctl.c):
    ostype, hostname, osrelease, version and, from Linux 6.1, arch. An older kernel's machine
    is, on the live root, this process's os.uname() (the same kernel), and in a snapshot the
    release's suffix where the distribution's kernel.spec names the release after it
    (`5.14.0-362.el9.x86_64`: RHEL, Fedora, Oracle Linux, Amazon Linux). A field not known
    here makes the uname unknown (None, and why): a regex may test any of them. Each is read
    only when a unit that could start has such a regex (a snapshot may lack them)."""

    def __init__(self, fs: FS):
        self.fs = fs
        main = read_tuned_main(fs)
        self._uname: tuple[str | None, str] | None = (main["uname_string"], "") if "uname_string" in main else None
        self._cpuinfo: str | None = main.get("cpuinfo_string")
        self._cpuinfo_why = ""

    def uname(self) -> tuple[str | None, str]:
        """(the text, or None and why it is not known)."""
        if self._uname is None:
            self._uname = _uname(self.fs)
        return self._uname

    def cpuinfo(self) -> tuple[str | None, str]:
        """(the text, or None and why it is not known)."""
        if self._cpuinfo is None and not self._cpuinfo_why:
            try:
                self._cpuinfo = self.fs.read_text("proc/cpuinfo")
            except FactError as e:
                self._cpuinfo_why = str(e)
            if self._cpuinfo is None and not self._cpuinfo_why:
                self._cpuinfo_why = "proc/cpuinfo is not under the root"
        return self._cpuinfo, self._cpuinfo_why


_UTSNAME = ("ostype", "hostname", "osrelease", "version", "arch")  # os.uname()'s order, as proc/sys/kernel names them
_RELEASE_MACHINE = lazy(r"\.(x86_64|aarch64|ppc64le|s390x)$")  # kernel.spec: `uname -r` ends in `uname -m`


def _uname(fs: FS) -> tuple[str | None, str]:
    """`" ".join(os.uname())` of the root's kernel, or (None, which fields are not known)."""
    fields = {name: fs.read_value(f"proc/sys/kernel/{name}") for name in _UTSNAME}
    fields["ostype"] = fields["ostype"] or "Linux"  # UTS_SYSNAME: the same on every Linux kernel
    if fields["arch"] is None and fs.live:  # kernel.arch is Linux 6.1's
        fields["arch"] = os.uname().machine
    elif fields["arch"] is None:
        named = _RELEASE_MACHINE.search(fields["osrelease"] or "")
        fields["arch"] = named.group(1) if named else None
    known = [value for value in fields.values() if value is not None]
    if len(known) < len(fields):
        missing = [f"proc/sys/kernel/{name}" for name, value in fields.items() if value is None]
        return None, f"{', '.join(missing)} not under the root"
    return " ".join(known), ""


def _applied(units: dict[str, dict[str, str]], selected: _Selected) -> list[tuple[str, dict[str, str], str]]:
    """units/manager.py `create()`: enabled units whose cpuinfo_regex and uname_regex match
    (`re.search(regex, text, re.MULTILINE)`), stably sorted by priority (default 0,
    tuned-main.conf default_instance_priority), each applied in turn (`start_tuning()`):
    (unit, options, "" or why whether tuned starts it is not known here). A regex tuned
    would compute with a function, or a cpuinfo_regex with no cpuinfo to match, is not
    known, unless the other regex already rules the unit out."""
    chosen = []
    for unit, options in units.items():
        if options["enabled"] != "1":
            continue
        why = ""
        for key in ("uname_regex", "cpuinfo_regex"):
            regex = options.get(key)
            if regex is None:
                continue
            if calls_function(regex):
                why = why or f"its {key}={regex} runs a tuned function, which is not run here"
                continue
            text, unknown = selected.uname() if key == "uname_regex" else selected.cpuinfo()
            if text is None:
                against = "the kernel's uname" if key == "uname_regex" else "/proc/cpuinfo"
                why = why or f"its {key}={regex} is matched against {against}, which is not known here ({unknown})"
                continue
            try:
                if not re.search(regex, text, re.MULTILINE):
                    break  # tuned skips the unit, whatever the other regex says
            except re.error:
                break  # re.error: tuned fails on it; the unit is not taken as started
        else:
            try:
                chosen.append((int(options.get("priority", "0")), unit, options, why))
            except ValueError:
                continue
    return [(unit, options, why) for _p, unit, options, why in sorted(chosen, key=lambda c: c[0])]


def profile_file(fs: FS, name: str, layouts: dict | None) -> str | None:
    """Where tuned finds profile `name` (relative to the root), or None."""
    found = _Loader(fs, profile_dirs(fs, layouts)[0]).locate(name)
    return found or None


def profile_chain(fs: FS, name: str, layouts: dict | None) -> tuple[str, ...]:
    """`name` and every profile it includes, as tuned loads them; ParseError when one is garbled."""
    loader = _Loader(fs, profile_dirs(fs, layouts)[0])
    loader.load([name])
    return tuple(loader.chain)


def user_profile_dir(fs: FS, layouts: dict | None) -> str:
    """The directory of the admin's own profiles: the last one tuned searches (it wins)."""
    return profile_dirs(fs, layouts)[0][-1]
