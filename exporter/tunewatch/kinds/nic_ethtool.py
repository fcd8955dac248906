"""NIC driver settings from one ethtool section: rings, coalesce or features."""

from __future__ import annotations

from .._escape import sh
from ..results import ERROR, FAIL, PASS, Fix, ObjectResult, Setting
from .base import Target, as_number, per_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# its objects are interfaces (eth1, eth1/irq45): one the kernel could not have named is an error
PER_INTERFACE = True
VARS_SCHEMA = {"type": "object", "required": ["section", "expected"], "additionalProperties": False,
               "properties": {"section": {"enum": ["rings", "coalesce", "features", "channels"]},
                              "expected": {"type": "object", "minProperties": 1,
                                           "additionalProperties": {"type": ["integer", "boolean", "string"]}}}}

_FLAG = {"on": True, "off": False, True: True, False: False}
_CLI = {"rings": "-G", "coalesce": "-C", "features": "-K", "channels": "-L"}


def _show(value: Any) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def _equal(actual: Any, expected: Any) -> bool:
    if isinstance(expected, bool) or expected in ("on", "off"):
        return _FLAG.get(actual, actual) == _FLAG[expected]
    return as_number(actual) == as_number(expected)


def evaluate(t: Target) -> list[ObjectResult]:
    section, expected = t.vars["section"], t.vars["expected"]
    want = " ".join(f"{k} {_show(v)}" for k, v in expected.items())

    def one(iface):
        data = t.facts.ethtool(iface.name).get(section)
        if data is None:
            return ObjectResult(iface.name, ERROR, want, "unsupported",
                                f"{iface.name}: the {iface.driver} driver reports no {section}")
        wrong = {k: data.get(k) for k, v in expected.items() if not _equal(data.get(k), v)}
        have = " ".join(f"{k} {_show(data.get(k))}" for k in expected)
        settings = [Setting(f"{section}.{k}", as_number(data.get(k)), as_number(v))
                    for k, v in expected.items() if as_number(v) is not None and not isinstance(v, bool)]
        if not wrong:
            return ObjectResult(iface.name, PASS, want, have, f"{iface.name}: {have}", settings)
        command = f"ethtool {_CLI[section]} {sh(iface.name)} " + " ".join(f"{k} {sh(_show(expected[k]))}"
                                                                        for k in wrong)
        return ObjectResult(iface.name, FAIL, want, have,
                            f"{iface.name}: " + ", ".join(f"{k} is {_show(v)}" for k, v in wrong.items())
                            + f"; run: {command}", settings, fix=Fix(command=command))

    return per_object(t.interfaces(), lambda i: i.name, one)
