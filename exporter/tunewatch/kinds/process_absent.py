"""No process with a given command name runs (proc/<pid>/comm).

A name is cheap: any user can start a process called `irqbalance`. A process counts only
when it is the program itself: its executable (`proc/<pid>/exe`) has that basename and it
runs as root (`proc/<pid>/status` Uid). Another process with the name is reported in the
message and does not fail the check. A process whose executable or owner cannot be read
(a snapshot from a collect before these were recorded, or an unprivileged scan that may
not read root's `exe`) counts by its name, as it always did: unreadable never passes.
"""

from __future__ import annotations

import os

from .._escape import sh
from ..results import FAIL, PASS, Fix, ObjectResult
from .base import Target

VARS_SCHEMA = {"type": "object", "required": ["process"], "additionalProperties": False,
               "properties": {"process": {"type": "string", "minLength": 1, "maxLength": 15}}}


def _pids(pids: list[int]) -> str:
    return ",".join(map(str, pids[:5])) + ("..." if len(pids) > 5 else "")


def evaluate(t: Target) -> list[ObjectResult]:
    name = t.vars["process"]
    named = sorted(pid for pid, comm in t.facts.processes.items() if comm == name)
    pids, others = [], []
    for pid in named:
        exe, uid = t.facts.process_identity(pid)
        if (exe is not None and os.path.basename(exe) != name) or (uid is not None and uid != 0):
            others.append(f"pid {pid} ({exe or 'executable unknown'}, uid {'unknown' if uid is None else uid})")
        else:
            pids.append(pid)
    other = (f"; {len(others)} other process(es) named {name} are not {name} and do not count: "
             f"{', '.join(others[:5])}") if others else ""
    if pids:
        shown = _pids(pids)
        command = f"systemctl stop {sh(name)}"
        return [ObjectResult(name, FAIL, "not running", f"running (pid {shown})",
                             f"{name} is running (pid {shown}); stop it: {command}{other}",
                             fix=Fix(command=command,
                                     note=f"stops the {name} unit now; where no unit of that name started it, "
                                          f"pkill -x {sh(name)}. Keeping it off after the next boot is the "
                                          "service's own check (systemctl disable/mask)"))]
    actual = "not running" + (f" ({len(others)} impostor(s) named {name})" if others else "")
    return [ObjectResult(name, PASS, "not running", actual, f"no {name} process runs{other}")]
