"""Kernel parameters, at runtime (proc/sys) or as the next boot sets them.

`configured` judges every consumer that runs at boot (facts/sysctl.py: systemd-sysctl,
and tuned with its `sysctl --system` re-apply): it passes only when each of them leaves
the wanted value, and names each one's value and source when they differ.
"""

from __future__ import annotations

from .._escape import sh, sh_words
from ..errors import FactError, ParseError
from ..facts.sysctl_writes import other_form
from ..results import ERROR, FAIL, PASS, UNKNOWN, AfterReadd, Fix, ObjectResult, Setting
from ._predict import default_sibling
from .base import Target, as_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..facts.defaults import Default
    from ..facts.sysctl import BootSysctl, ConfiguredValue

SYSCTL_FILE = "/etc/sysctl.d/90-tunewatch.conf"

VARS_SCHEMA = {
    "type": "object", "required": ["settings", "source"], "additionalProperties": False,
    "properties": {
        "source": {"enum": ["runtime", "configured"]},
        "settings": {"type": "object", "minProperties": 1,
                     "additionalProperties": {"type": ["integer", "string"]}},
        "module_params": {"type": "object", "additionalProperties": {"type": "string"},
                          "description": "modprobe.d 'module.param' -> sysctl key it sets"},
    },
}


def _same(actual: str, expected: Any) -> bool:
    a, e = as_number(actual), as_number(expected)
    if a is not None and e is not None:
        return a == e
    return " ".join(str(actual).split()) == " ".join(str(expected).split())


def _runtime(t: Target, key: str, expected: Any) -> ObjectResult:
    try:
        actual = t.facts.sysctl_runtime(key)
    except FactError as e:
        return ObjectResult(key, ERROR, str(expected), "unreadable", f"{key} is unreadable at runtime: {e}")
    if actual is None:
        modules = sorted({p.split(".", 1)[0] for p, k in t.vars.get("module_params", {}).items() if k == key})
        why = f" (module {', '.join(modules)} not loaded?)" if modules else ""
        return ObjectResult(key, ERROR, str(expected), "absent", f"{key} is absent at runtime{why}")
    setting = [Setting(key, as_number(actual), as_number(expected))]
    if _same(actual, expected):
        return ObjectResult(key, PASS, str(expected), actual, f"{key} = {actual} (runtime)", setting)
    command = f"sysctl -w {sh(f'{key}={expected}')}"
    return ObjectResult(key, FAIL, str(expected), actual,
                        f"{key} is {actual}, want {expected}: {command}", setting, fix=Fix(command=command))


def _origin(value: ConfiguredValue) -> str:
    return f"configured by {value.source}"


def _default(t: Target, boot: BootSysctl, key: str) -> Default | None:
    """The value the key comes back with when nothing sets it (content, for the kernel
    that boots next), or None."""
    return t.facts.default(boot.module_of.get(key, "kernel"), key)


def _builtin_of(t: Target) -> str:
    """Which kernel's modules.builtin said the module is not built in (the next kernel's)."""
    try:
        return f" (modules.builtin of {t.facts.next_kernel.describe()})"
    except (FactError, ParseError):
        return ""  # not reached: modules_boot raised the same error before a module was judged late


def _inherited_on_add(t: Target, key: str, expected: Any) -> AfterReadd | None:
    """A per-interface key nothing configures: a device added without a reboot copies the
    running kernel's `default` entry (devinet.c inetdev_init() `memcpy(&in_dev->cnf,
    ...devconf_dflt, ...)`, addrconf.c ipv6_add_dev(), neighbour.c neigh_parms_alloc() from
    `tbl->parms`), not the next kernel's built-in default. None for other keys."""
    sibling = default_sibling(key)
    if sibling is None:
        return None
    try:
        kernel = t.facts.host.kernel
        value = t.facts.sysctl_runtime(sibling)
    except (FactError, ParseError) as e:
        return AfterReadd(UNKNOWN, f"could not predict: {sibling} of the running kernel is unreadable: {e}", ERROR)
    if value is None:
        return AfterReadd(UNKNOWN, f"could not predict: {sibling} is absent at runtime", ERROR)
    return AfterReadd(value, f"copied on add from {sibling} of the running kernel {kernel} (nothing configures "
                             f"{key}, so systemd-sysctl --prefix re-applies nothing)",
                      PASS if _same(value, expected) else FAIL)


def _unset(t: Target, boot: BootSysctl, key: str, expected: Any, setting: list[Setting]) -> ObjectResult:
    """Nothing sets the key at boot: judge the default the kernel or module comes back with."""
    result = _unset_boot(t, boot, key, expected, setting)
    result.after_readd = _inherited_on_add(t, key, expected)
    return result


