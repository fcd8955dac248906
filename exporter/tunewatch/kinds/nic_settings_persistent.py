"""NIC driver settings are configured to be re-applied at boot, on the judged interface.

Sources (facts/netconfig.py): ifcfg ETHTOOL_OPTIONS/ETHTOOL_OPTS (when the release has a
reader, checks/defaults/ifcfg.yaml), NetworkManager keyfile [ethtool] sections and
dispatcher scripts (only for devices NetworkManager manages, facts/nmconf.py, and the
events a script's guard lets through), systemd .link files (those netplan generates from
its YAML included, facts/netplan.py), tuned's [net] plugin, udev rules and enabled units
(template instances too) running ethtool. Each counts only for the interfaces its consumer applies it to: for
Azure Accelerated Networking the VF itself (`ethtool -L eth0` on the hv_netvsc master does
not change the VF's channels). Configuration the consumer rejects (an ethtool typo such as
`rx-usec`, an insecure keyfile, a .link value systemd refuses) is named in the message.

`scripts` (content) lists start-up programs that set a driver's settings themselves, such
as seed 003's `set_best_affinity.ksh`, which finds the Accelerated Networking interface and
sets its queue count to the logical CPUs of its NUMA node (`node_cpus`).
"""

from __future__ import annotations

import re

from .._escape import Unexpressible, plain_name, sh
from ..errors import FactError, ParseError
from ..facts import readd
from ..results import FAIL, PASS, UNKNOWN, AfterReadd, Fix, ObjectResult, error_result
from ._predict import complete, configured_by
from .base import Target, as_number, per_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..facts.defaults import Default
    from ..facts.interfaces import Interface

# its objects are interfaces (eth1, eth1/irq45): one the kernel could not have named is an error
PER_INTERFACE = True
VARS_SCHEMA = {
    "type": "object", "required": ["requirements"], "additionalProperties": False,
    "properties": {
        "requirements": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["drivers", "settings"], "additionalProperties": False,
            "properties": {"drivers": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                           "settings": {"type": "object", "minProperties": 1,
                                        "additionalProperties": {"type": ["string", "integer"],
                                                                 "pattern": r"^(<=\s*)?[\w.-]+$"}}}}},
        "limit_to_node_cpus": {"type": "boolean", "description": "a `<= N` channel requirement is also at most "
                                                                 "the logical CPUs of the NIC's NUMA node (as "
                                                                 "nic-queue-count judges it); default true"},
        "scripts": {"type": "array", "items": {
            "type": "object", "required": ["pattern", "drivers", "settings"], "additionalProperties": False,
            "properties": {"pattern": {"type": "string", "format": "regex"},
                           "drivers": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                           "settings": {"type": "object", "minProperties": 1,
                                        "additionalProperties": {"type": ["string", "integer"]}}}}},
    },
}


def _satisfies(value: str, wanted: Any) -> bool:
    wanted = str(wanted)
    if wanted.startswith("<="):
        got, limit = as_number(value), as_number(wanted[2:].strip())
        return got is not None and limit is not None and got <= limit
    if as_number(wanted) is not None:
        return as_number(value) == as_number(wanted)
    return value == wanted


def _script_entries(t: Target, iface: Interface, on_add: bool = False) -> list[tuple[str, dict]]:
    """(source, settings) of known start-up programs run by a boot mechanism (`on_add`:
    only those that run again when the device is added: a unit the device pulls in)."""
    found = []
    for spec in t.vars.get("scripts", []):
        if iface.driver not in spec["drivers"]:
            continue
        pattern = re.compile(spec["pattern"])
        for script in t.facts.boot_scripts:
            if script.problem is None and script.mechanism != "udev" and pattern.search(script.text) \
                    and (not on_add or readd.bound_to_device(t.facts.fs, script)):
                node_cpus = len(t.facts.topology.node_cpus(iface.node_or_zero()))
                settings = {k: str(node_cpus) if v == "node_cpus" else str(v) for k, v in spec["settings"].items()}
                found.append((f"{script.source} (runs {pattern.pattern})", settings))
    return found


_OPTION = {"channels": "-L", "rings": "-G", "coalesce": "-C", "features": "-K"}


