"""Remediation templates for NICs: queues, driver settings, their persistence, IRQ placement.

NIC settings go into the interface's ifcfg file when it has one that a service reads at
boot (SUSE wicked `ETHTOOL_OPTIONS`, RHEL `ETHTOOL_OPTS`), else a NetworkManager dispatcher
script (root-owned 0755, run for that interface only, NetworkManager-dispatcher(8)) when
the host runs NetworkManager and manages the interface, else a udev rule; the settings of an
Accelerated Networking VF always go into a udev rule matching the VF's driver (`DRIVERS==`
matches the PCI parent, udev(7)), because VF names change after a redeploy and
NetworkManager usually leaves VFs unmanaged.
IRQ pinning at boot runs a script that finds the data vectors by name: for a VF from a udev
rule matching its driver (run with the VF's name, `%k`), for other NICs from a unit bound to
the NIC's device unit (`BindsTo=`/`WantedBy=sys-subsystem-net-devices-<nic>.device`), so it
runs at boot and again whenever the NIC is re-added (systemd.device(5)), never from a boot
oneshot. Objects that pass for the next boot but whose `after_readd` fails (a boot oneshot,
a dispatcher script keyed on the master) get the same mechanisms: each survives a re-add.
"""

from __future__ import annotations

import hashlib

