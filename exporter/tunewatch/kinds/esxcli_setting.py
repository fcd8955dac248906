"""ESXi host settings from saved esxcli output (advanced options, CPU facts).

Keys are advanced option paths (`/Net/NetNetqRxQueueFeatPairEnable`) or labels of
`esxcli hardware cpu global get` (`Hyperthreading Active`); values compare as text,
case-insensitively (`High Performance`, `false`, `0`). A setting missing from the saved
output is `notapplicable` (the snapshot did not collect it), not an error.

`fix` is content: the esxcli `command` to run on the hypervisor, or a `note` where the change
is not one command (a BIOS setting); the message ends with whichever is given.
"""

from __future__ import annotations

from ..results import FAIL, NOTAPPLICABLE, PASS, Fix, ObjectResult, Setting
from .base import Target, as_number

# Settings whose configured value waits for the next reboot, and the label that holds it:
# `esxcli hardware cpu global get` shows Hyperthreading Active (now) and Hyperthreading
# Enabled (configured; vSphere config.hyperThread.active vs .config). Differing means a
# change is pending; the result then says so and predicts the configured value.
AFTER_REBOOT = {"Hyperthreading Active": "Hyperthreading Enabled"}


def _after_reboot(esxcli: dict, key: str, value: str) -> tuple[str | None, str]:
    """(predicted value or None, message part)."""
    record = esxcli.get(AFTER_REBOOT.get(key, ""))
    configured = (record or {}).get("Value", "").strip()
    if not configured:
        return None, ""
    if configured.lower() == value.lower():
        return configured, ""
    return configured, f"; configured {configured}: takes effect at the next reboot"

VARS_SCHEMA = {"type": "object", "required": ["settings"], "additionalProperties": False,
               "properties": {"settings": {"type": "object", "minProperties": 1,
                                           "additionalProperties": {"type": ["string", "integer"]}},
                              "fix": {"type": "object", "minProperties": 1, "additionalProperties": False,
                                      "description": "how to fix it, shown on failure",
                                      "properties": {"command": {"type": "string", "minLength": 1},
                                                     "note": {"type": "string", "minLength": 1}}}}}


def evaluate(t: Target) -> list[ObjectResult]:
    esxcli = t.facts.esxcli
    fix = Fix(**t.vars["fix"]) if t.vars.get("fix") else None
    shown_fix = fix and (fix.command or fix.note)
    results = []
    for key, wanted in t.vars["settings"].items():
        wanted = str(wanted)
        record = esxcli.get(key)
        if record is None:
            # the hypervisor side is optional: unsaved output is unknown, not wrong
            results.append(ObjectResult(key, NOTAPPLICABLE, wanted, "not collected",
                                        f"{key} is not in the saved esxcli output under vmware/esxcli/"))
            continue
        value = record.get("Value", "").strip()
        setting = [Setting(key, as_number(value), as_number(wanted))] if as_number(wanted) is not None else []
        predicted, pending = _after_reboot(esxcli, key, value)
        if value.lower() == wanted.lower():
            results.append(ObjectResult(key, PASS, wanted, value, f"{key} is {value} ({record['_source']}){pending}",
                                        setting, predicted=predicted))
        else:
            results.append(ObjectResult(key, FAIL, wanted, value or "empty",
                                        f"{key} is {value or 'empty'}, want {wanted}{pending}"
                                        + (f": {shown_fix}" if shown_fix else ""), setting, fix=fix,
                                        predicted=predicted))
    return results
