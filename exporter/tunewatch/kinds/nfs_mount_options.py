"""NFS mount options compared by meaning, at runtime (mountinfo) or as the next boot
mounts them (`source: fstab`: fstab, a `.mount` unit or an autofs map, with the options
nfsmount.conf fills in; facts/boot_mounts.py).

mountinfo is kernel-canonical (`proto=tcp`, `vers=3`, `nordirplus` only when off) while
fstab is free-form (`tcp`, `nfsvers=3`, `vers=3.0`): both are normalised with the alias
and default tables in the check's content before comparing. Values are compared exactly:
`rsize=1048576` in fstab is not `rsize=65536`.
"""

from __future__ import annotations

from .._escape import sh
from ..results import FAIL, PASS, UNKNOWN, Fix, ObjectResult
from .base import OncePerObject, Target, boot_mount_fix, fstab_fix, per_object

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


class Meanings(dict):
    """option pair -> (key, value) it means under one check's alias tables, each resolved
    on first use: a fleet's mounts repeat their options, and the lookups run in C."""

    def __init__(self, v: dict):
        super().__init__()
        self.vars = v

    def __missing__(self, pair: tuple[str, str | None]) -> tuple[str, str]:
        meaning = self[pair] = _meaning(pair, self.vars)
        return meaning


class OptionTexts(dict):
    """option pair -> its text as mount takes it (`key=value`, or the flag)."""

    def __missing__(self, pair: tuple[str, str | None]) -> str:
        text = self[pair] = pair[0] if pair[1] is None else f"{pair[0]}={pair[1]}"
        return text


class _Relevant(dict):
    """option pair -> whether it means one of the wanted keys (the others cannot change
    a verdict: normalise() keeps the last value of each key, and _missing() reads only
    the wanted ones)."""

    def __init__(self, meanings: Meanings, keys: set[str]):
        super().__init__()
        self.meanings, self.wanted_keys = meanings, keys
        self.by_name: dict[str, bool] = {}

    def __missing__(self, pair: tuple[str, str | None]) -> bool:
        if pair[1] is None:
            found = self[pair] = self.meanings[pair][0] in self.wanted_keys
            return found
        # an option with a value means the key its name resolves to, whatever the value
        # (_meaning(): aliases of values change the value only): `addr=` of each server once
        known = self.by_name.get(pair[0])
        if known is None:
            known = self.by_name[pair[0]] = self.meanings[pair][0] in self.wanted_keys
        self[pair] = known
        return known


def normalise(pairs: Iterable[tuple[str, str | None]], v: dict, with_defaults: bool = True,
              meanings: Meanings | None = None) -> dict[str, str]:
    """Options as {key: value}; flags get value "" and negated flags value "off" (a later
    option overrides an earlier one). `meanings`: the check's Meanings(v), kept across calls."""
    out = dict(v.get("defaults", {})) if with_defaults else {}
    out.update(map((meanings if meanings is not None else Meanings(v)).__getitem__, pairs))
    return out


def _meaning(pair: tuple[str, str | None], v: dict) -> tuple[str, str]:
    """(key, value) one option means, its aliases resolved."""
    key, value = pair
    if value is None:
        key = v.get("flag_aliases", {}).get(key, key)
        if "=" in key:
            key, value = key.split("=", 1)
    key = v.get("key_aliases", {}).get(key, key)
    negations = v.get("negations", {})
    if value is None and key in negations:
        return negations[key], "off"
    aliases = v.get("value_aliases", {}).get(key)
    value = "" if value is None else value
    return key, value if aliases is None else aliases.get(value, value)


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
    # an fstab line keeps its own options (nfsmount.conf's stay out of it); the others get what mount gets
    if bm.fstab is not None:
        return boot_mount_fix(bm, _merged(bm.fstab.options, wanted, v))
    return boot_mount_fix(bm, _merged(pairs, wanted, v), autofs_note="the entry's options (and the master map "
                          "line's, which autofs appends) as mount gets them")


