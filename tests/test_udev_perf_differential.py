"""The udev engine's shortcuts (lines left out by the plans, indexes, memos; facts/udev_plan.py)
against udev's own loop over every line (`evaluate(..., every_line=True)`): the same outcome,
the same programs run and the same sysfs attributes read, in the same order, on random
rule sets mixing every kind of token the shortcuts look at (ACTION/SUBSYSTEM/KERNEL/ENV/ATTR
globs, `|` alternatives, case folding, trailing blanks, side-effect tokens before them,
GOTO/LABEL, dropped lines) and on Debian 12's rules, for network, bdi, block and module
devices."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tunewatch.facts import udev
from tunewatch.facts.udev_files import RulesFile
from tunewatch.parsers import udev_rules
from tunewatch.parsers.udev_rules import ParseMemo, parse_udev_rules_file

DEBIAN = Path(__file__).parent / "udev" / "debian12-rules"

MATCHES = [
    'ACTION=="add"', 'ACTION=="add|change"', 'ACTION=="remove"', 'ACTION!="add"', 'ACTION=="a*"',
    'SUBSYSTEM=="net"', 'SUBSYSTEM=="block"', 'SUBSYSTEM=="bdi"', 'SUBSYSTEM=="module"', 'SUBSYSTEM=="subsystem"',
    'SUBSYSTEM=="bl*"', 'SUBSYSTEM!="net"', 'SUBSYSTEM=="net|bdi"', 'SUBSYSTEM==""',
    'KERNEL=="eth0"', 'KERNEL=="eth*"', 'KERNEL=="enP*s1"', 'KERNEL=="0:5*"', 'KERNEL=="0:52|0:53"',
    'KERNEL=="?*"', 'KERNEL==""', 'KERNEL!="lo"', 'KERNEL==i"ETH0"', 'KERNEL=="sd[a-c]"', 'KERNEL=="sda|"',
    'KERNEL=="e\\\\*"', 'KERNEL=="nfs"', 'KERNEL=="en*|eth1"',
    'ENV{ID_X}=="1"', 'ENV{ID_X}=="?*"', 'ENV{ID_X}==""', 'ENV{INTERFACE}=="eth*"', 'ENV{SITE}=="a"',
    'ENV{SITE}!="a"', 'ENV{NOBODY}=="x"', 'ENV{DEVTYPE}=="disk"',
    'ATTR{address}=="00:0d:3a:0*"', 'ATTR{address}=="00:0d:3a:01:*|aa*"', 'ATTR{address}=="00:0d:3a:01:02:03"',
    'ATTR{address}=="00:0d:3a:01:02:03 "', 'ATTR{address}!="00:0d:3a:01:*"', 'ATTR{address}==i"00:0D:3A:01*"',
    'ATTR{mtu}=="1500"', 'ATTR{mtu}=="15*"', 'ATTR{mtu}==""', 'ATTR{missing}=="x"', 'ATTR{missing}!="x"',
    'ATTR{%k}=="x"', 'ATTR{[net/eth0]address}=="x"', 'ATTR{read_ahead_kb}=="128"', 'ATTR{address}=="?*"',
    'ATTR{address}=="|00*"', 'ATTR{address}=="00:0d:3a:01:0[0-9]:03"', 'ATTR{address}=="00\\\\:*"',
    'DRIVERS=="mlx5_core"', 'DRIVERS=="hv_*"', 'KERNELS=="0000*"', 'ATTRS{vendor}=="0x15b3"',
    'SUBSYSTEMS=="pci"', 'TAGS=="t1"', 'DRIVER=="x"', 'DRIVER!="x"', 'DEVPATH=="/devices/*"',
    'NAME=="site1"', 'NAME!=""', 'TAG=="t1"', 'SYMLINK=="l1"',
    'CONST{virt}=="kvm"', 'PROGRAM=="/usr/libexec/nfsrahead %k"', 'PROGRAM=="/bin/awk $kernel"',
    'RESULT=="128"', 'TEST=="/sys/x"', 'TEST=="address"', 'SYSCTL{net/x}=="1"', 'IMPORT{builtin}=="hwdb"',
]
ASSIGNS = [
    'ENV{SITE}="a"', 'ENV{ID_X}="1"', 'ENV{SITE}=""', 'ENV{SITE}+="b"', 'NAME="site%n"', 'TAG+="t1"',
    'TAG-="t1"', 'SYMLINK+="l1"', 'ATTR{read_ahead_kb}="%c"', 'ATTR{mtu}="9000"', 'RUN+="/sbin/ethtool -G %k"',
    'RUN="x $attr{address}"', 'RUN:="y"', 'RUN{builtin}+="net_id"', 'SYSCTL{a/b}="1"', 'OPTIONS+="watch"',
    'ATTR{read_ahead_kb}="16384"', 'RUN+="%b %d $result"',
]
LINE_ENDS = ['GOTO="l1"', 'GOTO="l2"', 'GOTO="nolabel"', 'LABEL="l1"', 'LABEL="l2"']
DROPPING = ['ENV{ACTION}="x"', 'FOO=="x"', 'RUN-="x"', 'NAME=""']


def _line(rng: random.Random, jumps: float = 0.25) -> str:
    if rng.random() < jumps / 2:  # a line that only tests ACTION/SUBSYSTEM/ENV and jumps (plans decide some)
        tokens = rng.sample([m for m in MATCHES if m.startswith(("ACTION", "SUBSYSTEM", "ENV"))], rng.randint(1, 2))
        return ", ".join([*tokens, rng.choice(LINE_ENDS[:2])])
    tokens = rng.sample(MATCHES, rng.randint(0, 4)) + rng.sample(ASSIGNS, rng.randint(0, 2))
    if rng.random() < jumps:
        tokens.append(rng.choice(LINE_ENDS))
    if rng.random() < 0.05:
        tokens.append(rng.choice(DROPPING))
    rng.shuffle(tokens)
    return ", ".join(tokens) or 'LABEL="l1"'


def _files(texts: dict[str, str]) -> list[RulesFile]:
    memo = ParseMemo()
    out = []
    for source, text in texts.items():
        parsed = parse_udev_rules_file(text, memo)
        out.append(RulesFile(source, parsed.rules, parsed.file_problem, text))
    return out


def _devices(calls: list[str]) -> list[udev.UdevDevice]:
    """The devices, their programs run and their attributes read logged in `calls`."""
    def _attrs(values: dict[str, str], device: str):
        def read(name: str) -> str | None:  # a device's reader keeps what it read: a second read is none
            if f"{device} read {name}" not in calls:
                calls.append(f"{device} read {name}")
            return values.get(name)
        return read

    def program(cmd: str):
        calls.append(cmd)
        return (True, "128\n") if "nfsrahead" in cmd else None

    pci = udev.Level("0000:00:02.0", "pci", "mlx5_core", _attrs({"vendor": "0x15b3"}, "pci"),
                     "/devices/pci0000:00/0000:00:02.0")
    devices = []
    for name, address, mtu in (("eth0", "00:0d:3a:01:02:03", "1500"), ("enP30832s1", "00:0d:3a:01:02:03 \t", "9000"),
                               ("eth1", "00:0D:3A:01:02:03", ""), ("eth2", "aa:bb", "15"), ("lo", None, "65536")):
        attrs = _attrs({k: v for k, v in (("address", address), ("mtu", mtu)) if v is not None}, name)
        me = udev.Level(name, "net", None, attrs, f"/devices/pci0000:00/0000:00:02.0/net/{name}")
        values = {"KERNEL": name, "NAME": name, "SUBSYSTEM": "net", "DRIVER": None, "DEVPATH": me.devpath,
                  "ENV{INTERFACE}": name, "ENV{IFINDEX}": "2", "ENV{ID_NET_DRIVER}": "mlx5_core"}
        devices.append(udev.UdevDevice(values, attrs, (me, pci), program=program))
    for bdi in ("0:52", "0:53", "0:60"):
        devices.append(udev.UdevDevice({"KERNEL": bdi, "SUBSYSTEM": "bdi", "DEVPATH": f"/devices/virtual/bdi/{bdi}"},
                                       _attrs({"read_ahead_kb": "128"}, bdi), program=program))
    devices.append(udev.UdevDevice({"SUBSYSTEM": "module", "KERNEL": "nfs"}))
    devices.append(udev.UdevDevice({"KERNEL": "sda", "SUBSYSTEM": "block", "DEVPATH": "/devices/x/block/sda",
                                    "ENV{MAJOR}": "8", "ENV{MINOR}": "0", "ENV{DEVTYPE}": "disk"},
                                   _attrs({"size": "100"}, "sda"), has_devnode=True, program=program))
    devices.append(udev.UdevDevice({"KERNEL": "eth0", "SUBSYSTEM": "net"}, unknown_matches=True))
    devices.append(udev.UdevDevice({"KERNEL": "eth0", "SUBSYSTEM": "net"}, action="change"))
    return devices


def _same(files: list[RulesFile]) -> None:
    fast_calls: list[str] = []
    slow_calls: list[str] = []
    for fast_dev, slow_dev in zip(_devices(fast_calls), _devices(slow_calls)):
        fast = udev.evaluate(files, fast_dev)
        slow = udev.evaluate(files, slow_dev, every_line=True)
        assert fast == slow, (fast_dev.values, fast, slow)
        assert fast_calls == slow_calls


@pytest.mark.parametrize("seed", range(400))
def test_random_rules_same_as_every_line(seed: int):
    rng = random.Random(seed)
    jumps = 0.25 if seed < 200 else 0.6  # the second half: GOTO/LABEL-heavy files
    names = sorted(rng.sample(["10-a.rules", "70-b.rules", "80-net-setup-link.rules", "85-c.rules", "99-d.rules"],
                              rng.randint(1, 4)))
    _same(_files({f"etc/udev/rules.d/{n}": "\n".join(_line(rng, jumps) for _ in range(rng.randint(1, 40))) + "\n"
                  for n in names}))


def test_debian_rules_same_as_every_line():
    texts = {}
    for top, _dirs, names in sorted(os.walk(DEBIAN)):
        for name in sorted(names):
            if name.endswith(".rules"):
                path = os.path.join(top, name)
                texts[os.path.relpath(path, DEBIAN)] = Path(path).read_text()
    files = _files(dict(sorted(texts.items(), key=lambda kv: kv[0].rsplit("/", 1)[-1])))
    assert len(files) == 50
    _same(files)


def test_parse_memo_changes_no_rule():
    """Files parsed with one ParseMemo (shared lines and tokens) read as each alone does,
    whatever their ends of line (\\n, \\r\\n, \\r, NUL), continuations, comments and blanks."""
    rng = random.Random(7)
    texts = [Path(os.path.join(top, name)).read_text() for top, _dirs, names in sorted(os.walk(DEBIAN))
             for name in sorted(names) if name.endswith(".rules")]
    for _ in range(100):
        parts = [rng.choice([_line(rng), "# c", "", "  ", _line(rng) + " \\", "   " + _line(rng)])
                 for _ in range(rng.randint(1, 12))]
        texts.append("".join(p + rng.choice(["\n", "\r\n", "\r", "\x00", "\n"]) for p in parts))
    memo = ParseMemo()
    for text in texts + texts:  # the second time every line and token comes from the memo
        assert parse_udev_rules_file(text, memo) == parse_udev_rules_file(text)
        split = udev_rules._EOL.split(text)  # read_line()'s ends of line, the reader's shortcut aside
        assert udev_rules._physical_lines(text) == (split[:-1] if split[-1:] == [""] else split)
