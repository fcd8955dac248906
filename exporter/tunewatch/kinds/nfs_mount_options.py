"""NFS mount options compared by meaning, at runtime (mountinfo) or as the next boot
mounts them (`source: fstab`: fstab, a `.mount` unit or an autofs map, with the options
nfsmount.conf fills in; facts/boot_mounts.py).

mountinfo is kernel-canonical (`proto=tcp`, `vers=3`, `nordirplus` only when off) while
fstab is free-form (`tcp`, `nfsvers=3`, `vers=3.0`): both are normalised with the alias
and default tables in the check's content before comparing. Values are compared exactly:
`rsize=1048576` in fstab is not `rsize=65536`.
"""

from __future__ import annotations

from ..results import FAIL, PASS, UNKNOWN, Fix, ObjectResult
from .base import Target, per_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..facts.boot_mounts import BootMount

VARS_SCHEMA = {
    "type": "object", "required": ["options", "source"], "additionalProperties": False,
    "properties": {
        "source": {"enum": ["runtime", "fstab"]},
        "options": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": r"^[\w-]+(=[\w.:-]+)?$"}},
        "fstab_only_options": {"type": "array", "items": {"type": "string"}},
        "key_aliases": {"type": "object", "additionalProperties": {"type": "string"}},
        "flag_aliases": {"type": "object", "additionalProperties": {"type": "string"}},
        "negations": {"type": "object", "additionalProperties": {"type": "string"}},
        "defaults": {"type": "object", "additionalProperties": {"type": "string"}},
        "value_aliases": {"type": "object",
                          "additionalProperties": {"type": "object", "additionalProperties": {"type": "string"}}},
    },
}


def normalise(pairs: Iterable[tuple[str, str | None]], v: dict, with_defaults: bool = True) -> dict[str, str]:
    """Options as {key: value}; flags get value "" and negated flags value "off"."""
    flag_aliases, key_aliases = v.get("flag_aliases", {}), v.get("key_aliases", {})
    negations, value_aliases = v.get("negations", {}), v.get("value_aliases", {})
    out = dict(v.get("defaults", {})) if with_defaults else {}
    for key, value in pairs:
        if value is None:
            key = flag_aliases.get(key, key)
            if "=" in key:
                key, value = key.split("=", 1)
        key = key_aliases.get(key, key)
        if value is None and key in negations:
            out[negations[key]] = "off"
            continue
        value = "" if value is None else value
        aliases = value_aliases.get(key)
        out[key] = value if aliases is None else aliases.get(value, value)
    return out


def _meanings(options: list[str], v: dict) -> list[tuple[str, str, str]]:
    """(option, key, value) of each wanted option, normalised once per check."""
    return [(option, *normalise([_pair(option)], v, with_defaults=False).popitem()) for option in options]


def _missing(have: dict[str, str], wanted: list[tuple[str, str, str]]) -> list[str]:
    problems = []
    for option, key, value in wanted:
        if key not in have:
            problems.append(f"{option} missing")
        elif have[key] != value:
            problems.append(f"{key}={have[key] or 'on'} (want {option})")
    return problems


def _merged(pairs: Iterable[tuple[str, str | None]], wanted: list[str], v: dict) -> str:
    """The fstab options with every wanted option in, replacing options of the same meaning."""
    want_keys = {key for _option, key, _value in _meanings(wanted, v)}
    kept = [k if val is None else f"{k}={val}" for k, val in pairs
            if next(iter(normalise([(k, val)], v, with_defaults=False)), None) not in want_keys]
    return ",".join(kept + wanted)


def _pair(option: str) -> tuple[str, str | None]:
    key, sep, value = option.partition("=")
    return (key, value) if sep else (option, None)


def _fix(bm: BootMount, pairs: Iterable[tuple[str, str | None]], wanted: list[str], v: dict) -> Fix:
    merged = _merged(pairs, wanted, v)
    if bm.fstab is not None:
        e = bm.fstab
        return Fix(file="/etc/fstab", change=f"{e.spec} {e.file} {e.vfstype} {_merged(e.options, wanted, v)} "
                   f"{e.freq} {e.passno}")
    if bm.fix_file.endswith(".mount"):
        return Fix(file=bm.fix_file, change=f"[Mount]\nOptions={merged}", note="then systemctl daemon-reload")
    return Fix(file=bm.fix_file, change=f"{bm.map_key} -{merged} {bm.spec}",
               note="the entry's options (and the master map line's, which autofs appends) as mount gets them")


def evaluate(t: Target) -> list[ObjectResult]:
    base = list(t.vars["options"])
    configured = t.vars["source"] == "fstab"  # the options the next boot's mount gets
    fstab_only = list(t.vars.get("fstab_only_options", []))

    def one(mount):
        wanted = base
        bm = None  # how it mounts at boot (configured)
        if configured:
            bm = t.facts.boot_mount(mount.mount_point)
            if bm is None:
                want = ",".join(base + fstab_only)
                return ObjectResult(mount.mount_point, FAIL, want, "no fstab entry",
                                    f"{mount.mount_point} is mounted but not in /etc/fstab, a .mount unit or an "
                                    "autofs map: it will not come back at boot", predicted=UNKNOWN,
                                    source="not configured: no /etc/fstab line, .mount unit or autofs map mounts it",
                                    fix=Fix(file="/etc/fstab", change=f"{mount.source} {mount.mount_point} "
                                            f"{mount.fstype} {want} 0 0"))
            # bg and _netdev steer mount -a and systemd-fstab-generator: fstab lines only
            wanted = base + (fstab_only if bm.fstab is not None else [])
            pairs, where = bm.options, bm.where
            if bm.problem:
                return ObjectResult(mount.mount_point, FAIL, ",".join(wanted), "not mounted at boot",
                                    f"{mount.mount_point} is configured in {bm.source}, but {bm.problem}",
                                    predicted=UNKNOWN, source=f"never applied: {bm.problem}",
                                    fix=Fix(command=f"systemctl enable {bm.enable}") if bm.enable else
                                    _fix(bm, pairs, wanted, t.vars))
        else:
            pairs, where = tuple(mount.mount_options) + tuple(mount.super_options), "mountinfo"
        want = ",".join(wanted)
        problems = _missing(normalise(pairs, t.vars), _meanings(wanted, t.vars))
        actual = ",".join(k if v is None else f"{k}={v}" for k, v in pairs)
        predicted, source = (actual, f"configured by {where}") if configured else (None, None)
        if problems:
            fix = (_fix(bm, pairs, wanted, t.vars) if bm is not None else
                   Fix(command=f"umount {mount.mount_point} && mount {mount.mount_point}",
                       note="mount reads the options from /etc/fstab: fix its line first (nfs-mount-options-persistent)"))  # noqa: E501 - a message
            return ObjectResult(mount.mount_point, FAIL, want, "; ".join(problems),
                                f"{mount.mount_point} ({where}): {'; '.join(problems)}"
                                + ("" if configured else "; fix /etc/fstab and remount"), fix=fix,
                                predicted=predicted, source=source)
        return ObjectResult(mount.mount_point, PASS, want, actual,
                            f"{mount.mount_point} has every required option ({where})",
                            predicted=predicted, source=source)

    return per_object(t.mounts(), lambda m: m.mount_point, one)
