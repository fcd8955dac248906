"""Facts for one scan, each read and parsed at most once.

A fact that cannot be read raises the same FactError/ParseError to every check that
asks for it (the failure is cached too), so one garbage file gives `error` results for the
checks that depend on it and costs nothing for the others.
"""

from __future__ import annotations

import functools
import sys
import time

from ..errors import FactError, ParseError
from ..host.fs import FS, is_network_fstype
from .defaults import Defaults

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Callable

    from ..parsers.mountinfo import MountInfo
    from .boot_mounts import BootMount
    from .defaults import Default
    from .irqs import IrqAffinity
    from .services import UnitState


def _reader(name: str) -> ModuleType:
    """The fact module `name`, imported when a check first asks for its fact: a scan
    loads the readers (and parsers) its checks need, not all of them (docs/architecture.md#start-up-cost)."""
    qualified = f"{__package__}.{name}"
    module = sys.modules.get(qualified)  # per IRQ and per sysctl: skip the import machinery's lock
    if module is None:
        __import__(qualified)  # import_module without importing importlib (docs/architecture.md#start-up-cost)
        module = sys.modules[qualified]
    return module


class ScanTimeout(FactError):
    """The scan's wall-clock limit passed: facts not read yet are not read any more."""


def _remember(table: dict, key: object, load: Callable, deadline: float | None = None) -> Any:
    """`load()` once per key; a FactError/ParseError is remembered and raised again."""
    if key not in table:
        if deadline is not None and time.monotonic() > deadline:
            raise ScanTimeout(f"scan timed out before {key} was read")
        try:
            table[key] = (True, load())
        except (FactError, ParseError) as e:
            table[key] = (False, e)
    ok, value = table[key]
    if not ok:
        raise value
    return value


def fact(method: Callable) -> property:
    """A cached property that also caches the error it raised."""

    @functools.wraps(method)
    def getter(self):
        return _remember(self._facts, method.__name__, lambda: method(self), self.deadline)

    return property(getter)


