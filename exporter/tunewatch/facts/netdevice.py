"""A network interface as the configuration consumers see it when they match it: udev
(kernel name, sysfs attributes, the parent devices' drivers and subsystems), systemd .link
files (driver, hardware and permanent MAC address, ID_PATH, type) and NetworkManager
(interface name, permanent MAC, driver).

Read from sysfs under the root: `sys/class/net/<if>` links to the device's directory in
`sys/devices/...`; its parents are the directories above it. The permanent MAC is the
`address` when `addr_assign_type` is 0 (NET_ADDR_PERM); otherwise it is unknown here.
"""

from __future__ import annotations

import os

from .._record import FrozenRecord
from ..host.fs import FS
from .interfaces import Interface

_ARPHRD = {"1": "ether", "772": "loopback", "32": "infiniband", "65534": "none"}


class SysDevice(FrozenRecord):
    __slots__ = ("rel", "kernel", "subsystem", "driver")
    rel: str  # directory under the root
    kernel: str
    subsystem: str | None
    driver: str | None

    def __init__(self, rel: str, kernel: str, subsystem: str | None, driver: str | None):
        self.rel = rel
        self.kernel = kernel
        self.subsystem = subsystem
        self.driver = driver


class NetDevice(FrozenRecord):
    __slots__ = ("name", "driver", "mac", "permanent_mac", "id_path", "type", "rel", "parents")
    name: str
    driver: str | None  # the parent device's driver (udev ID_NET_DRIVER)
    mac: str | None
    permanent_mac: str | None
    id_path: str | None
    type: str | None
    rel: str  # sys/class/net/<name>
    parents: tuple[SysDevice, ...]  # nearest first

    def __init__(self,
                 name: str, driver: str | None, mac: str | None, permanent_mac: str | None, id_path: str | None,
                 type: str | None, rel: str, parents: tuple[SysDevice, ...]):
        self.name = name
        self.driver = driver
        self.mac = mac
        self.permanent_mac = permanent_mac
        self.id_path = id_path
        self.type = type
        self.rel = rel
        self.parents = parents


def _parents(fs: FS, name: str) -> tuple[SysDevice, ...]:
    """The device behind `device` and every directory above it up to sys/devices (the
    same chain whether sys/class/net/<if> is the kernel's link or a collected directory)."""
    device = f"sys/class/net/{name}/device"
    # fs.path resolves links inside a snapshot root; a live path is resolved by the kernel's
    rel = os.path.realpath(fs.path(device)).lstrip("/") if fs.live else os.path.relpath(fs.path(device), fs.root)
    out = []
    while rel.startswith("sys/devices/"):
        out.append(SysDevice(rel, os.path.basename(rel), fs.link_basename(f"{rel}/subsystem"),
                             fs.link_basename(f"{rel}/driver")))
        rel = os.path.dirname(rel)
    return tuple(out)


def _id_path(iface: Interface) -> str | None:
    """udev's path_id for a PCI NIC (`pci-0000:0b:00.0`); None when it cannot be told."""
    if iface.bus_info and iface.bus_info.count(":") == 2 and "." in iface.bus_info:
        return f"pci-{iface.bus_info}"
    return None


def read_net_device(fs: FS, iface: Interface) -> NetDevice:
    base = f"sys/class/net/{iface.name}"
    mac = (fs.read_value(f"{base}/address") or "").lower() or None
    assign = fs.read_value(f"{base}/addr_assign_type")
    parents = _parents(fs, iface.name) if fs.exists(f"{base}/device") else ()
    return NetDevice(name=iface.name, driver=iface.driver, mac=mac,
                     permanent_mac=mac if assign == "0" else None,
                     id_path=_id_path(iface),
                     type=_ARPHRD.get(fs.read_value(f"{base}/type") or "1", "ether"),
                     rel=base, parents=parents)


def read_net_devices(fs: FS, interfaces: dict[str, Interface]) -> dict[str, NetDevice]:
    return {n: read_net_device(fs, i) for n, i in interfaces.items()}
