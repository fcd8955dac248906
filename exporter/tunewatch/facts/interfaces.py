"""Network interfaces from sys/class/net.

A NIC's IRQs are its device's `msi_irqs`; virtio_net's `device` is the virtio<N> node,
which has neither `msi_irqs` nor `numa_node`, so both are read from its parent PCI device.
Azure Accelerated Networking: the VF's `master` names the hv_netvsc interface, which lists
the VF as `lower_<vf>`.
"""

from __future__ import annotations

import os

from .._record import FrozenRecord
from ..host.fs import FS


class Interface(FrozenRecord):
    __slots__ = ("name", "operstate", "driver", "master", "lowers", "numa_node", "msi_irqs", "bus_info",
                 "master_driver", "lower_drivers")
    name: str
    operstate: str
    driver: str | None  # None for virtual interfaces without a device (lo, veth, bridges)
    master: str | None
    lowers: tuple[str, ...]
    numa_node: int | None  # None: unknown (-1 in sysfs); callers treat it as node 0
    msi_irqs: tuple[int, ...]
    bus_info: str | None
    master_driver: str | None
    lower_drivers: tuple[str, ...]

    def __init__(self,
                 name: str, operstate: str, driver: str | None, master: str | None, lowers: tuple[str, ...],
                 numa_node: int | None, msi_irqs: tuple[int, ...], bus_info: str | None,
                 master_driver: str | None = None, lower_drivers: tuple[str, ...] = ()):
        self.name = name
        self.operstate = operstate
        self.driver = driver
        self.master = master
        self.lowers = lowers
        self.numa_node = numa_node
        self.msi_irqs = msi_irqs
        self.bus_info = bus_info
        self.master_driver = master_driver
        self.lower_drivers = lower_drivers

    @property
    def up(self) -> bool:
        return self.operstate in ("up", "unknown")

    def node_or_zero(self) -> int:
        return 0 if self.numa_node is None else self.numa_node


IFNAMSIZ = 16
_KERNEL_SPACE = b" \t\n\v\f\r\xa0"  # the kernel's isspace() (lib/ctype.c: 0xa0 too)


def invalid_name(name: str) -> str | None:
    """Why the kernel could not have given an interface this name (net/core/dev.c
    dev_valid_name(): not empty, under IFNAMSIZ bytes, not `.` or `..`, no `/`, `:` or
    blank), or None. A snapshot can hold such a name; a live host cannot."""
    raw = os.fsencode(name)
    if not raw:
        return "it is empty"
    if len(raw) >= IFNAMSIZ:
        return f"it is {len(raw)} bytes long (at most {IFNAMSIZ - 1})"
    if raw in (b".", b".."):
        return "it is . or .."
    if any(b in b"/:" or b in _KERNEL_SPACE for b in raw):
        return "it holds '/', ':' or a blank"
    return None


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _device_dir(fs: FS, base: str) -> str | None:
    """The directory holding msi_irqs/numa_node: the device, or its parent for virtio."""
    device = f"{base}/device"
    if fs.exists(f"{device}/msi_irqs") or fs.exists(f"{device}/numa_node"):
        return device
    parent = f"{device}/.."
    if fs.exists(f"{parent}/msi_irqs") or fs.exists(f"{parent}/numa_node"):
        return parent
    return device if fs.exists(device) else None


def read_interface(fs: FS, name: str) -> Interface:
    base = f"sys/class/net/{name}"
    has_device = fs.exists(f"{base}/device")
    driver = fs.link_basename(f"{base}/device/driver") if has_device else None
    dev_dir = _device_dir(fs, base) if has_device else None
    irqs: tuple[int, ...] = ()
    numa: int | None = None
    bus: str | None = None
    if dev_dir:
        irqs = tuple(sorted(int(n) for n in fs.listdir(f"{dev_dir}/msi_irqs") if n.isdigit()))
        numa = _int_or_none(fs.read_value(f"{dev_dir}/numa_node"))
        if numa is not None and numa < 0:
            numa = None
        bus = os.path.basename(os.path.realpath(fs.path(dev_dir)))
    lowers = tuple(n[len("lower_"):] for n in fs.listdir(base) if n.startswith("lower_"))
    return Interface(
        name=name,
        operstate=fs.read_value(f"{base}/operstate") or "unknown",
        driver=driver,
        master=fs.link_basename(f"{base}/master"),
        lowers=lowers,
        numa_node=numa,
        msi_irqs=irqs,
        bus_info=bus,
    )


def read_interfaces(fs: FS) -> dict[str, Interface]:
    # every interface is a folder (a link to its device); the bonding driver's
    # `bonding_masters` control file lives beside them and is not an interface
    raw = {n: read_interface(fs, n) for n in fs.listdir("sys/class/net") if fs.is_dir(f"sys/class/net/{n}")}
    drivers = {n: i.driver for n, i in raw.items()}
    linked = {}
    for n, i in raw.items():
        lowers = tuple(sorted(set(i.lowers) | {m for m, j in raw.items() if j.master == n}))
        linked[n] = i.replace(lowers=lowers, master_driver=drivers.get(i.master) if i.master else None,
                              lower_drivers=tuple(drivers.get(lower) or "" for lower in lowers))
    return linked
