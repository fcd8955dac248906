"""A command line that applies sysctl files, as the program itself reads its arguments.

- procps-ng `sysctl` (sysctl(8)): `--system` loads every system file (sysctl.d merged by
  name, then /etc/sysctl.conf last); `-p`/`--load[=FILE]` loads one file (default
  /etc/sysctl.conf); `--pattern`/`-r PATTERN` (an extended regular expression) limits the
  keys applied. Found as `sysctl`, `/sbin/sysctl`, `/usr/sbin/sysctl`.
- `systemd-sysctl` (systemd-sysctl(8)): applies sysctl.d in systemd's order;
  `--prefix=PREFIX` (repeatable) limits the keys to those under the prefix (`/net/ipv4`
  or `net.ipv4`).

Only the first command of each `&&`, `||`, `;` or `|` separated part is read; anything a
scanner cannot follow (variables, command substitution) is not credited.
"""

from __future__ import annotations

import re
import shlex

from .._record import FrozenRecord


class SysctlRun(FrozenRecord):
    __slots__ = ("consumer", "system", "files", "pattern", "prefixes")
    consumer: str  # "procps" or "systemd-sysctl"
    system: bool  # procps --system (systemd-sysctl always applies the system files)
    files: tuple[str, ...]  # procps -p FILE...
    pattern: str | None  # procps --pattern (regex searched in the dotted key)
    prefixes: tuple[str, ...]  # systemd-sysctl --prefix

    def __init__(self,
                 consumer: str, system: bool, files: tuple[str, ...], pattern: str | None, prefixes: tuple[str, ...]):
        self.consumer = consumer
        self.system = system
        self.files = files
        self.pattern = pattern
        self.prefixes = prefixes

    def limits(self, key: str) -> bool:
        """True when the run applies `key` (its --pattern / --prefix let it through)."""
        if self.pattern is not None:
            try:
                return re.search(self.pattern, key) is not None
            except re.error:
                return False  # procps refuses a bad pattern and applies nothing
        if self.prefixes:
            return any(key == p or key.startswith(p + ".") for p in self.prefixes)
        return True


def _prefix(value: str) -> str:
    value = value.strip()
    if value.startswith("/proc/sys/"):
        value = value[len("/proc/sys/"):]
    return value.strip("/").replace("/", ".")


def _procps(args: list[str]) -> SysctlRun | None:
    system, files, pattern = False, [], None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--system":
            system = True
        elif a in ("--pattern", "-r") and i + 1 < len(args):
            pattern, i = args[i + 1], i + 1
        elif a.startswith("--pattern="):
            pattern = a.split("=", 1)[1]
        elif a in ("-p", "--load", "-f"):
            if i + 1 < len(args) and not args[i + 1].startswith("-"):
                files.append(args[i + 1])
                i += 1
            else:
                files.append("/etc/sysctl.conf")
        elif a.startswith(("--load=", "-p")) and len(a) > 2:
            files.append(a.split("=", 1)[1] if "=" in a else a[2:])
        i += 1
    if not system and not files:
        return None  # sysctl -w / -a / a query: applies no file
    return SysctlRun("procps", system, tuple(files), pattern, ())


def _systemd(args: list[str]) -> SysctlRun:
    prefixes = []
    for i, a in enumerate(args):
        if a.startswith("--prefix="):
            prefixes.append(_prefix(a.split("=", 1)[1]))
        elif a == "--prefix" and i + 1 < len(args):
            prefixes.append(_prefix(args[i + 1]))
    return SysctlRun("systemd-sysctl", True, (), None, tuple(prefixes))


def _commands(command: str) -> list[list[str]]:
    """The words of each simple command, split at `&&`, `||`, `;`, `|` outside quotes."""
    current: list[str]
    parts, current, quote = [], [], None
    for ch in command:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in ";&|":
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    out = []
    for part in parts:
        try:
            words = shlex.split(part.replace("{", " ").replace("}", " "), comments=True)
        except ValueError:
            continue
        if words:
            out.append(words)
    return out


def find_sysctl_runs(command: str) -> list[SysctlRun]:
    """Every sysctl-applying command in a shell command line, in order."""
    runs = []
    for words in _commands(command):
        while words and ("=" in words[0] and not words[0].startswith("-") or words[0] in ("exec", "command")):
            words = words[1:]  # VAR=value prefixes, exec
        if not words:
            continue
        name = words[0].rsplit("/", 1)[-1]
        if name == "sysctl":
            run = _procps(words[1:])
            if run is not None:
                runs.append(run)
        elif name == "systemd-sysctl":
            runs.append(_systemd(words[1:]))
    return runs


def loads_module(command: str, module: str) -> bool:
    """The command loads `module` itself (`modprobe --ignore-install MODULE`, `-i`, insmod)."""
    for words in _commands(command):
        name = words[0].rsplit("/", 1)[-1]
        names = [w.replace("-", "_") for w in words[1:] if not w.startswith("-")]
        if name == "modprobe" and ("--ignore-install" in words or "-i" in words) and module in names:
            return True
        if name == "insmod" and any(module in w.rsplit("/", 1)[-1] for w in words[1:]):
            return True
    return False
