"""No process with a given command name runs (proc/<pid>/comm)."""

from __future__ import annotations

from .base import FAIL, PASS, ObjectResult, Target

VARS_SCHEMA = {"type": "object", "required": ["process"], "additionalProperties": False,
               "properties": {"process": {"type": "string", "minLength": 1, "maxLength": 15}}}


def evaluate(t: Target) -> list[ObjectResult]:
    name = t.vars["process"]
    pids = sorted(pid for pid, comm in t.facts.processes.items() if comm == name)
    if pids:
        shown = ",".join(map(str, pids[:5])) + ("..." if len(pids) > 5 else "")
        return [ObjectResult(name, FAIL, "not running", f"running (pid {shown})",
                             f"{name} is running (pid {shown}); stop it: systemctl stop {name}")]
    return [ObjectResult(name, PASS, "not running", "not running", f"no {name} process runs")]
