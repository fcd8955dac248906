"""nconnect=N on NFS mounts where the kernel supports it, at runtime or in fstab.

Support is a content table (kernel >= 5.3, or a distribution backport such as RHEL 8.3's
4.18.0-240); a mount that already shows `nconnect=` proves support whatever the table says.
An unknown kernel version decides nothing: `error`, not notapplicable. In fstab, the
mount's own line must carry `nconnect=N` or the next mount at boot opens one connection.
"""

from __future__ import annotations

import re

from .._escape import sh
from ..parsers._text import option_value
from ..results import ERROR, FAIL, NOTAPPLICABLE, PASS, UNKNOWN, Fix, ObjectResult, Setting
from .base import OncePerObject, Target, as_number, boot_mount_fix, fstab_fix, per_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..facts.boot_mounts import BootMount
    from ..facts.host import Host

VARS_SCHEMA = {
    "type": "object", "required": ["nconnect", "min_kernel"], "additionalProperties": False,
    "properties": {
        "source": {"enum": ["runtime", "fstab"]},
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


def supported(host: Host, v: dict) -> bool | None:
    """True/False from the content table; None when the kernel version is unknown."""
    kernel = kernel_tuple(host.kernel) if host.kernel != "unknown" else ()
    if not kernel:
        return None
    if kernel >= kernel_tuple(v["min_kernel"]):
        return True
    return any(host.os_id in b["os_id"] and kernel >= kernel_tuple(b["min_kernel"]) for b in v.get("backports", []))


def _fix(bm: BootMount, wanted: int) -> Fix:
    """nconnect=N in the file that mounts it at boot (fstab line, .mount unit, autofs map)."""
    opts = [k if v is None else f"{k}={v}" for k, v in bm.given if k != "nconnect"] + [f"nconnect={wanted}"]
    return boot_mount_fix(bm, ",".join(opts))


def evaluate(t: Target) -> list[ObjectResult]:
    wanted = t.vars["nconnect"]
    want = f"nconnect={wanted}"
    fstab = t.vars.get("source", "runtime") == "fstab"
    host, kernel_named = t.facts.host, t.facts.host.kernel
    if fstab:  # the fstab line is mounted by the kernel that boots next: its support counts
        nxt = t.facts.next_kernel
        host, kernel_named = host.replace(kernel=nxt.release), nxt.describe()
    kernel_ok = supported(host, t.vars)
    wanted_text = str(wanted)
    configured = OncePerObject(lambda options: option_value(options, "nconnect"))  # fstab lines share theirs

    def one(mount):
        # the running value proves support whatever the table says: read when the table is not enough
        running = option_value(mount.super_options, "nconnect") if not (fstab and kernel_ok) else None
        if running is None and kernel_ok is None:
            return ObjectResult(mount.mount_point, ERROR, want, "kernel unknown",
                                f"{mount.mount_point}: kernel version unreadable (proc/sys/kernel/osrelease), "
                                "cannot tell whether nconnect is supported")
        if running is None and not kernel_ok:
            return ObjectResult(mount.mount_point, NOTAPPLICABLE, want, "unsupported",
                                f"kernel {kernel_named} ({host.os_id}) does not support nconnect")
        bm = None  # how it mounts at boot (fstab)
        predicted = source = None
        if fstab:
            bm = t.facts.boot_mount(mount.mount_point)
            if bm is None:
                return ObjectResult(mount.mount_point, FAIL, want, "no fstab entry",
                                    f"{mount.mount_point} is mounted but not in /etc/fstab, a .mount unit or an "
                                    f"autofs map: nconnect={wanted} will not come back at boot", predicted=UNKNOWN,
                                    source="not configured: no /etc/fstab line, .mount unit or autofs map mounts it",
                                    fix=fstab_fix(mount.source, mount.mount_point, mount.fstype,
                                                  f"defaults,nconnect={wanted}"))
            if bm.problem:
                return ObjectResult(mount.mount_point, FAIL, want, "not mounted at boot",
                                    f"{mount.mount_point} is configured in {bm.source}, but {bm.problem}",
                                    predicted=UNKNOWN, source=f"never applied: {bm.problem}",
                                    fix=(Fix(command=f"systemctl enable {sh(bm.enable)}") if bm.enable else
                                         _fix(bm, wanted)))
            value = configured(bm.options)
            where = bm.where
            if value:
                predicted, source = f"nconnect={value}", f"configured by {where}"
            else:  # nfs(5): without nconnect the client opens one connection per server
                predicted, source = "nconnect=1", "module default (nfs(5): one connection unless nconnect=)"
        else:
            value, where = running, "mountinfo"
        setting = [Setting("nconnect", as_number(value) if value else 1, wanted)]
        if value == wanted_text:
            return ObjectResult(mount.mount_point, PASS, want, want,
                                f"{mount.mount_point} uses {value} TCP connections ({where})", setting,
                                predicted=predicted, source=source)
        shown = f"nconnect={value}" if value else "no nconnect (1 connection)"
        if bm is not None:
            fix = _fix(bm, wanted)
        else:
            fix = Fix(command=f"umount {sh(mount.mount_point)} && mount -o nconnect={wanted} {sh(mount.mount_point)}",
                      note="nconnect is set when the first mount of a server connects; add it to /etc/fstab too")
        return ObjectResult(mount.mount_point, FAIL, want, shown,
                            f"{mount.mount_point} has {shown} ({where}); add nconnect={wanted} to its fstab "
                            "options" + ("" if fstab else " and remount"), setting, fix=fix,
                            predicted=predicted, source=source)

    return per_object(t.mounts(), lambda m: m.mount_point, one)