def _unset_boot(t: Target, boot: BootSysctl, key: str, expected: Any, setting: list[Setting]) -> ObjectResult:
    late = boot.late_module(key)
    hint, never = "", None
    in_conf = boot.sysctl_conf.get(key)
    sysctl_source = next((v for c in boot.consumers for v in [c.values.get(key)] if v is not None), None)
    origin = sysctl_source or in_conf
    if late is not None and origin is not None:
        where = origin.source
        never = f"{where} sets {key} but never reaches it: {late.why}{_builtin_of(t)}"
        hint = f"; {never}"
    elif in_conf and not boot.sysctl_conf_linked:
        never = (f"{in_conf.source} is read by systemd-sysctl only through a sysctl.d link "
                 "(99-sysctl.conf -> ../sysctl.conf), and there is none")
        hint = f"; {in_conf.source} sets {in_conf.value} but {never}"
    dropped = None if never else next((c.dropped[key] for c in boot.consumers if key in c.dropped), None)
    if dropped is not None:  # the admin's tuned line this tuned version writes nothing for
        never, hint = dropped, f"; {dropped}"
    default = _default(t, boot, key)
    predicted = default.value if default else UNKNOWN
    setting[0].observed = as_number(predicted)
    if default is not None and _same(default.value, expected):
        return ObjectResult(key, PASS, str(expected), default.value,
                            f"{key}: nothing sets it at boot and the {default.source} meets {expected}", setting,
                            predicted=predicted, source=default.source)
    back = f"it comes back at the {default.source}" if default else "the default is unknown"
    if late is not None:
        fix = Fix(file=f"/etc/modprobe.d/{late.module}.conf", change=f"options {late.module} {key.split('.', 1)[1]}"
                  f"={expected}", note=f"or load {late.module} before systemd-sysctl: add '{late.module}' to "
                  f"/etc/modules-load.d/{late.module}.conf (a sysctl.d file then sets it)")
    else:
        fix = Fix(file=SYSCTL_FILE, change=f"{key} = {expected}",
                  note=f"or {key} = {expected} in the tuned profile's [sysctl] section: this tuned's [vm] unit does "
                       "not write it" if dropped else None)
    return ObjectResult(key, FAIL, str(expected), predicted,
                        f"{key} is not configured for boot{hint}: {back}; "
                        + (f"set it with {fix.file}: {fix.change}" if late else
                           f"add '{key} = {expected}' to a file in /etc/sysctl.d/"), setting,
                        predicted=predicted, source=f"never applied: {never}" if never else
                        (default.source if default else "not configured; the default is unknown"), fix=fix)


def _configured(t: Target, boot: BootSysctl, key: str, expected: Any) -> ObjectResult:
    # each consumer's view is what the key holds after it ran; a consumer that does not set
    # the key leaves the earlier value (module option, systemd-sysctl) and disagrees with nobody
    late = boot.late_module(key)
    views = boot.views(key)
    final = boot.get(key)
    setting = [Setting(key, as_number(final.value) if final else None, as_number(expected))]
    shown = "; ".join(f"after {name}: {v.value} ({v.source})" if v else f"{name}: not set" for name, v in views)
    fix = f"add '{key} = {expected}' to a file in /etc/sysctl.d/"
    if not views and late is None:
        return ObjectResult(key, FAIL, str(expected), "no consumer",
                            f"{key}: neither systemd-sysctl nor tuned applies sysctls at boot on this host", setting,
                            predicted=UNKNOWN, source="never applied: systemd-sysctl is masked and tuned does not run",
                            fix=Fix(command="systemctl unmask systemd-sysctl.service", file=SYSCTL_FILE,
                                    change=f"{key} = {expected}"))
    if final is None:
        return _unset(t, boot, key, expected, setting)
    if late is not None and not views:  # only the module option sets it, at load
        views, shown = [("modprobe options", final)], f"{final.value} ({final.source}, at load)"
    set_views = [(name, v) for name, v in views if v is not None]
    if all(_same(v.value, expected) for _, v in set_views):
        return ObjectResult(key, PASS, str(expected), final.value, f"{key} = {final.value} at boot: {shown}", setting,
                            predicted=final.value, source=_origin(final))
    actual = " / ".join(f"{v.value} ({name})" for name, v in set_views)
    verb = "disagree" if len({v.value for _, v in set_views}) > 1 else "set a wrong value"
    bad = [v for _, v in set_views if not _same(v.value, expected)]
    zeroed = [v for v in bad if v.zeroed_by is not None]
    vm_fix = _vm_unit_fix(t, key, expected, zeroed[-1].zeroed_by) if zeroed else None
    if vm_fix is not None:
        return ObjectResult(key, FAIL, str(expected), actual,
                            f"{key}: boot-time consumers {verb}: {shown}; {vm_fix.note}", setting,
                            predicted=final.value, source=_origin(final), fix=vm_fix)
    if zeroed:
        # the other form of the limit was written later (facts/sysctl_writes.py): a sysctl.d
        # value alone cannot win; it must be written after that write, or that write removed
        note = (f"{zeroed[-1].source}; write {key} after it: in the active tuned profile's [sysctl], or keep it "
                f"in /etc/sysctl.d with reapply_sysctl = 1 in /etc/tuned/tuned-main.conf; or remove that write")
        return ObjectResult(key, FAIL, str(expected), actual,
                            f"{key}: boot-time consumers {verb}: {shown}; {note}", setting,
                            predicted=final.value, source=_origin(final),
                            fix=Fix(file="/etc/tuned/tuned-main.conf", change="reapply_sysctl = 1",
                                    note=f"with {key} = {expected} in {SYSCTL_FILE}; {note}"))
    saptune = [v for v in bad if v.source.startswith("saptune note ")]
    if saptune:
        # saptune writes after systemd-sysctl and tuned; an empty override value makes it
        # leave the key alone (saptune-note(5), /etc/saptune/override/<note>)
        note = saptune[-1].source.split(":")[0].rsplit("/", 1)[-1]
        fix_ = Fix(file=f"/etc/saptune/override/{note}", change=f"[sysctl]\n{key}=",
                   note=f"an empty value: saptune leaves {key} to /etc/sysctl.d ({key} = {expected}); "
                        f"or give it {expected} there; then saptune note apply {note}")
        return ObjectResult(key, FAIL, str(expected), actual,
                            f"{key}: boot-time consumers {verb}: {shown}; saptune writes last: override it in "
                            f"{fix_.file}", setting, predicted=final.value, source=_origin(final), fix=fix_)
    wrong = sorted({v.source.split(":")[0] for v in bad})
    return ObjectResult(key, FAIL, str(expected), actual,
                        f"{key}: boot-time consumers {verb}: {shown}; want {expected} from each: {fix} "
                        "and remove the other values", setting, predicted=final.value, source=_origin(final),
                        fix=Fix(file=SYSCTL_FILE, change=f"{key} = {expected}",
                                note=f"remove the other values of {key} from {', '.join(wrong)}"))


