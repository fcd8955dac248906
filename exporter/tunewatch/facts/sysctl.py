"""Sysctls at runtime (proc/sys) and as configured to come back at boot.

Configured precedence, lowest first (later wins):
1. `options <module> <param>=` in modprobe.d (a module parameter that is also a sysctl),
2. the active tuned profile's [sysctl] section (tuned re-applies sysctl.d after its own),
3. systemd-sysctl: sysctl.d files from etc/, run/, usr/local/lib/, usr/lib/ (and lib/)
   merged by file name — the first directory wins for a name — applied in lexical order
   of names, then etc/sysctl.conf last.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..fs import FS
from ..parsers.modprobe import parse_modprobe_conf
from ..parsers.sysctl_conf import parse_sysctl_conf, sysctl_key_to_path
from .tuned import TunedProfile

MODPROBE_DIRS = ("etc/modprobe.d", "run/modprobe.d", "usr/local/lib/modprobe.d", "usr/lib/modprobe.d", "lib/modprobe.d")
SYSCTL_DIRS = ("etc/sysctl.d", "run/sysctl.d", "usr/local/lib/sysctl.d", "usr/lib/sysctl.d", "lib/sysctl.d")


@dataclass(frozen=True)
class ConfiguredValue:
    value: str
    source: str  # "etc/sysctl.d/90-sas.conf:3", "etc/modprobe.d/sunrpc.conf:1", "tuned:<file>"


def read_runtime(fs: FS, key: str) -> str | None:
    value = fs.read_text(sysctl_key_to_path(key))
    return None if value is None else " ".join(value.split())


def sysctl_files(fs: FS) -> list[str]:
    files = fs.config_files(SYSCTL_DIRS, "*.conf")
    if fs.resolves("etc/sysctl.conf"):
        files.append("etc/sysctl.conf")
    return files


def read_configured(fs: FS, tuned: TunedProfile | None, module_params: dict[str, str]) -> dict[str, ConfiguredValue]:
    """Every configured sysctl and its winning value.

    `module_params` maps "module.param" (as in modprobe.d) to the sysctl key it sets,
    e.g. {"sunrpc.tcp_slot_table_entries": "sunrpc.tcp_slot_table_entries"}; it is content.
    """
    configured: dict[str, ConfiguredValue] = {}
    for rel in fs.config_files(MODPROBE_DIRS, "*.conf"):
        for opt in parse_modprobe_conf(fs.read_required(rel), rel):
            for param, value in opt.params.items():
                key = module_params.get(f"{opt.module}.{param}")
                if key:
                    configured[key] = ConfiguredValue(value, f"{rel}:{opt.line}")
    if tuned:
        for key, (value, source) in tuned.sysctl.items():
            configured[key] = ConfiguredValue(" ".join(value.split()), f"tuned {tuned.name} ({source})")
    for rel in sysctl_files(fs):
        for setting in parse_sysctl_conf(fs.read_required(rel), rel):
            configured[setting.key] = ConfiguredValue(setting.value, f"{rel}:{setting.line}")
    return configured
