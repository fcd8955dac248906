"""Facts for one scan, each read and parsed at most once.

A fact that cannot be read raises the same FactError/ParseError to every check that
asks for it (the failure is cached too), so one garbage file gives `error` results for the
checks that depend on it and costs nothing for the others.
"""

from __future__ import annotations

import functools
import time
from typing import Callable

from ..errors import FactError, ParseError
from ..fs import FS, is_network_fstype
from . import boot, cpus, ethtool, host, interfaces, irqs, mounts, processes, services, sysctl, tuned, vmware


class ScanTimeout(FactError):
    """The scan's wall-clock limit passed: facts not read yet are not read any more."""


def _remember(table: dict, key, load: Callable, deadline: float | None = None):
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
    def __init__(self, fs: FS, module_params: dict[str, str] | None = None, deadline: float | None = None):
        self.fs = vmware.source_fs(fs)  # vmware/ from vSphere with --vsphere.config
        self.deadline = deadline  # time.monotonic() after which no fact is read
        self.module_params = module_params or {}
        self._facts: dict[str, tuple[bool, object]] = {}
        self._ethtool: dict[str, tuple[bool, object]] = {}
        self._affinity: dict[int, tuple[bool, object]] = {}

    @fact
    def host(self):
        return host.read_host(self.fs)

    @fact
    def topology(self):
        return cpus.read_topology(self.fs)

    @fact
    def interfaces(self):
        return interfaces.read_interfaces(self.fs)

    @fact
    def interrupts(self):
        return irqs.read_interrupts(self.fs)

    @fact
    def processes(self):
        return processes.read_process_names(self.fs)

    @fact
    def mountinfo(self):
        return mounts.read_mountinfo(self.fs)

    @fact
    def fstab(self):
        return mounts.read_fstab(self.fs)

    @fact
    def tuned(self):
        return tuned.read_active_tuned(self.fs)

    @fact
    def sysctl_configured(self):
        return sysctl.safe_boot_sysctl(self.fs, lambda: self.tuned, self.module_params)

    @fact
    def boot_scripts(self):
        try:
            remote = tuple(m.mount_point for m in self.mountinfo if is_network_fstype(m.fstype))
        except (FactError, ParseError):
            remote = ("/",)  # mounts unknown: read no script a unit runs, only the unit files
        return boot.boot_scripts(self.fs, remote)

    @fact
    def persisted_ethtool(self):
        return boot.persisted_ethtool(self.fs, self.boot_scripts)

    @fact
    def vmx_files(self):
        return vmware.read_vmx_files(self.fs)

    @fact
    def esxcli(self):
        return vmware.read_esxcli(self.fs)

    def _in_time(self, what) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise ScanTimeout(f"scan timed out before {what} was read")

    def sysctl_runtime(self, key: str) -> str | None:
        self._in_time(key)
        return sysctl.read_runtime(self.fs, key)

    def unit_state(self, unit: str):
        self._in_time(unit)
        return services.read_unit_state(self.fs, unit)

    def ethtool(self, ifname: str) -> dict:
        return _remember(self._ethtool, ifname, lambda: ethtool.read_ethtool(self.fs, ifname), self.deadline)

    def affinity(self, irq: int):
        return _remember(self._affinity, irq, lambda: irqs.read_affinity(self.fs, irq), self.deadline)

    def read_ahead_kb(self, mount) -> int | None:
        self._in_time(f"read_ahead_kb of {mount.mount_point}")
        return mounts.read_ahead_kb(self.fs, mount)
