"""For which interfaces NetworkManager runs a dispatcher script, and which ones it reaches.

NetworkManager-dispatcher(8): a script in dispatcher.d is called with `$1` the interface
name (also `DEVICE_IFACE`, `DEVICE_IP_IFACE` in its environment) and `$2` the action
(`NM_DISPATCHER_ACTION`: `pre-up`, `up`, `down`, `dhcp4-change`...), once per event of a
device NetworkManager manages: an unmanaged device (facts/nmconf.py) raises no event.

A script's guard decides which of those events do anything. Understood guards, in `[ ]`,
`[[ ]]` or `test`: `VAR = x` / `VAR == x` (x a word or, in `[[ ]]`, a glob), `VAR != x`,
and `case VAR in pat|pat)`; combined with `exit` on the same line (`... || exit 0`,
`... && exit 0`, `if ...; then exit`) the test is an early exit, otherwise it wraps the
commands that follow (bash(1) "CONDITIONAL EXPRESSIONS", "case"). At boot NetworkManager
raises `pre-up` (scripts in pre-up.d) and `up` (the top directory): a script whose `$2`
guard lets neither through does nothing at boot.

Which interfaces a script reaches:
- `$1`/`$DEVICE_IFACE`: the managed interfaces its guard lets through (`runs_for`);
- another variable, in a script that reads `lower_*` links: the VFs below those;
- a literal name: when the script has an interface guard, the script is keyed on the
  guarded interfaces and reaches the named one whenever one of them raises an event; an
  unguarded script runs on every event of every device, and is credited for the named
  interface only through that interface's own events: nothing orders another device's
  event after the named device exists, so when NetworkManager raises none for it (it is
  unmanaged, as the Accelerated Networking VF of Azure images is) the script "never runs
  for the VF" (seed 000's Red Hat procedure, `ethtool -L <if> combined 16` in dispatcher.d).
"""

from __future__ import annotations

import fnmatch
import re

from .._lazyre import LazyPattern, lazy

_IFACE_VAR = r'\$\{?(?:1|DEVICE_IFACE|DEVICE_IP_IFACE)\}?'
_ACTION_VAR = r'\$\{?(?:2|NM_DISPATCHER_ACTION)\}?'
_VALUE = r'"?\'?([\w.:*?\[\]-]+)\'?"?'


def _test(var: str) -> LazyPattern:
    return lazy(rf'"?{var}"?\s*(!=|==|=)\s*{_VALUE}')


_IFACE_TEST = _test(_IFACE_VAR)
_ACTION_TEST = _test(_ACTION_VAR)
_CASE = lazy(r'^\s*case\s+"?(' + _IFACE_VAR + '|' + _ACTION_VAR + r')"?\s+in\b')
_CASE_ARM = lazy(r'^\s*\(?\s*([^()]+?)\s*\)')
_EXIT = lazy(r'\bexit\b')
_BOOT_ACTIONS = ("pre-up", "up")


class Scope:
    """The interfaces and actions a script's guards let through."""

    def __init__(self) -> None:
        self.allow: list[str] = []   # with any, only matching interfaces
        self.deny: list[str] = []
        self.actions_allow: list[str] = []
        self.actions_deny: list[str] = []

    @property
    def guarded(self) -> bool:
        return bool(self.allow or self.deny)

    def lets(self, name: str) -> bool:
        if any(fnmatch.fnmatchcase(name, p) for p in self.deny):
            return False
        return not self.allow or any(fnmatch.fnmatchcase(name, p) for p in self.allow)

    def at_boot(self) -> bool:
        ok = [a for a in _BOOT_ACTIONS if not any(fnmatch.fnmatchcase(a, p) for p in self.actions_deny)]
        if self.actions_allow:
            ok = [a for a in ok if any(fnmatch.fnmatchcase(a, p) for p in self.actions_allow)]
        return bool(ok)

    def actions(self) -> str:
        return ", ".join(self.actions_allow) or "not " + ", ".join(self.actions_deny)


def _add(scope: Scope, action: bool, positive: bool, value: str) -> None:
    if action:
        (scope.actions_allow if positive else scope.actions_deny).append(value)
    else:
        (scope.allow if positive else scope.deny).append(value)


def scope_of(code: str) -> Scope:
    """The guards of a script (comments already removed)."""
    scope = Scope()
    lines = code.split("\n")
    case_var: str | None = None
    for i, line in enumerate(lines):
        if case_var is not None:
            if re.match(r"^\s*esac\b", line):
                case_var = None
                continue
            arm = _CASE_ARM.match(line)
            if arm and not line.strip().startswith(("#", "echo", "/")):
                pats = [p.strip().strip("\"'") for p in arm.group(1).split("|")]
                body = line[arm.end():] + " " + (lines[i + 1] if i + 1 < len(lines) else "")
                if pats == ["*"]:
                    continue
                for p in pats:  # an arm that only exits excludes its patterns
                    _add(scope, case_var == "action", not _EXIT.search(body.split(";;")[0]), p)
            continue
        m = _CASE.match(line)
        if m:
            case_var = "action" if re.match(_ACTION_VAR, m.group(1)) else "iface"
            continue
        following = line + " " + (lines[i + 1] if i + 1 < len(lines) else "")
        for regex, action in ((_IFACE_TEST, False), (_ACTION_TEST, True)):
            for t in regex.finditer(line):
                op, value = t.group(1), t.group(2)
                rest = line[t.end():]
                early_exit = _EXIT.search(following[t.end():]) is not None and (
                    "||" in rest or "&&" in rest or re.search(r"\bthen\b", following[t.end():]) is not None)
                negated = op == "!="
                if early_exit and ("||" in rest.split("exit")[0]):
                    positive = not negated  # `[ x = y ] || exit`: only y goes on
                elif early_exit:
                    positive = negated  # `[ x = y ] && exit` / `if [ x = y ]; then exit`: y stops
                else:
                    positive = not negated  # `if [ x = y ]; then <commands>`
                _add(scope, action, positive, value)
    return scope


def runs_for(code: str, managed: list[str]) -> tuple[list[str], Scope]:
    """The managed interfaces whose boot events make the script do something."""
    scope = scope_of(code)
    if not scope.at_boot():
        return [], scope
    return [n for n in managed if scope.lets(n)], scope
