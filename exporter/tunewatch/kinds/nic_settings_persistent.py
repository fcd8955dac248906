"""NIC driver settings are configured to be re-applied at boot.

Sources: ifcfg ETHTOOL_OPTIONS/ETHTOOL_OPTS, NetworkManager dispatcher scripts and keyfile
[ethtool] sections, systemd .link files, udev rules and enabled units running ethtool.
For Azure Accelerated Networking, configuration on the VF or on its hv_netvsc master
counts: VF names can change after a redeploy.
"""

from .base import FAIL, PASS, ObjectResult, Target, as_number, per_object

VARS_SCHEMA = {
    "type": "object", "required": ["requirements"], "additionalProperties": False,
    "properties": {"requirements": {"type": "array", "minItems": 1, "items": {
        "type": "object", "required": ["drivers", "settings"], "additionalProperties": False,
        "properties": {"drivers": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                       "settings": {"type": "object", "minProperties": 1,
                                    "additionalProperties": {"type": ["string", "integer"],
                                                             "pattern": r"^(<=\s*)?[\w.-]+$"}}}}}},
}


def _satisfies(value: str, wanted) -> bool:
    wanted = str(wanted)
    if wanted.startswith("<="):
        got, limit = as_number(value), as_number(wanted[2:].strip())
        return got is not None and limit is not None and got <= limit
    if as_number(wanted) is not None:
        return as_number(value) == as_number(wanted)
    return value == wanted


def evaluate(t: Target) -> list[ObjectResult]:
    drivers = {i.name: i.driver for i in t.facts.interfaces.values()}

    def one(iface):
        required: dict = {}
        for req in t.vars["requirements"]:
            if iface.driver in req["drivers"]:
                required.update(req["settings"])
        want = " ".join(f"{k} {v}" for k, v in required.items())
        related = {iface.name, *filter(None, [iface.master]), *iface.lowers}
        entries = [e for e in t.facts.persisted_ethtool if any(e.applies_to(n, drivers.get(n)) for n in related)]
        found, missing = [], []
        for key, wanted in required.items():
            hits = [e.source for e in entries if key in e.settings and _satisfies(e.settings[key], wanted)]
            (found if hits else missing).append(f"{key} via {hits[0]}" if hits else key)
        if not required:
            return ObjectResult(iface.name, PASS, "-", "-", f"nothing to persist for the {iface.driver} driver")
        if missing:
            return ObjectResult(iface.name, FAIL, want, "missing: " + ", ".join(missing),
                                f"{iface.name}: {', '.join(missing)} not configured for boot; add ETHTOOL_OPTIONS to "
                                f"ifcfg-{iface.name}, a NetworkManager [ethtool] setting or a systemd .link file")
        return ObjectResult(iface.name, PASS, want, "; ".join(found), f"{iface.name}: " + "; ".join(found))

    return per_object(t.interfaces(), lambda i: i.name, one)
