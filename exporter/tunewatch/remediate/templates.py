"""Remediation templates, one per check kind (as ComplianceAsCode keeps one remediation per
template), parameterised by the check's variables and the objects that failed.

Persistence uses the mechanism the host already uses: a sysctl.d drop-in (and conflicting
values in admins' files commented out), the fstab line, a udev rule, `systemctl disable
--now` + mask, the tuned profile (the host's own custom profile when it includes the wanted
one); NIC templates are in `nic.py`. What must not be automated (a remount under load, a
hypervisor setting) becomes a note for the operator.
"""

from __future__ import annotations

from .._escape import Unexpressible, fstab_field, plain_name, sh
from ..errors import FactError, ParseError
from ..facts.sysctl import sysctl_files
from ..facts.tuned import profile_chain, user_profile_dir
from ..kinds.nfs_mount_options import normalise
from ..parsers.sysctl_conf import parse_sysctl_conf
from . import targets
from .context import Context, _failed, _sysctl_key_ere, ere
from .nic import irq_affinity_persistent, irq_placement, nic_channels, nic_ethtool, nic_settings_persistent
from .steps import MANUAL, PERSISTENT, RUNTIME, Command, CommentOut, EnsureLine, MaskUnit, Note, Step, WriteFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..content.catalog import SelectedCheck
    from ..results import CheckResult, ObjectResult


# -- services and processes ---------------------------------------------------------------


def _twin_unit(ctx: Context, check_id: str) -> str | None:
    return next((sel.vars["unit"] for sel in ctx.view.profile.checks
                 if sel.check.kind == "service_disabled" and sel.check.runtime_check == check_id), None)