class Facts:
    def __init__(self, fs: FS, module_params: dict[str, str] | None = None, deadline: float | None = None,
                 defaults: Defaults | None = None):
        # vmware/ from vSphere with --vsphere.config; only whoever imported facts.vmware can
        # have configured that source, so a scan without it does not import it for nothing
        vmware = sys.modules.get(f"{__package__}.vmware")
        self.fs = fs if vmware is None else vmware.source_fs(fs)
        self.deadline = deadline  # time.monotonic() after which no fact is read
        self.module_params = module_params or {}
        self.defaults = defaults if defaults is not None else Defaults()  # content: checks/defaults
        self._facts: dict[str, tuple[bool, object]] = {}
        self._ethtool: dict[str, tuple[bool, object]] = {}
        self._affinity: dict[int, tuple[bool, object]] = {}
        self._sysctls: dict[str, tuple[bool, object]] = {}
        self.selections: dict[tuple, tuple] = {}  # kinds.selectors: object selections made this scan

    @fact
    def host(self):
        return _reader("host").read_host(self.fs)

    @fact
    def topology(self):
        return _reader("cpus").read_topology(self.fs)

    @fact
    def interfaces(self):
        return _reader("interfaces").read_interfaces(self.fs)

    @fact
    def interrupts(self):
        """The rows of the NICs' IRQs (msi_irqs), the only ones a check reads; every row
        when the interfaces are unreadable."""
        try:
            wanted = {irq for iface in self.interfaces.values() for irq in iface.msi_irqs}
        except (FactError, ParseError):
            wanted = None
        return _reader("irqs").read_interrupts(self.fs, wanted)

    @fact
    def processes(self):
        return _reader("processes").read_process_names(self.fs)

    @fact
    def mountinfo(self):
        return _reader("mounts").read_mountinfo(self.fs)

    @fact
    def fstab(self):
        return _reader("mounts").read_fstab(self.fs)

    @fact
    def boot_mounts(self):
        """Mount point -> how it mounts at the next boot (fstab, .mount unit, autofs)."""
        return _reader("boot_mounts").read_boot_mounts(self.fs)

    def boot_mount(self, mount_point: str) -> BootMount | None:
        found = self.boot_mounts.get(mount_point)  # the usual case, per mount and check: a point fstab names
        if found is not None:
            return found
        return _reader("boot_mounts").boot_mount_for(self.boot_mounts, self.fs, mount_point)

    @fact
    def tuned(self):
        return _reader("tuned").read_active_tuned(self.fs, self.defaults.layouts.get("tuned"))

    @fact
    def sysctl_configured(self):
        return _reader("sysctl").safe_boot_sysctl(self.fs, lambda: self.tuned, self.module_params, self.modules_boot,
                                       self.module_sysctl_hooks, self._saptune)

    def _saptune(self):
        """saptune's note writes when saptune.service starts at boot (facts/saptune.py)."""
        try:
            host = self.host
        except (FactError, ParseError):
            host = None
        return _reader("saptune").read_saptune_writes(self.fs, host)

    @fact
    def modules_boot(self):
        # modules.builtin of the kernel that boots next: a module built into it loads before
        # systemd-sysctl. Only the modules of `module_params` are ever asked about: without
        # them an unreadable boot loader file (root-only /boot/grub2 on RHEL) costs nothing
        release = self.next_kernel.release if self.module_params else ""
        return _reader("modules").read_modules_boot(self.fs, release)

    @fact
    def next_kernel(self):
        """The kernel the boot loader picks next (facts/nextkernel.py), read once per scan:
        every default and kernel table of a boot prediction is taken for it."""
        return _reader("nextkernel").read_next_kernel(self.fs, self.host.kernel)

    def default(self, module: str, setting: str, vcpus: int | None = None, device: dict | None = None,
                running: bool = False) -> Default | None:
        """The driver/module/kernel default of `setting` for the kernel that boots next
        (`running`: for the running kernel, as a driver re-added without a reboot comes
        back: `... of the running kernel R`), its source naming that kernel (and the running
        one when they differ); None
        when content does not know it. FactError/ParseError when the next kernel cannot be told."""
        try:
            same = self.defaults.lookup(module, setting, self.host, vcpus, device)
        except (FactError, ParseError):
            same = None
        if same is not None and same.assumption == "all kernels":  # content keys it by no kernel: none to name
            return same.replace(source=f"{same.source}, the same for every kernel")
        nxt = self.next_kernel if not running else None
        kernel = nxt.release if nxt is not None else None
        try:
            host = self.host if kernel is None else self.host.replace(kernel=kernel)
        except (FactError, ParseError):
            host = None
        found = self.defaults.lookup(module, setting, host, vcpus, device)
        if found is None:
            return None
        if running:
            return found.replace(source=f"{found.source} of the running kernel "
                                        f"{host.kernel if host else '(release unreadable)'}")
        if nxt is None:
            return found.replace(source=f"{found.source} of {host.kernel if host else 'unknown'} (the running kernel)")
        return found.replace(source=f"{found.source} of {nxt.describe()}")

    @fact
    def udev_rules(self):
        return _reader("udev").read_rules(self.fs)

    @fact
    def module_sysctl_hooks(self):
        """Programs that apply sysctl files when a module of `module_params` loads: its
        modprobe.d `install` line (run by modprobe, first), then the udev rules RUN for its
        "add" event (SUBSYSTEM "module", KERNEL its name)."""
        from ..parsers.sysctl_command import find_sysctl_runs  # only with module_params (start-up cost)

        hooks = []
        for module in sorted({p.split(".", 1)[0] for p in self.module_params}):
            inst = self.modules_boot.install.get(module)
            if inst is not None and inst.loads:
                hooks += [_reader("sysctl").SysctlHook(module, f"{inst.source} (install)", run) for run in inst.runs]
            udev = _reader("udev")
            out = udev.evaluate(self.udev_rules, udev.UdevDevice({"SUBSYSTEM": "module", "KERNEL": module}))
            hooks += [_reader("sysctl").SysctlHook(module, f"{src}:{line}", run)
                      for program, src, line in out.run for run in find_sysctl_runs(program)]
        return hooks

    @fact
    def boot_scripts(self):
        try:
            remote = tuple(m.mount_point for m in self.mountinfo if is_network_fstype(m.fstype))
        except (FactError, ParseError):
            remote = ("/",)  # mounts unknown: read no script a unit runs, only the unit files
        return _reader("boot").boot_scripts(self.fs, remote)

    @fact
    def net_devices(self):
        return _reader("netdevice").read_net_devices(self.fs, self.interfaces)

    @fact
    def udev_net_outcomes(self):
        """What udev does for each interface's "add" event (the rules read once per scan)."""
        udev, netconfig = _reader("udev"), _reader("netconfig")
        return {name: udev.evaluate(self.udev_rules, netconfig.udev_device(self.fs, dev))
                for name, dev in self.net_devices.items()}

    @fact
    def udev_net_programs(self):
        """Per interface, the programs udev RUNs for it, `%k` etc. replaced by its name."""
        return {name: [(_reader("udev").substitute(p, name), src, line) for p, src, line in out.run]
                for name, out in self.udev_net_outcomes.items()}

    @fact
    def nm_unmanaged(self):
        """Interfaces NetworkManager leaves unmanaged at the next boot, and why (facts/nmconf.py)."""
        return _reader("nmconf").unmanaged_devices(self.fs, self.net_devices,
                                                   {n: out.env for n, out in self.udev_net_outcomes.items()})

    @fact
    def persisted_ethtool(self):
        try:
            host = self.host
        except (FactError, ParseError):
            host = None  # release unknown: every reader any release has is considered
        readers = _reader("defaults").readers
        return _reader("boot").persisted_ethtool(self.fs, self.boot_scripts, self.interfaces, self.net_devices,
                                      self.udev_net_outcomes, lambda fmt: readers(self.defaults, fmt, host),
                                      self.defaults.layouts.get("tuned"))

    @fact
    def vmx_files(self):
        return _reader("vmware").read_vmx_files(self.fs)

    @fact
    def esxcli(self):
        return _reader("vmware").read_esxcli(self.fs)

    def _in_time(self, what: object) -> None:
        if self._late():
            raise ScanTimeout(f"scan timed out before {what} was read")

    def _late(self) -> bool:
        """Past the scan's deadline: a read ahead is skipped, each fact's own read says so."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def sysctl_runtime(self, key: str) -> str | None:
        """proc/sys value of `key`, read once per scan (applicability and checks share it)."""
        # sysctl_runtime, not sysctl: the boot-time reader and its parsers are not needed here
        return _remember(self._sysctls, key, lambda: _reader("sysctl_runtime").read_runtime(self.fs, key),
                         self.deadline)

    def process_identity(self, pid: int) -> tuple[str | None, int | None]:
        """(exe, uid) of one process (facts/processes.py): only for the few a check names."""
        return _reader("processes").read_process_identity(self.fs, pid)

    def unit_state(self, unit: str) -> UnitState:
        self._in_time(unit)
        return _reader("services").read_unit_state(self.fs, unit)

    def ethtool(self, ifname: str) -> dict:
        return _remember(self._ethtool, ifname, lambda: _reader("ethtool").read_ethtool(self.fs, ifname), self.deadline)

    def affinity(self, irq: int) -> IrqAffinity | None:
        return _remember(self._affinity, irq, lambda: _reader("irqs").read_affinity(self.fs, irq), self.deadline)

    def prefetch_affinities(self, irqs: list[int]) -> None:
        """The affinity files of these IRQs read in one pass, for a check about to ask
        affinity() of each (facts/irqs.prefetch_affinities)."""
        todo = [irq for irq in irqs if irq not in self._affinity]
        if len(todo) > 1 and not self._late():
            _reader("irqs").prefetch_affinities(self.fs, todo)

    def read_ahead_kb(self, mount: MountInfo) -> int | None:
        if self.deadline is not None:  # per mount: the message is made only where a deadline can pass
            self._in_time(f"read_ahead_kb of {mount.mount_point}")
        return _reader("mounts").read_ahead_kb(self.fs, mount)

    def prefetch_read_ahead_kb(self, mounts: list[MountInfo]) -> None:
        """The read_ahead_kb files of these mounts' bdis read in one pass, for a check about
        to ask read_ahead_kb() of each (facts/mounts.prefetch_read_ahead_kb)."""
        if len(mounts) > 1 and not self._late():
            _reader("mounts").prefetch_read_ahead_kb(self.fs, mounts)
