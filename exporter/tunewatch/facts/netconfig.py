"""ethtool settings each boot-time consumer would apply, and to which interfaces.

Every entry names the interfaces it reaches (`targets`), judged the way its consumer
binds configuration to a device; an entry with a `problem` applies nothing and says why:
- Only a consumer that starts at boot applies anything: SUSE ifcfg needs wicked.service
  enabled, RHEL ifcfg NetworkManager.service (ifcfg-rh plugin) or network.service, keyfiles
  and dispatcher scripts NetworkManager.service (systemd unit state, facts/services.py).
- ifcfg (SUSE wicked `ETHTOOL_OPTIONS`, RHEL `ETHTOOL_OPTS` read by NetworkManager's
  ifcfg-rh plugin and initscripts): applies to the file's own interface (DEVICE=, else the
  name after `ifcfg-`); the interface word in each command is a placeholder both consumers
  skip (`iface`, `*`, `${DEVICE}`, the name itself). A command naming another interface
  still configures the file's interface, never the one named. RHEL splits ETHTOOL_OPTS into
  commands at `;`. wicked reads every variable whose name starts with ETHTOOL_OPTIONS (the
  plain one and `ETHTOOL_OPTIONS_lro`...), each as ONE `-X <if> args` command split at
  blanks only (compat-suse.c `ni_suse_ifcfg_get_ethtool()` -> `__process_indexed_variables(
  ..., "ETHTOOL_OPTIONS", try_add_ethtool_vars)`, suffix "" for the plain one;
  `try_add_ethtool_vars()`: `ni_string_split(&opts, var->value, " \t", 0)`): a `;` there
  separates nothing, so such a variable is reported as applying nothing.
- NetworkManager keyfiles (nm-settings-keyfile(5)): read only when owned by root with no
  group/other permission bits (NM: "File permissions (...) are insecure"); bound by
  `connection.interface-name`, `[ethernet] mac-address` (the permanent MAC), and the
  `[match]` `interface-name=` / `driver=` lists (`;`-separated globs, `!` negation, `&`
  mandatory, `|` optional, as nm-settings-nmcli(5)). Only the exact NM option names apply.
  A device a udev rule marks `ENV{NM_UNMANAGED}="1"` (Azure images do so for the AN VF,
  `68-azure-sriov-nm-unmanaged.rules`) is never activated by NetworkManager.
- systemd .link files (systemd.link(5)): per interface, only the first matching file in
  lexical order of names applies.
- udev rules (udev(7)): programs `RUN` collects for the device, `%k`/`$kernel` being it.
- Boot scripts (NetworkManager dispatcher scripts, enabled units and what they run): a
  literal interface name reaches that interface; a dispatcher script's `$1`/
  `$DEVICE_IFACE` is the interface NetworkManager runs it for (restricted by `"$1" = "x"`
  tests when it has them); another variable in a script that reads `lower_*` links
  reaches the VFs of those interfaces. Anything else is not credited.
"""

from __future__ import annotations

import fnmatch
import re

from .._lazyre import lazy
from .._record import FrozenRecord
from ..host.fs import FS
from ..parsers.ethtool_args import EthtoolCommand, find_ethtool_commands, parse_ethtool_options, suggest
from ..parsers.ini import parse_ini
from ..parsers.shellvars import parse_shell_assignments
from ..parsers.systemd_link import LinkFile, parse_link_file
from . import readd, udev
from .udev_device import path_test, sysattr_reader, uevent as _uevent
from .filestat import file_stat
from .interfaces import Interface
from .netdevice import NetDevice, read_net_devices
from .services import read_unit_state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Set as AbstractSet
    from typing import Protocol

    class BootScript(Protocol):
        """What is read here of boot.BootScript (a Protocol: boot.py imports this module)."""
        source: str
        mechanism: str
        text: str


class PersistedEthtool(FrozenRecord):
    __slots__ = ("source", "settings", "targets", "problem", "on_add")
    source: str
    settings: dict[str, str]
    targets: tuple[str, ...]  # interfaces the consumer applies it to
    problem: str | None  # why it applies nothing
    on_add: bool | None  # does the consumer apply it again when the device is re-added? None: not classified

    def __init__(self, source: str, settings: dict[str, str], targets: tuple[str, ...], problem: str | None = None,
                 on_add: bool | None = None):
        self.source = source
        self.settings = settings
        self.targets = targets
        self.problem = problem
        self.on_add = on_add


LINK_DIRS = ("etc/systemd/network", "run/systemd/network", "usr/local/lib/systemd/network",
             "usr/lib/systemd/network", "lib/systemd/network")
