"""ESXi host settings from saved esxcli output (advanced options, CPU facts).

Keys are advanced option paths (`/Net/NetNetqRxQueueFeatPairEnable`) or labels of
`esxcli hardware cpu global get` (`Hyperthreading Active`); values compare as text,
case-insensitively (`High Performance`, `false`, `0`). A setting missing from the saved
output is `notapplicable` (the snapshot did not collect it), not an error.
"""

from __future__ import annotations

from .base import FAIL, NOTAPPLICABLE, PASS, ObjectResult, Setting, Target, as_number

VARS_SCHEMA = {"type": "object", "required": ["settings"], "additionalProperties": False,
               "properties": {"settings": {"type": "object", "minProperties": 1,
                                           "additionalProperties": {"type": ["string", "integer"]}},
                              "fix": {"type": "string", "description": "how to fix it, shown on failure"}}}


def evaluate(t: Target) -> list[ObjectResult]:
    esxcli = t.facts.esxcli
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
        if value.lower() == wanted.lower():
            results.append(ObjectResult(key, PASS, wanted, value, f"{key} is {value} ({record['_source']})", setting))
        else:
            fix = t.vars.get("fix", "")
            results.append(ObjectResult(key, FAIL, wanted, value or "empty",
                                        f"{key} is {value or 'empty'}, want {wanted}" + (f": {fix}" if fix else ""),
                                        setting))
    return results