def _fix(iface: Interface, required: dict, missing_keys: list[str], unmanaged: str | None = None) -> Fix:
    """An ethtool command per group of missing settings, to run at boot for this interface
    (the runtime command too); the persistent file is the consumer's choice (note). For an
    interface NetworkManager does not manage, the udev rule `tunewatch remediate` writes
    (remediate/nic.py), since no keyfile or dispatcher script ever runs for it."""
    wanted = {k: v for k, v in required.items() if k in missing_keys}
    by_option: dict[str, list[str]] = {}
    for key, value in wanted.items():
        section, name = key.split(".", 1)
        by_option.setdefault(_OPTION[section], []).extend([name, _target_value(value)])
    command = " && ".join(f"ethtool {opt} {sh(iface.name)} {' '.join(map(sh, words))}"
                          for opt, words in by_option.items())
    if unmanaged and iface.driver:
        runs = ", ".join(f'RUN+="/usr/sbin/ethtool {opt} $name {" ".join(words)}"' for opt, words in by_option.items())
        # as remediate/nic.py `_ethtool_udev_rule()`: a VF by its driver (its name changes), another NIC by name;
        # udev(7) has no quoting inside a match value, so a name that needs it gets no rule (plain_name)
        try:
            name, match, link = ((plain_name(iface.driver, "driver name", "a udev rule"), f'DRIVERS=="{iface.driver}"',
                                  f"Driver={iface.driver}") if iface.master else
                                 (plain_name(iface.name, "interface name", "a udev rule"), f'KERNEL=="{iface.name}"',
                                  f"OriginalName={iface.name}"))
        except Unexpressible as e:
            return Fix(command=command, note=f"{unmanaged}, so no NetworkManager keyfile or dispatcher script ever "
                                             f"runs for it, and {e}: a systemd .link file matching its driver or "
                                             "MAC address applies it at boot and whenever the device is added again")
        return Fix(command=command, file=f"/etc/udev/rules.d/99-tunewatch-ethtool-{name}.rules",
                   change=f'ACTION=="add", SUBSYSTEM=="net", {match}, {runs}',
                   note=f"{unmanaged}, so no NetworkManager keyfile or dispatcher script ever runs for {iface.name}: "
                        f"the udev rule above or a systemd .link file with [Match] {link} applies it at boot and "
                        f"whenever the device is added again")
    return Fix(command=command,
               note=f"make it persistent for {iface.name} itself: ifcfg ETHTOOL_OPTIONS/ETHTOOL_OPTS, a NetworkManager "
                    "[ethtool] setting, a systemd .link file or a udev rule matching its driver")


def _target_value(wanted: Any) -> str:
    wanted = str(wanted)
    return wanted[2:].strip() if wanted.startswith("<=") else wanted


def _requirement(t: Target, iface: Interface, key: str, wanted: Any) -> tuple[object, str]:
    """The runtime form's own requirement: a `<= N` channel count is also at most the
    logical CPUs of the NIC's NUMA node (nic-queue-count's rule)."""
    wanted_s = str(wanted)
    if not (key.startswith("channels.") and wanted_s.startswith("<=") and t.vars.get("limit_to_node_cpus", True)):
        return wanted, ""
    limit = as_number(wanted_s[2:].strip())
    node = iface.node_or_zero()
    node_cpus = len(t.facts.topology.node_cpus(node))
    if limit is not None and 0 < node_cpus < limit:
        return f"<= {node_cpus}", f" ({node_cpus} CPUs on NUMA node {node})"
    return wanted, ""


def _driver_default(t: Target, iface: Interface, key: str, running: bool = False) -> Default | None:
    """The driver default of the kernel that boots next, or (`running`) of the running one:
    a device re-added or a driver reloaded without a reboot comes back at the defaults of
    the driver loaded now (SPEC §2 "After a driver update"). Facts.default names the kernel."""
    try:
        vcpus = len(t.facts.topology.online)
    except (FactError, ParseError):
        vcpus = None
    try:
        device = t.facts.ethtool(iface.name)
    except (FactError, ParseError):
        device = None
    return t.facts.default(iface.driver or "", key, vcpus, device, running=running)  # no driver: content has none


def _predict(t: Target, iface: Interface, judged: dict, applied: list[tuple[str, dict]],
             on_add: bool = False) -> tuple[list[str], list[str], list[str], list[str], list[str]]:
    """What `applied` (source, settings) leaves on `iface`, key by key, the driver default
    where nothing sets a key: (found, missing, predicted, sources, assumed). `on_add`: after
    a re-add without a reboot, so the running kernel's driver default."""
    found, missing, predicted, sources, assumed = [], [], [], [], []
    for key, (wanted, _why) in judged.items():
        hits = [(src, settings[key]) for src, settings in applied if key in settings
                and _satisfies(settings[key], wanted)]
        wrong = [(src, settings[key]) for src, settings in applied if key in settings
                 and not _satisfies(settings[key], wanted)]
        if hits or wrong:
            src, value = (hits or wrong)[0]
            source = f"re-applied on add by {src}" if on_add else configured_by(src)
            if hits:
                found.append(f"{key} via {src}")
            else:
                missing.append(f"{key} (set to {'; '.join(f'{v} by {s}' for s, v in wrong)})")
        else:
            default = _driver_default(t, iface, key, running=on_add)
            value = default.value if default else UNKNOWN
            source = default.source if default else "not configured; the driver default is unknown"
            if default is not None and _satisfies(default.value, wanted):
                found.append(f"{key} not configured, {default.source} meets {wanted}")
                if "assuming" in default.assumption:
                    assumed.append(default.assumption.split("; ", 1)[1])
            elif default is not None:
                missing.append(f"{key} (not configured for boot; it comes back at the {default.source}, "
                               f"not {wanted}; {default.assumption})")
            else:
                missing.append(f"{key} (not configured for boot; the driver default is unknown)")
        predicted.append(f"{key}={value}")
        sources.append(f"{key}: {source}" if len(judged) > 1 else source)
    return found, missing, predicted, sources, assumed


