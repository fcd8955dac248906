"""Facts for one scan, each read and parsed at most once.

A fact that cannot be read raises the same FactError/ParseError to every check that
asks for it (the failure is cached too), so one garbage file gives `error` results for the
checks that depend on it and costs nothing for the others.
"""

from __future__ import annotations

import functools
from typing import Callable

from ..errors import FactError, ParseError
from ..fs import FS
from . import boot, cpus, ethtool, host, interfaces, irqs, mounts, processes, sysctl, tuned, vmware


def fact(method: Callable) -> property:
    """A cached property that also caches the error it raised."""
    name = "_fact_" + method.__name__

    @functools.wraps(method)
    def getter(self):
        cached = self.__dict__.get(name)
        if cached is None:
            try:
                cached = (True, method(self))
            except (FactError, ParseError) as e:
                cached = (False, e)
            self.__dict__[name] = cached
        ok, value = cached
        if not ok:
            raise value
        return value

    return property(getter)


class Facts:
    def __init__(self, fs: FS, module_params: dict[str, str] | None = None):
        self.fs = fs
        self.module_params = module_params or {}
        self._ethtool: dict[str, tuple[bool, object]] = {}
        self._affinity: dict[int, object] = {}

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
        try:
            active_tuned = self.tuned
        except (FactError, ParseError):
            active_tuned = None
        return sysctl.read_configured(self.fs, active_tuned, self.module_params)

    @fact
    def boot_scripts(self):
        return boot.boot_scripts(self.fs)

    @fact
    def persisted_ethtool(self):
        return boot.persisted_ethtool(self.fs, self.boot_scripts)

    @fact
    def vmx_files(self):
        return vmware.read_vmx_files(self.fs)

    @fact
    def esxcli(self):
        return vmware.read_esxcli(self.fs)

    def sysctl_runtime(self, key: str) -> str | None:
        return sysctl.read_runtime(self.fs, key)

    def unit_state(self, unit: str):
        return boot.read_unit_state(self.fs, unit)

    def ethtool(self, ifname: str) -> dict:
        if ifname not in self._ethtool:
            try:
                self._ethtool[ifname] = (True, ethtool.read_ethtool(self.fs, ifname))
            except FactError as e:
                self._ethtool[ifname] = (False, e)
        ok, value = self._ethtool[ifname]
        if not ok:
            raise value
        return value

    def affinity(self, irq: int):
        if irq not in self._affinity:
            try:
                self._affinity[irq] = irqs.read_affinity(self.fs, irq)
            except (FactError, ParseError) as e:
                self._affinity[irq] = e
        value = self._affinity[irq]
        if isinstance(value, Exception):
            raise value
        return value

    def read_ahead_kb(self, mount) -> int | None:
        return mounts.read_ahead_kb(self.fs, mount)
