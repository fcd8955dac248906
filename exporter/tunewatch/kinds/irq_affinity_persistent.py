"""An enabled boot-time mechanism pins the NIC's own IRQs.

Mechanisms: NetworkManager dispatcher scripts NetworkManager would run, enabled systemd
units (with the scripts their Exec lines run), an executable rc.local, cron `@reboot`,
and udev rules that match the NIC (evaluated per device, `%k` being it). What counts as
pinning is content: regular expressions such as `smp_affinity` or
`set_irq_affinity.*\\.sh`. The mechanism must name the NIC itself: the hv_netvsc master
of an Azure VF has no MSI IRQs, so pinning "eth0" pins nothing. `resolving` (content)
lists start-up programs that find the NICs themselves, such as seed 003's
`set_best_affinity.ksh` for the Accelerated Networking VFs.

Only code counts: shell comments (a word starting with `#` outside quotes, to the end of
the line, bash(1) COMMENTS) and unit-file comment lines (`#` or `;`, systemd.syntax(7)) are
dropped before looking for interface names and pinning writes, so `# eth1 is pinned
elsewhere` names nothing.
"""

from __future__ import annotations

import re

from .._escape import Unexpressible, plain_name
from ..errors import FactError, ParseError
from ..facts import nm_dispatch, readd
from ..results import ERROR, FAIL, PASS, UNKNOWN, AfterReadd, Fix, ObjectResult
from ._predict import complete, configured_by
from .base import Target

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..facts.boot import BootScript
    from ..facts.interfaces import Interface

MOVED_BY_IRQBALANCE = "moved by irqbalance"  # after_readd.predicted where irqbalance places the new IRQs
_MECHANISMS = ["nm-dispatcher", "systemd", "udev", "rc-local", "cron"]
_REGEX = {"type": "string", "format": "regex"}
# its objects are interfaces (eth1, eth1/irq45): one the kernel could not have named is an error
PER_INTERFACE = True
VARS_SCHEMA = {"type": "object", "required": ["patterns"], "additionalProperties": False,
               "properties": {"patterns": {"type": "array", "minItems": 1, "items": _REGEX},
                              "mechanisms": {"type": "array", "items": {"enum": _MECHANISMS}},
                              "resolving": {"type": "array", "items": {
                                  "type": "object", "required": ["pattern", "drivers"], "additionalProperties": False,
                                  "properties": {"pattern": _REGEX,
                                                 "drivers": {"type": "array", "items": {"type": "string"}}}}}}}


def _without_comments(text: str) -> str:
    """`text` with comment lines and trailing `#` comments outside quotes removed (per line:
    a quote left open is not carried on, so an apostrophe in a unit's Description= cannot
    hide the rest of the file)."""
    out = []
    for line in text.split("\n"):
        if line.lstrip().startswith(";"):  # unit-file comment; never valid shell at the start
            out.append("")
            continue
        quote, escaped, cut = None, False, len(line)
        for i, ch in enumerate(line):
            if escaped:
                escaped = False
            elif ch == "\\" and quote != "'":
                escaped = True
            elif quote:
                quote = None if ch == quote else quote
            elif ch in "'\"":
                quote = ch
            elif ch == "#" and (i == 0 or line[i - 1] in " \t;&|()"):
                cut = i
                break
        out.append(line[:cut])
    return "\n".join(out)


def _names(name: str, text: str) -> bool:
    """`text` names the interface as a word (enP1s1 is not named by enP1s10)."""
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", text) is not None


def _through_lowers(master: str, code: str) -> bool:
    """The script finds the VF below `master` itself (`/sys/class/net/<master>/lower_*`, or
    every interface's), so its pinning reaches the VF whatever mechanism runs it."""
    return "lower_" in code and (_names(master, code) or "/sys/class/net/*/lower_" in code)


