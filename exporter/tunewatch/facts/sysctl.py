"""Sysctls at runtime (proc/sys) and the value each boot-time consumer would set.

Two programs apply sysctl files, with different rules:

- systemd-sysctl (sysctl.d(5), systemd-sysctl(8)), early at every boot: `*.conf` in
  /etc, /run, /usr/local/lib, /usr/lib (and /lib) `sysctl.d`, merged by file name (the
  first directory wins; a link to /dev/null masks the name), applied in lexical order of
  names. It never reads /etc/sysctl.conf itself, only through a link such as
  `99-sysctl.conf -> ../sysctl.conf`, at that link's place in name order.
- procps `sysctl --system` (sysctl.conf(5); procps-ng sysctl.c PreloadSystem()): the
  same directories merged the same way, then /etc/sysctl.conf again, last, when it is a
  regular file.
- tuned (when tuned.service starts at boot and a profile is active) writes its profile's
  [sysctl] after systemd-sysctl, then, with `reapply_sysctl = 1` (the default), writes
  etc/sysctl.d/*.conf and etc/sysctl.conf again line by line, never usr/lib/sysctl.d
  (plugin_sysctl.py `_apply_system_sysctl()`).

Every write goes through the kernel's handler (facts/sysctl_writes.py): writing
vm.dirty_ratio zeroes vm.dirty_bytes and the reverse, so the order of all writes counts.

At the next boot /run is empty (tmpfs), so run/sysctl.d and run/modprobe.d do not count.
A `modprobe.d` module option sets a parameter when the module loads and any sysctl file
for the same key overrides it.

Keys a module provides (content: `module_params`) exist only once it loads, and
systemd-sysctl skips a key that does not exist yet (sysctl.d(5)). A module that is not
loaded before systemd-sysctl (facts/modules.py: modules-load.d, built in) loads later,
with the first NFS mount for sunrpc: then only its modprobe.d `options` and the hooks that
run when it loads set its keys: a udev rule for its "add" event or a modprobe.d `install`
line that runs `sysctl --system` (procps order, `--pattern`) or `systemd-sysctl`
(`--prefix`). tuned is not ordered after the NFS mounts, so it does not count for them.
"""

from __future__ import annotations

from .._record import FrozenRecord
from ..errors import FactError, ParseError
from ..host.fs import FS
from ..parsers.sysctl_command import SysctlRun
from ..parsers.sysctl_conf import parse_sysctl_conf
from .modules import MODPROBE_DIRS, ModulesBoot, read_modprobe_d  # noqa: F401 - re-exported: goss and collect read it here
from .services import read_unit_state
from .sysctl_writes import UNTOLD, ConfiguredValue, initial, replay, systemd_sysctl_order, write
from .tuned import VM_DIRTY_VERSIONS, TunedProfile, read_tuned_main, vm_dirty_option, vm_unit_stops
from .tuned_version import version_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    # saptune's sysctl writes as (key, value, source) and the sections it skipped (facts/saptune.py)
    SaptuneWrites = tuple[list[tuple[str, str, str]], list[str]]

SYSCTL_DIRS = ("etc/sysctl.d", "usr/local/lib/sysctl.d", "usr/lib/sysctl.d", "lib/sysctl.d")
SYSCTL_CONF = "etc/sysctl.conf"
TUNED_MAIN = "etc/tuned/tuned-main.conf"
# tuned plugin_sysctl.py `SYSCTL_CONFIG_DIRS = ["/run/sysctl.d", "/etc/sysctl.d"]` then
# /etc/sysctl.conf (`_apply_system_sysctl()`); never usr/lib/sysctl.d. /run is empty at boot.
TUNED_REAPPLY_DIRS = ("etc/sysctl.d",)


class Consumer(FrozenRecord):
    """One program that sets sysctls at boot and the value of each key after it ran;
    `dropped`: a key a line of its configuration names but that it writes nothing to, and
    why (tuned 2.22 dropping a [vm] dirty_bytes line), so a key nothing sets still names
    the line an admin expects to set it."""
    __slots__ = ("name", "values", "dropped")
    name: str
    values: dict[str, ConfiguredValue]
    dropped: dict[str, str]

    def __init__(self, name: str, values: dict[str, ConfiguredValue], dropped: dict[str, str] | None = None):
        self.name = name
        self.values = values
        self.dropped = {} if dropped is None else dropped


