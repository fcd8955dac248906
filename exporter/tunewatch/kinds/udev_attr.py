"""A udev rule assigns a sysfs attribute for a subsystem at boot (ATTR{x}="v")."""

from ..parsers.udev_rules import parse_udev_rules
from .base import FAIL, PASS, ObjectResult, Target

VARS_SCHEMA = {"type": "object", "required": ["subsystem", "attribute", "value"], "additionalProperties": False,
               "properties": {"subsystem": {"type": "string"}, "attribute": {"type": "string"},
                              "value": {"type": ["string", "integer"]}}}


def evaluate(t: Target) -> list[ObjectResult]:
    sub, attr, value = t.vars["subsystem"], t.vars["attribute"], str(t.vars["value"])
    obj, want = f"udev {sub} {attr}", f'SUBSYSTEM=="{sub}", ATTR{{{attr}}}="{value}"'
    seen = []
    for script in t.facts.boot_scripts:
        if script.mechanism != "udev":
            continue
        for rule in parse_udev_rules(script.text, script.source):
            if not any(tok.key == "SUBSYSTEM" and tok.op == "==" and tok.value == sub for tok in rule.tokens):
                continue
            for tok in rule.tokens:
                if tok.key == "ATTR" and tok.attr == attr and tok.op in ("=", ":="):
                    if tok.value == value:
                        return [ObjectResult(obj, PASS, want, f"{script.source}:{rule.line}",
                                             f"{script.source}:{rule.line} sets {attr}={value} for {sub} devices")]
                    seen.append(f"{script.source}:{rule.line} sets {tok.value}")
    actual = "; ".join(seen) or "no rule"
    return [ObjectResult(obj, FAIL, want, actual,
                         f"no udev rule sets {attr}={value} for {sub} devices ({actual}); add one to /etc/udev/rules.d/")]