# nm-settings-keyfile(5): /etc holds persistent profiles, /usr/lib read-only ones; profiles in
# /run/NetworkManager/system-connections are in-memory and gone after a reboot
NM_DIRS = ("etc/NetworkManager/system-connections", "usr/lib/NetworkManager/system-connections")
NM_KEYS = {"channels-combined": "channels.combined", "channels-rx": "channels.rx", "channels-tx": "channels.tx",
           "channels-other": "channels.other", "ring-rx": "rings.rx", "ring-rx-mini": "rings.rx-mini",
           "ring-rx-jumbo": "rings.rx-jumbo", "ring-tx": "rings.tx", "coalesce-rx-usecs": "coalesce.rx-usecs",
           "coalesce-tx-usecs": "coalesce.tx-usecs", "coalesce-rx-frames": "coalesce.rx-frames",
           "coalesce-tx-frames": "coalesce.tx-frames", "coalesce-adaptive-rx": "coalesce.adaptive-rx",
           "coalesce-adaptive-tx": "coalesce.adaptive-tx", "feature-lro": "features.large-receive-offload",
           "feature-gro": "features.generic-receive-offload", "feature-gso": "features.generic-segmentation-offload",
           "feature-tso": "features.tcp-segmentation-offload", "feature-rx": "features.rx-checksumming",
           "feature-tx": "features.tx-checksumming", "feature-sg": "features.scatter-gather",
           "feature-rxhash": "features.receive-hashing", "feature-ntuple": "features.ntuple-filters",
           "feature-rxvlan": "features.rx-vlan-offload", "feature-txvlan": "features.tx-vlan-offload"}
_GKEYFILE_BOOL = {"true": "on", "1": "on", "false": "off", "0": "off"}
_IFACE_ARG = lazy(r'^\$\{?(1|DEVICE_IFACE|DEVICE_IP_IFACE)\}?$')
_GUARD = lazy(r'"?\$\{?(?:1|DEVICE_IFACE|DEVICE_IP_IFACE)\}?"?\s*={1,2}\s*"?([\w.:-]+)"?')


def consumer_problem(fs: FS, units: tuple[str, ...], what: str) -> str | None:
    """None when one of `units` starts at boot; else why `what` is never read."""
    states = [read_unit_state(fs, u) for u in units]
    if any(s.enabled for s in states):
        return None
    shown = ", ".join(f"{s.unit} is {s.state.replace('-', ' ')}" for s in states)
    return f"{what} is read at boot only by {' or '.join(units)}, and {shown}"


_WICKED_VAR = "ETHTOOL_OPTIONS"
_IFCFG = (("etc/sysconfig/network", _WICKED_VAR, ("wicked.service",)),
          ("etc/sysconfig/network-scripts", "ETHTOOL_OPTS", ("NetworkManager.service", "network.service")))
# ifcfg(5) (wicked): STARTMODE "manual*" is the default and is not set up at boot
# ifcfg(5): files with these endings are ignored
_IFCFG_IGNORED = ("~", ".old", ".bak", ".orig", ".rpmnew", ".rpmsave", ".rpmorig", ".scpmbackup")
_BOOT_STARTMODES = {"auto", "onboot", "on", "boot", "hotplug", "nfsroot", "ifplugd"}


def _not_at_boot(var: str, values: dict[str, str], iface: str) -> str | None:
    if var == _WICKED_VAR:
        mode = values.get("STARTMODE", "").strip().lower()
        if mode not in _BOOT_STARTMODES:
            return f"STARTMODE={mode or 'manual (the default)'}: wicked does not set {iface} up at boot"
    elif values.get("ONBOOT", "yes").strip().lower() in ("no", "false", "0"):
        return f"ONBOOT={values['ONBOOT']}: {iface} is not activated at boot"
    return None


# -- ifcfg ----------------------------------------------------------------------------

def _ifcfg_variables(var: str, values: dict[str, str]) -> list[str]:
    """The variables a consumer reads: wicked every non-empty ETHTOOL_OPTIONS<suffix>
    (`__process_indexed_variables()`, the unsuffixed one being suffix ""), RHEL only ETHTOOL_OPTS."""
    if var == _WICKED_VAR:
        return sorted(v for v in values if v.startswith(var) and values[v].strip())
    return [var] if values.get(var, "").strip() else []


def _wicked_unsplit(var: str, value: str) -> str:
    return (f"{var}={value.strip()!r}: wicked reads each ETHTOOL_OPTIONS variable as one ethtool command and does "
            f"not split it at ';' (put each command in its own ETHTOOL_OPTIONS_<suffix>)")


