"""Remediation templates, one per check kind (as ComplianceAsCode keeps one remediation per
template), parameterised by the check's variables and the objects that failed.

Persistence uses the mechanism the host already uses: sysctl.d drop-in, fstab, a udev rule,
`systemctl disable --now` + mask, the tuned profile; NIC settings go into the interface's
ifcfg file when it has one (SUSE wicked `ETHTOOL_OPTIONS`, RHEL `ETHTOOL_OPTS`), else a
NetworkManager dispatcher script (root-owned 0755, run for that interface only) when the
host runs NetworkManager, else a udev rule; settings of an Accelerated Networking VF always
go into a udev rule matching the VF's driver (`DRIVERS==` matches the PCI parent, udev(7)),
because VF names change after a redeploy and NetworkManager usually leaves VFs unmanaged.
"""

from __future__ import annotations

import re
import shlex

from ..kinds.base import FAIL, Target
from ..kinds.nfs_mount_options import normalise
from ..kinds.nic_irqs import allowed_cpus, data_irqs
from ..parsers.ethtool_args import parse_ethtool_options
from ..parsers.cpulist import format_cpulist
from ..parsers.shellvars import parse_shell_assignments
from ..parsers.sysctl_conf import parse_sysctl_conf
from ..errors import FactError, ParseError
from ..facts.sysctl import sysctl_files
from ..facts.tuned import _load as load_tuned_profile
from . import targets
from .steps import (MANUAL, PERSISTENT, RUNTIME, Command, CommentOut, EnableUnit, EnsureLine, MaskUnit, Note,
                    Step, WriteFile)
from .hostview import HostView

ETHTOOL = "/usr/sbin/ethtool"
SECTION_OPTION = {"channels": "-L", "rings": "-G", "coalesce": "-C", "features": "-K"}
SECTION_QUERY = {"channels": "-l", "rings": "-g", "coalesce": "-c", "features": "-k"}
LABELS = {"channels": {"rx": "RX", "tx": "TX", "other": "Other", "combined": "Combined"},
          "rings": {"rx": "RX", "rx-mini": "RX Mini", "rx-jumbo": "RX Jumbo", "tx": "TX"}}
IRQ_SCRIPT = "usr/local/sbin/tunewatch-irq-affinity"


def ere(text: str) -> str:
    """`text` as a POSIX extended regular expression matching it literally."""
    return re.sub(r"([.[\]()*+?{}|^$\\])", r"\\\1", text)


def _sysctl_key_ere(key: str) -> str:
    return "[./]".join(ere(part) for part in key.split("."))


def _show(value) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def _failed(result):
    return [o for o in result.objects if o.status == FAIL]


class Context:
    def __init__(self, view: HostView):
        self.view = view
        self.facts = view.facts
        self.fstab_wanted: dict[str, list[tuple[str, str, dict]]] = {}  # mount -> [(check, option, vars)]

    def target(self, sel) -> Target:
        return Target(sel.check.id, sel.vars, self.facts, self.view.profile.scope, sel.check.objects)

    def interface(self, name: str):
        return self.facts.interfaces.get(name)

    def uses_network_manager(self) -> bool:
        fs = self.facts.fs
        return self.facts.unit_state("NetworkManager.service").state == "enabled" or fs.is_dir("etc/NetworkManager")


# -- services and processes ---------------------------------------------------------------


def _twin_unit(ctx: Context, check_id: str) -> str | None:
    return next((sel.vars["unit"] for sel in ctx.view.profile.checks
                 if sel.check.kind == "service_disabled" and sel.check.runtime_check == check_id), None)


def process_absent(ctx: Context, sel, result):
    name = sel.vars["process"]
    unit = _twin_unit(ctx, sel.check.id)
    argv = ("systemctl", "stop", unit) if unit else ("pkill", "-x", name)
    yield Step(sel.check.id, name, RUNTIME, f"stop {name} ({' '.join(argv)})",
               Command(argv, f"pgrep -x {shlex.quote(name)} >/dev/null && echo running || echo absent", "absent"))


def service_disabled(ctx: Context, sel, result):
    unit = sel.vars["unit"]
    yield Step(sel.check.id, unit, PERSISTENT, f"systemctl disable --now {unit} and mask it", MaskUnit(unit))


