"""The plan as an Ansible playbook (ansible-core builtin modules only).

Files are written with `copy`, `lineinfile` and `replace` under `{{ tunewatch_root }}` (empty:
the managed host itself), units with `systemd_service`; runtime steps are shell tasks guarded
by a probe of the current value, tagged `runtime` and skipped when `tunewatch_root` is set.

Host data (interface names, file names, mount points, the hostname) is never templated:
every value that holds any is a `!unsafe` scalar, a path is `{{ tunewatch_root }}` joined
with a task variable `tw_path` that is `!unsafe`, shell scripts get the root as the
environment variable R, and task names hold no host data (they show the `!unsafe` task
variable `tw_step`, which Ansible prints without templating it).
"""

from __future__ import annotations

import re

import yaml

from .. import __version__
from .._escape import comment, sh_words
from .irqpin import IRQ_FUNCTION
from .steps import (
    MANUAL,
    PERSISTENT,
    RUNTIME,
    Command,
    CommentOut,
    EnableUnit,
    EnsureLine,
    IniSet,
    MaskUnit,
    Note,
    PinIrqs,
    Plan,
    WriteFile,
    change_lines,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .steps import Step

ROOT = "{{ tunewatch_root }}"
PATH = ROOT + "/{{ tw_path }}"  # tw_path: a task variable, !unsafe
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
# The boot id first: a hostname may hold blanks (the guard splits at the first one only).
IDENTITY_PROBE = ('printf "%s %s" "$(cat "$R/proc/sys/kernel/random/boot_id" 2>/dev/null)" '
                  '"$(cat "$R/proc/sys/kernel/hostname" 2>/dev/null)"')


def _guard() -> list[dict]:
    """Two tasks tagged `always`: read the hostname and boot id, fail unless they are the scan's."""
    seen = "(tw_identity.stdout.split(' ', 1) + [''])"
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
                      f"{seen}[1] != tunewatch_scan_hostname or tunewatch_scan_boot_id == '' "
                      f"or {seen}[0] != tunewatch_scan_boot_id"],
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
    return sh_words(words)


def _shell(script: str) -> dict:
    """A bash task: the script is never templated; the root comes in as $R."""
    return {"ansible.builtin.shell": {"cmd": Unsafe(script), "executable": "/bin/bash"},
            "environment": {"R": ROOT},
            "register": "tw_result", "changed_when": "'TUNEWATCH_CHANGED' in tw_result.stdout"}


def _named(task: dict, label: str, what: str, path: str | None = None) -> dict:
    """`task` named by its phase and check (`label`, content), showing `what` (host data) through
    the !unsafe task variable tw_step; `path` (host data) as the !unsafe tw_path."""
    tvars = {"tw_step": Unsafe(comment(what))}
    if path is not None:
        tvars["tw_path"] = Unsafe(path)
    return {"name": f"{label}: {{{{ tw_step }}}}", **task, "vars": tvars}


def _directory(path: str) -> dict:
    parent = path.rsplit("/", 1)[0]
    return _named({"ansible.builtin.file": {"path": PATH, "state": "directory", "mode": "0755"},
                   "tags": [PERSISTENT]}, "directory", "/" + parent, parent)


def _tasks(step: Step) -> list[dict]:
    a = step.action
    label = f"[{step.phase}] {step.check}"
    what = f"{step.object}: {' '.join(step.summary.split())}"
    return [t if "name" in t else _named(t, label, what, getattr(a, "path", None)) for t in _unnamed(step)]


