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
  A device NetworkManager does not manage (a udev rule sets `ENV{NM_UNMANAGED}="1"`, as
  Azure images do for the AN VF, or `[keyfile] unmanaged-devices=` matches it:
  facts/nmconf.py) is never activated by NetworkManager and raises no dispatcher event.
- systemd .link files (systemd.link(5)): per interface, only the first matching file in
  lexical order of names applies; at boot /run holds only what netplan generates again
  (facts/linkfiles.py, facts/netplan.py).
- tuned's [net] plugin on the devices its `devices=` selects (facts/tuned_net.py).
- udev rules (udev(7)): programs `RUN` collects for the device, `%k`/`$kernel` being it.
- Boot scripts (NetworkManager dispatcher scripts, enabled units and what they run): a
  literal interface name reaches that interface; a dispatcher script runs only for the
  events of managed interfaces its `$1`/`$2` guards let through, and reaches a literal
  name as facts/nm_dispatch.py says; its `$1`/`$DEVICE_IFACE` is each interface it runs
  for; another variable in a script that reads `lower_*` links reaches the VFs of those
  interfaces. Anything else is not credited.
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
from . import nm_dispatch, nmconf, readd, udev
from .filestat import file_stat
from .interfaces import Interface
from .linkfiles import from_link_files
from .netdevice import NetDevice, read_net_devices
from .services import read_unit_state
from .tuned_net import from_tuned
from .udev_device import path_test, sysattr_reader
from .udev_device import uevent as _uevent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from collections.abc import Set as AbstractSet
    from typing import Callable, Protocol

    # content's reader units of an ifcfg format on this release, and the cite (facts/defaults.py `readers`)
    Readers = Callable[[str], "tuple[tuple[str, ...], str] | None"]

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


def consumer_problem(fs: FS, units: tuple[str, ...], what: str) -> str | None:
    """None when one of `units` starts at boot; else why `what` is never read."""
    states = [read_unit_state(fs, u) for u in units]
    if any(s.enabled for s in states):
        return None
    shown = ", ".join(f"{s.unit} is {s.state.replace('-', ' ')}" for s in states)
    return f"{what} is read at boot only by {' or '.join(units)}, and {shown}"


_WICKED_VAR = "ETHTOOL_OPTIONS"
# (directory, variable, format, its readers when content names none for the release)
_IFCFG = (("etc/sysconfig/network", _WICKED_VAR, "ifcfg-suse", ("wicked.service",)),
          ("etc/sysconfig/network-scripts", "ETHTOOL_OPTS", "ifcfg-rh", ("NetworkManager.service", "network.service")))
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


def _reader_problem(fs: FS, fmt: str, units: tuple[str, ...], readers: Readers | None, what: str) -> str | None:
    """Why no service reads `what` at boot: content (`readers(fmt)`: units and cite per
    distribution release, checks/defaults/ifcfg.yaml) names none for the release, or none
    of the readers is enabled."""
    known = readers(fmt) if readers is not None else None
    if known is not None and not known[0]:
        return f"nothing reads {what} at boot on this release: {known[1]}"
    units = known[0] if known else units
    loaded = nmconf.plugins(fs) if fmt == "ifcfg-rh" and "NetworkManager.service" in units else None
    if loaded is not None and "ifcfg-rh" not in loaded[0]:  # NetworkManager.conf(5) [main] plugins
        units = tuple(u for u in units if u != "NetworkManager.service")
        why = f"[main] plugins={','.join(loaded[0])} in {loaded[1]} does not load ifcfg-rh"
        if not units:
            return f"NetworkManager does not read {what}: {why}"
        off = consumer_problem(fs, units, what)
        return f"{off} ({why})" if off else None
    return consumer_problem(fs, units, what)


def _from_ifcfg(fs: FS, names: set[str], readers: Readers | None = None,
                unmanaged: AbstractSet[str] = frozenset()) -> list[PersistedEthtool]:
    found = []
    for d, consumer_var, fmt, units in _IFCFG:
        for rel in fs.glob(d, "ifcfg-*"):
            if rel.endswith(_IFCFG_IGNORED):
                continue
            values = parse_shell_assignments(fs.read_required(rel), rel)
            iface = values.get("DEVICE") or rel.rsplit("ifcfg-", 1)[1]
            variables = _ifcfg_variables(consumer_var, values)
            off = (_reader_problem(fs, fmt, units, readers, rel.rsplit("/", 1)[1])
                   or _not_at_boot(consumer_var, values, iface)) if variables else None
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


def _from_nm_keyfiles(fs: FS, devices: dict[str, NetDevice], unmanaged: dict[str, str]) -> list[PersistedEthtool]:
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
                found.append(PersistedEthtool(rel, {}, (n,), f"{unmanaged[n]}: NetworkManager never activates "
                                                             f"{rel} on it", on_add=False))
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


