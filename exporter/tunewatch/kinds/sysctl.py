"""Kernel parameters, at runtime (proc/sys) or as configured to apply at boot."""

from .base import ERROR, FAIL, PASS, ObjectResult, Setting, Target, as_number

VARS_SCHEMA = {
    "type": "object", "required": ["settings", "source"], "additionalProperties": False,
    "properties": {
        "source": {"enum": ["runtime", "configured"]},
        "settings": {"type": "object", "minProperties": 1,
                     "additionalProperties": {"type": ["integer", "string"]}},
        "module_params": {"type": "object", "additionalProperties": {"type": "string"},
                          "description": "modprobe.d 'module.param' -> sysctl key it sets"},
    },
}


def _same(actual: str, expected) -> bool:
    a, e = as_number(actual), as_number(expected)
    if a is not None and e is not None:
        return a == e
    return " ".join(str(actual).split()) == " ".join(str(expected).split())


def evaluate(t: Target) -> list[ObjectResult]:
    configured = t.facts.sysctl_configured if t.vars["source"] == "configured" else None
    results = []
    for key, expected in t.vars["settings"].items():
        if configured is None:
            actual, where = t.facts.sysctl_runtime(key), "runtime"
            if actual is None:
                results.append(ObjectResult(key, ERROR, str(expected), "absent",
                                            f"{key} does not exist at runtime (module not loaded?)"))
                continue
        else:
            found = configured.get(key)
            actual, where = (found.value, found.source) if found else (None, "not configured")
        setting = [Setting(key, as_number(actual), as_number(expected))]
        if actual is not None and _same(actual, expected):
            results.append(ObjectResult(key, PASS, str(expected), actual, f"{key} = {actual} ({where})", setting))
        elif configured is None:
            results.append(ObjectResult(key, FAIL, str(expected), actual,
                                        f"{key} is {actual}, want {expected}: sysctl -w {key}={expected}", setting))
        else:
            shown = actual if actual is not None else "not configured"
            results.append(ObjectResult(key, FAIL, str(expected), shown,
                                        f"{key} is {shown} in boot configuration ({where}), want {expected}: "
                                        f"add '{key} = {expected}' to /etc/sysctl.d/", setting))
    return results