def _joined(predicted: list[str], n: int) -> str:
    return "; ".join(predicted) if n > 1 else predicted[0].split("=", 1)[1]


def _after_readd(t: Target, iface: Interface, judged: dict, applied: list[tuple[str, dict]]) -> AfterReadd:
    """The same prediction from only the mechanisms that run on the device's add event, and
    the running kernel's driver defaults: no reboot, so no other kernel."""
    _found, missing, predicted, sources, _assumed = _predict(t, iface, judged, applied, on_add=True)
    return AfterReadd(_joined(predicted, len(judged)), "; ".join(sources), FAIL if missing else PASS)


def evaluate(t: Target) -> list[ObjectResult]:
    if not t.interfaces():  # nothing in scope: parse no boot configuration (docs/architecture.md#start-up-cost)
        return []
    persisted = t.facts.persisted_ethtool

    def one(iface):
        required: dict = {}
        for req in t.vars["requirements"]:
            if iface.driver in req["drivers"]:
                required.update(req["settings"])
        if not required:
            return ObjectResult(iface.name, PASS, "-", "-", f"nothing to persist for the {iface.driver} driver",
                                predicted="-", source="nothing required for the driver",
                                after_readd=AfterReadd("-", "nothing required for the driver", PASS))
        judged = {k: _requirement(t, iface, k, v) for k, v in required.items()}
        want = " ".join(f"{k} {v}{why}" for k, (v, why) in judged.items())
        mine = [e for e in persisted if iface.name in e.targets]
        applied = [(e.source, e.settings) for e in mine if not e.problem] + _script_entries(t, iface)
        readd_applied = [(e.source, e.settings) for e in mine if not e.problem and e.on_add] \
            + _script_entries(t, iface, on_add=True)
        after = _after_readd(t, iface, judged, readd_applied)
        try:  # the next kernel unreadable decides nothing about a re-add under the running one
            found, missing, predicted, sources, assumed = _predict(t, iface, judged, applied)
        except (FactError, ParseError) as e:
            err = error_result(iface.name, e)
            err.after_readd = after
            return err
        at_boot, source = _joined(predicted, len(judged)), "; ".join(sources)
        if not missing:
            note = f" ({'; '.join(dict.fromkeys(assumed))})" if assumed else ""
            return ObjectResult(iface.name, PASS, want, "; ".join(found), f"{iface.name}: " + "; ".join(found) + note,
                                predicted=at_boot, source=source, after_readd=after)
        notes = [f"{e.source}: {e.problem}" for e in mine if e.problem]
        names = [iface.name, *filter(None, [iface.master])]
        notes += [s.problem for s in t.facts.boot_scripts  # scripts that would have configured it, never run
                  if s.problem and "ethtool" in s.text and any(n in s.text for n in names)]
        elsewhere = sorted({e.source for n in (iface.master, *iface.lowers) if n
                            for e in persisted if n in e.targets and iface.name not in e.targets and not e.problem
                            and set(e.settings) & set(required)})
        if elsewhere:
            notes.append(f"configured only for {iface.master or ', '.join(iface.lowers)} by {', '.join(elsewhere)}, "
                         f"which does not reach {iface.name}")
        hint = ("; ".join(dict.fromkeys(notes)) + "; ") if notes else ""
        missing_keys = [m.split(" ", 1)[0] for m in missing]
        unmanaged = t.facts.nm_unmanaged.get(iface.name)
        how = ("a systemd .link file or a udev rule matching its driver: NetworkManager does not manage it"
               if unmanaged else "ifcfg ETHTOOL_OPTIONS, a NetworkManager [ethtool] setting, "
                                 "a systemd .link file or a udev rule matching its driver")
        return ObjectResult(iface.name, FAIL, want, "missing: " + ", ".join(missing),
                            f"{iface.name}: {', '.join(missing)}; {hint}configure {iface.name} itself ({how})",
                            fix=_fix(iface, {k: judged[k][0] for k in required}, missing_keys, unmanaged),
                            predicted=at_boot, source=source, after_readd=after)

    return complete(per_object(t.interfaces(), lambda i: i.name, one))
