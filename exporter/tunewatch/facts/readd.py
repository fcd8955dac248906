"""Which boot-time mechanisms run again when a net device is added without a reboot.

Azure hot-removes and re-adds the Accelerated Networking VF during host servicing;
`modprobe -r`/`modprobe` and a driver update do the same. The device comes back at its
driver defaults, so a setting survives only when a mechanism runs on the device's `add`
event (SPEC §2 "After a driver update"):
- udev rules on the net device (`ACTION=="add"`; facts/netconfig.py evaluates them for
  that event) and `.link` files (udev's `net_setup_link` builtin, 80-net-setup-link.rules)
  run on every add;
- NetworkManager keyfiles and dispatcher `up` events of a device it manages (it activates
  a managed device when it appears); a dispatcher script keyed on the hv_netvsc master
  does not run, since the master stays up and gets no new `up`;
- wicked with `STARTMODE=auto|hotplug` (ifcfg(5)); RHEL ifcfg through NetworkManager's
  ifcfg-rh plugin for a managed device; the legacy network service only at boot;
- units pulled in by the device's unit (`WantedBy=`/`BindsTo=
  sys-subsystem-net-devices-%i.device`, systemd.device(5));
- boot oneshot units, rc.local and `@reboot` cron run at boot only.
"""

from __future__ import annotations

import re

from .._lazyre import lazy
from ..host.fs import FS
from . import nm_dispatch
from .services import read_unit_state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Set as AbstractSet
    from typing import Protocol

    from ..parsers.ethtool_args import EthtoolCommand

    class BootScript(Protocol):
        """What is read here of boot.BootScript (a Protocol: boot.py imports netconfig, which imports this module)."""
        source: str
        mechanism: str
        text: str

_READD_STARTMODES = {"auto", "onboot", "on", "boot", "hotplug"}  # ifcfg(5): set up when the device appears
DEVICE_UNIT_PREFIX = "sys-subsystem-net-devices-"
_IFACE_ARG = lazy(r'^\$\{?(1|DEVICE_IFACE|DEVICE_IP_IFACE)\}?$')
_BOUND = lazy(rf"^\s*(?:BindsTo|WantedBy|PartOf)\s*=.*\b{DEVICE_UNIT_PREFIX}", re.M)


def ifcfg_on_add(fs: FS, wicked: bool, values: dict[str, str], iface: str, unmanaged: AbstractSet[str]) -> bool:
    """wicked: STARTMODE auto|hotplug; RHEL: NetworkManager's ifcfg-rh plugin on a device it
    manages (the legacy network service acts at boot only)."""
    if wicked:
        return values.get("STARTMODE", "").strip().lower() in _READD_STARTMODES
    return iface not in unmanaged and read_unit_state(fs, "NetworkManager.service").enabled


def bound_to_device(fs: FS, script: BootScript) -> bool:
    """An enabled unit a net device's unit pulls in: systemd starts it again when the
    device is added (systemd.device(5); systemd.unit(5) `BindsTo=` stops it on removal)."""
    if script.mechanism != "systemd":
        return False
    if getattr(script, "device_bound", False):  # facts/boot.py: its .wants are a device unit's
        return True
    unit = script.source.rsplit("/", 1)[1]
    if any(w.startswith(DEVICE_UNIT_PREFIX) for w in read_unit_state(fs, unit).wanted_by):
        return True
    return _BOUND.search(script.text) is not None


def dispatcher_runs_for(script: BootScript, iface: str, unmanaged: AbstractSet[str]) -> bool:
    """NetworkManager raises `up` for the re-added `iface` only when it manages it, and the
    script's `$1`/`$2` guards (when it has them) must let `iface` and `up` through
    (facts/nm_dispatch.py reads them as for the boot)."""
    scope = nm_dispatch.scope_of(script.text)
    return iface not in unmanaged and scope.lets(iface) and scope.at_boot()


def script_on_add(fs: FS, cmd: EthtoolCommand, script: BootScript, targets: tuple[str, ...],
                  unmanaged: AbstractSet[str]) -> bool:
    """A dispatcher script re-runs for the device's own `up`, never through lower_* links
    of a master that stays up; a unit only when the device's unit pulls it in; rc.local
    and @reboot never."""
    if script.mechanism == "nm-dispatcher":
        iface = cmd.interface or ""
        if "lower_" in script.text and any(c in iface for c in "$%`") and not _IFACE_ARG.match(iface):
            return False  # reaches the VF through the master's lower_* links: keyed on the master
        return bool(targets) and all(dispatcher_runs_for(script, t, unmanaged) for t in targets)
    return bound_to_device(fs, script)