# -- sysctl ---------------------------------------------------------------------------------


def sysctl(ctx: Context, sel, result):
    for obj in _failed(result):
        key, value = obj.object, str(sel.vars["settings"][obj.object])
        if sel.vars["source"] == "runtime":
            yield Step(sel.check.id, key, RUNTIME, f"sysctl -w {key}={value}",
                       Command(("sysctl", "-w", f"{key}={value}"), f"sysctl -n {key} | xargs", " ".join(value.split())))
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


def nfs_mount_options(ctx: Context, sel, result):
    for obj in _failed(result):
        if sel.vars["source"] == "fstab":
            for option in list(sel.vars["options"]) + list(sel.vars.get("fstab_only_options", [])):
                ctx.fstab_wanted.setdefault(obj.object, []).append((sel.check.id, option, sel.vars))
        else:
            yield Step(sel.check.id, obj.object, MANUAL, f"remount {obj.object} with the fstab options",
                       Note(f"{obj.object}: NFS options change only at mount time; once /etc/fstab is right, "
                            f"stop its users and run: umount {obj.object} && mount {obj.object}"))


def nfs_nconnect(ctx: Context, sel, result):
    for obj in _failed(result):
        ctx.fstab_wanted.setdefault(obj.object, []).append((sel.check.id, f"nconnect={sel.vars['nconnect']}", {}))
        yield Step(sel.check.id, obj.object, MANUAL, f"remount {obj.object} for nconnect",
                   Note(f"{obj.object}: nconnect applies at mount time: umount {obj.object} && mount {obj.object}"))


def _option_key(option: tuple[str, str | None], v: dict) -> str:
    return next(iter(normalise([option], {**v, "defaults": {}})))


def fstab_steps(ctx: Context):
    """One fstab line per mount, with every option the failed checks want (merged)."""
    entries = {e.file.rstrip("/") or "/": e for e in ctx.facts.fstab}
    mounts = {m.mount_point: m for m in ctx.facts.mountinfo}
    for mount_point, wanted in ctx.fstab_wanted.items():
        entry = entries.get(mount_point.rstrip("/") or "/")
        options = list(entry.options) if entry else [("defaults", None)]
        for check, option, v in wanted:  # replace in place (a minimal diff of the line), else append
            pair = tuple(option.split("=", 1)) if "=" in option else (option, None)
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
        line = " ".join(f.replace(" ", "\\040") for f in fields)
        regex = rf"^[[:space:]]*[^#[:space:]]+[[:space:]]+{ere(mount_point.rstrip('/') or '/')}/?[[:space:]]"
        checks = sorted({c for c, _o, _v in wanted})
        yield Step(", ".join(checks), mount_point, PERSISTENT, f"/etc/fstab line of {mount_point}: {text}",
                   EnsureLine("etc/fstab", regex, line))


def bdi_readahead(ctx: Context, sel, result):
    mounts = {m.mount_point: m for m in ctx.facts.mountinfo}
    for obj in _failed(result):
        m = mounts[obj.object]
        path = f"sys/class/bdi/{m.major}:{m.minor}/read_ahead_kb"
        yield Step(sel.check.id, obj.object, RUNTIME, f"read_ahead_kb {sel.vars['read_ahead_kb']} on /{path}",
                   Command(("tw_write", f"/{path}", str(sel.vars["read_ahead_kb"])), f"cat /{path}",
                           str(sel.vars["read_ahead_kb"])))


def udev_attr(ctx: Context, sel, result):
    sub, attr, value = sel.vars["subsystem"], sel.vars["attribute"], sel.vars["value"]
    match = f'SUBSYSTEM=="{sub}", ACTION=="add"'
    if sub == "bdi":  # only NFS bdis (seed 003's rule): local disks keep their read-ahead
        match += (", PROGRAM=\"/bin/awk -v bdi=$kernel 'BEGIN{ret=1} {if ($4 == bdi) {ret=0}} END{exit ret}' "
                  "/proc/fs/nfsfs/volumes\"")
    rel = targets.udev_rule(sub, attr)
    yield Step(sel.check.id, f"udev {sub} {attr}", PERSISTENT, f"udev rule /{rel}: {attr}={value} for {sub}",
               WriteFile(rel, f"# written by tunewatch remediate ({sel.check.id})\n{match}, ATTR{{{attr}}}=\"{value}\""))