def evaluate(t: Target) -> list[ObjectResult]:
    if not t.interfaces():  # nothing in scope: parse no boot configuration (docs/architecture.md#start-up-cost)
        return []
    patterns = [re.compile(p) for p in t.vars["patterns"]]
    mechanisms = set(t.vars.get("mechanisms", _MECHANISMS))
    scripts = [s for s in t.facts.boot_scripts if s.mechanism in mechanisms and s.mechanism != "udev"]
    code = {s.source: _without_comments(s.text) for s in scripts}
    pinning = [s for s in scripts if s.problem is None and any(p.search(code[s.source]) for p in patterns)]
    udev_runs = t.facts.udev_net_programs if "udev" in mechanisms else {}
    nm_map = t.facts.nm_unmanaged if any(s.mechanism == "nm-dispatcher" for s in pinning) else {}
    managed = [n for n in t.facts.interfaces if n not in nm_map]
    runs = {s.source: nm_dispatch.runs_for(code[s.source], managed) for s in pinning if s.mechanism == "nm-dispatcher"}
    results = []
    balancer = _irqbalance_running(t)
    unmanaged = _unmanaged(t)
    kernel = _running_kernel(t)
    for iface in t.interfaces():
        dispatch_notes: list[str] = []

        def reaches(s: BootScript, name: str, keyed: bool, notes: list[str]) -> bool:
            """A dispatcher script reaches `name` only through the events NetworkManager
            raises and its guard lets through (facts/nm_dispatch.py); `keyed`: resolved
            through the lower_* links of `name`, so `name` must raise the event itself.
            Why it does not, into `notes`."""
            if s.mechanism != "nm-dispatcher":
                return True
            run_for, scope = runs[s.source]
            if keyed or not scope.guarded:
                if name in run_for:
                    return True
                why = nm_map.get(name, f"its guard or NetworkManager raises no event for {name}")
                notes.append(f"{s.source} never runs for {name}: {why}")
                return False
            if not run_for:
                notes.append(f"{s.source}: NetworkManager raises no event its guard lets through at boot")
            return bool(run_for)

        # (source, runs again on the device's add event)
        found = [(s.source, _on_add(t, s, iface.name, unmanaged)) for s in pinning
                 if _names(iface.name, code[s.source]) and reaches(s, iface.name, False, dispatch_notes)]
        found += [(f"{s.source} (through {iface.master}'s lower_* links)", readd.bound_to_device(t.facts.fs, s))
                  for s in pinning if iface.master and s.source not in dict(found)
                  and _through_lowers(iface.master, code[s.source]) and reaches(s, iface.master, True, dispatch_notes)]
        found += [(f"{src}:{line}", True) for prog, src, line in udev_runs.get(iface.name, [])
                  if any(p.search(prog) for p in patterns) and _names(iface.name, prog)]
        for spec in t.vars.get("resolving", []):
            if iface.driver in spec["drivers"]:
                found += [(f"{s.source} (runs {spec['pattern']})", readd.bound_to_device(t.facts.fs, s))
                          for s in scripts if s.problem is None and re.search(spec["pattern"], code[s.source])]
        hits = [src for src, _ in found]
        after = _after_readd(iface, [src for src, again in found if again], balancer, kernel)
        if hits:
            results.append(ObjectResult(iface.name, PASS, "pinned at boot", ", ".join(hits),
                                        f"{iface.name} IRQs are pinned at boot by {', '.join(hits)}",
                                        predicted="pinned", source=configured_by(", ".join(hits)),
                                        after_readd=after))
            continue
        names = [iface.name, *filter(None, [iface.master])]
        notes = [s.problem for s in scripts if s.problem and any(_names(n, code[s.source]) for n in names)]
        notes += dispatch_notes
        if iface.master:
            notes += [f"{s.source} pins {iface.master}, whose hv_netvsc device has no IRQs of its own"
                      for s in pinning if _names(iface.master, code[s.source])]
        hint = "; ".join(dict.fromkeys(notes))
        source = (f"never applied: {hint}" if hint else
                  f"driver default (the IRQ affinity {iface.driver} and irqbalance leave; nothing pins it at boot)")
        results.append(ObjectResult(iface.name, FAIL, "pinned at boot", "no boot mechanism",
                                    f"nothing pins {iface.name}'s IRQs at boot" + (f" ({hint})" if hint else "") +
                                    f": add a NetworkManager dispatcher script, an enabled systemd unit or a udev "
                                    f"rule running set_irq_affinity_cpulist.sh for {iface.name}",
                                    predicted=UNKNOWN, source=source, fix=_fix(iface), after_readd=after))
    return complete(results)


