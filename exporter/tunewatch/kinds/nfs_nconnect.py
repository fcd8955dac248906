"""nconnect=N on NFS mounts where the kernel supports it.

Support is a content table (kernel >= 5.3, or a distribution backport such as RHEL 8.3's
4.18.0-240); a mount that already shows `nconnect=` proves support whatever the table says.
"""

import re

from .base import FAIL, NOTAPPLICABLE, PASS, ObjectResult, Setting, Target, as_number, per_object

VARS_SCHEMA = {
    "type": "object", "required": ["nconnect", "min_kernel"], "additionalProperties": False,
    "properties": {
        "nconnect": {"type": "integer", "minimum": 1, "maximum": 16},
        "min_kernel": {"type": "string", "pattern": r"^\d+(\.\d+)*$"},
        "backports": {"type": "array", "items": {
            "type": "object", "required": ["os_id", "min_kernel"], "additionalProperties": False,
            "properties": {"os_id": {"type": "array", "items": {"type": "string"}},
                           "min_kernel": {"type": "string"}}}},
    },
}


def kernel_tuple(release: str) -> tuple[int, ...]:
    """'4.18.0-305.el8.x86_64' -> (4, 18, 0, 305); compares versions and backport builds."""
    return tuple(int(n) for n in re.findall(r"\d+", release.split(".el")[0].split("-default")[0])[:4])


def supported(host, v: dict) -> bool:
    kernel = kernel_tuple(host.kernel)
    if kernel >= kernel_tuple(v["min_kernel"]):
        return True
    return any(host.os_id in b["os_id"] and kernel >= kernel_tuple(b["min_kernel"]) for b in v.get("backports", []))


def evaluate(t: Target) -> list[ObjectResult]:
    wanted = t.vars["nconnect"]
    host = t.facts.host
    kernel_ok = supported(host, t.vars)

    def one(mount):
        value = dict(mount.super_options).get("nconnect")
        setting = [Setting("nconnect", as_number(value) if value else 1, wanted)]
        if value is None and not kernel_ok:
            return ObjectResult(mount.mount_point, NOTAPPLICABLE, f"nconnect={wanted}", "unsupported",
                                f"kernel {host.kernel} ({host.os_id}) does not support nconnect")
        if value == str(wanted):
            return ObjectResult(mount.mount_point, PASS, f"nconnect={wanted}", f"nconnect={value}",
                                f"{mount.mount_point} uses {value} TCP connections", setting)
        shown = f"nconnect={value}" if value else "no nconnect (1 connection)"
        return ObjectResult(mount.mount_point, FAIL, f"nconnect={wanted}", shown,
                            f"{mount.mount_point} has {shown}; add nconnect={wanted} to its fstab options and remount",
                            setting)

    return per_object(t.mounts(), lambda m: m.mount_point, one)