def _tuned_choice(ctx: Context, wanted: str) -> str:
    """A custom profile under etc/tuned that includes the wanted one keeps the admin's additions."""
    for name in ctx.facts.fs.listdir("etc/tuned"):
        if name != wanted and ctx.facts.fs.exists(f"etc/tuned/{name}/tuned.conf"):
            try:
                chain, _sysctl = load_tuned_profile(ctx.facts.fs, name, ())
            except (FactError, ParseError):
                continue
            if wanted in chain:
                return name
    return wanted


def tuned_profile(ctx: Context, sel, result):
    wanted = _tuned_choice(ctx, sel.vars["profile"])
    yield Step(sel.check.id, "tuned", RUNTIME, f"tuned-adm profile {wanted}",
               Command(("tuned-adm", "profile", wanted), "cat /etc/tuned/active_profile", wanted))
    yield Step(sel.check.id, "tuned", PERSISTENT, f"active tuned profile {wanted} (etc/tuned/active_profile)",
               WriteFile("etc/tuned/active_profile", wanted))
    yield Step(sel.check.id, "tuned", PERSISTENT, "tuned profile mode manual (as tuned-adm profile writes it)",
               WriteFile("etc/tuned/profile_mode", "manual"))


# -- NICs ---------------------------------------------------------------------------------------


def _probe(section: str, iface: str, key: str) -> str:
    label = LABELS.get(section, {}).get(key, key)
    return f"tw_ethtool_value {SECTION_QUERY[section]} {iface} {shlex.quote(label)}"


def nic_channels(ctx: Context, sel, result):
    for obj in _failed(result):
        kind = next((s.name.split(".")[1] for s in obj.settings if s.name.startswith("channels.")
                     and s.name != "channels.limit"), "combined")
        limit = obj.expected.lstrip("<= ").strip()
        yield Step(sel.check.id, obj.object, RUNTIME, f"ethtool -L {obj.object} {kind} {limit}",
                   Command(("ethtool", "-L", obj.object, kind, limit), _probe("channels", obj.object, kind), limit))


def nic_ethtool(ctx: Context, sel, result):
    section = sel.vars["section"]
    for obj in _failed(result):
        data = ctx.facts.ethtool(obj.object).get(section) or {}
        for key, value in sel.vars["expected"].items():
            want = _show(value)
            if _show(data.get(key)) == want:
                continue
            yield Step(sel.check.id, obj.object, RUNTIME, f"ethtool {SECTION_OPTION[section]} {obj.object} {key} {want}",
                       Command(("ethtool", SECTION_OPTION[section], obj.object, key, want),
                               _probe(section, obj.object, key), want))


def _required(sel, driver: str | None) -> dict[str, str]:
    required: dict[str, str] = {}
    for req in sel.vars["requirements"]:
        if driver in req["drivers"]:
            required.update({k: str(v).replace("<=", "").strip() for k, v in req["settings"].items()})
    return required


def _commands(iface: str, settings: dict[str, str]) -> list[str]:
    """ethtool argument strings, one per section: '-L eth0 combined 16'."""
    by_section: dict[str, list[str]] = {}
    for key, value in settings.items():
        section, name = key.split(".", 1)
        by_section.setdefault(section, []).extend([name, value])
    return [f"{SECTION_OPTION[s]} {iface} {' '.join(words)}" for s, words in by_section.items()]


def _ifcfg(ctx: Context, iface: str) -> tuple[str, str] | None:
    for rel, var in ((f"etc/sysconfig/network/ifcfg-{iface}", "ETHTOOL_OPTIONS"),
                     (f"etc/sysconfig/network-scripts/ifcfg-{iface}", "ETHTOOL_OPTS")):
        if ctx.facts.fs.exists(rel):
            return rel, var
    return None


