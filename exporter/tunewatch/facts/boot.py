"""What re-applies NIC settings at boot: ifcfg, NetworkManager, systemd, udev.

Two views: `boot_scripts` (text of every mechanism that runs at boot: NetworkManager
dispatcher scripts, enabled systemd units with the scripts they execute, udev rules) and
`persisted_ethtool` (ethtool settings each mechanism applies, in the ethtool JSON naming:
"channels.combined", "rings.rx", "coalesce.rx-usecs", "features.large-receive-offload").
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass

from ..errors import TunewatchError
from ..fs import FS
from ..parsers.ethtool_args import find_ethtool_commands, parse_ethtool_options
from ..parsers.ini import parse_ini
from ..parsers.shellvars import parse_shell_assignments
from ..parsers.udev_rules import parse_udev_rules
from .services import UNIT_DIRS, enabled_units


@dataclass(frozen=True)
class BootScript:
    source: str
    mechanism: str  # "nm-dispatcher", "systemd", "udev"
    text: str


@dataclass(frozen=True)
class PersistedEthtool:
    source: str
    settings: dict[str, str]
    names: tuple[str, ...] = ()  # interface names it applies to
    name_globs: tuple[str, ...] = ()  # or any interface matching these
    drivers: tuple[str, ...] = ()  # or any interface of these drivers

    def applies_to(self, name: str, driver: str | None) -> bool:
        return (name in self.names
                or any(fnmatch.fnmatchcase(name, g) for g in self.name_globs)
                or (driver is not None and driver in self.drivers))


_MAX_SCRIPT_BYTES = 256 * 1024
_EXEC = re.compile(r"^\s*Exec(?:Start|StartPre|StartPost)\s*=\s*[-@:+!]*(\S+)", re.M)


def _script_text(fs: FS, path: str, remote: tuple[str, ...]) -> str:
    """Text of a script a unit runs, unless it lives on a network mount (a hung NFS
    server must not hang the scan: /opt/sas on NFS is common on SAS Grid hosts)."""
    if not path.startswith("/") or not re.match(r"^/(usr|etc|opt|root|sbin|bin|lib)/", path):
        return ""
    if any(path == m or path.startswith(m.rstrip("/") + "/") for m in remote):
        return ""
    try:  # scripts, not daemons: skip big files and binaries (dbus-daemon, tuned...)
        if os.path.getsize(fs.path(path)) > _MAX_SCRIPT_BYTES:
            return ""
        text = fs.read_text(path)
    except (OSError, TunewatchError):
        return ""
    return "" if not text or "\x00" in text else text


def boot_scripts(fs: FS, remote_mounts: tuple[str, ...] = ()) -> list[BootScript]:
    """`remote_mounts`: mount points of network file systems, never read below."""
    scripts: list[BootScript] = []
    for d in ("etc/NetworkManager/dispatcher.d", "etc/NetworkManager/dispatcher.d/pre-up.d"):
        for rel in fs.listdir(d):
            path = f"{d}/{rel}"
            # NetworkManager runs only executable files it owns; a 0644 script never runs
            if not fs.is_dir(path) and fs.is_executable(path):
                scripts.append(BootScript(path, "nm-dispatcher", fs.read_text(path) or ""))
    enabled = enabled_units(fs)
    for rel in fs.config_files(UNIT_DIRS, "*.service"):
        if fs.is_dir(rel) or rel.rsplit("/", 1)[1] not in enabled:
            continue
        text = fs.read_text(rel) or ""
        executed = "".join(_script_text(fs, m.group(1), remote_mounts) for m in _EXEC.finditer(text))
        scripts.append(BootScript(rel, "systemd", text + "\n" + executed))
    for rel in fs.config_files(("etc/udev/rules.d", "run/udev/rules.d", "usr/lib/udev/rules.d", "lib/udev/rules.d"),
                               "*.rules"):
        scripts.append(BootScript(rel, "udev", fs.read_text(rel) or ""))
    return scripts


# NetworkManager keyfile [ethtool] keys and systemd .link [Link] keys, in ethtool naming.
_NM_KEYS = {"channels-combined": "channels.combined", "channels-rx": "channels.rx", "channels-tx": "channels.tx",
            "ring-rx": "rings.rx", "ring-rx-mini": "rings.rx-mini", "ring-rx-jumbo": "rings.rx-jumbo",
            "ring-tx": "rings.tx", "coalesce-rx-usecs": "coalesce.rx-usecs", "coalesce-tx-usecs": "coalesce.tx-usecs",
            "coalesce-adaptive-rx": "coalesce.adaptive-rx", "feature-lro": "features.large-receive-offload",
            "feature-gro": "features.generic-receive-offload", "feature-tso": "features.tcp-segmentation-offload"}
_LINK_KEYS = {"CombinedChannels": "channels.combined", "RxChannels": "channels.rx", "TxChannels": "channels.tx",
              "RxBufferSize": "rings.rx", "RxMiniBufferSize": "rings.rx-mini", "RxJumboBufferSize": "rings.rx-jumbo",
              "TxBufferSize": "rings.tx", "LargeReceiveOffload": "features.large-receive-offload",
              "GenericReceiveOffload": "features.generic-receive-offload",
              "TCPSegmentationOffload": "features.tcp-segmentation-offload",
              "RxCoalesceSec": "coalesce.rx-usecs", "UseAdaptiveRxCoalesce": "coalesce.adaptive-rx"}
_BOOL = {"true": "on", "yes": "on", "1": "on", "on": "on", "false": "off", "no": "off", "0": "off", "off": "off"}


def _normalise(key: str, value: str) -> str:
    value = value.strip()
    if key.startswith("features.") or key.startswith("coalesce.adaptive"):
        return _BOOL.get(value.lower(), value)
    if key == "coalesce.rx-usecs" and value.endswith("us"):
        return value[:-2]
    return value


def _from_ifcfg(fs: FS) -> list[PersistedEthtool]:
    found = []
    for d, var in (("etc/sysconfig/network", "ETHTOOL_OPTIONS"), ("etc/sysconfig/network-scripts", "ETHTOOL_OPTS")):
        for rel in fs.glob(d, "ifcfg-*"):
            values = parse_shell_assignments(fs.read_required(rel), rel)
            iface = values.get("DEVICE") or rel.rsplit("ifcfg-", 1)[1]
            for cmd in parse_ethtool_options(values.get(var, ""), iface, rel):
                found.append(PersistedEthtool(f"{rel}:{var}", dict(cmd.settings), names=(cmd.interface or iface,)))
    return found


def _from_nm_keyfiles(fs: FS) -> list[PersistedEthtool]:
    found = []
    for rel in fs.glob("etc/NetworkManager/system-connections", "*.nmconnection"):
        conf = parse_ini(fs.read_required(rel), rel)
        iface = conf.get("connection", {}).get("interface-name")
        settings = {_NM_KEYS[k]: _normalise(_NM_KEYS[k], v) for k, v in conf.get("ethtool", {}).items() if k in _NM_KEYS}
        if iface and settings:
            found.append(PersistedEthtool(rel, settings, names=(iface,)))
    return found


def _from_link_files(fs: FS) -> list[PersistedEthtool]:
    found = []
    for d in ("etc/systemd/network", "run/systemd/network", "usr/lib/systemd/network"):
        for rel in fs.glob(d, "*.link"):
            conf = parse_ini(fs.read_required(rel), rel)
            match = conf.get("Match", {})
            settings = {_LINK_KEYS[k]: _normalise(_LINK_KEYS[k], v)
                        for k, v in conf.get("Link", {}).items() if k in _LINK_KEYS}
            if settings:
                globs = tuple(match.get("OriginalName", "").split())
                drivers = tuple(match.get("Driver", "").split())
                found.append(PersistedEthtool(rel, settings, name_globs=globs, drivers=drivers))
    return found


def _from_scripts(scripts: list[BootScript]) -> list[PersistedEthtool]:
    found = []
    for script in scripts:
        kernel_globs: tuple[str, ...] = ()
        if script.mechanism == "udev":
            for rule in parse_udev_rules(script.text, script.source):
                kernel_globs = tuple(t.value for t in rule.tokens if t.key in ("KERNEL", "NAME") and t.op == "==")
                for token in rule.tokens:
                    if token.key == "RUN":
                        found += _commands(token.value, script.source, kernel_globs)
        else:
            found += _commands(script.text, script.source, ())
    return found


def _commands(text: str, source: str, globs: tuple[str, ...]) -> list[PersistedEthtool]:
    found = []
    for cmd in find_ethtool_commands(text, source):
        literal = cmd.interface and not any(c in cmd.interface for c in "$%")
        found.append(PersistedEthtool(f"{source}:{cmd.line}", dict(cmd.settings),
                                      names=(cmd.interface,) if literal else (), name_globs=() if literal else globs))
    return found


def persisted_ethtool(fs: FS, scripts: list[BootScript]) -> list[PersistedEthtool]:
    return _from_ifcfg(fs) + _from_nm_keyfiles(fs) + _from_link_files(fs) + _from_scripts(scripts)
