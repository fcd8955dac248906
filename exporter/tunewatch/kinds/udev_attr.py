"""A udev rule assigns a sysfs attribute for a subsystem's devices at boot (ATTR{x}="v").

The rules are evaluated as udev does for an "add" event of a device of that subsystem
(facts/udev.py): files merged by name over /etc, /run, /usr/lib and /lib with /dev/null
masks, rules in order, `SUBSYSTEM`/`ACTION` matched with globs, `|` alternatives and `!=`;
the last matching `ATTR{x}=` wins. Keys about a particular device (KERNEL, ATTR{}, ...)
and PROGRAM/RESULT cannot be told without the device and are taken to match.
"""

from __future__ import annotations

from ..facts import udev
from .base import FAIL, PASS, ObjectResult, Target

VARS_SCHEMA = {"type": "object", "required": ["subsystem", "attribute", "value"], "additionalProperties": False,
               "properties": {"subsystem": {"type": "string"}, "attribute": {"type": "string"},
                              "value": {"type": ["string", "integer"]}}}


def evaluate(t: Target) -> list[ObjectResult]:
    sub, attr, value = t.vars["subsystem"], t.vars["attribute"], str(t.vars["value"])
    obj, want = f"udev {sub} {attr}", f'SUBSYSTEM=="{sub}", ATTR{{{attr}}}="{value}"'
    files = udev.read_rules(t.facts.fs)
    outcome = udev.evaluate(files, udev.UdevDevice({"SUBSYSTEM": sub}, unknown_matches=True))
    got = outcome.attrs.get(attr)
    if got and got[0] == value:
        return [ObjectResult(obj, PASS, want, f"{got[1]}:{got[2]}",
                             f"{got[1]}:{got[2]} sets {attr}={value} for {sub} devices")]
    actual = f"{got[1]}:{got[2]} sets {got[0]}" if got else "no rule"
    return [ObjectResult(obj, FAIL, want, actual,
                         f"no udev rule sets {attr}={value} for {sub} devices at boot ({actual}); add one to "
                         f"/etc/udev/rules.d/ (ACTION==\"add\", SUBSYSTEM==\"{sub}\")")]