class LateModule(FrozenRecord):
    """A module that loads after systemd-sysctl: what sets its keys when it loads."""
    __slots__ = ("module", "options", "consumers", "why")
    module: str
    options: dict[str, ConfiguredValue]  # modprobe.d `options`, applied at load
    consumers: tuple[Consumer, ...]  # hooks that apply sysctl files when it loads, in order
    why: str  # why systemd-sysctl and tuned do not reach its keys

    def __init__(self, module: str, options: dict[str, ConfiguredValue], consumers: tuple[Consumer, ...], why: str):
        self.module = module
        self.options = options
        self.consumers = consumers
        self.why = why


class SysctlHook(FrozenRecord):
    """A program run when a module loads that applies sysctl files."""
    __slots__ = ("module", "source", "run")
    module: str
    source: str  # "usr/lib/udev/rules.d/60-nfs.rules:4", "etc/modprobe.d/50-nfs.conf:4 (install)"
    run: SysctlRun

    def __init__(self, module: str, source: str, run: SysctlRun):
        self.module = module
        self.source = source
        self.run = run


class BootSysctl(FrozenRecord):
    __slots__ = ("consumers", "sysctl_conf", "sysctl_conf_linked", "late", "module_of")
    consumers: tuple[Consumer, ...]  # in the order they run; the last one's values stay
    sysctl_conf: dict[str, ConfiguredValue]  # what etc/sysctl.conf says
    sysctl_conf_linked: bool  # a sysctl.d link brings it to systemd-sysctl
    late: dict[str, LateModule]  # module -> how its keys are set
    module_of: dict[str, str]  # sysctl key -> module providing it

    def __init__(self,
                 consumers: tuple[Consumer, ...], sysctl_conf: dict[str, ConfiguredValue] | None = None,
                 sysctl_conf_linked: bool = False, late: dict[str, LateModule] | None = None,
                 module_of: dict[str, str] | None = None):
        self.consumers = consumers
        self.sysctl_conf = {} if sysctl_conf is None else sysctl_conf
        self.sysctl_conf_linked = sysctl_conf_linked
        self.late = {} if late is None else late
        self.module_of = {} if module_of is None else module_of

    def late_module(self, key: str) -> LateModule | None:
        return self.late.get(self.module_of.get(key, ""))

    def views(self, key: str) -> list[tuple[str, ConfiguredValue | None]]:
        """(consumer, value of the key after it ran) for each consumer that reaches the key."""
        late = self.late_module(key)
        consumers = late.consumers if late is not None else self.consumers
        return [(c.name, c.values.get(key)) for c in consumers]

    def get(self, key: str) -> ConfiguredValue | None:
        """The value the key has after the last consumer ran (what the host boots with)."""
        late = self.late_module(key)
        if late is not None:
            return late.consumers[-1].values.get(key) if late.consumers else late.options.get(key)
        return self.consumers[-1].values.get(key) if self.consumers else None


def sysctl_files(fs: FS) -> list[str]:
    """Every sysctl file a boot-time consumer may apply, in procps `sysctl --system` order:
    sysctl.d merged by name, then etc/sysctl.conf (a later file wins)."""
    files = fs.config_files(SYSCTL_DIRS, "*.conf")
    if fs.resolves(SYSCTL_CONF) and not fs.is_dir(SYSCTL_CONF):
        files.append(SYSCTL_CONF)
    return files


class _Files:
    """Each sysctl file read and parsed once, however many consumers apply it."""

    def __init__(self, fs: FS):
        self.fs = fs
        self._parsed: dict[str, list[tuple[str, ConfiguredValue, bool]]] = {}

    def lines(self, rel: str) -> list[tuple[str, ConfiguredValue, bool]]:
        """(key, value, `-` prefixed) of every assignment, in file order."""
        if rel not in self._parsed:
            self._parsed[rel] = [(s.key, ConfiguredValue(s.value, f"{rel}:{s.line}"), s.ignore_failure)
                                 for s in parse_sysctl_conf(self.fs.read_required(rel), rel)]
        return self._parsed[rel]

    def settings(self, rel: str) -> dict[str, ConfiguredValue]:
        return {key: cv for key, cv, _ in self.lines(rel)}

    def apply(self, base: dict[str, ConfiguredValue], files: list[str], only: Callable[[str], bool] | None = None,
              order: str = "procps",
              ) -> dict[str, ConfiguredValue]:
        """`base` after the files are applied as a consumer applies them: procps `sysctl`
        and tuned's reapply_sysctl write line by line, in file order (procps-ng sysctl.c
        `Preload()`; tuned plugin_sysctl.py `_apply_sysctl_config_file()`, which writes a
        `-key` as a path that does not exist: nothing); systemd-sysctl reads every file
        first and writes each key once (sysctl_writes.systemd_sysctl_order)."""
        writes = [(k, cv) for rel in files for k, cv, dash in self.lines(rel)
                  if (only is None or only(k)) and not (dash and order == "tuned")]
        return replay(base, systemd_sysctl_order(writes) if order == "systemd" else writes)