def evaluate(t: Target) -> list[ObjectResult]:
    base = list(t.vars["options"])
    configured = t.vars["source"] == "fstab"  # the options the next boot's mount gets
    fstab_only = list(t.vars.get("fstab_only_options", []))
    # normalised once per check, not per mount: (without, with) the fstab-only options
    wanted_meanings = (_meanings(base, t.vars), _meanings(base + fstab_only, t.vars))

    meaning_of, option_text = Meanings(t.vars), OptionTexts()
    wants = (",".join(base), ",".join(base + fstab_only))
    wanted_keys = {key for _option, key, _value in wanted_meanings[True]}
    relevant = _Relevant(meaning_of, wanted_keys)
    problems_of: dict[tuple, list[str]] = {}

    def judge(pairs: tuple, with_fstab_only: bool) -> tuple[list[str], str]:
        """(problems, options as text) of one option list. Only the options that mean a
        wanted key decide (`addr=` does not), and a fleet's mounts share those: each such
        list is judged once per check, not once per mount."""
        key = (tuple(filter(relevant.__getitem__, pairs)), with_fstab_only)
        problems = problems_of.get(key)
        if problems is None:
            problems = problems_of[key] = _missing(normalise(key[0], t.vars, meanings=meaning_of),
                                                   wanted_meanings[with_fstab_only])
        return problems, ",".join(map(option_text.__getitem__, pairs))

    # fstab lines share whole option tuples (parsers/_text.options_splitter): judged once each
    by_line = (OncePerObject(lambda pairs: judge(pairs, False)), OncePerObject(lambda pairs: judge(pairs, True)))

    def judged(pairs: tuple, with_fstab_only: bool) -> tuple[list[str], str]:
        return by_line[with_fstab_only](pairs) if configured else judge(pairs, with_fstab_only)

    def one(mount):
        wanted, with_fstab_only = base, False
        bm = None  # how it mounts at boot (configured)
        if configured:
            bm = t.facts.boot_mount(mount.mount_point)
            if bm is None:
                want = ",".join(base + fstab_only)
                return ObjectResult(mount.mount_point, FAIL, want, "no fstab entry",
                                    f"{mount.mount_point} is mounted but not in /etc/fstab, a .mount unit or an "
                                    "autofs map: it will not come back at boot", predicted=UNKNOWN,
                                    source="not configured: no /etc/fstab line, .mount unit or autofs map mounts it",
                                    fix=fstab_fix(mount.source, mount.mount_point, mount.fstype, want))
            # bg and _netdev steer mount -a and systemd-fstab-generator: fstab lines only
            with_fstab_only = bm.fstab is not None
            wanted = base + fstab_only if with_fstab_only else base
            pairs, where = bm.options, bm.where
            if bm.problem:
                return ObjectResult(mount.mount_point, FAIL, ",".join(wanted), "not mounted at boot",
                                    f"{mount.mount_point} is configured in {bm.source}, but {bm.problem}",
                                    predicted=UNKNOWN, source=f"never applied: {bm.problem}",
                                    fix=Fix(command=f"systemctl enable {sh(bm.enable)}") if bm.enable else
                                    _fix(bm, pairs, wanted, t.vars))
        else:
            pairs, where = mount.mount_options + mount.super_options, "mountinfo"
        want = wants[with_fstab_only]
        problems, actual = judged(pairs, with_fstab_only)
        predicted, source = (actual, f"configured by {where}") if configured else (None, None)
        if problems:
            fix = (_fix(bm, pairs, wanted, t.vars) if bm is not None else
                   Fix(command=f"umount {sh(mount.mount_point)} && mount {sh(mount.mount_point)}",
                       note="mount reads the options from /etc/fstab: fix its line first (nfs-mount-options-persistent)"))  # noqa: E501 - a message
            return ObjectResult(mount.mount_point, FAIL, want, "; ".join(problems),
                                f"{mount.mount_point} ({where}): {'; '.join(problems)}"
                                + ("" if configured else "; fix /etc/fstab and remount"), fix=fix,
                                predicted=predicted, source=source)
        return ObjectResult(mount.mount_point, PASS, want, actual,
                            f"{mount.mount_point} has every required option ({where})",
                            predicted=predicted, source=source)

    return per_object(t.mounts(), lambda m: m.mount_point, one)