def _merged_ethtool_value(existing: str, iface: str, settings: dict[str, str], source: str) -> str:
    """The existing `;`-separated commands with ours merged in (same section: one command)."""
    kept, merged = [], dict(settings)
    for part in filter(str.strip, existing.split(";")):
        cmds = parse_ethtool_options(part, iface, source)
        sections = {k.split(".")[0] for c in cmds for k, _v in c.settings}
        if cmds and sections & {k.split(".")[0] for k in settings}:
            merged = {**dict(p for c in cmds for p in c.settings), **merged}
        else:
            kept.append(part.strip())
    return "; ".join(kept + _commands(iface, merged))


def nic_settings_persistent(ctx: Context, sel, result):
    for obj in _failed(result):
        iface = ctx.interface(obj.object)
        settings = _required(sel, iface.driver if iface else None)
        if not settings or iface is None:
            continue
        ifcfg = _ifcfg(ctx, iface.name)
        if iface.master or ifcfg is None and not ctx.uses_network_manager():
            rule = ", ".join(f'RUN+="{ETHTOOL} {c.replace(iface.name, "$name", 1)}"'
                             for c in _commands(iface.name, settings))
            rel = f"etc/udev/rules.d/99-tunewatch-ethtool-{iface.driver}.rules"
            yield Step(sel.check.id, iface.name, PERSISTENT, f"udev rule /{rel} for every {iface.driver} interface",
                       WriteFile(rel, f"# written by tunewatch remediate ({sel.check.id}): at boot and when the "
                                      f"driver binds again\nACTION==\"add\", SUBSYSTEM==\"net\", "
                                      f"DRIVERS==\"{iface.driver}\", {rule}"))
            continue
        dispatched = settings
        if ifcfg is not None:
            rel, var = ifcfg
            # NetworkManager's ifcfg-rh plugin reads -K/-C/-G of ETHTOOL_OPTS; channels go to a dispatcher script
            in_ifcfg = {k: v for k, v in settings.items() if var == "ETHTOOL_OPTIONS" or not k.startswith("channels.")}
            dispatched = {k: v for k, v in settings.items() if k not in in_ifcfg}
            existing = parse_shell_assignments(ctx.facts.fs.read_required(rel), rel).get(var, "")
            value = _merged_ethtool_value(existing, iface.name, in_ifcfg, rel)
            yield Step(sel.check.id, iface.name, PERSISTENT, f"{var}='{value}' in /{rel}",
                       EnsureLine(rel, rf"^[[:space:]]*{var}=", f"{var}='{value}'", mode="0644"))
        if dispatched:
            rel = f"etc/NetworkManager/dispatcher.d/90-tunewatch-ethtool-{iface.name}"
            body = "\n".join(f"{ETHTOOL} {c}" for c in _commands(iface.name, dispatched))
            yield Step(sel.check.id, iface.name, PERSISTENT, f"NetworkManager dispatcher script /{rel}",
                       WriteFile(rel, f"#!/bin/sh\n# written by tunewatch remediate ({sel.check.id})\n"
                                      f"[ \"$1\" = \"{iface.name}\" ] && [ \"$2\" = \"up\" ] || exit 0\n{body}",
                                 mode="0755"))


# -- IRQs -----------------------------------------------------------------------------------------


def irq_placement(ctx: Context, sel, result):
    """Pin each data IRQ of a failing NIC to one allowed CPU, round robin (fixes spread too)."""
    t = ctx.target(sel)
    failing = {o.object.split("/")[0] for o in _failed(result)}
    for iface in t.interfaces():
        if iface.name not in failing:
            continue
        allowed, _node = allowed_cpus(t, iface)
        cpus = sorted(allowed)
        live = [irq for irq, _name in data_irqs(t, iface) if ctx.facts.affinity(irq) is not None]
        for n, irq in enumerate(sorted(live)):
            cpu = str(cpus[n % len(cpus)])
            path = f"/proc/irq/{irq}/smp_affinity_list"
            yield Step(sel.check.id, f"{iface.name}/irq{irq}", RUNTIME, f"IRQ {irq} of {iface.name} on CPU {cpu}",
                       Command(("tw_write", path, cpu), f"cat {path}", cpu))