def _from_ifcfg(fs: FS, names: set[str], unmanaged: AbstractSet[str] = frozenset()) -> list[PersistedEthtool]:
    found = []
    for d, consumer_var, units in _IFCFG:
        for rel in fs.glob(d, "ifcfg-*"):
            if rel.endswith(_IFCFG_IGNORED):
                continue
            values = parse_shell_assignments(fs.read_required(rel), rel)
            iface = values.get("DEVICE") or rel.rsplit("ifcfg-", 1)[1]
            variables = _ifcfg_variables(consumer_var, values)
            off = (consumer_problem(fs, units, rel.rsplit("/", 1)[1]) or _not_at_boot(consumer_var, values, iface)) \
                if variables else None
            for var in variables:
                source, value = f"{rel}:{var}", values[var]
                if consumer_var == _WICKED_VAR and ";" in value:
                    found.append(PersistedEthtool(source, {}, (iface,), _wicked_unsplit(var, value)))
                    continue
                on_add = readd.ifcfg_on_add(fs, consumer_var == _WICKED_VAR, values, iface, unmanaged)
                for cmd in parse_ethtool_options(value, iface, rel):
                    problem = off or cmd.problem
                    if not problem and cmd.interface not in (iface, None) and cmd.interface in names:
                        problem = (f"names {cmd.interface}, but {var} of {rel.rsplit('/', 1)[1]} configures {iface} "
                                   f"(the interface word is a placeholder)")
                    found.append(PersistedEthtool(source, dict(cmd.settings), (iface,), problem, on_add))
    return found


# -- NetworkManager keyfiles ------------------------------------------------------------

def _nm_list_match(spec: str, value: str | None) -> bool:
    """nm-settings-nmcli(5) match lists: `|` optional (ORed), `&` mandatory, `!` inverts."""
    optional, hit_optional = False, False
    for item in (i.strip() for i in spec.split(";")):
        if not item:
            continue
        mandatory = item.startswith("&")
        item = item.lstrip("|&")
        inverted = item.startswith("!")
        item = item.lstrip("!").removeprefix("\\")
        hit = value is not None and fnmatch.fnmatchcase(value, item)
        if inverted or mandatory:
            if hit == inverted:
                return False
        else:
            optional = True
            hit_optional = hit_optional or hit
    return hit_optional or not optional


def _nm_binds(conf: dict, dev: NetDevice) -> bool:
    conn, wired, match = conf.get("connection", {}), conf.get("ethernet", {}), conf.get("match", {})
    if conn.get("interface-name") and conn["interface-name"] != dev.name:
        return False
    if wired.get("mac-address") and wired["mac-address"].lower() != dev.permanent_mac:
        return False
    if match.get("interface-name") and not _nm_list_match(match["interface-name"], dev.name):
        return False
    if match.get("driver") and not _nm_list_match(match["driver"], dev.driver):
        return False
    return any((conn.get("interface-name"), wired.get("mac-address"), match.get("interface-name"), match.get("driver")))


def _nm_settings(section: dict, rel: str) -> tuple[dict[str, str], list[str]]:
    settings, unknown = {}, []
    for key, value in section.items():
        if key not in NM_KEYS:
            right = suggest(key, NM_KEYS)
            unknown.append(f"{key} (NetworkManager ignores it" + (f"; the option is {right})" if right else ")"))
            continue
        name = NM_KEYS[key]
        if name.startswith("features.") or "adaptive" in name:
            settings[name] = _GKEYFILE_BOOL.get(value.strip().lower(), value)
        else:
            settings[name] = value.strip()
    return settings, unknown


def _from_nm_keyfiles(fs: FS, devices: dict[str, NetDevice], unmanaged: set[str]) -> list[PersistedEthtool]:
    found = []
    nm_off = None
    for rel in fs.config_files(NM_DIRS, "*.nmconnection"):
        conf = parse_ini(fs.read_required(rel), rel)
        settings, unknown = _nm_settings(conf.get("ethtool", {}), rel)
        if not settings and not unknown:
            continue
        bound = [n for n, d in devices.items() if _nm_binds(conf, d)]
        if not bound:
            continue  # bound to no interface here (or to none at all: NM picks any free device, not judged)
        targets = tuple(n for n in bound if n not in unmanaged)
        for n in bound:
            if n in unmanaged:
                found.append(PersistedEthtool(rel, {}, (n,), f"a udev rule sets NM_UNMANAGED=1 for {n}: "
                                                             f"NetworkManager never activates {rel} on it"))
        st = file_stat(fs, rel)
        nm_off = nm_off or consumer_problem(fs, ("NetworkManager.service",), "a keyfile")
        problem = nm_off
        if conf.get("connection", {}).get("autoconnect", "true").strip().lower() in ("false", "0", "no"):
            problem = problem or "autoconnect=false: NetworkManager does not activate it at boot"
        if st is not None and (st.uid != 0 or st.mode & 0o077 or not st.regular):
            problem = (f"NetworkManager ignores {rel}: owner uid {st.uid}, mode {st.mode:04o} (a keyfile must be a "
                       f"regular file owned by root with no group/other permissions, e.g. 0600)")
        found.append(PersistedEthtool(rel, settings if not problem else {}, targets, problem, on_add=True))
        if unknown and not problem:
            found.append(PersistedEthtool(rel, {}, targets, "unknown [ethtool] keys: " + ", ".join(unknown)))
    return found


