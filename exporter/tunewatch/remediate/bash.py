"""The plan as a bash script (shellcheck clean, idempotent, root-relative).

Every file path is written as "$R/<path>" where R=${TUNEWATCH_ROOT:-}, so the script can be
applied to a copy of a snapshot. Runtime steps change the running kernel and services: by
default both phases run when TUNEWATCH_ROOT is empty and only the persistent phase when it
is set; TUNEWATCH_APPLY="runtime" (or "persistent") picks one. Under TUNEWATCH_ROOT the
runtime steps that write kernel files (IRQ affinity, read-ahead) write them under the root,
and commands (ethtool, sysctl, systemctl) are not run: they would act on this machine.

The script first checks that it runs where the scan ran: the hostname and the boot id
(/proc/sys/kernel/random/boot_id, both read under TUNEWATCH_ROOT) must be the scan's, else
it exits 3 having changed nothing; TUNEWATCH_FORCE=1 overrides.
"""

from __future__ import annotations

from .. import __version__
from .._escape import comment, sh
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
    from .steps import Action

GUARD = r'''
# The scan saw one host at one boot: runtime values and IRQ numbers belong to that boot, and
# files to that host. Refuse anything else (read under TUNEWATCH_ROOT when it is set).
tw_refuse() { printf 'tunewatch: refusing: %s (TUNEWATCH_FORCE=1 overrides)\n' "$*" >&2; exit 3; }
tw_here_host=$(cat "$R/proc/sys/kernel/hostname" 2>/dev/null || true)
tw_here_boot=$(cat "$R/proc/sys/kernel/random/boot_id" 2>/dev/null || true)
if [ "${TUNEWATCH_FORCE:-0}" != 1 ]; then
    if [ "$tw_here_host" != "$TW_SCAN_HOST" ]; then
        tw_refuse "written for host $TW_SCAN_HOST, this is ${tw_here_host:-unknown}"
    fi
    if [ -z "$TW_SCAN_BOOT" ]; then
        tw_refuse "the scan recorded no boot id (its root has no proc/sys/kernel/random/boot_id, as a shipped" \
            "example), so this cannot be shown to be the boot it scanned; scan the host itself"
    elif [ "$tw_here_boot" != "$TW_SCAN_BOOT" ]; then
        tw_refuse "written for boot $TW_SCAN_BOOT of $TW_SCAN_HOST, this is boot ${tw_here_boot:-unknown}:" \
            "the host rebooted since the scan; scan it again"
    fi
fi
'''

