"""Sysctls at runtime (proc/sys) and the value each boot-time consumer would set.

Two programs apply sysctl files, with different rules:

- systemd-sysctl (sysctl.d(5), systemd-sysctl(8)), early at every boot: `*.conf` in
  /etc, /run, /usr/local/lib, /usr/lib (and /lib) `sysctl.d`, merged by file name (the
  first directory wins; a link to /dev/null masks the name), applied in lexical order of
  names. It never reads /etc/sysctl.conf itself, only through a link such as
  `99-sysctl.conf -> ../sysctl.conf`, at that link's place in name order.
- procps `sysctl --system` (sysctl.conf(5); procps-ng sysctl.c PreloadSystem()): the
  same directories merged the same way, then /etc/sysctl.conf again, last, when it is a
  regular file. tuned runs it after its own profile when `reapply_sysctl = 1` (the
  default, tuned-main.conf(5)).

At the next boot /run is empty (tmpfs), so run/sysctl.d and run/modprobe.d do not count.
A `modprobe.d` module option sets a parameter when the module loads and any sysctl file
for the same key overrides it. tuned (when tuned.service starts at boot and a profile is
active) applies its profile's [sysctl] section, `include=` followed, after systemd-sysctl.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import FactError, ParseError
from ..fs import FS
from ..parsers.ini import parse_ini
from ..parsers.modprobe import parse_modprobe_conf
from ..parsers.sysctl_conf import parse_sysctl_conf, sysctl_key_to_path
from .services import read_unit_state
from .tuned import TunedProfile

MODPROBE_DIRS = ("etc/modprobe.d", "usr/local/lib/modprobe.d", "usr/lib/modprobe.d", "lib/modprobe.d")
SYSCTL_DIRS = ("etc/sysctl.d", "usr/local/lib/sysctl.d", "usr/lib/sysctl.d", "lib/sysctl.d")
SYSCTL_CONF = "etc/sysctl.conf"
TUNED_MAIN = "etc/tuned/tuned-main.conf"


@dataclass(frozen=True)
class ConfiguredValue:
    value: str
    source: str  # "etc/sysctl.d/90-sas.conf:3", "etc/modprobe.d/sunrpc.conf:1", "tuned <profile> (<file>)"


@dataclass(frozen=True)
class Consumer:
    """One program that sets sysctls at boot and the value of each key after it ran."""
    name: str
    values: dict[str, ConfiguredValue]


@dataclass(frozen=True)
class BootSysctl:
    consumers: tuple[Consumer, ...]  # in the order they run; the last one's values stay
    sysctl_conf: dict[str, ConfiguredValue] = field(default_factory=dict)  # what etc/sysctl.conf says
    sysctl_conf_linked: bool = False  # a sysctl.d link brings it to systemd-sysctl

    def get(self, key: str) -> ConfiguredValue | None:
        """The value the key has after the last consumer ran (what the host boots with)."""
        return self.consumers[-1].values.get(key) if self.consumers else None


def read_runtime(fs: FS, key: str) -> str | None:
    value = fs.read_text(sysctl_key_to_path(key))
    return None if value is None else " ".join(value.split())


def sysctl_files(fs: FS) -> list[str]:
    """Every sysctl file a boot-time consumer may apply, in procps `sysctl --system` order:
    sysctl.d merged by name, then etc/sysctl.conf (a later file wins)."""
    files = fs.config_files(SYSCTL_DIRS, "*.conf")
    if fs.resolves(SYSCTL_CONF) and not fs.is_dir(SYSCTL_CONF):
        files.append(SYSCTL_CONF)
    return files


def _read_settings(fs: FS, rel: str) -> dict[str, ConfiguredValue]:
    return {s.key: ConfiguredValue(s.value, f"{rel}:{s.line}") for s in parse_sysctl_conf(fs.read_required(rel), rel)}


def _apply(base: dict[str, ConfiguredValue], fs: FS, files: list[str]) -> dict[str, ConfiguredValue]:
    values = dict(base)
    for rel in files:
        values.update(_read_settings(fs, rel))
    return values


def _modprobe(fs: FS, module_params: dict[str, str]) -> dict[str, ConfiguredValue]:
    """`module_params` maps "module.param" (as in modprobe.d) to the sysctl key it sets; content."""
    values: dict[str, ConfiguredValue] = {}
    for rel in fs.config_files(MODPROBE_DIRS, "*.conf"):
        for opt in parse_modprobe_conf(fs.read_required(rel), rel):
            for param, value in opt.params.items():
                key = module_params.get(f"{opt.module}.{param}")
                if key:
                    values[key] = ConfiguredValue(value, f"{rel}:{opt.line} (module option)")
    return values


def _tuned_reapplies(fs: FS) -> bool:
    text = fs.read_text(TUNED_MAIN)
    if text is None:
        return True
    value = parse_ini(text, TUNED_MAIN).get("", {}).get("reapply_sysctl", "1").strip().lower()
    return value not in ("0", "false", "no", "off")


def _tuned_runs(fs: FS, tuned: TunedProfile | None) -> bool:
    return tuned is not None and read_unit_state(fs, "tuned.service").enabled


def read_boot_sysctl(fs: FS, tuned: TunedProfile | None, module_params: dict[str, str]) -> BootSysctl:
    """The consumers that run at the next boot and what each leaves for every key."""
    dropins = fs.config_files(SYSCTL_DIRS, "*.conf")
    conf_is_file = fs.resolves(SYSCTL_CONF) and not fs.is_dir(SYSCTL_CONF) and fs.readlink(SYSCTL_CONF) != "/dev/null"
    sysctl_conf = _read_settings(fs, SYSCTL_CONF) if conf_is_file else {}
    linked = any(fs.path(rel) == fs.path(SYSCTL_CONF) for rel in dropins)

    consumers = []
    after_systemd = _apply(_modprobe(fs, module_params), fs, dropins)
    if not read_unit_state(fs, "systemd-sysctl.service").masked:
        consumers.append(Consumer("systemd-sysctl", after_systemd))
    if _tuned_runs(fs, tuned):
        values = dict(after_systemd)
        values.update({k: ConfiguredValue(" ".join(v.split()), f"tuned profile {tuned.name} ({src})")
                       for k, (v, src) in tuned.sysctl.items()})
        name = f"tuned ({tuned.name})"
        if _tuned_reapplies(fs):
            values = _apply(values, fs, dropins + ([SYSCTL_CONF] if conf_is_file else []))
            name = f"tuned ({tuned.name}) reapply_sysctl: sysctl --system"
        consumers.append(Consumer(name, values))
    return BootSysctl(tuple(consumers), sysctl_conf, linked)


def safe_boot_sysctl(fs: FS, tuned_loader, module_params: dict[str, str]) -> BootSysctl:
    """As read_boot_sysctl; an unreadable tuned profile matters only when tuned runs at boot."""
    try:
        tuned = tuned_loader()
    except (FactError, ParseError):
        if read_unit_state(fs, "tuned.service").enabled:
            raise
        tuned = None
    return read_boot_sysctl(fs, tuned, module_params)
