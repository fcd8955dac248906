"""No process with a given command name runs (proc/<pid>/comm)."""

from __future__ import annotations

from ..results import FAIL, PASS, Fix, ObjectResult
from .base import Target

VARS_SCHEMA = {"type": "object", "required": ["process"], "additionalProperties": False,
               "properties": {"process": {"type": "string", "minLength": 1, "maxLength": 15}}}


def evaluate(t: Target) -> list[ObjectResult]:
    name = t.vars["process"]
    pids = sorted(pid for pid, comm in t.facts.processes.items() if comm == name)
    if pids:
        shown = ",".join(map(str, pids[:5])) + ("..." if len(pids) > 5 else "")
        command = f"systemctl stop {name}"
        return [ObjectResult(name, FAIL, "not running", f"running (pid {shown})",
                             f"{name} is running (pid {shown}); stop it: {command}",
                             fix=Fix(command=command,
                                     note=f"stops the {name} unit now; where no unit of that name started it, "
                                          f"pkill -x {name}. Keeping it off after the next boot is the "
                                          "service's own check (systemctl disable/mask)"))]
    return [ObjectResult(name, PASS, "not running", "not running", f"no {name} process runs")]
