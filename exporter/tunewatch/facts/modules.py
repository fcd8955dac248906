"""Kernel modules at the next boot: which load before systemd-sysctl runs, and what runs
when one loads later.

- systemd-modules-load.service (modules-load.d(5)) loads, early at boot and before
  systemd-sysctl.service, every module listed in `*.conf` of /etc, /usr/local/lib,
  /usr/lib and /lib `modules-load.d` (merged by name, the first directory wins, a link to
  /dev/null masks; /run is empty at the next boot), one name a line, `#` and `;` comments;
  and those on the kernel command line (`modules_load=`, `modules-load=`, comma-separated).
- A module built into the kernel (`lib/modules/<release>/modules.builtin`, one
  `kernel/.../name.ko` a line) is there before anything runs.
- modprobe.d(5) `install MODULE COMMAND`: modprobe runs COMMAND instead of loading the
  module; nfs-utils 2.6.2 shipped `install sunrpc /sbin/modprobe --ignore-install sunrpc
  $CMDLINE_OPTS && /sbin/sysctl -q --pattern sunrpc --system` (systemd/50-nfs.conf, commit
  afc7132d, reverted in 2.6.3 for the udev rule 60-nfs.rules). `options MODULE ...` lines
  are read by facts/sysctl.py.
"""

from __future__ import annotations

from .._record import FrozenRecord
from ..host.fs import FS
from ..parsers.modprobe import ModprobeOptions, parse_modprobe_conf, parse_modprobe_install
from ..parsers.sysctl_command import SysctlRun, find_sysctl_runs, loads_module

MODULES_LOAD_DIRS = ("etc/modules-load.d", "usr/local/lib/modules-load.d", "usr/lib/modules-load.d",
                     "lib/modules-load.d")
MODPROBE_DIRS = ("etc/modprobe.d", "usr/local/lib/modprobe.d", "usr/lib/modprobe.d", "lib/modprobe.d")


class InstallHook(FrozenRecord):
    __slots__ = ("module", "source", "command", "loads", "runs")
    module: str
    source: str  # "usr/lib/modprobe.d/50-nfs.conf:4"
    command: str
    loads: bool  # the command loads the module itself (modprobe --ignore-install)
    runs: tuple[SysctlRun, ...]  # sysctl runs after it

    def __init__(self, module: str, source: str, command: str, loads: bool, runs: tuple[SysctlRun, ...]):
        self.module = module
        self.source = source
        self.command = command
        self.loads = loads
        self.runs = runs


class ModulesBoot(FrozenRecord):
    __slots__ = ("early", "install", "options")
    early: dict[str, str]  # module -> why it is there before systemd-sysctl
    install: dict[str, InstallHook]
    options: tuple[tuple[str, ModprobeOptions], ...]  # (file, `options` line), in modprobe.d order

    def __init__(self,
                 early: dict[str, str] | None = None, install: dict[str, InstallHook] | None = None,
                 options: tuple[tuple[str, ModprobeOptions], ...] = ()):
        self.early = {} if early is None else early
        self.install = {} if install is None else install
        self.options = options


def _name(word: str) -> str:
    return word.replace("-", "_")


def _modules_load(fs: FS) -> dict[str, str]:
    early: dict[str, str] = {}
    for rel in fs.config_files(MODULES_LOAD_DIRS, "*.conf"):
        for n, line in enumerate((fs.read_text(rel) or "").split("\n"), 1):
            word = line.strip()
            if word and not word.startswith(("#", ";")):
                early.setdefault(_name(word.split()[0]), f"{rel}:{n}")
    cmdline = fs.read_value("proc/cmdline") or ""
    for arg in cmdline.split():
        key, _, value = arg.partition("=")
        if key.replace("-", "_") in ("modules_load", "rd.modules_load") and value:
            for module in value.split(","):
                early.setdefault(_name(module), f"kernel command line {arg}")
    return early


def _builtin(fs: FS, release: str) -> dict[str, str]:
    if not release or release == "unknown" or "/" in release:
        return {}
    for rel in (f"lib/modules/{release}/modules.builtin", f"usr/lib/modules/{release}/modules.builtin"):
        text = fs.read_text(rel)
        if text is not None:
            return {_name(line.strip().rsplit("/", 1)[-1][:-3]): f"built into the kernel ({rel})"
                    for line in text.split("\n") if line.strip().endswith(".ko")}
    return {}


def read_modprobe_d(fs: FS) -> tuple[dict[str, InstallHook], tuple[tuple[str, ModprobeOptions], ...]]:
    """`install` hooks and `options` lines of modprobe.d, each file read once."""
    hooks: dict[str, InstallHook] = {}
    options = []
    for rel in fs.config_files(MODPROBE_DIRS, "*.conf"):
        text = fs.read_required(rel)
        options += [(rel, opt) for opt in parse_modprobe_conf(text, rel)]
        for inst in parse_modprobe_install(text, rel):
            # kmod keeps the first install command it reads for a module (config order)
            hooks.setdefault(inst.module, InstallHook(inst.module, f"{rel}:{inst.line}", inst.command,
                                                      loads_module(inst.command, inst.module),
                                                      tuple(find_sysctl_runs(inst.command))))
    return hooks, tuple(options)


def read_modules_boot(fs: FS, release: str) -> ModulesBoot:
    early = _builtin(fs, release)
    for module, why in _modules_load(fs).items():
        early.setdefault(module, why)
    hooks, options = read_modprobe_d(fs)
    return ModulesBoot(early, hooks, options)