# -- systemd .link files ---------------------------------------------------------------

_HOST_CONDITIONS = {"Host", "Virtualization", "KernelCommandLine", "KernelVersion", "Architecture", "Firmware",
                    "Credential"}


def _link_key_matches(key: str, values: tuple[str, ...], dev: NetDevice) -> bool:
    """One [Match] key, as systemd's net_condition_test_strv(): a matching negative item
    fails it; with positive items, one of them must match."""
    if key in _HOST_CONDITIONS:
        return True  # conditions on the host, not the interface: not judged here
    props = {"ID_NET_DRIVER": dev.driver, "INTERFACE": dev.name, "ID_PATH": dev.id_path}
    subjects = {"OriginalName": dev.name, "Driver": dev.driver, "Path": dev.id_path, "Type": dev.type,
                "MACAddress": dev.mac, "PermanentMACAddress": dev.permanent_mac, "Kind": None}
    positive, hit = False, False
    for v in values:
        inverted = v.startswith("!")
        pattern = v[1:] if inverted else v
        if key in ("MACAddress", "PermanentMACAddress"):
            subject = subjects[key]
            matched = subject is not None and subject == pattern.lower().replace("-", ":")
        elif key == "Property":
            prop, _, pattern = pattern.partition("=")
            subject = props.get(prop)
            matched = subject is not None and fnmatch.fnmatchcase(subject, pattern)
        else:
            subject = subjects.get(key)
            matched = subject is not None and fnmatch.fnmatchcase(subject, pattern)
        if inverted and matched:
            return False
        if not inverted:
            positive, hit = True, hit or matched
    return hit or not positive


def link_applies(link: LinkFile, dev: NetDevice) -> bool:
    return all(_link_key_matches(m.key, m.values, dev) for m in link.match)


def _from_link_files(fs: FS, devices: dict[str, NetDevice]) -> list[PersistedEthtool]:
    links = []
    for rel in fs.config_files(LINK_DIRS, "*.link"):
        text = fs.read_required(rel)
        if text.strip():  # systemd.link(5): an empty file masks the name, like /dev/null
            links.append(parse_link_file(text, rel))
    found = []
    for name, dev in devices.items():
        first = next((link for link in links if link_applies(link, dev)), None)
        if first is None:
            continue
        if first.settings:
            found.append(PersistedEthtool(first.source, dict(first.settings), (name,), on_add=True))
        for why in first.rejected:
            found.append(PersistedEthtool(first.source, {}, (name,), why))
        for later in links[links.index(first) + 1:]:
            if later.settings and link_applies(later, dev):
                found.append(PersistedEthtool(later.source, {}, (name,),
                                              f"{later.source} also matches {name} but only the first matching "
                                              f".link file applies ({first.source})"))
    return found


# -- udev rules and boot scripts -----------------------------------------------------

def udev_device(fs: FS, dev: NetDevice) -> udev.UdevDevice:
    """The "add" event of a network interface: its uevent properties (INTERFACE, IFINDEX,
    DEVTYPE), SUBSYSTEM=net, no driver of its own, ID_NET_DRIVER (the net_driver /
    net_setup_link builtins of the vendor rules), and its parents up the sysfs tree."""
    props = {"INTERFACE": dev.name, "IFINDEX": fs.read_value(f"{dev.rel}/ifindex") or "0",
             **_uevent(fs, dev.rel), "SUBSYSTEM": "net", "ACTION": "add"}
    if dev.driver:
        props["ID_NET_DRIVER"] = dev.driver
    me = udev.Level(dev.name, "net", None, sysattr_reader(fs, dev.rel))
    parents = tuple(udev.Level(p.kernel, p.subsystem, p.driver, sysattr_reader(fs, p.rel), "/" + p.rel[4:])
                    for p in dev.parents)
    values = {"KERNEL": dev.name, "NAME": dev.name, "SUBSYSTEM": "net", "DRIVER": None,
              **{f"ENV{{{k}}}": v for k, v in props.items()}}
    return udev.UdevDevice(values, me.attr, (me, *parents), test=path_test(fs, dev.rel))