def _vm_unit_fix(t: Target, key: str, expected: Any, zeroing: ConfiguredValue | None) -> Fix | None:
    """When a tuned [vm] unit that no [sysctl] unit follows zeroed `key`, no sysctl.d file or
    reapply_sysctl can win (tuned re-applies sysctl.d after a [sysctl] unit): the limit goes
    into that [vm] unit itself, in the profile tuned merges last, with the other form dropped
    (merger.py `_merge_two()`: `drop=` removes the earlier profiles' option; in one unit
    plugin_vm.py writes dirty_bytes before dirty_ratio, so keeping both zeroes the bytes).
    The [vm] options are the keys' names under vm. (`vm.dirty_bytes`: `dirty_bytes`)."""
    other_key = other_form(key)
    if zeroing is None or zeroing.vm_option is None or other_key is None:
        return None
    from ..facts.tuned import profile_file, user_profile_dir

    unit, writer = zeroing.vm_option
    own, other = key.split(".", 1)[1], other_key.split(".", 1)[1]
    try:
        tuned = t.facts.tuned
        if tuned is None:
            return None
        at = next(i for i, (kind, _writes, name) in enumerate(tuned.steps) if kind == "vm" and name == unit)
        if any(kind == "sysctl" for kind, _writes, _name in tuned.steps[at + 1:]):
            return None  # a [sysctl] unit after it: reapply_sysctl writes etc/sysctl.d again (the usual fix)
        names = tuned.name.split()
        layouts = t.facts.defaults.layouts.get("tuned")
        last_file = profile_file(t.facts.fs, names[-1], layouts)
        mine = user_profile_dir(t.facts.fs, layouts)
    except (FactError, ParseError, StopIteration):
        return None
    body = f"[{unit}]\ndrop={other}\n{own} = {expected}"
    why = (f"tuned's [{unit}] unit ({writer} =) writes {other_key} = {zeroing.value} after {key} is set, and the "
           f"kernel zeroes {key}: set {own} = {expected} in that unit, with drop={other}, in the profile tuned "
           "merges last")
    if last_file and last_file.startswith(mine.rstrip("/") + "/"):
        return Fix(file=f"/{last_file}", change=body,
                   note=f"{why} (its [{unit}] section); then tuned-adm profile {sh_words(names)}")
    child = f"{names[-1]}-tunewatch"
    return Fix(file=f"/{mine}/{child}/tuned.conf", change=f"[main]\ninclude={names[-1]}\n\n{body}",
               note=f"{why}; then tuned-adm profile {sh_words([*names[:-1], child])}")


def evaluate(t: Target) -> list[ObjectResult]:
    if t.vars["source"] == "runtime":
        return [_runtime(t, key, expected) for key, expected in t.vars["settings"].items()]
    boot = t.facts.sysctl_configured
    return [_configured(t, boot, key, expected) for key, expected in t.vars["settings"].items()]