def _code(text: str) -> str:
    return "\n".join("" if ln.lstrip().startswith("#") else ln for ln in text.split("\n"))


def _script_targets(cmd: EthtoolCommand, script: BootScript, interfaces: dict[str, Interface],
                    unmanaged: dict[str, str]) -> tuple[tuple[str, ...], str | None]:
    """(interfaces reached, why not the one named). A literal interface reaches itself; a
    dispatcher script only through the events NetworkManager raises (facts/nm_dispatch.py);
    another variable, in a script that reads `lower_*` links, the VFs below the interfaces
    it runs for (dispatcher) or names (any other mechanism: a unit's arguments are
    substituted into its script, facts/boot.py), or below every interface when it globs
    `/sys/class/net/*/lower_*`."""
    iface = cmd.interface or ""
    literal = not any(c in iface for c in "$%`")
    if script.mechanism == "nm-dispatcher":
        managed = [n for n in interfaces if n not in unmanaged]
        runs, scope = nm_dispatch.runs_for(_code(script.text), managed)
        if not runs:
            why = (f"its guard on $2 lets only {scope.actions()} through, never pre-up/up at boot"
                   if not scope.at_boot() else "NetworkManager raises no event its guard lets through")
            return (), why
        if literal:
            if not iface:
                return (), None
            if scope.guarded or iface in runs:
                return (iface,), None
            if iface in unmanaged:
                return (), (f"{unmanaged[iface]}: NetworkManager raises no dispatcher event for {iface}, "
                            f"so this unguarded script never runs for it")
            return (), f"NetworkManager raises no dispatcher event for {iface} (not a managed interface here)"
        if _IFACE_ARG.match(iface):
            return tuple(runs), None
        runs_for = runs
    elif literal:
        return ((iface,) if iface else ()), None
    elif _ALL_LOWERS.search(script.text):
        runs_for = list(interfaces)
    else:
        runs_for = [n for n in interfaces if interfaces[n].lowers and _named(n, script.text)]
    if "lower_" in script.text:  # the script resolves the VF below the interface it runs for
        return tuple(vf for n in runs_for for vf in interfaces[n].lowers), None
    return (), None


def _from_scripts(scripts: Iterable[BootScript], interfaces: dict[str, Interface], unmanaged: dict[str, str],
                  fs: FS | None = None) -> list[PersistedEthtool]:
    found = []
    for script in scripts:
        if script.mechanism == "udev":
            continue  # judged per device by _from_udev
        for cmd in find_ethtool_commands(script.text, script.source):
            targets, why = _script_targets(cmd, script, interfaces, unmanaged)
            source = f"{script.source}:{cmd.line}"
            if why and cmd.settings:
                named = (cmd.interface,) if cmd.interface and "$" not in cmd.interface else ()
                found.append(PersistedEthtool(source, {}, named or tuple(interfaces), why, on_add=False))
                continue
            # a unit a device unit wants starts again when the device is re-added (SPEC "After a driver update")
            on_add = readd.script_on_add(fs, cmd, script, targets, set(unmanaged)) if fs is not None else None
            if script.mechanism == "systemd" and getattr(script, "device_bound", False):
                on_add = True
            found.append(PersistedEthtool(source, dict(cmd.settings), targets, cmd.problem, on_add=on_add))
    return found


def persisted_ethtool(fs: FS, scripts: Iterable[BootScript], interfaces: dict[str, Interface],
                      devices: dict[str, NetDevice] | None = None,
                      outcomes: dict[str, udev.UdevOutcome] | None = None, readers: Readers | None = None,
                      tuned_layouts: dict | None = None) -> list[PersistedEthtool]:
    """`devices` and `outcomes` (udev per device), when the caller has them already;
    `readers(fmt)`: content's reader units of an ifcfg format on this release (or None);
    `tuned_layouts`: content's tuned layout (facts/tuned.py `profile_dirs`)."""
    devices = devices if devices is not None else read_net_devices(fs, interfaces)
    outcomes = outcomes if outcomes is not None else udev_outcomes(fs, devices)
    unmanaged = nmconf.unmanaged_devices(fs, devices, {n: out.env for n, out in outcomes.items()})
    return (_from_ifcfg(fs, set(interfaces), readers, set(unmanaged)) + _from_nm_keyfiles(fs, devices, unmanaged)
            + [PersistedEthtool(*e) for e in from_link_files(fs, devices) + from_tuned(fs, devices, tuned_layouts)]
            + _from_udev(outcomes) + _from_scripts(scripts, interfaces, unmanaged, fs))