def udev_outcomes(fs: FS, devices: dict[str, NetDevice]) -> dict[str, udev.UdevOutcome]:
    files = udev.read_rules(fs)
    return {name: udev.evaluate(files, udev_device(fs, d)) for name, d in devices.items()}


def _from_udev(outcomes: dict[str, udev.UdevOutcome]) -> list[PersistedEthtool]:
    found = []
    for name, out in outcomes.items():
        for program, source, line in ((udev.substitute(p, name), s, n) for p, s, n in out.run):
            for cmd in find_ethtool_commands(program, source):
                found.append(_entry(f"{source}:{line}", cmd, (cmd.interface,) if cmd.interface else (), True))
        for ign in out.ignored:  # a line udev drops: named on the interfaces it was meant for
            for cmd in (c for p in ign.run for c in find_ethtool_commands(udev.substitute(p, name), ign.source)):
                if cmd.settings:
                    found.append(PersistedEthtool(f"{ign.source}:{ign.line}", {}, (cmd.interface or name,),
                                                  f"udev drops this line ({ign.problem}), so it never sets "
                                                  + ", ".join(f"{k} {v}" for k, v in dict(cmd.settings).items())))
    return found


def _entry(source: str, cmd: EthtoolCommand, targets: tuple[str, ...], on_add: bool | None = None) -> PersistedEthtool:
    return PersistedEthtool(source, dict(cmd.settings), targets, cmd.problem, on_add)


_ALL_LOWERS = lazy(r"/sys/class/net/\*/lower_")


def _named(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", text) is not None


def _script_targets(cmd: EthtoolCommand, script: BootScript, interfaces: dict[str, Interface]) -> tuple[str, ...]:
    """A literal interface reaches itself; a dispatcher script's `$1` the interfaces it runs
    for; another variable, in a script that reads `lower_*` links, the VFs below the
    interfaces it runs for (dispatcher) or names (any other mechanism: a unit's arguments
    are substituted into its script, facts/boot.py), or below every interface when it
    globs `/sys/class/net/*/lower_*`."""
    iface = cmd.interface or ""
    if not any(c in iface for c in "$%`"):
        return (iface,) if iface else ()
    if script.mechanism == "nm-dispatcher":
        guards = set(_GUARD.findall(script.text))
        runs_for = [n for n in interfaces if not guards or n in guards]
        if _IFACE_ARG.match(iface):
            return tuple(runs_for)
    elif _ALL_LOWERS.search(script.text):
        runs_for = list(interfaces)
    else:
        runs_for = [n for n in interfaces if interfaces[n].lowers and _named(n, script.text)]
    if "lower_" in script.text:  # the script resolves the VF below the interface it runs for
        return tuple(vf for n in runs_for for vf in interfaces[n].lowers)
    return ()


def _from_scripts(scripts: list[BootScript], interfaces: dict[str, Interface], fs: FS | None = None,
                  unmanaged: AbstractSet[str] = frozenset()) -> list[PersistedEthtool]:
    found = []
    for script in scripts:
        if script.mechanism == "udev":
            continue  # judged per device by _from_udev
        for cmd in find_ethtool_commands(script.text, script.source):
            targets = _script_targets(cmd, script, interfaces)
            on_add = readd.script_on_add(fs, cmd, script, targets, unmanaged) if fs is not None else None
            found.append(_entry(f"{script.source}:{cmd.line}", cmd, targets, on_add))
    return found


def persisted_ethtool(fs: FS, scripts: list[BootScript], interfaces: dict[str, Interface], devices: dict | None = None,
                      outcomes: dict | None = None) -> list[PersistedEthtool]:
    """`devices` and `outcomes` (udev per device), when the caller has them already."""
    devices = devices if devices is not None else read_net_devices(fs, interfaces)
    outcomes = outcomes if outcomes is not None else udev_outcomes(fs, devices)
    unmanaged = {n for n, out in outcomes.items() if out.env.get("NM_UNMANAGED") == "1"}
    return (_from_ifcfg(fs, set(interfaces), unmanaged) + _from_nm_keyfiles(fs, devices, unmanaged)
            + _from_link_files(fs, devices) + _from_udev(outcomes) + _from_scripts(scripts, interfaces, fs, unmanaged))
