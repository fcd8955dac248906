"""An enabled boot-time mechanism pins the NIC's IRQs (names the NIC, its master or VF).

Mechanisms: NetworkManager dispatcher scripts, enabled systemd units (with the scripts
their Exec lines run) and udev rules. What counts as pinning is content: regular
expressions such as `smp_affinity` or `set_irq_affinity.*\\.sh`.
"""

import re

from .base import FAIL, PASS, ObjectResult, Target

VARS_SCHEMA = {"type": "object", "required": ["patterns"], "additionalProperties": False,
               "properties": {"patterns": {"type": "array", "minItems": 1, "items": {"type": "string", "format": "regex"}},
                              "mechanisms": {"type": "array", "items": {"enum": ["nm-dispatcher", "systemd", "udev"]}}}}


def evaluate(t: Target) -> list[ObjectResult]:
    patterns = [re.compile(p) for p in t.vars["patterns"]]
    mechanisms = set(t.vars.get("mechanisms", ["nm-dispatcher", "systemd", "udev"]))
    pinning = [s for s in t.facts.boot_scripts if s.mechanism in mechanisms and any(p.search(s.text) for p in patterns)]
    results = []
    for iface in t.interfaces():
        names = [iface.name, *filter(None, [iface.master]), *iface.lowers]
        hits = [s.source for s in pinning
                if any(re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w.-])", s.text) for n in names)]
        if hits:
            results.append(ObjectResult(iface.name, PASS, "pinned at boot", ", ".join(hits),
                                        f"{iface.name} IRQs are pinned at boot by {', '.join(hits)}"))
        else:
            results.append(ObjectResult(iface.name, FAIL, "pinned at boot", "no boot mechanism",
                                        f"nothing pins {iface.name}'s IRQs at boot: add a NetworkManager dispatcher "
                                        f"script or an enabled systemd unit running set_irq_affinity_cpulist.sh"))
    return results
