"""The plan as an Ansible playbook (ansible-core builtin modules only).

Files are written with `copy`, `lineinfile` and `replace` under `{{ tunewatch_root }}` (empty:
the managed host itself), units with `systemd_service`; runtime steps are shell tasks guarded
by a probe of the current value, tagged `runtime` and skipped when `tunewatch_root` is set.
"""

from __future__ import annotations

import re
import shlex

import yaml

from .. import __version__
from .irqpin import IRQ_FUNCTION
from .steps import (
    MANUAL, PERSISTENT, RUNTIME, Command, CommentOut, EnableUnit, EnsureLine, IniSet, MaskUnit, Note, PinIrqs,
    Plan, WriteFile, change_lines,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from .steps import Step

ROOT = "{{ tunewatch_root }}"
LIVE = "tunewatch_root == ''"
COPY = "tunewatch_root != ''"
HELPERS = {"tw_ethtool_value": r'''tw_ethtool_value() {
    ethtool "$1" "$2" 2>/dev/null | LABEL="$3" awk '
        /^Pre-set maximums/ { skip = 1 } /^Current hardware settings/ { skip = 0 }
        { line = $0; sub(/^[[:space:]]+/, "", line) }
        !skip && index(line, ENVIRON["LABEL"] ":") == 1 {
            sub(/^[^:]*:[[:space:]]*/, "", line); split(line, w, /[[:space:]]+/); print w[1]; exit }'
}
''', "tw_write": "R=\ntw_write() { printf '%s\\n' \"$2\" > \"$R$1\"; }\n"}


IRQ_PRELUDE = ("set -euo pipefail\nR=\ntw_say() { printf 'tunewatch: %s\\n' \"$*\"; }\n"
               "tw_changed() { tw_say \"$*\"; echo TUNEWATCH_CHANGED; }\n")
# What the scan saw; the guard compares it with the managed host (under tunewatch_root when set).
IDENTITY_PROBE = ('printf "%s %s" "$(cat "$R/proc/sys/kernel/hostname" 2>/dev/null)" '
                  '"$(cat "$R/proc/sys/kernel/random/boot_id" 2>/dev/null)"')


def _guard() -> list[dict]:
    """Two tasks tagged `always`: read the hostname and boot id, fail unless they are the scan's."""
    seen = "tw_identity.stdout.split(' ')"
    return [{"name": "tunewatch guard: hostname and boot id of the managed host",
             "ansible.builtin.shell": {"cmd": Unsafe(IDENTITY_PROBE), "executable": "/bin/bash"},
             "environment": {"R": "{{ tunewatch_root }}"}, "register": "tw_identity", "changed_when": False,
             "check_mode": False, "tags": ["always"]},
            {"name": "tunewatch guard: refuse another host, or the scanned host after a reboot",
             "ansible.builtin.fail": {"msg": (
                 "refusing: written for {{ tunewatch_scan_hostname }} at boot "
                 "{{ tunewatch_scan_boot_id or 'unknown' }}, "
                 "this is {{ tw_identity.stdout }}: another host, or the host rebooted since the scan (or the scan "
                 "recorded no boot id); scan it again (-e tunewatch_force=true overrides)")},
             "when": ["not (tunewatch_force | bool)",
                      f"{seen}[0] != tunewatch_scan_hostname or tunewatch_scan_boot_id == '' "
                      f"or ({seen} + [''])[1] != tunewatch_scan_boot_id"],
             "tags": ["always"]}]


class Unsafe(str):
    """A literal Ansible must not template (`!unsafe`): scripts hold `${#a[@]}`, `{#` opens a Jinja comment."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(Unsafe, lambda d, v: d.represent_scalar("!unsafe", str(v), style="|" if "\n" in v else "'"))


def _python_re(ere: str) -> str:
    """POSIX ERE (the bash output's dialect) to Python's re, which lineinfile uses."""
    return ere.replace("[:space:]", r"\s")


def _quote(words: Iterable[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def _shell(script: str) -> dict:
    return {"ansible.builtin.shell": {"cmd": script if "{{" in script else Unsafe(script), "executable": "/bin/bash"},
            "register": "tw_result", "changed_when": "'TUNEWATCH_CHANGED' in tw_result.stdout"}


def _directory(path: str) -> dict:
    parent = path.rsplit("/", 1)[0]
    return {"name": f"directory /{parent}", "ansible.builtin.file": {"path": f"{ROOT}/{parent}", "state": "directory",
                                                                     "mode": "0755"}, "tags": [PERSISTENT]}


def _tasks(step: Step) -> list[dict]:
    a = step.action
    name = f"[{step.phase}] {step.check} {step.object}: {' '.join(step.summary.split())}"
    if isinstance(a, Command):
        probe = a.probe or "false"
        helpers = "".join(text for name, text in HELPERS.items() if name in probe or name in a.argv)
        script = (helpers + f"now=$({{ {probe}; }} 2>/dev/null || true)\n"
                  f"if [ \"$now\" != {_quote([a.want or ''])} ]; then {_quote(a.argv)}; echo TUNEWATCH_CHANGED; fi\n")
        return [{"name": name, **_shell(script), "when": LIVE, "tags": [RUNTIME]}]
    if isinstance(a, PinIrqs):
        script = (IRQ_PRELUDE + IRQ_FUNCTION + f"tw_irqs {_quote([a.cpus, a.iface, a.control])}\n")
        return [{"name": name, **_shell(script), "when": LIVE, "tags": [RUNTIME]}]
    if isinstance(a, WriteFile):
        return [_directory(a.path), {"name": name, "ansible.builtin.copy": {"dest": f"{ROOT}/{a.path}",
                                                                            "content": Unsafe(a.content + "\n"),
                                                         "mode": a.mode, "owner": "root", "group": "root"},
                 "tags": [PERSISTENT]}]
    if isinstance(a, EnsureLine):
        return [_directory(a.path), {"name": name, "ansible.builtin.lineinfile": {"path": f"{ROOT}/{a.path}",
                                                                                  "regexp": Unsafe(_python_re(a.regex)),
                                                               "line": Unsafe(a.line), "create": True, "mode": a.mode},
                 "tags": [PERSISTENT]}]
    if isinstance(a, CommentOut):
        return [{"name": name, "ansible.builtin.replace": {"path": f"{ROOT}/{a.path}",
                                                            "regexp": Unsafe(f"({_python_re(a.regex)}.*)$"),
                                                            "replace": Unsafe(r"# disabled by tunewatch: \1")},
                 "tags": [PERSISTENT]}]
    if isinstance(a, IniSet):
        header = rf"^\[{re.escape(a.section)}\]$"
        owned = {"path": f"{ROOT}/{a.path}", "mode": a.mode, "owner": "root", "group": "root"}
        return [_directory(a.path),
                {"name": f"{name} (section [{a.section}])", "ansible.builtin.lineinfile": {
                    **owned, "regexp": Unsafe(header), "line": Unsafe(f"[{a.section}]"), "create": True},
                 "tags": [PERSISTENT]},
                {"name": name, "ansible.builtin.lineinfile": {
                    **owned, "regexp": Unsafe(rf"^{re.escape(a.key)}\s*="), "line": Unsafe(f"{a.key}={a.value}"),
                    "insertafter": Unsafe(header)}, "tags": [PERSISTENT]}]
    if isinstance(a, (MaskUnit, EnableUnit)):
        masking = isinstance(a, MaskUnit)
        live = {"name": a.unit, "enabled": not masking, "masked": masking,
                "state": "stopped" if masking else "started"}
        verb = "disable" if masking else "enable"
        state = "masked" if masking else "enabled"
        offline = (f"if systemctl --root={ROOT} is-enabled {a.unit} 2>/dev/null | grep -qx {state}; "
                   f"then exit 0; fi\nsystemctl --root={ROOT} {verb} {a.unit} || true\n"
                   + (f"systemctl --root={ROOT} mask {a.unit}\n" if masking else "") + "echo TUNEWATCH_CHANGED\n")
        return [{"name": name, "ansible.builtin.systemd_service": live, "when": LIVE, "tags": [PERSISTENT]},
                {"name": name + " (copy under tunewatch_root)", **_shell(offline), "when": COPY, "tags": [PERSISTENT]}]
    raise TypeError(a)


def render_ansible(plan: Plan) -> str:
    changes = [f"#   {line}" for line in change_lines(plan)] or ["#   nothing: no check failed"]
    manual = [f"#   {s.check} {s.object}: {' '.join(s.action.text.split())}"
              for s in plan.phase(MANUAL) if isinstance(s.action, Note)]
    head = [f"# tunewatch {__version__} remediation for {plan.host} (profile {plan.profile}, scan of {plan.root})",
            "# It fixes only the checks that failed in that scan. Review it before running it.",
            "# -e tunewatch_root=DIR applies the persistent part to a copy of the host's files under DIR;",
            "# --tags runtime / --tags persistent picks a phase. Every task is idempotent.",
            f"# It runs on -e tunewatch_hosts=PATTERN (default: {plan.host}) and refuses any host whose hostname or",
            f"# boot id (/proc/sys/kernel/random/boot_id, under tunewatch_root) is not the scan's "
            f"({plan.boot_id or 'not recorded'});",
            "# -e tunewatch_force=true overrides.",
            "#", "# What it changes:", *changes]
    if manual:
        head += ["#", "# Left to you (not automated):", *manual]
    tasks = [t for phase in (RUNTIME, PERSISTENT) for step in plan.phase(phase) for t in _tasks(step)]
    # hosts: a variable defaulting to the scanned host, never `all`: run against an inventory,
    # the play reaches only the host this plan was written for
    play = [{"name": f"tunewatch remediation for {plan.host} ({plan.profile})",
             "hosts": "{{ tunewatch_hosts | default('" + plan.host.replace("'", "") + "') }}", "become": True,
             "gather_facts": False,
             "vars": {"tunewatch_root": "", "tunewatch_force": False, "tunewatch_scan_hostname": Unsafe(plan.host),
                      "tunewatch_scan_boot_id": Unsafe(plan.boot_id or "")},
             "tasks": _guard() + tasks}]
    body = yaml.dump(play, Dumper=_Dumper, sort_keys=False, width=120, default_flow_style=False)
    return "\n".join(head) + "\n---\n" + body
