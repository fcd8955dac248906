"""Boot-prediction helpers shared by the kinds with a `-persistent` form.

Every object of a `-persistent` check carries `predicted` (the value after the next boot,
or UNKNOWN) and `source` (`configured by FILE`, `driver default (...)`, `module default
(...)`, `never applied: WHY`); outputs read these fields, never the message.
"""

from __future__ import annotations

from .._lazyre import lazy
from ..results import ERROR, NOTAPPLICABLE, UNKNOWN, AfterReadd, ObjectResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    class Check(Protocol):
        """What is read here of content.catalog.Check (a layer above kinds)."""
        id: str
        runtime_check: str | None


def configured_by(source: str) -> str:
    return f"configured by {source}"


def complete(results: list[ObjectResult]) -> list[ObjectResult]:
    """An object the kind could not predict (an unreadable fact, nothing in scope) still
    says so: `unknown`, with the verdict's own message as the reason."""
    for o in results:
        if o.predicted is None:
            o.predicted = UNKNOWN
            o.source = o.source or f"could not predict: {o.message}"
    return results


NOT_AFFECTED = "not affected by a re-add"
PER_INTERFACE = lazy(r"^net\.ipv[46]\.(conf|neigh)\.(?!all\.|default\.)[^.]+\.")  # reset when the NIC is re-added


def default_sibling(key: str) -> str | None:
    """`net.ipv4.conf.eth0.rp_filter` -> `net.ipv4.conf.default.rp_filter`: the entry a device
    added without a reboot copies its per-interface value from (None for other keys)."""
    m = PER_INTERFACE.match(key)
    return None if m is None else m.group(0).rsplit(".", 2)[0] + ".default." + key[m.end():]


DEVICE_KINDS = frozenset({"nic_settings_persistent", "irq_affinity_persistent"})  # they set after_readd themselves


def is_persistent(check: Check) -> bool:
    return bool(check.runtime_check) or check.id.endswith("-persistent")


def complete_readd(kind: str, objects: list[ObjectResult], runtime: Any = None, runtime_id: str | None = None) -> None:
    """Every object of a `-persistent` check carries `after_readd`. A setting no device
    event touches (sysctls, mount options, service state) keeps its runtime value: the
    runtime check's object of the same name (`runtime`, a CheckResult, when it ran)."""
    by_name = {o.object: o for o in runtime.objects} if runtime is not None else {}
    device_kind, per_interface = kind in DEVICE_KINDS, kind == "sysctl"
    for o in objects:
        if o.after_readd is not None:
            continue
        if device_kind or o.status in (ERROR, NOTAPPLICABLE):
            if o.status == NOTAPPLICABLE:
                o.after_readd = AfterReadd("-", o.message, NOTAPPLICABLE)
            else:  # an error, or a device kind that left an object without one: not decided
                o.after_readd = AfterReadd(UNKNOWN, f"could not predict: {o.message}", ERROR)
            continue
        if per_interface and PER_INTERFACE.match(o.object):
            # systemd 99-systemd.rules: on a net add, `systemd-sysctl --prefix=/net/ipv4/conf/$name ...`
            o.after_readd = AfterReadd(o.predicted or UNKNOWN, f"re-applied on add by systemd-sysctl --prefix="
                                       f"/net/.../$name (udev 99-systemd.rules): {o.source}", o.status)
            continue
        r = by_name.get(o.object)
        if r is None and runtime is not None and len(runtime.objects) == 1:
            r = runtime.objects[0]
        if r is None:
            why = f"the runtime check {runtime_id} was not run" if runtime is None else \
                f"the runtime check {runtime_id} has no object {o.object}"
            o.after_readd = AfterReadd(UNKNOWN, f"{NOT_AFFECTED} ({why}, so its value is not known)", NOTAPPLICABLE)
        else:
            o.after_readd = AfterReadd(r.actual, NOT_AFFECTED, r.status)
