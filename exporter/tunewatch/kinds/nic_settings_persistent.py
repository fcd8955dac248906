"""NIC driver settings are configured to be re-applied at boot, on the judged interface.

Sources (facts/netconfig.py): ifcfg ETHTOOL_OPTIONS/ETHTOOL_OPTS, NetworkManager keyfile
[ethtool] sections and dispatcher scripts, systemd .link files, udev rules and enabled
units running ethtool. Each counts only for the interfaces its consumer applies it to: for
Azure Accelerated Networking the VF itself (`ethtool -L eth0` on the hv_netvsc master does
not change the VF's channels). Configuration the consumer rejects (an ethtool typo such as
`rx-usec`, an insecure keyfile, a .link value systemd refuses) is named in the message.

`scripts` (content) lists start-up programs that set a driver's settings themselves, such
as seed 003's `set_best_affinity.ksh`, which finds the Accelerated Networking interface and
sets its queue count to the logical CPUs of its NUMA node (`node_cpus`).
"""

from __future__ import annotations

import re

from .base import FAIL, PASS, ObjectResult, Target, as_number, per_object

VARS_SCHEMA = {
    "type": "object", "required": ["requirements"], "additionalProperties": False,
    "properties": {
        "requirements": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["drivers", "settings"], "additionalProperties": False,
            "properties": {"drivers": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                           "settings": {"type": "object", "minProperties": 1,
                                        "additionalProperties": {"type": ["string", "integer"],
                                                                 "pattern": r"^(<=\s*)?[\w.-]+$"}}}}},
        "scripts": {"type": "array", "items": {
            "type": "object", "required": ["pattern", "drivers", "settings"], "additionalProperties": False,
            "properties": {"pattern": {"type": "string", "format": "regex"},
                           "drivers": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                           "settings": {"type": "object", "minProperties": 1,
                                        "additionalProperties": {"type": ["string", "integer"]}}}}},
    },
}


def _satisfies(value: str, wanted) -> bool:
    wanted = str(wanted)
    if wanted.startswith("<="):
        got, limit = as_number(value), as_number(wanted[2:].strip())
        return got is not None and limit is not None and got <= limit
    if as_number(wanted) is not None:
        return as_number(value) == as_number(wanted)
    return value == wanted


def _script_entries(t: Target, iface) -> list[tuple[str, dict]]:
    """(source, settings) of known start-up programs run by a boot mechanism."""
    found = []
    for spec in t.vars.get("scripts", []):
        if iface.driver not in spec["drivers"]:
            continue
        pattern = re.compile(spec["pattern"])
        for script in t.facts.boot_scripts:
            if script.problem is None and script.mechanism != "udev" and pattern.search(script.text):
                node_cpus = len(t.facts.topology.node_cpus(iface.node_or_zero()))
                settings = {k: str(node_cpus) if v == "node_cpus" else str(v) for k, v in spec["settings"].items()}
                found.append((f"{script.source} (runs {pattern.pattern})", settings))
    return found


def evaluate(t: Target) -> list[ObjectResult]:
    if not t.interfaces():  # nothing in scope: parse no boot configuration (issue 22)
        return []
    persisted = t.facts.persisted_ethtool

    def one(iface):
        required: dict = {}
        for req in t.vars["requirements"]:
            if iface.driver in req["drivers"]:
                required.update(req["settings"])
        if not required:
            return ObjectResult(iface.name, PASS, "-", "-", f"nothing to persist for the {iface.driver} driver")
        want = " ".join(f"{k} {v}" for k, v in required.items())
        mine = [e for e in persisted if iface.name in e.targets]
        applied = [(e.source, e.settings) for e in mine if not e.problem] + _script_entries(t, iface)
        found, missing = [], []
        for key, wanted in required.items():
            hits = [src for src, settings in applied if key in settings and _satisfies(settings[key], wanted)]
            wrong = [f"{settings[key]} by {src}" for src, settings in applied if key in settings and src not in hits]
            if hits:
                found.append(f"{key} via {hits[0]}")
            else:
                missing.append(f"{key} (set to {'; '.join(wrong)})" if wrong else key)
        if not missing:
            return ObjectResult(iface.name, PASS, want, "; ".join(found), f"{iface.name}: " + "; ".join(found))
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
        return ObjectResult(iface.name, FAIL, want, "missing: " + ", ".join(missing),
                            f"{iface.name}: {', '.join(missing)} not configured for boot; {hint}configure "
                            f"{iface.name} itself (ifcfg ETHTOOL_OPTIONS, a NetworkManager [ethtool] setting, "
                            f"a systemd .link file or a udev rule matching its driver)")

    return per_object(t.interfaces(), lambda i: i.name, one)