def process_absent(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    name = sel.vars["process"]
    unit = _twin_unit(ctx, sel.check.id)
    argv = ("systemctl", "stop", unit) if unit else ("pkill", "-x", name)
    yield Step(sel.check.id, name, RUNTIME, f"stop {name} ({' '.join(argv)})",
               Command(argv, f"pgrep -x {sh(name)} >/dev/null && echo running || echo absent", "absent"))


def service_disabled(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    unit = sel.vars["unit"]
    yield Step(sel.check.id, unit, PERSISTENT, f"systemctl disable --now {unit} and mask it", MaskUnit(unit))


# -- sysctl ---------------------------------------------------------------------------------


def sysctl(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    for obj in _failed(result):
        key, value = obj.object, str(sel.vars["settings"][obj.object])
        if sel.vars["source"] == "runtime":
            yield Step(sel.check.id, key, RUNTIME, f"sysctl -w {key}={value}",
                       Command(("sysctl", "-w", f"{key}={value}"), f"sysctl -n {sh(key)} | xargs",
                               " ".join(value.split())))
            continue
        if obj.fix is not None and (obj.fix.file or "").endswith("/tuned.conf"):
            # a tuned [vm] unit zeroes it after every sysctl file (kinds/sysctl._vm_unit_fix): no
            # drop-in can win, and a tuned profile is the admin's to edit
            text = fix_note(obj)
            yield Step(sel.check.id, key, MANUAL, text, Note(text))
            continue
        key_re = rf"^[[:space:]]*-?[[:space:]]*{_sysctl_key_ere(key)}[[:space:]]*="
        yield Step(sel.check.id, key, PERSISTENT, f"set {key} = {value} in /{targets.SYSCTL_DROPIN}",
                   EnsureLine(targets.SYSCTL_DROPIN, key_re, f"{key} = {value}"))
        ours = targets.SYSCTL_DROPIN.rsplit("/", 1)[1]
        for rel in sysctl_files(ctx.facts.fs):
            # admins' files (etc/) that set another value would confuse the next reader, and a later
            # file (sysctl.conf is last for procps `sysctl --system`) would win over the drop-in
            name = rel.rsplit("/", 1)[1]
            if rel == targets.SYSCTL_DROPIN or not (rel.startswith("etc/") or name > ours):
                continue
            text = ctx.facts.fs.read_text(rel) or ""
            if any(s.key == key and s.value.split() != value.split() for s in parse_sysctl_conf(text, rel)):
                yield Step(sel.check.id, key, PERSISTENT, f"comment out the other {key} value in /{rel}",
                           CommentOut(rel, key_re))


# -- NFS ------------------------------------------------------------------------------------------


def nfs_mount_options(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    for obj in _failed(result):
        if sel.vars["source"] == "fstab":
            for option in list(sel.vars["options"]) + list(sel.vars.get("fstab_only_options", [])):
                ctx.fstab_wanted.setdefault(obj.object, []).append((sel.check.id, option, sel.vars))
        else:
            yield Step(sel.check.id, obj.object, MANUAL, f"remount {obj.object} with the fstab options",
                       Note(f"{obj.object}: NFS options change only at mount time; once /etc/fstab is right, "
                            f"stop its users and run: umount {obj.object} && mount {obj.object}"))


def nfs_nconnect(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    for obj in _failed(result):
        ctx.fstab_wanted.setdefault(obj.object, []).append((sel.check.id, f"nconnect={sel.vars['nconnect']}", {}))
        yield Step(sel.check.id, obj.object, MANUAL, f"remount {obj.object} for nconnect",
                   Note(f"{obj.object}: nconnect applies at mount time: umount {obj.object} && mount {obj.object}"))


def _option_key(option: tuple[str, str | None], v: dict) -> str:
    return next(iter(normalise([option], {**v, "defaults": {}})))


FSTAB_FIELDS = ("fstab source", "mount point", "file system type", "mount options", "dump field", "pass field")


def fstab_steps(ctx: Context) -> Iterator[Step]:
    """One fstab line per mount, with every option the failed checks want (merged): the
    line the next boot mounts (the first for its mount point: facts/mounts.fstab_index),
    without `noauto` when nothing would mount it at boot (facts/boot_mounts.noauto)."""
    from ..facts.boot_mounts import noauto
    from ..facts.mounts import fstab_index

    entries = fstab_index(ctx.facts.fstab)
    mounts = {m.mount_point: m for m in ctx.facts.mountinfo}
    for mount_point, wanted in ctx.fstab_wanted.items():
        elsewhere = _mounted_elsewhere(ctx, mount_point)
        if elsewhere:  # an fstab line would be ignored (an /etc .mount unit wins) or mount it twice (autofs)
            names = ", ".join(sorted({c for c, _o, _v in wanted}))
            yield Step(names, mount_point, MANUAL, f"not automated: {elsewhere}", Note(f"{mount_point}: {elsewhere}"))
            continue
        entry = entries.get(mount_point.rstrip("/") or "/")
        options: list[tuple[str, str | None]] = list(entry.options) if entry else [("defaults", None)]
        if noauto(options):
            options = [o for o in options if o != ("noauto", None)]
        for _check, option, v in wanted:  # replace in place (a minimal diff of the line), else append
            name, sep, value = option.partition("=")
            pair = (name, value) if sep else (option, None)
            key = _option_key(pair, v)
            at = next((i for i, o in enumerate(options) if _option_key(o, v) == key), None)
            if at is None:
                options.append(pair)
            elif normalise([options[at]], {**v, "defaults": {}}) != normalise([pair], {**v, "defaults": {}}):
                options = options[:at] + [pair] + [o for o in options[at + 1:] if _option_key(o, v) != key]
        text = ",".join(k if val is None else f"{k}={val}" for k, val in options)
        if entry:
            fields = [entry.spec, entry.file, entry.vfstype, text, str(entry.freq), str(entry.passno)]
        else:
            mount = mounts[mount_point]
            fields = [mount.source, mount_point, mount.fstype, text, "0", "0"]
        checks = sorted({c for c, _o, _v in wanted})
        try:
            line = " ".join(fstab_field(f, what) for f, what in zip(fields, FSTAB_FIELDS))
        except Unexpressible as e:
            yield Step(", ".join(checks), mount_point, MANUAL, f"not automated: {e}", Note(f"{mount_point}: {e}"))
            continue
        regex = rf"^[[:space:]]*[^#[:space:]]+[[:space:]]+{ere(mount_point.rstrip('/') or '/')}/?[[:space:]]"
        yield Step(", ".join(checks), mount_point, PERSISTENT, f"/etc/fstab line of {mount_point}: {text}",
                   EnsureLine("etc/fstab", regex, line))


def _mounted_elsewhere(ctx: Context, mount_point: str) -> str | None:
    """Why the options of `mount_point` are not fstab's to set: a `.mount` unit or an autofs
    map mounts it at boot (the check's fix names the line to change there), or that is not
    known here; None when fstab mounts it, or nothing does (then the new line will)."""
    try:
        bm = ctx.facts.boot_mount(mount_point.rstrip("/") or "/")
    except (FactError, ParseError) as e:
        return str(e)
    if bm is None or bm.fstab is not None:
        return None
    if bm.problem:
        return f"it is set in {bm.source}, but {bm.problem} (the check's fix says what to change)"
    return f"it mounts at boot from {bm.source}: set the options in {bm.fix_file} (the check's fix has the line)"


def bdi_readahead(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    mounts = {m.mount_point: m for m in ctx.facts.mountinfo}
    for obj in _failed(result):
        m = mounts[obj.object]
        path = f"sys/class/bdi/{m.major}:{m.minor}/read_ahead_kb"
        yield Step(sel.check.id, obj.object, RUNTIME, f"read_ahead_kb {sel.vars['read_ahead_kb']} on /{path}",
                   Command(("tw_write", f"/{path}", str(sel.vars["read_ahead_kb"])), f'cat "$R"/{path}',
                           str(sel.vars["read_ahead_kb"])))


def udev_attr(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    sub, attr, value = sel.vars["subsystem"], sel.vars["attribute"], sel.vars["value"]
    match = f'SUBSYSTEM=="{sub}", ACTION=="add"'
    if sub == "bdi":  # only NFS bdis (seed 003's rule): local disks keep their read-ahead
        match += (", PROGRAM=\"/bin/awk -v bdi=$kernel 'BEGIN{ret=1} {if ($4 == bdi) {ret=0}} END{exit ret}' "
                  "/proc/fs/nfsfs/volumes\"")
    rel = targets.udev_rule(sub, attr)
    yield Step(sel.check.id, f"udev {sub} {attr}", PERSISTENT, f"udev rule /{rel}: {attr}={value} for {sub}",
               WriteFile(rel,
                         f"# written by tunewatch remediate ({sel.check.id})\n{match}, ATTR{{{attr}}}=\"{value}\""))


def _tuned_choice(ctx: Context, wanted: str) -> str:
    """A custom profile in the admin's profile directory (etc/tuned, or etc/tuned/profiles
    from tuned 2.24) that includes the wanted one keeps the admin's additions."""
    fs, layouts = ctx.facts.fs, ctx.facts.defaults.layouts.get("tuned")
    mine = user_profile_dir(fs, layouts)
    for name in fs.listdir(mine):
        try:  # a name active_profile cannot carry (a newline...) is never chosen
            plain_name(name, "tuned profile", "etc/tuned/active_profile")
        except Unexpressible:
            continue
        if name != wanted and fs.exists(f"{mine}/{name}/tuned.conf"):
            try:
                chain = profile_chain(fs, name, layouts)
            except (FactError, ParseError):
                continue
            if wanted in chain:
                return name
    return wanted


def tuned_profile(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    wanted = _tuned_choice(ctx, sel.vars["profile"])
    yield Step(sel.check.id, "tuned", RUNTIME, f"tuned-adm profile {wanted}",
               Command(("tuned-adm", "profile", wanted), "cat /etc/tuned/active_profile", wanted))
    yield Step(sel.check.id, "tuned", PERSISTENT, f"active tuned profile {wanted} (etc/tuned/active_profile)",
               WriteFile("etc/tuned/active_profile", wanted))
    yield Step(sel.check.id, "tuned", PERSISTENT, "tuned profile mode manual (as tuned-adm profile writes it)",
               WriteFile("etc/tuned/profile_mode", "manual"))


def fix_note(obj: ObjectResult) -> str:
    """What to do, from the object's `fix` (data), never from its message text."""
    fix = obj.fix
    if fix is None:
        return f"wanted {obj.expected}, found {obj.actual}"
    parts = [f"run {fix.command}" if fix.command else "",
             f"in {fix.file}: {fix.change}" if fix.file and fix.change else (f"edit {fix.file}" if fix.file else ""),
             fix.note or ""]
    return "; ".join(p for p in parts if p)


def manual(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    for obj in _failed(result):
        text = fix_note(obj)
        yield Step(sel.check.id, obj.object, MANUAL, text, Note(text))


TEMPLATES = {
    "process_absent": process_absent, "service_disabled": service_disabled, "sysctl": sysctl,
    "nfs_mount_options": nfs_mount_options, "nfs_nconnect": nfs_nconnect, "bdi_readahead": bdi_readahead,
    "udev_attr": udev_attr, "tuned_profile": tuned_profile, "nic_channels": nic_channels,
    "nic_ethtool": nic_ethtool, "nic_settings_persistent": nic_settings_persistent,
    "irq_affinity": irq_placement, "irq_spread": irq_placement, "irq_affinity_persistent": irq_affinity_persistent,
    "accelerated_networking": manual, "vmx_option": manual, "vmx_cpu_affinity": manual, "esxcli_setting": manual,
}