def _modprobe_options(fs: FS, module_params: dict[str, str], modules: ModulesBoot | None) -> dict[str, ConfiguredValue]:
    """`module_params` maps "module.param" (as in modprobe.d) to the sysctl key it sets; content."""
    values: dict[str, ConfiguredValue] = {}
    lines = modules.options if modules is not None else read_modprobe_d(fs)[1]
    for rel, opt in lines:
        for param, value in opt.params.items():
            key = module_params.get(f"{opt.module}.{param}")
            if key:
                values[key] = ConfiguredValue(value, f"{rel}:{opt.line} (module option)")
    return values


def _tuned_reapplies(fs: FS) -> bool:
    """tuned's `get_bool()` (utils/commands.py): Y, YES, T, TRUE and 1 are true, in any
    case; anything else (`on` included) is false. Default true (consts.py)."""
    value = read_tuned_main(fs).get("reapply_sysctl", "1")
    return value.upper().strip() in ("1", "Y", "YES", "T", "TRUE")


def _tuned_runs(fs: FS, tuned: TunedProfile | None) -> bool:
    return tuned is not None and read_unit_state(fs, "tuned.service").enabled


def _tuned_values(files: _Files, fs: FS, tuned: TunedProfile, values: dict[str, ConfiguredValue],
                  conf_is_file: bool) -> tuple[dict[str, ConfiguredValue], str, dict[str, str]]:
    """tuned's units in the order it applies them (facts/tuned.py): a [sysctl] unit writes its
    options, then, with reapply_sysctl, etc/sysctl.d and etc/sysctl.conf again
    (plugin_sysctl.py `_instance_apply_static()`); a [vm] unit writes vm.dirty_* unless the
    value is already set or out of its range, `dirty_bytes = 40%` to vm.dirty_ratio
    (plugin_vm.py `_dirty_option()`, facts/tuned.vm_dirty_option)."""
    reapply = _tuned_reapplies(fs)
    again = fs.config_files(TUNED_REAPPLY_DIRS, "*.conf") + ([SYSCTL_CONF] if conf_is_file else [])
    dropped: dict[str, str] = {}  # Consumer.dropped
    for kind, writes, unit in tuned.steps:
        before, values = values, dict(values)
        if kind == "vm":
            _vm_unit(values, tuned, writes, unit, dropped)
        for k, v, f in writes if kind == "sysctl" else ():
            cv = _tuned_write(values, k, v, f"tuned profile {tuned.name} ({f})", modifiers=True)
            if cv is not None:
                write(values, k, cv)
        if kind == "sysctl" and reapply:
            values = files.apply(values, again, order="tuned")
        if unit in tuned.unknown_start:  # each value the unit leaves as it found it stays known
            values = _either(before, values, f"tuned profile {tuned.name} may or may not start its [{unit}] unit "
                                             f"(units/manager.py `create()`): {tuned.unknown_start[unit]}")
    name = f"tuned ({tuned.name})" + (" reapply_sysctl: etc/sysctl.d, etc/sysctl.conf" if reapply else "")
    return values, name, dropped


def _either(skipped: dict[str, ConfiguredValue], started: dict[str, ConfiguredValue],
            why: str) -> dict[str, ConfiguredValue]:
    """The values after a unit tuned may or may not start: a key both outcomes give the same
    value keeps it, any other cannot be told."""
    out = dict(skipped)
    for key in skipped.keys() | started.keys():
        was, now = skipped.get(key), started.get(key)
        if (was.value if was is not None else initial(key)) != (now.value if now is not None else initial(key)):
            source = now.source if now is not None else was.source if was is not None else ""
            out[key] = ConfiguredValue(UNTOLD, f"{source}: {why}")
    return out