from .._escape import Unexpressible, plain_name, sh, sh_words
from ..kinds.irq_affinity_persistent import MOVED_BY_IRQBALANCE
from ..kinds.nic_irqs import allowed_cpus
from ..parsers.cpulist import format_cpulist
from ..parsers.ethtool_args import parse_ethtool_options
from ..parsers.ini import parse_ini
from ..parsers.shellvars import parse_shell_assignments
from ..results import FAIL, PASS
from .context import Context, _failed, _show
from .irqpin import IRQ_SCRIPT_TEXT
from .steps import (
    MANUAL,
    PERSISTENT,
    RUNTIME,
    Command,
    EnableUnit,
    EnsureLine,
    IniSet,
    Note,
    PinIrqs,
    Step,
    WriteFile,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..content.catalog import SelectedCheck
    from ..facts.interfaces import Interface
    from ..results import CheckResult

ETHTOOL = "/usr/sbin/ethtool"
SECTION_OPTION = {"channels": "-L", "rings": "-G", "coalesce": "-C", "features": "-K"}
SECTION_QUERY = {"channels": "-l", "rings": "-g", "coalesce": "-c", "features": "-k"}
LABELS = {"channels": {"rx": "RX", "tx": "TX", "other": "Other", "combined": "Combined"},
          "rings": {"rx": "RX", "rx-mini": "RX Mini", "rx-jumbo": "RX Jumbo", "tx": "TX"}}
# named like the Mellanox script it stands in for (same arguments: CPULIST IFACE)
IRQ_SCRIPT = "usr/local/sbin/tunewatch_set_irq_affinity_cpulist.sh"


# -- NICs ---------------------------------------------------------------------------------------

_DEVICE_KINDS = ("nic_settings_persistent", "irq_affinity_persistent")


def lost_on_readd(result: CheckResult) -> list:
    """Objects tuned for the next boot whose setting a re-add of the device loses (not where
    irqbalance is the cause: irqbalance-disabled fixes that)."""
    if result.kind not in _DEVICE_KINDS:
        return []
    return [o for o in result.objects if o.status == PASS and o.after_readd is not None
            and o.after_readd.status == FAIL and o.after_readd.predicted != MOVED_BY_IRQBALANCE]


def _probe(section: str, iface: str, key: str) -> str:
    label = LABELS.get(section, {}).get(key, key)
    return f"tw_ethtool_value {SECTION_QUERY[section]} {sh(iface)} {sh(label)}"


def nic_channels(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    for obj in _failed(result):
        kind = next((s.name.split(".")[1] for s in obj.settings if s.name.startswith("channels.")
                     and s.name != "channels.limit"), "combined")
        limit = obj.expected.lstrip("<= ").strip()
        yield Step(sel.check.id, obj.object, RUNTIME, f"ethtool -L {obj.object} {kind} {limit}",
                   Command(("ethtool", "-L", obj.object, kind, limit), _probe("channels", obj.object, kind), limit))


def nic_ethtool(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    section = sel.vars["section"]
    for obj in _failed(result):
        data = ctx.facts.ethtool(obj.object).get(section) or {}
        wrong = {k: _show(v) for k, v in sel.vars["expected"].items() if _show(data.get(k)) != _show(v)}
        if not wrong:
            continue
        # one command per section: each ring or channel change re-initialises the NIC's queues
        words = [w for k, v in wrong.items() for w in (k, v)]
        probe = "echo " + " ".join(f"$({_probe(section, obj.object, k)})" for k in wrong)
        yield Step(sel.check.id, obj.object, RUNTIME,
                   f"ethtool {SECTION_OPTION[section]} {obj.object} {' '.join(words)}",
                   Command(("ethtool", SECTION_OPTION[section], obj.object, *words), probe, " ".join(wrong.values())))


def _required(sel: SelectedCheck, driver: str | None) -> dict[str, str]:
    required: dict[str, str] = {}
    for req in sel.vars["requirements"]:
        if driver in req["drivers"]:
            required.update({k: str(v).replace("<=", "").strip() for k, v in req["settings"].items()})
    return required


def _argvs(iface: str, settings: dict[str, str]) -> list[list[str]]:
    """ethtool arguments, one list per section: ['-L', 'eth0', 'combined', '16']."""
    by_section: dict[str, list[str]] = {}
    for key, value in settings.items():
        section, name = key.split(".", 1)
        by_section.setdefault(section, []).extend([name, value])
    return [[SECTION_OPTION[s], iface, *words] for s, words in by_section.items()]


def _commands(iface: str, settings: dict[str, str]) -> list[str]:
    """ethtool argument strings for files that split at blanks and have no quoting
    (ETHTOOL_OPTS, ETHTOOL_OPTIONS): the interface name must be plain (escape.plain_name)."""
    plain_name(iface, "interface name", "an ifcfg ETHTOOL_OPTS value")
    return [" ".join(argv) for argv in _argvs(iface, settings)]


def _script_name(iface: str) -> str:
    """A file name part for `iface`: itself when plain, else a digest of it."""
    try:
        return plain_name(iface, "interface name", "a file name")
    except Unexpressible:
        return "if-" + hashlib.sha256(iface.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def _dq(name: str) -> str:
    """A name as the dispatcher test compares it: "eth0" as admins write it (and the
    scanner's script reader expects), any other name single-quoted (escape.sh)."""
    return f'"{name}"' if _script_name(name) == name else sh(name)


def _refused(sel: SelectedCheck, obj_name: str, e: Unexpressible) -> Step:
    return Step(sel.check.id, obj_name, MANUAL, f"not automated: {e}", Note(f"{obj_name}: {e}"))


# NetworkManager's [ethtool] keyfile names (nm-settings-nmcli(5), ethtool.*), by ethtool JSON name
NM_ETHTOOL_KEYS = {"channels.combined": "channels-combined", "channels.rx": "channels-rx", "channels.tx": "channels-tx",
                   "rings.rx": "ring-rx", "rings.rx-mini": "ring-rx-mini", "rings.rx-jumbo": "ring-rx-jumbo",
                   "rings.tx": "ring-tx", "coalesce.rx-usecs": "coalesce-rx-usecs",
                   "coalesce.tx-usecs": "coalesce-tx-usecs", "features.large-receive-offload": "feature-lro",
                   "features.generic-receive-offload": "feature-gro",
                   "features.tcp-segmentation-offload": "feature-tso"}
NM_BOOL = {"on": "true", "off": "false"}


def _nm_keyfile(ctx: Context, iface: str) -> str | None:
    """The keyfile of the connection bound to `iface` by name, if the host has one."""
    for rel in ctx.facts.fs.glob("etc/NetworkManager/system-connections", "*.nmconnection"):
        conf = parse_ini(ctx.facts.fs.read_required(rel), rel)
        if conf.get("connection", {}).get("interface-name") == iface:
            return rel
    return None


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


def _wicked_assignments(existing: str, iface: str, settings: dict[str, str], source: str) -> list[tuple[str, str]]:
    """SUSE ifcfg for wicked: one ethtool command per variable (compat-suse.c
    try_add_ethtool_vars() splits each ETHTOOL_OPTIONS<suffix> value at blanks only, so a
    `;` joins nothing). The plain variable keeps an existing command of another section; a
    command of one of our sections is replaced, merged with ours."""
    ours = {k.split(".")[0] for k in settings}
    merged = dict(settings)
    keep_plain = False
    if existing.strip():
        cmds = parse_ethtool_options(existing, iface, source)
        sections = {k.split(".")[0] for c in cmds for k, _v in c.settings}
        if sections & ours and ";" not in existing:
            merged = {**dict(p for c in cmds for p in c.settings), **merged}
        else:
            keep_plain = ";" not in existing
    commands = _commands(iface, merged)
    if keep_plain:
        return [(f"ETHTOOL_OPTIONS_tunewatch{n}", c) for n, c in enumerate(commands, 1)]
    return [("ETHTOOL_OPTIONS", commands[0])] + [(f"ETHTOOL_OPTIONS_tunewatch{n}", c)
                                                  for n, c in enumerate(commands[1:], 1)]


def _ifcfg_unread(ctx: Context, rel: str) -> bool:
    """No reader of `rel` starts at boot: its entries carry the reason (facts/netconfig.py)."""
    mine = [e for e in ctx.facts.persisted_ethtool if e.source.split(":", 1)[0] == rel]
    return bool(mine) and all(e.problem and ("nothing reads" in e.problem or "is read at boot only by" in e.problem)
                              for e in mine)


def _ethtool_udev_rule(sel: SelectedCheck, iface: Interface, settings: dict[str, str]) -> Step:
    """Runs on every add of the NIC: at boot and when it is re-added (a VF by its driver,
    whatever its name; another NIC by its name). Unexpressible for a name a rule cannot
    carry unquoted (udev(7) has no quoting inside a match value)."""
    rule = ", ".join(f'RUN+="{ETHTOOL} {" ".join(argv)}"' for argv in _argvs("$name", settings))
    if iface.master:
        driver = plain_name(iface.driver or "", "driver name", "a udev rule")
        rel, match, what = (f"etc/udev/rules.d/99-tunewatch-ethtool-{driver}.rules", f'DRIVERS=="{driver}"',
                            f"every {driver} interface")
    else:
        name = plain_name(iface.name, "interface name", "a udev rule")
        rel, match, what = f"etc/udev/rules.d/99-tunewatch-ethtool-{name}.rules", f'KERNEL=="{name}"', name
    return Step(sel.check.id, iface.name, PERSISTENT, f"udev rule /{rel} for {what}",
                WriteFile(rel, f"# written by tunewatch remediate ({sel.check.id}): at boot and when the "
                               f"device is added again\nACTION==\"add\", SUBSYSTEM==\"net\", {match}, {rule}"))


def nic_settings_persistent(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    for obj in lost_on_readd(result):  # tuned for the next boot, not for a re-add: a rule that runs on every add
        iface = ctx.interface(obj.object)
        settings = _required(sel, iface.driver if iface else None)
        if settings and iface is not None:
            try:
                yield _ethtool_udev_rule(sel, iface, settings)
            except Unexpressible as e:
                yield _refused(sel, iface.name, e)
    for obj in _failed(result):
        iface = ctx.interface(obj.object)
        settings = _required(sel, iface.driver if iface else None)
        if not settings or iface is None:
            continue
        try:
            yield from _persist_nic(ctx, sel, iface, settings)
        except Unexpressible as e:
            yield _refused(sel, iface.name, e)


def _persist_nic(ctx: Context, sel: SelectedCheck, iface: Interface, settings: dict[str, str]) -> Iterator[Step]:
    ifcfg = _ifcfg(ctx, iface.name)
    unread = ifcfg is not None and _ifcfg_unread(ctx, ifcfg[0])
    # NetworkManager applies neither keyfiles nor dispatcher events for a device it does
    # not manage (facts/nmconf.py), and an ifcfg file nothing reads on this release
    # (checks/defaults/ifcfg.yaml) applies nothing: udev's rule works on every such host
    unmanaged = ctx.facts.nm_unmanaged.get(iface.name)
    if iface.master or unmanaged or unread or ifcfg is None and not ctx.uses_network_manager():
        yield _ethtool_udev_rule(sel, iface, settings)
        return
    keyfile = None if ifcfg else _nm_keyfile(ctx, iface.name)
    if keyfile and all(k in NM_ETHTOOL_KEYS for k in settings):
        for key, value in settings.items():
            nm_key, nm_value = NM_ETHTOOL_KEYS[key], NM_BOOL.get(value, value)
            yield Step(sel.check.id, iface.name, PERSISTENT, f"[ethtool] {nm_key}={nm_value} in /{keyfile} (0600)",
                       IniSet(keyfile, "ethtool", nm_key, nm_value))
        return
    dispatched = settings
    if ifcfg is not None:
        rel, var = ifcfg
        # NetworkManager's ifcfg-rh plugin reads -K/-C/-G of ETHTOOL_OPTS; channels go to a dispatcher script
        in_ifcfg = {k: v for k, v in settings.items() if var == "ETHTOOL_OPTIONS" or not k.startswith("channels.")}
        dispatched = {k: v for k, v in settings.items() if k not in in_ifcfg}
        existing = parse_shell_assignments(ctx.facts.fs.read_required(rel), rel).get(var, "")
        if var == "ETHTOOL_OPTIONS":
            assignments = _wicked_assignments(existing, iface.name, in_ifcfg, rel)
        else:
            assignments = [(var, _merged_ethtool_value(existing, iface.name, in_ifcfg, rel))]
        for name, value in assignments:
            yield Step(sel.check.id, iface.name, PERSISTENT, f"{name}={sh(value)} in /{rel}",
                       EnsureLine(rel, rf"^[[:space:]]*{name}=", f"{name}={sh(value)}", mode="0644"))
    if dispatched:
        rel = f"etc/NetworkManager/dispatcher.d/90-tunewatch-ethtool-{_script_name(iface.name)}"
        body = "\n".join(f"{ETHTOOL} {sh_words(argv)}" for argv in _argvs(iface.name, dispatched))
        yield Step(sel.check.id, iface.name, PERSISTENT, f"NetworkManager dispatcher script /{rel}",
                   WriteFile(rel, f"#!/bin/sh\n# written by tunewatch remediate ({sel.check.id})\n"
                                  f"[ \"$1\" = {_dq(iface.name)} ] && [ \"$2\" = \"up\" ] || exit 0\n{body}",
                             mode="0755"))


# -- IRQs -----------------------------------------------------------------------------------------


def irq_placement(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    """Pin each data IRQ of a failing NIC to one allowed CPU, round robin (fixes spread too).
    The step names the NIC, the CPUs and the control-vector patterns, never IRQ numbers: it
    finds the IRQs where and when it runs."""
    t = ctx.target(sel)
    failing = {o.object.split("/")[0] for o in _failed(result)}
    control = "|".join(sel.vars.get("control_irq_patterns", [])) or "^$"
    for iface in t.interfaces():
        if iface.name not in failing:
            continue
        cpus = format_cpulist(allowed_cpus(t, iface)[0])
        count = len([o for o in _failed(result) if o.object.split("/")[0] == iface.name])
        yield Step(sel.check.id, iface.name, RUNTIME,
                   f"data IRQs of {iface.name} (found when it runs; {count} failed in the scan) on CPUs {cpus}",
                   PinIrqs(iface.name, cpus, control))


def _escape_for_exec(text: str) -> str:
    """A literal argument for a systemd Exec line or a udev RUN program: both expand `$`
    and `%` (systemd.service(5) "$$", systemd.unit(5) "%%"; udev(7) "$$", "%%")."""
    return text.replace("%", "%%").replace("$", "$$")


def _irq_unit(sel: SelectedCheck, iface: Interface, cpus: str, control: str) -> Iterator[Step]:
    """A unit pinning a NIC with a stable name (not a VF), bound to its device unit: started
    when the NIC appears, at boot and on every re-add, and stopped when it goes
    (systemd.device(5); systemd.unit(5) `BindsTo=`), so its RemainAfterExit state never
    keeps it from running again."""
    try:
        plain_name(iface.name, "interface name", "a systemd unit name and its ExecStart line")
    except Unexpressible as e:
        yield _refused(sel, iface.name, e)
        return
    unit = f"tunewatch-irq-affinity-{iface.name}.service"
    device = f"sys-subsystem-net-devices-{iface.name}.device"
    yield Step(sel.check.id, iface.name, PERSISTENT, f"unit {unit}: runs /{IRQ_SCRIPT} whenever {iface.name} appears",
               WriteFile(f"etc/systemd/system/{unit}",
                         f"# written by tunewatch remediate ({sel.check.id})\n[Unit]\n"
                         f"Description=Pin the data IRQs of {iface.name} to CPUs {cpus}\n"
                         f"BindsTo={device}\nAfter={device}\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
                         f"ExecStart=/{IRQ_SCRIPT} {cpus} {iface.name} '{control}'\n\n"
                         f"[Install]\nWantedBy={device}"))
    yield Step(sel.check.id, iface.name, PERSISTENT, f"systemctl enable {unit}", EnableUnit(unit))


def _irq_udev_rules(sel: SelectedCheck, groups: dict[tuple[str, str], list], control: str) -> Iterator[Step]:
    """Accelerated Networking VFs: a udev rule per VF driver, run for each VF when it appears
    (at boot and when Azure hot-adds it again after host maintenance), whatever its name:
    `DRIVERS==` matches the VF's PCI parent (udev(7)), `%k` is the VF. Pinning the hv_netvsc
    master would pin nothing: it has no IRQs of its own."""
    drivers = [d for d, _cpus in groups]
    for (driver, cpus), vfs in groups.items():
        try:
            plain_name(driver, "driver name", "a udev rule")
        except Unexpressible as e:
            yield _refused(sel, ", ".join(v.name for v in vfs), e)
            continue
        # VFs of one driver on different NUMA nodes: one rule per node (ATTRS: the PCI parent's numa_node)
        node = "" if drivers.count(driver) == 1 else f'ATTRS{{numa_node}}=="{vfs[0].numa_node or 0}", '
        suffix = "" if not node else f"-node{vfs[0].numa_node or 0}"
        rel = f"etc/udev/rules.d/99-tunewatch-irq-affinity-{driver}{suffix}.rules"
        names = ", ".join(v.name for v in vfs)
        yield Step(sel.check.id, names, PERSISTENT, f"udev rule /{rel}: pins every {driver} VF's data IRQs when it "
                                                    f"appears", WriteFile(rel, (
            f"# written by tunewatch remediate ({sel.check.id}): pin the data IRQs of every {driver} interface (the "
            f"Accelerated Networking VF, whatever its name after a redeploy) to CPUs {cpus} when it appears\n"
            f'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="{driver}", {node}'
            f"RUN+=\"/{IRQ_SCRIPT} {cpus} %k '{control}'\"")))


def irq_affinity_persistent(ctx: Context, sel: SelectedCheck, result: CheckResult) -> Iterator[Step]:
    runtime = next((s for s in ctx.view.profile.checks if s.check.kind == "irq_affinity"), None)
    t = ctx.target(runtime) if runtime else None
    control = _escape_for_exec("|".join(runtime.vars.get("control_irq_patterns", [])) or "^$") if runtime else ""
    vf_groups: dict[tuple[str, str], list] = {}
    for obj in _failed(result) + lost_on_readd(result):
        iface = ctx.interface(obj.object)
        if iface is None or t is None:
            yield Step(sel.check.id, obj.object, MANUAL, "pin IRQs at boot",
                       Note(f"{obj.object}: add a boot-time mechanism that pins its IRQs"))
            continue
        cpus = format_cpulist(allowed_cpus(t, iface)[0])
        yield Step(sel.check.id, obj.object, PERSISTENT, f"/{IRQ_SCRIPT}: pins data IRQs round robin",
                   WriteFile(IRQ_SCRIPT, IRQ_SCRIPT_TEXT, mode="0755"))
        if iface.master and iface.driver:  # a VF: its name changes, its driver does not
            vf_groups.setdefault((iface.driver, cpus), []).append(iface)
        else:
            yield from _irq_unit(sel, iface, cpus, control)
    yield from _irq_udev_rules(sel, vf_groups, control)