def _unnamed(step: Step) -> list[dict]:
    """The tasks of one step; the ones without a name get _named's by _tasks."""
    a = step.action
    if isinstance(a, Command):
        probe = a.probe or "false"
        helpers = "".join(text for name, text in HELPERS.items() if name in probe or name in a.argv)
        script = (helpers + f"now=$({{ {probe}; }} 2>/dev/null || true)\n"
                  f"if [ \"$now\" != {_quote([a.want or ''])} ]; then {_quote(a.argv)}; echo TUNEWATCH_CHANGED; fi\n")
        return [{**_shell(script), "when": LIVE, "tags": [RUNTIME]}]
    if isinstance(a, PinIrqs):
        script = (IRQ_PRELUDE + IRQ_FUNCTION + f"tw_irqs {_quote([a.cpus, a.iface, a.control])}\n")
        return [{**_shell(script), "when": LIVE, "tags": [RUNTIME]}]
    if isinstance(a, WriteFile):
        return [_directory(a.path), {"ansible.builtin.copy": {"dest": PATH, "content": Unsafe(a.content + "\n"),
                                                         "mode": a.mode, "owner": "root", "group": "root"},
                 "tags": [PERSISTENT]}]
    if isinstance(a, EnsureLine):
        return [_directory(a.path), {"ansible.builtin.lineinfile": {"path": PATH, "regexp": Unsafe(_python_re(a.regex)),
                                                               "line": Unsafe(a.line), "create": True, "mode": a.mode},
                 "tags": [PERSISTENT]}]
    if isinstance(a, CommentOut):
        return [{"ansible.builtin.replace": {"path": PATH,
                                                            "regexp": Unsafe(f"({_python_re(a.regex)}.*)$"),
                                                            "replace": Unsafe(r"# disabled by tunewatch: \1")},
                 "tags": [PERSISTENT]}]
    if isinstance(a, IniSet):
        header = rf"^\[{re.escape(a.section)}\]$"
        owned = {"path": PATH, "mode": a.mode, "owner": "root", "group": "root"}
        return [_directory(a.path),
                _named({"ansible.builtin.lineinfile": {
                    **owned, "regexp": Unsafe(header), "line": Unsafe(f"[{a.section}]"), "create": True},
                    "tags": [PERSISTENT]}, f"[{step.phase}] {step.check} (section)", f"[{a.section}] in /{a.path}",
                    a.path),
                {"ansible.builtin.lineinfile": {
                    **owned, "regexp": Unsafe(rf"^{re.escape(a.key)}\s*="), "line": Unsafe(f"{a.key}={a.value}"),
                    "insertafter": Unsafe(header)}, "tags": [PERSISTENT]}]
    if isinstance(a, (MaskUnit, EnableUnit)):
        masking = isinstance(a, MaskUnit)
        live = {"name": Unsafe(a.unit), "enabled": not masking, "masked": masking,
                "state": "stopped" if masking else "started"}
        verb, unit = ("disable" if masking else "enable"), _quote([a.unit])
        offline = (f"if systemctl --root=\"$R\" is-enabled {unit} 2>/dev/null | grep -qx "
                   f"{'masked' if masking else 'enabled'}; then exit 0; fi\n"
                   f"systemctl --root=\"$R\" {verb} {unit} || true\n"
                   + (f"systemctl --root=\"$R\" mask {unit}\n" if masking else "") + "echo TUNEWATCH_CHANGED\n")
        return [{"ansible.builtin.systemd_service": live, "when": LIVE, "tags": [PERSISTENT]},
                _named({**_shell(offline), "when": COPY, "tags": [PERSISTENT]},
                       f"[{step.phase}] {step.check} (copy under tunewatch_root)", a.unit)]
    raise TypeError(a)


def render_ansible(plan: Plan) -> str:
    changes = [f"#   {comment(line)}" for line in change_lines(plan)] or ["#   nothing: no check failed"]
    manual = [f"#   {comment(s.check)} {comment(s.object)}: {comment(' '.join(s.action.text.split()))}"
              for s in plan.phase(MANUAL) if isinstance(s.action, Note)]
    host = comment(plan.host)
    head = [f"# tunewatch {__version__} remediation for {host} (profile {comment(plan.profile)}, "
            f"scan of {comment(plan.root)})",
            "# It fixes only the checks that failed in that scan. Review it before running it.",
            "# -e tunewatch_root=DIR applies the persistent part to a copy of the host's files under DIR;",
            "# --tags runtime / --tags persistent picks a phase. Every task is idempotent.",
            f"# It runs on -e tunewatch_hosts=PATTERN (default: {host}) and refuses any host whose hostname or",
            f"# boot id (/proc/sys/kernel/random/boot_id, under tunewatch_root) is not the scan's "
            f"({comment(plan.boot_id or 'not recorded')});",
            "# -e tunewatch_force=true overrides.",
            "#", "# What it changes:", *changes]
    if manual:
        head += ["#", "# Left to you (not automated):", *manual]
    tasks = [t for phase in (RUNTIME, PERSISTENT) for step in plan.phase(phase) for t in _tasks(step)]
    # hosts: a variable defaulting to the scanned host, never `all`: run against an inventory,
    # the play reaches only the host this plan was written for
    play = [{"name": f"tunewatch remediation ({plan.profile})",  # no host data: play names are templated
             "hosts": "{{ tunewatch_hosts | default(tunewatch_scan_hostname) }}", "become": True,
             "gather_facts": False,
             "vars": {"tunewatch_root": "", "tunewatch_force": False, "tunewatch_scan_hostname": Unsafe(plan.host),
                      "tunewatch_scan_boot_id": Unsafe(plan.boot_id or "")},
             "tasks": _guard() + tasks}]
    body = yaml.dump(play, Dumper=_Dumper, sort_keys=False, width=120, default_flow_style=False)
    return "\n".join(head) + "\n---\n" + body