def _irqbalance_running(t: Target) -> bool | None:
    """None: the process list is unreadable, so whether irqbalance moves the new IRQs is not known."""
    try:
        return "irqbalance" in t.facts.processes.values()
    except (FactError, ParseError):
        return None


def _unmanaged(t: Target) -> set[str]:
    """Devices NetworkManager does not manage (udev NM_UNMANAGED, [keyfile] unmanaged-devices)."""
    try:
        return set(t.facts.nm_unmanaged)
    except (FactError, ParseError):
        return set()


def _on_add(t: Target, script: BootScript, iface: str, unmanaged: set[str]) -> bool:
    """Does the mechanism that names `iface` run again when `iface` is added?"""
    if script.mechanism == "nm-dispatcher":
        return readd.dispatcher_runs_for(script, iface, unmanaged)
    return readd.bound_to_device(t.facts.fs, script)


def _running_kernel(t: Target) -> str:
    try:
        return t.facts.host.kernel
    except (FactError, ParseError):
        return "(release unreadable)"


def _after_readd(iface: Interface, again: list[str], balancer: bool | None, kernel: str) -> AfterReadd:
    """The new IRQs of a re-added device start at the running kernel's default affinity
    (no reboot, so no other kernel: SPEC §2 "After a driver update"); a running
    irqbalance is told of the add (a udev rule signals it, and its periodic rescan finds
    new IRQs) and places them itself, whatever pinned them."""
    if balancer:
        return AfterReadd(MOVED_BY_IRQBALANCE, "irqbalance runs and places the new IRQs of a re-added device", FAIL)
    if again and balancer is None:  # unreadable never means pass
        return AfterReadd(UNKNOWN, f"could not predict: re-applied on add by {', '.join(again)}, but the process "
                                   "list is unreadable, so whether irqbalance moves the new IRQs is not known", ERROR)
    if again:
        return AfterReadd("pinned", f"re-applied on add by {', '.join(again)}", PASS)
    return AfterReadd("default affinity", f"driver default (the default affinity the running kernel {kernel} gives "
                                          f"the new IRQs of {iface.name}; no mechanism that pins them runs on its "
                                          "add event)", FAIL)


def _fix(iface: Interface) -> Fix:
    # the rule `tunewatch remediate` writes (remediate/nic.py `_irq_udev_rules()`); CPULIST
    # is the runtime check's allowed CPUs, which this kind does not know. udev(7) has no
    # quoting inside a match value: a driver name that needs it gets no rule (plain_name)
    try:
        plain_name(iface.driver or "", "driver name", "a udev rule")
    except Unexpressible as e:
        return Fix(note=f"{e}: a NetworkManager dispatcher script or an enabled systemd unit that pins "
                        f"{iface.name}'s IRQs")
    return Fix(file=f"/etc/udev/rules.d/99-tunewatch-irq-affinity-{iface.driver}.rules",
               change=f'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="{iface.driver}", '
                      f'RUN+="/usr/local/sbin/tunewatch_set_irq_affinity_cpulist.sh CPULIST %k"',
               note=f"CPULIST: the CPUs nic-irq-affinity allows; or a NetworkManager dispatcher script or enabled "
                    f"systemd unit that pins {iface.name}'s IRQs (tunewatch remediate writes both the rule and the "
                    "script)")
