"""`sched.cpu.affinity` in a .vmx, when set, keeps the VM off the given host CPUs.

The value is `all` (no affinity) or a list such as `2-31` / `2,3,4`; unset passes.
"""

from __future__ import annotations

from ..errors import ParseError
from ..parsers.cpulist import format_cpulist, parse_cpulist
from ..results import ERROR, FAIL, PASS, Fix, ObjectResult
from .base import Target

VARS_SCHEMA = {"type": "object", "required": ["avoid_cpus"], "additionalProperties": False,
               "properties": {"avoid_cpus": {"type": "string", "pattern": r"^(\d+(-\d+)?)(,\d+(-\d+)?)*$"}}}


def evaluate(t: Target) -> list[ObjectResult]:
    avoid = parse_cpulist(t.vars["avoid_cpus"], "avoid_cpus")
    want = f"unset, or excludes CPU {format_cpulist(avoid)}"
    results = []
    for source, entries in t.facts.vmx_files.items():
        obj = source.rsplit("/", 1)[-1]
        entry = entries.get("sched.cpu.affinity")
        if entry is None or entry.value.strip().lower() in ("", "all"):
            results.append(ObjectResult(obj, PASS, want, entry.value if entry else "unset",
                                        f"{obj}: no CPU affinity set; the ESXi scheduler places vCPUs"))
            continue
        try:
            cpus = parse_cpulist(entry.value.replace(" ", ""), f"{source}:{entry.line}")
        except ParseError as e:
            results.append(ObjectResult(obj, ERROR, want, entry.value, f"{obj}: cannot read sched.cpu.affinity: {e}",
                                        fix=Fix(file=source, note=f"write sched.cpu.affinity (line {entry.line}) as "
                                                                  "a CPU list such as 1-7 or 1,3,5, or all")))
            continue
        clash = cpus & avoid
        if clash:
            # without the avoided CPUs; "all" when nothing is left (no affinity at all)
            kept = format_cpulist(cpus - avoid) or "all"
            results.append(ObjectResult(obj, FAIL, want, entry.value,
                                        f"{obj}: sched.cpu.affinity {entry.value} includes CPU {format_cpulist(clash)}; "  # noqa: E501 - a message
                                        f"remove it (the hypervisor's own work runs there)",
                                        fix=Fix(file=source, change=f'sched.cpu.affinity = "{kept}"',
                                                note=f"remove CPU {format_cpulist(clash)} from {source} with the VM "
                                                     "powered off, or in the vSphere Client (Edit Settings > "
                                                     "CPU > Scheduling Affinity)")))
        else:
            results.append(ObjectResult(obj, PASS, want, entry.value, f"{obj}: sched.cpu.affinity {entry.value}"))
    return results