def irq_affinity_persistent(ctx: Context, sel, result):
    runtime = next((s for s in ctx.view.profile.checks if s.check.kind == "irq_affinity"), None)
    t = ctx.target(runtime) if runtime else None
    for obj in _failed(result):
        iface = ctx.interface(obj.object)
        if iface is None or t is None:
            yield Step(sel.check.id, obj.object, MANUAL, "pin IRQs at boot",
                       Note(f"{obj.object}: add a boot-time mechanism that pins its IRQs"))
            continue
        allowed, _node = allowed_cpus(t, iface)
        patterns = "|".join(runtime.vars.get("control_irq_patterns", [])) or "^$"
        name = iface.master or iface.name  # the VF's name changes after a redeploy, its master's does not
        unit = f"tunewatch-irq-affinity-{name}.service"
        yield Step(sel.check.id, obj.object, PERSISTENT, f"/{IRQ_SCRIPT}: pins data IRQs round robin",
                   WriteFile(IRQ_SCRIPT, IRQ_SCRIPT_TEXT, mode="0755"))
        yield Step(sel.check.id, obj.object, PERSISTENT, f"unit {unit}: runs it for {name} and its VFs at boot",
                   WriteFile(f"etc/systemd/system/{unit}",
                             f"# written by tunewatch remediate ({sel.check.id})\n[Unit]\n"
                             f"Description=Pin the data IRQs of {name} (and its VFs) to CPUs {format_cpulist(allowed)}\n"
                             "After=network.target\n\n[Service]\nType=oneshot\n"
                             f"ExecStart=/{IRQ_SCRIPT} {format_cpulist(allowed)} {name} '{patterns}'\n\n"
                             "[Install]\nWantedBy=multi-user.target"))
        yield Step(sel.check.id, obj.object, PERSISTENT, f"systemctl enable {unit}", EnableUnit(unit))


IRQ_SCRIPT_TEXT = r"""#!/bin/bash
# written by tunewatch remediate: pin every data IRQ of an interface (and of the VFs under it,
# lower_* links) to one CPU of CPULIST each, round robin; control vectors (names matching
# CONTROL, an extended regular expression) are left alone.
# usage: tunewatch-irq-affinity CPULIST IFACE [CONTROL]
set -eu
cpulist=$1 iface=$2 control=${3:-^$}
cpus=()
IFS=, read -ra parts <<< "$cpulist"
for part in "${parts[@]}"; do
    first=${part%-*} last=${part#*-}
    for ((cpu = first; cpu <= last; cpu++)); do cpus+=("$cpu"); done
done
n=0
for dev in "/sys/class/net/$iface" "/sys/class/net/$iface"/lower_*; do
    [ -e "$dev" ] || continue
    msi="$dev/device/msi_irqs"
    [ -d "$msi" ] || msi="$dev/device/../msi_irqs"
    [ -d "$msi" ] || continue
    for entry in "$msi"/*; do
        irq=${entry##*/}
        [ -e "/proc/irq/$irq/smp_affinity_list" ] || continue
        name=$(awk -v irq="$irq:" '$1 == irq {print $NF}' /proc/interrupts)
        if [[ $name =~ $control ]]; then continue; fi
        echo "${cpus[n % ${#cpus[@]}]}" > "/proc/irq/$irq/smp_affinity_list"
        n=$((n + 1))
    done
done"""


def manual(ctx: Context, sel, result):
    for obj in _failed(result):
        yield Step(sel.check.id, obj.object, MANUAL, obj.message, Note(obj.message))


TEMPLATES = {
    "process_absent": process_absent, "service_disabled": service_disabled, "sysctl": sysctl,
    "nfs_mount_options": nfs_mount_options, "nfs_nconnect": nfs_nconnect, "bdi_readahead": bdi_readahead,
    "udev_attr": udev_attr, "tuned_profile": tuned_profile, "nic_channels": nic_channels,
    "nic_ethtool": nic_ethtool, "nic_settings_persistent": nic_settings_persistent,
    "irq_affinity": irq_placement, "irq_spread": irq_placement, "irq_affinity_persistent": irq_affinity_persistent,
    "accelerated_networking": manual, "vmx_option": manual, "vmx_cpu_affinity": manual, "esxcli_setting": manual,
}
