"""Per-NIC options in a VM's .vmx file (`ethernetN.<option> = "value"`).

The NICs judged are the present `ethernetN` devices of each .vmx under vmware/, minus
`exclude_devices` (BIG-IP's management ethernet0), or exactly `devices` when given.
VMware reads keys case-insensitively, so comparison does too; values compare as text.
"""

from __future__ import annotations

from .._lazyre import lazy
from ..results import FAIL, PASS, Fix, ObjectResult
from .base import Target

VARS_SCHEMA = {
    "type": "object", "required": ["options"], "additionalProperties": False,
    "properties": {
        "options": {"type": "object", "minProperties": 1,
                    "additionalProperties": {"type": ["string", "integer"]}},
        "devices": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1},
        "exclude_devices": {"type": "array", "items": {"type": "integer", "minimum": 0}},
    },
}

_DEVICE = lazy(r"^ethernet(\d+)\.present$")
# ESXi reads the .vmx when the VM powers on and rewrites it from its own copy while it runs.
VMX_NOTE = ("edit the VM's .vmx on its datastore (collected here as {file}) with the VM powered off, or add the "
            "lines in the vSphere Client (Edit Settings > VM Options > Advanced > Configuration Parameters)")


def _present_devices(entries: dict) -> list[int]:
    found = []
    for key, entry in entries.items():
        m = _DEVICE.match(key)
        if m and entry.value.strip().lower() == "true":
            found.append(int(m.group(1)))
    return sorted(found)


def evaluate(t: Target) -> list[ObjectResult]:
    options = {k: str(v) for k, v in t.vars["options"].items()}
    want = " ".join(f'{k}="{v}"' for k, v in options.items())
    results = []
    for source, entries in t.facts.vmx_files.items():
        devices = t.vars.get("devices") or [d for d in _present_devices(entries)
                                            if d not in t.vars.get("exclude_devices", [])]
        for n in devices:
            obj = f"{source.rsplit('/', 1)[-1]}:ethernet{n}"
            have, wrong, lines = [], [], []
            for option, value in options.items():
                entry = entries.get(f"ethernet{n}.{option}".lower())
                shown = entry.value if entry else "unset"
                have.append(f"{option}={shown}")
                if entry is None or entry.value.strip() != value:
                    lines.append(f'ethernet{n}.{option} = "{value}"')
                    wrong.append(f"{lines[-1]} (now {shown})")
            if wrong:
                results.append(ObjectResult(obj, FAIL, want, " ".join(have),
                                            f"{obj}: set {', '.join(wrong)} with the VM powered off",
                                            fix=Fix(file=source, change="\n".join(lines),
                                                    note=VMX_NOTE.format(file=source))))
            else:
                results.append(ObjectResult(obj, PASS, want, " ".join(have), f"{obj}: {' '.join(have)}"))
    return results