def _vm_unit(values: dict[str, ConfiguredValue], tuned: TunedProfile, writes: tuple[tuple[str, str, str], ...],
             unit: str, dropped: dict[str, str]) -> None:
    """The writes of one [vm] unit's dirty_* options (in the plugin's order), as the installed
    tuned makes them (facts/tuned_version.py, facts/tuned.vm_dirty_option). When its version
    is not known here and the versions that take an option differently would not leave the
    same value, that write cannot be told. A line the installed tuned refuses is named where
    the key's value comes from: beside the value it keeps, or in `dropped` when none."""
    known = tuned.version.version if tuned.version is not None else None
    versions = (known,) if known is not None else VM_DIRTY_VERSIONS
    stopped: set[tuple[int, int, int]] = set()  # versions whose unit ended at an earlier option
    for option, value, f in writes:
        source = f"tuned profile {tuned.name} ({f})"
        effects: set[tuple[str, str] | None] = set()
        refusals = []
        for version in versions:
            k, v, refused = vm_dirty_option(option, value, version)
            if version in stopped:
                refused = f"an earlier option ended tuned {version_text(version)}'s [{unit}] unit"
            elif refused is not None and vm_unit_stops(option, value, version):
                stopped.add(version)
            if refused is not None:
                refusals.append(refused)
                effects.add(None)  # tuned logs the error and writes nothing
            else:  # plugin_vm's "Not setting option ..., already set" writes nothing either
                effects.add(None if _same_now(values, f"vm.{k}", v) else (f"vm.{k}", v))
        if effects == {None}:
            if len(refusals) == len(versions) == 1:  # the admin's line, and why it is not written
                why = f"{source}: [vm] {option} = {value} writes nothing: {refusals[0]}"
                kept = values.get(f"vm.{option}")
                if kept is not None:
                    values[f"vm.{option}"] = kept.replace(source=f"{kept.source}; {why}")
                else:
                    dropped[f"vm.{option}"] = why
            continue
        key, v = next(e for e in effects if e is not None)
        if len(effects) == 1:
            cv = _tuned_write(values, key, v, source, modifiers=False)
        else:
            why = tuned.version.source if tuned.version is not None else "tuned's version was not read"
            cv = ConfiguredValue(UNTOLD, f"{source}: [vm] {option} = {value}: what it writes depends on tuned's "
                                         f"version (2.24 and older drop it, 2.25 takes no N%), which is not known "
                                         f"here ({why})")
        if cv is not None:
            write(values, key, cv.replace(vm_option=(unit, option)))


def _tuned_write(values: dict[str, ConfiguredValue], key: str, value: str, source: str,
                 modifiers: bool) -> ConfiguredValue | None:
    """What tuned writes to `key` (None: nothing), its variables expanded (facts/tuned.py):
    a function it would run, or a `>N`/`<N` against a value not known here, cannot be told
    (facts/tuned_vars.py)."""
    from .tuned_vars import assigned, calls_function

    if calls_function(value):
        return ConfiguredValue(UNTOLD, f"{source}: {value!r} runs a tuned function, which is not run here")
    if modifiers and len(value) > 1 and value[0] in "<>":
        now = values.get(key)
        current = now.value if now is not None else initial(key)
        if current is None or current == UNTOLD:
            than = "greater" if value[0] == ">" else "smaller"
            return ConfiguredValue(UNTOLD, f"{source}: {value!r} writes {value[1:]} only when that is {than} than "
                                           "the value before tuned, which is not known here")
        written = assigned(value, current)
        if written is None:
            return None
        return ConfiguredValue(" ".join(written.split()), f"{source} ({value}: {current} before)")
    return ConfiguredValue(" ".join(value.split()), source)


def _same_now(values: dict[str, ConfiguredValue], key: str, value: str) -> bool:
    """plugin_vm.py: "Not setting option ... already set" (the kernel's start value counts)."""
    now = values.get(key)
    current = now.value if now is not None else initial(key)
    return current is not None and current.strip() == value.strip()


def _hook_consumer(files: _Files, hook: SysctlHook, base: dict[str, ConfiguredValue], dropins: list[str],
                   conf_is_file: bool) -> Consumer:
    run = hook.run
    if run.consumer == "systemd-sysctl":
        order, how = dropins, "systemd-sysctl" + "".join(f" --prefix={p}" for p in run.prefixes)
    else:
        order = (dropins + ([SYSCTL_CONF] if conf_is_file else [])) if run.system else []
        order += [f.lstrip("/") for f in run.files if files.fs.resolves(f.lstrip("/"))]
        how = "sysctl" + (f" --pattern {run.pattern}" if run.pattern else "") + (" --system" if run.system else "") + \
            "".join(f" -p {f}" for f in run.files)
    return Consumer(f"{how} run by {hook.source} when {hook.module} loads",
                    files.apply(base, order, run.limits, "systemd" if run.consumer == "systemd-sysctl" else "procps"))


