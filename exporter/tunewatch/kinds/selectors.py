"""Object scope and applicability, both content.

A selector is `{include: [clause...], exclude: [clause...]}`; an object is selected when
any include clause matches (no include list: everything) and no exclude clause does. A
clause matches when all its fields do. The profile's scope says which NICs and mounts are
tuned; a check's own `objects` narrows that to what the kind can judge (vmxnet3 only, NICs
with MSI IRQs...). An object must pass both.

Interfaces without a device (`device/driver` link: veth, bridges, lo) are never in a scope
unless the scope names them: an include clause with `name` that matches the interface
puts it in. Its driver is then the one the kernel reports (ETHTOOL_GDRVINFO: "veth"; in a
snapshot its ethtool/<if>.json), or empty when that cannot be read. Having no device, it
has no MSI IRQs to test, so a check's `has_irqs` clause does not keep it out: the user
asked for that interface, and kinds that need IRQs say it has none.
"""

from __future__ import annotations

import re

from ..errors import FactError, ParseError

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:  # annotations only: the fact readers are the scan child's (docs/architecture.md#start-up-cost)
    from typing import Any, Callable

    from ..facts.context import Facts
    from ..facts.interfaces import Interface
    from ..host.fs import FS
    from ..parsers.mountinfo import MountInfo


# What each clause field tests, built once: a clause is tested per object and per check.
_INTERFACE_FIELDS = {
    "name": lambda iface, v: re.search(v, iface.name) is not None,
    "driver": lambda iface, v: iface.driver in v,
    "master_driver": lambda iface, v: iface.master_driver in v,
    "has_master": lambda iface, v: (iface.master is not None) == v,
    "has_lower": lambda iface, v: bool(iface.lowers) == v,
    "has_irqs": lambda iface, v: bool(iface.msi_irqs) == v,
    "operstate": lambda iface, v: iface.operstate in v,
}
_MOUNT_FIELDS = {
    "fstype": lambda mount, v: mount.fstype in v,
    "path": lambda mount, v: re.search(v, mount.mount_point) is not None,
    "source": lambda mount, v: re.search(v, mount.source) is not None,
}


def _interface_clause(clause: dict, iface: Interface) -> bool:
    return all(_INTERFACE_FIELDS[k](iface, v) for k, v in clause.items())


def _mount_clause(clause: dict, mount: MountInfo) -> bool:
    return all(_MOUNT_FIELDS[k](mount, v) for k, v in clause.items())


def _selected(selector: dict | None, obj: Any, match: Callable[[dict, Any], bool]) -> bool:
    if not selector:
        return True
    include = selector.get("include")
    if include is not None and not any(match(c, obj) for c in include):
        return False
    return not any(match(c, obj) for c in selector.get("exclude", []))


def _deviceless_clause(clause: dict, iface: Interface) -> bool:
    return _interface_clause({k: v for k, v in clause.items() if k != "has_irqs"}, iface)


def _reported_driver(facts: Facts, name: str) -> str:
    try:
        return str((facts.ethtool(name).get("driver") or {}).get("driver") or "")
    except (FactError, ParseError):
        return ""


def _named_deviceless(facts: Facts, iface: Interface, scope: dict,
                      objects: tuple[dict | None, ...]) -> Interface | None:
    """`iface` (no device) with its reported driver, when the scope names it and the check's
    objects take it; else None."""
    iface = iface.replace(driver=_reported_driver(facts, iface.name))
    named = any("name" in c and _interface_clause(c, iface) for c in scope["include"])
    if named and _selected(scope, iface, _interface_clause) \
            and all(_selected(s, iface, _deviceless_clause) for s in objects):
        return iface
    return None


def select_interfaces(facts: Facts, scope: dict | None = None, *objects: dict | None) -> list[Interface]:
    """Interfaces the scope (first) and the check's `objects` selectors take, in name order."""
    by_name = scope is not None and any("name" in c for c in scope.get("include") or [])
    found = []
    for iface in facts.interfaces.values():
        if iface.driver is not None:
            if all(_selected(s, iface, _interface_clause) for s in (scope, *objects)):
                found.append(iface)
        elif by_name and scope is not None:  # only a scope naming interfaces reaches device-less ones
            named = _named_deviceless(facts, iface, scope, objects)
            if named is not None:
                found.append(named)
    return found


def select_mounts(facts: Facts, *selectors: dict | None) -> list:
    """The visible mounts the selectors take. Checks share a few scopes, and a host may
    have a thousand mounts: each distinct selection is made once per scan (Facts keeps it;
    a selector is content, not changed during a scan, so its repr is its key)."""
    memo = getattr(facts, "selections", None)
    key = ("mounts", repr(selectors))
    if memo is not None and key in memo:
        return list(memo[key])
    seen: dict[str, object] = {}
    mounts = facts.mountinfo
    for selector in selectors:  # one selector at a time over what the ones before kept
        fstypes = _mount_fstypes(selector) if selector else None
        if fstypes is not None:
            mounts = [m for m in mounts if m.fstype in fstypes]
        elif selector:
            mounts = [m for m in mounts if _selected(selector, m, _mount_clause)]
    for m in mounts:  # the last mount on a path is the visible one
        seen[m.mount_point] = m
    found = list(seen.values())
    if memo is not None:
        memo[key] = tuple(found)
    return found


def _mount_fstypes(selector: dict) -> frozenset[str] | None:
    """The file system types of a selector that tests only those (`include: [{fstype:
    [nfs, nfs4]}]`, the NFS checks' own): a set test per mount, not a clause walk."""
    include = selector.get("include")
    if selector.get("exclude") or not include or any(list(c) != ["fstype"] for c in include):
        return None
    return frozenset(t for c in include for t in c["fstype"])


def _path_exists(fs: FS, pattern: str) -> bool:
    directory, _, name = pattern.rpartition("/")
    return bool(fs.glob(directory, name)) if any(c in name for c in "*?[") else fs.exists(pattern)


def _holds(cond: dict, facts: Facts, scope: dict) -> bool | None:
    """True, False, or None when a fact it needs cannot be read."""
    (key, value), = cond.items()
    if key in ("any_of", "all_of"):
        found = [_holds(c, facts, scope) for c in value]
        decisive = key == "any_of"  # any_of: one True decides; all_of: one False decides
        if decisive in found:
            return decisive
        return None if None in found else not decisive
    if key == "not":
        inner = _holds(value, facts, scope)
        return None if inner is None else not inner
    try:
        if key == "platform":
            return facts.host.platform in value
        if key == "path_exists":
            return _path_exists(facts.fs, value)
        if key == "nfs_mounted":
            mounts = select_mounts(facts, scope.get("mounts"), {"include": [{"fstype": ["nfs", "nfs4"]}]})
            return bool(mounts) == value
        if key == "sysctl_present":
            return facts.sysctl_runtime(value) is not None
        if key == "interfaces_in_scope":
            return bool(select_interfaces(facts, scope.get("interfaces"))) == value
    except (FactError, ParseError):
        return None
    raise ValueError(f"unknown condition {key!r}")  # the schema makes this unreachable


def condition_holds(cond: dict, facts: Facts, scope: dict) -> bool:
    """Evaluate an applicability condition. When a fact it needs cannot be read, the check
    is run anyway, so that the kind meets the same unreadable fact and reports `error`:
    an unreadable mountinfo must not turn the NFS checks into `notapplicable`."""
    return _holds(cond, facts, scope) is not False
