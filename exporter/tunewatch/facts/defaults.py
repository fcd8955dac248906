"""Driver and module defaults (content, checks/defaults/*.yaml): the value a setting comes
back with after a boot when no consumer sets it.

Entries are keyed by upstream kernel version (`kernel: {from, below}`) or, where a
distribution backported a change, by its os-release ID and kernel build
(`distribution: {os_id, from, below}`). A distribution entry wins over an upstream one;
without one the upstream version is assumed (named in the result: vendor kernels may
backport). A value may depend on the online CPUs (`steps`) and is never above the
device's own maximum (`capped_by`, an ethtool key).
"""

from __future__ import annotations

import re

from .._record import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .host import Host


class Default(FrozenRecord):
    __slots__ = ("value", "source", "assumption", "cite")
    value: str
    source: str  # "driver default (hv_netvsc, Linux 5.14: 8)"
    assumption: str  # why this entry: "upstream Linux 5.14; a rhel backport is not known to content"
    cite: str

    def __init__(self, value: str, source: str, assumption: str, cite: str):
        self.value = value
        self.source = source
        self.assumption = assumption
        self.cite = cite


def kernel_tuple(release: str) -> tuple[int, ...]:
    """'4.18.0-305.el8.x86_64' -> (4, 18, 0, 305); '6.12' -> (6, 12)."""
    return tuple(int(n) for n in re.findall(r"\d+", release.split(".el")[0].split("-default")[0])[:4])


def _in_range(kernel: tuple[int, ...], spec: dict) -> bool:
    if "from" in spec and kernel < kernel_tuple(spec["from"]):
        return False
    return not ("below" in spec and kernel >= kernel_tuple(spec["below"]))


def _steps(steps: list[dict], vcpus: int | None) -> int | None:
    for step in steps:
        if "vcpus_up_to" in step and (vcpus is None or vcpus > step["vcpus_up_to"]):
            continue
        if "constant" in step:
            return step["constant"]
        if vcpus is None:
            return None
        if "min_vcpus_and" in step:
            return min(vcpus, step["min_vcpus_and"])
        return max(1, vcpus // step["vcpus_divided_by"])
    return None


class Defaults:
    """Every loaded defaults document; `lookup()` picks the entry for one host."""

    def __init__(self, documents: Iterable[dict] = (), layouts: dict | None = None):
        # checks/layouts rides along: it is content the facts need, loaded and cached with these
        self.layouts: dict[str, dict] = layouts or {}
        self._entries: dict[tuple[str, str], list[dict]] = {}
        self._type: dict[str, str] = {}
        for doc in documents:
            self._type[doc["module"]] = doc["type"]
            for entry in doc["defaults"]:
                self._entries.setdefault((doc["module"], entry["setting"]), []).append(entry)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def _entry(self, module: str, setting: str, host: Host | None) -> tuple[dict, str] | None:
        entries = self._entries.get((module, setting), [])
        kernel = kernel_tuple(host.kernel) if host is not None and host.kernel != "unknown" else ()
        os_id = host.os_id if host is not None else "unknown"
        upstream = kernel[:3]
        for e in entries:  # a distribution's own entry first
            d = e.get("distribution")
            if d and os_id in d["os_id"] and kernel and _in_range(kernel, d):
                return e, f"{os_id} kernel {host.kernel if host else 'unknown'}"
        for e in entries:
            if e.get("distribution"):
                continue
            if "kernel" not in e:
                return e, "all kernels"
            if upstream and _in_range(upstream, e["kernel"]):
                shown = ".".join(map(str, upstream[:2]))
                backport = any(e2.get("distribution") for e2 in entries) or os_id not in ("unknown", "")
                return e, f"upstream Linux {shown}" + (
                    f"; assuming the {os_id} kernel has no backport of a later change" if backport else "")
        return None

    def lookup(self, module: str, setting: str, host: Host | None, vcpus: int | None = None,
               device: dict | None = None) -> Default | None:
        """The default of `setting` for `module` on this host, or None when content does not
        know it (no entry for the kernel, or a CPU-dependent value with CPUs unknown)."""
        found = self._entry(module, setting, host)
        if found is None:
            return None
        entry, assumption = found
        value = entry["value"]
        if isinstance(value, dict):
            value = _steps(value["steps"], vcpus)
            if value is None:
                return None
        capped = ""
        if entry.get("capped_by") and device is not None:
            section, key = entry["capped_by"].split(".", 1)
            limit = (device.get(section) or {}).get(key)
            if isinstance(limit, int) and limit > 0 and isinstance(value, int) and value > limit:
                value, capped = limit, f", capped at {entry['capped_by']} {limit}"
        kind = self._type.get(module, "driver")
        where = assumption.split(";")[0] if assumption != "all kernels" else ""
        if kind == "driver":
            source = f"driver default ({module}, {where.replace('upstream ', '')}: {value}{capped})" if where else \
                f"driver default ({module}: {value}{capped})"
        else:
            source = f"{'module' if kind == 'module' else 'kernel'} default ({module}: {value})"
        return Default(str(value), source, assumption, entry["cite"])


def readers(defaults: Defaults, fmt: str, host: Host | None) -> tuple[tuple[str, ...], str] | None:
    """(reader units, cite) of configuration format `fmt` (`ifcfg-rh`, `ifcfg-suse`) on this
    host's release, from `type: reader` content (checks/defaults/ifcfg.yaml); None when
    content names no entry for the release."""
    if host is None:
        return None
    version = kernel_tuple(host.os_version) if host.os_version else ()
    for e in defaults._entries.get(("ifcfg", fmt), []):
        r = e.get("release") or {}
        if host.os_id in r.get("os_id", ()) and version and _in_range(version, r):
            return tuple(str(e["value"]).split()), e["cite"]
    return None