def _late_modules(files: _Files, modules: ModulesBoot | None, module_params: dict[str, str],
                  options: dict[str, ConfiguredValue], hooks: list[SysctlHook], dropins: list[str],
                  conf_is_file: bool) -> dict[str, LateModule]:
    if modules is None:
        return {}
    late = {}
    for module in sorted({p.split(".", 1)[0] for p in module_params}):
        if module in modules.early:
            continue
        keys = {k for p, k in module_params.items() if p.split(".", 1)[0] == module}
        base = {k: v for k, v in options.items() if k in keys}
        consumers: list[Consumer] = []
        for hook in (h for h in hooks if h.module == module):
            values = dict(consumers[-1].values) if consumers else dict(base)
            consumers.append(_hook_consumer(files, hook, values, dropins, conf_is_file))
        why = (f"{module} is not loaded before systemd-sysctl (not in modules-load.d, not built in): it loads later "
               f"(with the first NFS mount), systemd-sysctl skips its keys and tuned is not ordered after it")
        late[module] = LateModule(module, base, tuple(consumers), why)
    return late


def read_boot_sysctl(fs: FS, tuned: TunedProfile | None, module_params: dict[str, str],
                     modules: ModulesBoot | None = None, hooks: list[SysctlHook] | None = None,
                     saptune: SaptuneWrites | None = None) -> BootSysctl:
    """The consumers that run at the next boot and what each leaves for every key.
    `modules` (facts/modules.py) and `hooks` (run when a module loads) decide which keys of
    `module_params` modules are set by systemd-sysctl and tuned and which only at load."""
    files = _Files(fs)
    dropins = fs.config_files(SYSCTL_DIRS, "*.conf")
    conf_is_file = fs.resolves(SYSCTL_CONF) and not fs.is_dir(SYSCTL_CONF) and fs.readlink(SYSCTL_CONF) != "/dev/null"
    sysctl_conf = files.settings(SYSCTL_CONF) if conf_is_file else {}
    linked = any(fs.path(rel) == fs.path(SYSCTL_CONF) for rel in dropins)

    consumers = []
    options = _modprobe_options(fs, module_params, modules)
    after_systemd = files.apply(options, dropins, order="systemd")
    if not read_unit_state(fs, "systemd-sysctl.service").masked:
        consumers.append(Consumer("systemd-sysctl", after_systemd))
    if tuned is not None and _tuned_runs(fs, tuned):
        values, name, dropped = _tuned_values(files, fs, tuned, after_systemd, conf_is_file)
        consumers.append(Consumer(name, values, dropped))
    if saptune is not None:  # saptune.service: After=systemd-sysctl.service tuned.service
        base = consumers[-1].values if consumers else options
        writes, skipped = saptune
        name = "saptune (NOTE_APPLY_ORDER)" + (f"; {'; '.join(skipped[:2])}" if skipped else "")
        consumers.append(Consumer(name, replay(base, [(k, ConfiguredValue(" ".join(v.split()), f"saptune note {src}"))
                                                      for k, v, src in writes])))
    late = _late_modules(files, modules, module_params, options, hooks or [], dropins, conf_is_file)
    module_of = {k: p.split(".", 1)[0] for p, k in module_params.items()}
    return BootSysctl(tuple(consumers), sysctl_conf, linked, late, module_of)


def safe_boot_sysctl(fs: FS, tuned_loader: Callable[[], TunedProfile | None], module_params: dict[str, str],
                     modules: ModulesBoot | None = None, hooks: list[SysctlHook] | None = None,
                     saptune_loader: Callable[[], SaptuneWrites | None] | None = None) -> BootSysctl:
    """As read_boot_sysctl; an unreadable tuned profile matters only when tuned runs at boot."""
    try:
        tuned = tuned_loader()
    except (FactError, ParseError):
        if read_unit_state(fs, "tuned.service").enabled:
            raise
        tuned = None
    saptune = saptune_loader() if saptune_loader is not None else None
    return read_boot_sysctl(fs, tuned, module_params, modules, hooks, saptune)
