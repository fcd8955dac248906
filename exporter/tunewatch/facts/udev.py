"""What udev does for one device at boot (udev(7)): which rules match it, which programs
`RUN` collects and which `ATTR{}` values it writes.

Rules files are merged by name over /etc, /run, /usr/lib and /lib udev/rules.d (the first
directory wins for a name, a link to /dev/null masks it) and read in lexical order of
names. At boot every device gets an "add" event (`udevadm trigger --action=add` in
systemd-udev-trigger.service). A rule applies when all its match keys hold: `==` matches
any of the `|`-separated shell globs, `!=` none of them. Keys:
- KERNEL, NAME: the interface name (KERNEL is the kernel's name before a rename; the
  snapshot knows the current name only, so both are matched against it);
- SUBSYSTEM, DRIVER, ATTR{x}: the event device itself (a net interface has no driver);
- KERNELS, SUBSYSTEMS, DRIVERS, ATTRS{x}: the device or any parent device;
- ENV{ID_NET_DRIVER} (set by udev's net_driver/net_setup_link builtins), ENV{INTERFACE};
- ACTION: "add". PROGRAM, RESULT, TEST and IMPORT cannot be run by a scanner: they are
  taken to succeed (named in `assumed`). Any other ENV{} is unset.
GOTO skips to its LABEL in the same file. `ENV{x}=` assignments are seen by later rules
(NetworkManager reads NM_UNMANAGED from them). `RUN=` replaces the programs collected so far,
`RUN+=` adds one, `RUN:=` replaces them and makes the list final, `RUN-=` removes one.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from typing import Callable

from ..fs import FS
from ..parsers.udev_rules import UdevRule, UdevToken, parse_udev_rules

RULES_DIRS = ("etc/udev/rules.d", "run/udev/rules.d", "usr/lib/udev/rules.d", "lib/udev/rules.d")
ASSUMED = {"PROGRAM", "RESULT", "TEST", "IMPORT"}


@dataclass(frozen=True)
class RulesFile:
    source: str
    rules: tuple[UdevRule, ...]


def _no_attr(_name: str) -> str | None:
    return None


@dataclass(frozen=True)
class Level:
    """The event device or one of its parents, as KERNELS/SUBSYSTEMS/DRIVERS/ATTRS see it."""
    kernel: str | None
    subsystem: str | None
    driver: str | None
    attr: Callable[[str], str | None] = _no_attr


@dataclass(frozen=True)
class UdevDevice:
    """`values`: KERNEL, NAME, SUBSYSTEM, DRIVER and ENV{x}; `attr` reads its ATTR{x};
    `levels`: the device itself, then its parents."""
    values: dict[str, str | None]
    attr: Callable[[str], str | None] = _no_attr
    levels: tuple[Level, ...] = ()
    unknown_matches: bool = False  # a device known only by its subsystem: other keys match


@dataclass
class UdevOutcome:
    run: list[tuple[str, str, int]] = field(default_factory=list)  # (program, source, line)
    attrs: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # attr -> (value, source, line)
    env: dict[str, str] = field(default_factory=dict)  # ENV{x}= assignments (NM_UNMANAGED...)
    assumed: set[str] = field(default_factory=set)


def read_rules(fs: FS) -> list[RulesFile]:
    return [RulesFile(rel, tuple(parse_udev_rules(fs.read_text(rel) or "", rel)))
            for rel in fs.config_files(RULES_DIRS, "*.rules")]


def _glob_any(patterns: str, value: str | None) -> bool:
    return value is not None and any(fnmatch.fnmatchcase(value, p) for p in patterns.split("|"))


def _test(tok: UdevToken, value: str | None) -> bool:
    hit = _glob_any(tok.value, value if value is not None else "")
    if value is None and tok.value == "":
        hit = True  # an unset value equals the empty string in udev
    return hit if tok.op == "==" else not hit


def _match_token(tok: UdevToken, dev: UdevDevice, out: UdevOutcome) -> bool:
    key = tok.key
    if key in ASSUMED:
        out.assumed.add(key)
        return True
    if key == "ACTION":
        return _test(tok, "add")
    if dev.unknown_matches and key != "SUBSYSTEM":
        out.assumed.add(key)
        return True
    if key in ("KERNEL", "NAME", "SUBSYSTEM", "DRIVER", "DEVPATH", "DEVTYPE"):
        return _test(tok, dev.values.get(key))
    if key == "ENV":
        return _test(tok, dev.values.get(f"ENV{{{tok.attr}}}"))
    if key == "ATTR":
        return _test(tok, dev.attr(tok.attr or ""))
    if key in ("KERNELS", "SUBSYSTEMS", "DRIVERS", "ATTRS"):
        for level in dev.levels:
            value = level.attr(tok.attr or "") if key == "ATTRS" else \
                {"KERNELS": level.kernel, "SUBSYSTEMS": level.subsystem, "DRIVERS": level.driver}[key]
            if _glob_any(tok.value, value):
                return tok.op == "=="
        return tok.op == "!="
    out.assumed.add(key)
    return True


def evaluate(files: list[RulesFile], dev: UdevDevice) -> UdevOutcome:
    out = UdevOutcome()
    dev = replace(dev, values=dict(dev.values))  # ENV{} assignments stay in this evaluation
    final_run = False
    for f in files:
        goto: str | None = None
        for rule in f.rules:
            if goto is not None:
                if any(t.key == "LABEL" and t.value == goto for t in rule.tokens):
                    goto = None
                else:
                    continue
            matches = [t for t in rule.tokens if t.op in ("==", "!=")]
            if not all(_match_token(t, dev, out) for t in matches):
                continue
            for t in rule.tokens:
                if t.op in ("==", "!="):
                    continue
                if t.key == "GOTO":
                    goto = t.value
                elif t.key == "ATTR" and t.attr:
                    out.attrs[t.attr] = (t.value, f.source, rule.line)
                elif t.key == "ENV" and t.attr and t.op in ("=", ":="):
                    out.env[t.attr] = t.value
                    dev.values[f"ENV{{{t.attr}}}"] = t.value  # later rules see it
                elif t.key == "RUN" and t.attr in (None, "program") and not final_run:
                    if t.op in ("=", ":="):
                        out.run.clear()
                    if t.op == "-=":
                        out.run = [r for r in out.run if r[0] != t.value]
                    else:
                        out.run.append((t.value, f.source, rule.line))
                    final_run = final_run or t.op == ":="
    return out


def substitute(program: str, name: str) -> str:
    """udev's substitutions that stand for the interface name (`%k`, `$kernel`, `$name`...)."""
    for token in ("%k", "$kernel", "$name", "$env{INTERFACE}", "%E{INTERFACE}"):
        program = program.replace(token, name)
    return program