PRELUDE = r'''set -euo pipefail
R=${TUNEWATCH_ROOT:-}
R=${R%/}
''' + "%(identity)s" + GUARD + r'''if [ -z "${TUNEWATCH_APPLY:-}" ]; then
    if [ -n "$R" ]; then TUNEWATCH_APPLY=persistent; else TUNEWATCH_APPLY="runtime persistent"; fi
fi
changed=0

tw_say() { printf 'tunewatch: %s\n' "$*"; }
tw_phase() { case " $TUNEWATCH_APPLY " in *" $1 "*) return 0 ;; esac; return 1; }
tw_changed() { changed=$((changed + 1)); tw_say "$*"; }

# tw_ethtool_value OPTION IFACE LABEL: the current value ("Current hardware settings" block)
tw_ethtool_value() {
    ethtool "$1" "$2" 2>/dev/null | LABEL="$3" awk '
        /^Pre-set maximums/ { skip = 1 } /^Current hardware settings/ { skip = 0 }
        { line = $0; sub(/^[[:space:]]+/, "", line) }
        !skip && index(line, ENVIRON["LABEL"] ":") == 1 {
            sub(/^[^:]*:[[:space:]]*/, "", line); split(line, w, /[[:space:]]+/); print w[1]; exit }'
}

# tw_run PROBE WANT CMD...: run CMD unless the shell snippet PROBE prints WANT
tw_run() {
    local probe=$1 want=$2 now
    shift 2
    if [ -n "$R" ] && [ "$1" != tw_write ]; then  # ethtool, sysctl, systemctl act on this machine, not on $R
        tw_say "not run under TUNEWATCH_ROOT (it acts on the running host): $*"
        return 0
    fi
    now=$(eval "$probe" 2>/dev/null || true)
    if [ "$now" = "$want" ]; then return 0; fi
    "$@"
    tw_changed "ran $* (was ${now:-unknown})"
}

# tw_write FILE VALUE: write VALUE to a kernel file (sysfs, procfs)
tw_write() { printf '%s\n' "$2" > "$R$1"; }

''' + IRQ_FUNCTION + r'''

# tw_file PATH MODE CONTENT: PATH under the root holds exactly CONTENT (mode MODE, owner root)
tw_file() {
    local path="$R/$1" mode=$2 content=$3
    if [ -f "$path" ] && [ "$(cat "$path")" = "$content" ] && [ "$(stat -c %a "$path")" = "${mode#0}" ]; then
        return 0
    fi
    mkdir -p "$(dirname "$path")"
    printf '%s\n' "$content" > "$path.tunewatch-new"
    chmod "$mode" "$path.tunewatch-new"
    if [ "$(id -u)" = 0 ]; then chown 0:0 "$path.tunewatch-new"; fi
    mv -f "$path.tunewatch-new" "$path"
    tw_changed "wrote /$1"
}

# tw_line PATH REGEX LINE MODE: the first line matching REGEX (ERE) becomes LINE, later ones go;
# LINE is appended when none matches
tw_line() {
    local path="$R/$1" regex=$2 line=$3 mode=$4
    if [ -f "$path" ] && grep -qxF -- "$line" "$path" && [ "$(grep -cE -- "$regex" "$path")" = 1 ]; then
        return 0
    fi
    if [ ! -e "$path" ]; then
        mkdir -p "$(dirname "$path")"
        install -m "$mode" /dev/null "$path"
    fi
    if grep -qE -- "$regex" "$path"; then
        RE=$regex LINE=$line awk '$0 ~ ENVIRON["RE"] { if (!done) print ENVIRON["LINE"]; done = 1; next } { print }' \
            "$path" > "$path.tunewatch-new"
        cat "$path.tunewatch-new" > "$path"
        rm -f "$path.tunewatch-new"
    else
        printf '%s\n' "$line" >> "$path"
    fi
    tw_changed "set /$1: $line"
}

# tw_comment PATH REGEX: keep lines matching REGEX (ERE) as comments
tw_comment() {
    local path="$R/$1" regex=$2
    if [ ! -f "$path" ] || ! grep -qE -- "$regex" "$path"; then return 0; fi
    RE=$regex awk '$0 ~ ENVIRON["RE"] { print "# disabled by tunewatch: " $0; next } { print }' \
        "$path" > "$path.tunewatch-new"
    cat "$path.tunewatch-new" > "$path"
    rm -f "$path.tunewatch-new"
    tw_changed "commented out $regex in /$1"
}

# tw_ini PATH SECTION KEY VALUE MODE: KEY=VALUE in [SECTION] (added when missing); MODE, owner root
tw_ini() {
    local path="$R/$1" mode=$5
    export SECTION=$2 KEY=$3 VALUE=$4
    if [ -f "$path" ] && [ "$(stat -c %a "$path")" = "${mode#0}" ] && awk '
        /^[[:space:]]*\[/ { insec = ($0 == "[" ENVIRON["SECTION"] "]") }
        insec && $0 == ENVIRON["KEY"] "=" ENVIRON["VALUE"] { found = 1 }
        END { exit !found }' "$path"; then
        return 0
    fi
    mkdir -p "$(dirname "$path")"
    touch "$path"
    awk '
        function put() { if (!done) print ENVIRON["KEY"] "=" ENVIRON["VALUE"]; done = 1 }
        function flush() { printf "%s", held; held = "" }
        /^[[:space:]]*\[/ { if (insec) put(); flush(); insec = ($0 == "[" ENVIRON["SECTION"] "]"); seen = seen || insec
                             print; next }
        insec && /^[[:space:]]*$/ { held = held $0 "\n"; next }
        insec && $0 ~ ("^" ENVIRON["KEY"] "[[:space:]]*=") { flush(); put(); next }
        { flush(); print }
        END { if (!done) { if (!seen) print "[" ENVIRON["SECTION"] "]"; put() } flush() }' "$path" > "$path.tunewatch-new"
    cat "$path.tunewatch-new" > "$path"
    rm -f "$path.tunewatch-new"
    chmod "$mode" "$path"
    if [ "$(id -u)" = 0 ]; then chown 0:0 "$path"; fi
    tw_changed "set [$SECTION] $KEY=$VALUE in /$1"
}

# tw_mask UNIT: disable (and stop, on the live host) and mask a unit
tw_mask() {
    if [ "$(readlink "$R/etc/systemd/system/$1" || true)" = /dev/null ] \
        && ! find "$R/etc/systemd/system" -path "*.wants/$1" -print -quit 2>/dev/null | grep -q .; then
        return 0
    fi
    if [ -n "$R" ]; then
        systemctl --root="$R" disable "$1" 2>/dev/null || find "$R/etc/systemd/system" -path "*.wants/$1" -delete
        systemctl --root="$R" mask "$1" 2>/dev/null || ln -sfn /dev/null "$R/etc/systemd/system/$1"
    else
        systemctl disable --now "$1" || true
        systemctl mask "$1"
    fi
    tw_changed "disabled and masked $1"
}

# tw_enable UNIT: enable (and start, on the live host) a unit
tw_enable() {
    if find "$R/etc/systemd/system" -path "*.wants/$1" -print -quit 2>/dev/null | grep -q .; then return 0; fi
    if [ -n "$R" ]; then systemctl --root="$R" enable "$1"; else systemctl enable --now "$1"; fi
    tw_changed "enabled $1"
}
'''  # noqa: E501 - shell and awk, kept as they run


