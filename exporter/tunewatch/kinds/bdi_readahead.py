"""read_ahead_kb of each mount's backing device info (sys/class/bdi/<maj>:<min>)."""

from __future__ import annotations

from .._escape import sh
from ..results import ERROR, FAIL, PASS, Fix, ObjectResult, Setting
from .base import Target, per_object

VARS_SCHEMA = {"type": "object", "required": ["read_ahead_kb"], "additionalProperties": False,
               "properties": {"read_ahead_kb": {"type": "integer", "minimum": 0}}}


def evaluate(t: Target) -> list[ObjectResult]:
    wanted = t.vars["read_ahead_kb"]

    def one(mount):
        bdi = f"{mount.major}:{mount.minor}"
        value = t.facts.read_ahead_kb(mount)
        if value is None:
            return ObjectResult(mount.mount_point, ERROR, str(wanted), "absent",
                                f"{mount.mount_point}: sys/class/bdi/{bdi}/read_ahead_kb is absent")
        setting = [Setting("read_ahead_kb", value, wanted)]
        if value == wanted:
            return ObjectResult(mount.mount_point, PASS, str(wanted), str(value),
                                f"{mount.mount_point} (bdi {bdi}) reads ahead {value} KiB", setting)
        command = f"echo {wanted} > {sh(f'/sys/class/bdi/{bdi}/read_ahead_kb')}"
        return ObjectResult(mount.mount_point, FAIL, str(wanted), str(value),
                            f"{mount.mount_point} (bdi {bdi}) reads ahead {value} KiB, want {wanted}: {command}",
                            setting, fix=Fix(command=command))

    mounts = t.mounts()
    t.facts.prefetch_read_ahead_kb(mounts)
    return per_object(mounts, lambda m: m.mount_point, one)