def _q(text: str) -> str:
    return sh(text)


def _line(action: Action) -> str:
    if isinstance(action, Command):
        return f"tw_run {_q(action.probe or 'false')} {_q(action.want or '')} {' '.join(_q(a) for a in action.argv)}"
    if isinstance(action, PinIrqs):
        return f"tw_irqs {_q(action.cpus)} {_q(action.iface)} {_q(action.control)}"
    if isinstance(action, WriteFile):
        return f"tw_file {_q(action.path)} {action.mode} {_q(action.content)}"
    if isinstance(action, EnsureLine):
        return f"tw_line {_q(action.path)} {_q(action.regex)} {_q(action.line)} {action.mode}"
    if isinstance(action, CommentOut):
        return f"tw_comment {_q(action.path)} {_q(action.regex)}"
    if isinstance(action, IniSet):
        return f"tw_ini {_q(action.path)} {_q(action.section)} {_q(action.key)} {_q(action.value)} {action.mode}"
    if isinstance(action, MaskUnit):
        return f"tw_mask {_q(action.unit)}"
    if isinstance(action, EnableUnit):
        return f"tw_enable {_q(action.unit)}"
    raise TypeError(action)


def _comment(text: str) -> str:
    """Host data in a `#` line: one line, control bytes escaped (escape.comment)."""
    return comment(" ".join(str(text).split()))


def render_bash(plan: Plan) -> str:
    out = ["#!/bin/bash",
           "# shellcheck disable=SC2016  # file contents below are written literally, $ and all",
           f"# tunewatch {__version__} remediation for {_comment(plan.host)} (profile {_comment(plan.profile)}, "
           f"scan of {_comment(plan.root)})",
           "# It fixes only the checks that failed in that scan. Review it before running it as root.",
           "# TUNEWATCH_ROOT=DIR applies the persistent part to a copy of the host's files under DIR;",
           "# TUNEWATCH_APPLY=runtime|persistent picks a phase (default: both on /, persistent under DIR).",
           f"# It refuses to run on another host or after a reboot (hostname {_comment(plan.host)}, boot id "
           f"{_comment(plan.boot_id or 'not recorded')}; read under TUNEWATCH_ROOT); TUNEWATCH_FORCE=1 overrides.",
           "# Running it again changes nothing that is already right.",
           "#", "# What it changes:"]
    out += [f"#   {_comment(line)}" for line in change_lines(plan)]
    manual = plan.phase(MANUAL)
    if manual:
        out += ["#", "# Left to you (not automated):"]
        out += [f"#   {_comment(s.check)} {_comment(s.object)}: {_comment(s.action.text)}"
                for s in manual if isinstance(s.action, Note)]
    if not plan.steps:
        out.append("#   nothing: no check failed")
    identity = f"TW_SCAN_HOST={_q(plan.host)}\nTW_SCAN_BOOT={_q(plan.boot_id or '')}\n"
    out += [PRELUDE.replace("%(identity)s", identity)]
    for phase in (RUNTIME, PERSISTENT):
        steps = plan.phase(phase)
        if not steps:
            continue
        out.append(f"if tw_phase {phase}; then")
        for step in steps:
            out.append(f"    # {_comment(step.check)} {_comment(step.object)}: {_comment(step.summary)}")
            out.append("    " + _line(step.action))
        out.append("fi")
    out.append('tw_say "$changed change(s)"')
    return "\n".join(out) + "\n"
