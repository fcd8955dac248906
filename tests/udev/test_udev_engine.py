"""The udev engine's rules, each against udev-rules.c behaviour (function cited), on the
sysfs-shaped tree of sysfs_tree.py plus rules files under a snapshot root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tunewatch.errors import FactError
from tunewatch.facts import udev
from tunewatch.facts.udev_device import sysfs_device
from tunewatch.host.fs import FS

from sysfs_tree import DEVICES, build

# nfs-utils systemd/60-nfs.rules (>= 2.6.3): re-apply the module's sysctls when it loads
NFS_UTILS_60 = """\
# Ensure all NFS systctls are configured at boot time.
ACTION=="add", SUBSYSTEM=="module", KERNEL=="nfs", RUN+="/usr/lib/systemd/systemd-sysctl --prefix=/fs/nfs"
ACTION=="add", SUBSYSTEM=="module", KERNEL=="nfsd", RUN+="/usr/lib/systemd/systemd-sysctl --prefix=/fs/nfs"
ACTION=="add", SUBSYSTEM=="module", KERNEL=="sunrpc", RUN+="/usr/lib/systemd/systemd-sysctl --prefix=/sunrpc"
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    build(str(tmp_path))
    return tmp_path


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _links(root: Path, device: str = "sda") -> list[str]:
    fs = FS(str(root))
    return udev.evaluate(udev.read_rules(fs), sysfs_device(fs, DEVICES[device])).devlinks


def test_module_add_event_runs_nfs_utils_hook(root: Path):
    """A module device (no parents, no attributes) gets the sunrpc line's program only."""
    _write(root, "usr/lib/udev/rules.d/60-nfs.rules", NFS_UTILS_60)
    files = udev.read_rules(FS(str(root)))
    out = udev.evaluate(files, udev.UdevDevice({"SUBSYSTEM": "module", "KERNEL": "sunrpc"}))
    assert [p for p, _, _ in out.run] == ["/usr/lib/systemd/systemd-sysctl --prefix=/sunrpc"]
    assert out.run[0][1:] == ("usr/lib/udev/rules.d/60-nfs.rules", 4)
    masked = root / "etc/udev/rules.d/60-nfs.rules"
    masked.parent.mkdir(parents=True, exist_ok=True)
    os.symlink("/dev/null", masked)
    files = udev.read_rules(FS(str(root)))
    assert udev.evaluate(files, udev.UdevDevice({"SUBSYSTEM": "module", "KERNEL": "sunrpc"})).run == []


def test_parent_keys_hold_at_one_device(root: Path):
    """udev_rule_apply_parent_token_to_event(): all parent tokens at the same device."""
    _write(root, "etc/udev/rules.d/50.rules",
           'KERNELS=="0:0:0:0", DRIVERS=="ahci", SYMLINK+="split"\n'       # two different parents
           'KERNELS=="0:0:0:0", DRIVERS=="sd", SYMLINK+="same"\n'
           'DRIVERS!="sd", SYMLINK+="self-has-no-driver"\n'                 # holds at sda itself
           'KERNELS=="sda", ATTRS{vendor}=="ATA", SYMLINK+="attr-elsewhere"\n')
    assert _links(root) == ["same", "self-has-no-driver"]


def test_dropped_line_reported_not_applied(root: Path):
    _write(root, "etc/udev/rules.d/50.rules", 'KERNEL="sda", DRIVERS=="sd", RUN+="/bin/x %k", ATTR{queue/x}="1"\n'
                                               'KERNEL=="sdb", FOO="1", RUN+="/bin/y"\n')
    fs = FS(str(root))
    out = udev.evaluate(udev.read_rules(fs), sysfs_device(fs, DEVICES["sda"]))
    assert out.run == [] and out.attrs == {}
    [ign] = out.ignored  # the second line's valid keys do not match sda: not reported
    assert (ign.line, ign.run, ign.attrs) == (1, ("/bin/x sda",), (("queue/x", "1"),))
    assert "Invalid operator for KERNEL" in ign.problem


def test_goto_without_label_is_dropped_and_noted(root: Path):
    _write(root, "etc/udev/rules.d/50.rules", 'KERNEL=="sda", GOTO="nowhere", SYMLINK+="a"\n'
                                               'KERNEL=="sda", SYMLINK+="b"\nLABEL="elsewhere"\n')
    fs = FS(str(root))
    out = udev.evaluate(udev.read_rules(fs), sysfs_device(fs, DEVICES["sda"]))
    assert out.devlinks == ["a", "b"]
    assert out.notes == ['etc/udev/rules.d/50.rules:1: GOTO="nowhere" has no matching label, ignoring']


def test_label_on_dropped_line_does_not_exist(root: Path):
    _write(root, "etc/udev/rules.d/50.rules", 'KERNEL=="sda", GOTO="end"\nKERNEL=="sda", SYMLINK+="kept"\n'
                                               'LABEL="end", FOO="x"\n')
    assert _links(root) == ["kept"]


def test_run_operators_and_builtins(root: Path):
    _write(root, "etc/udev/rules.d/50.rules", 'KERNEL=="sda", RUN+="/bin/a", RUN{builtin}+="kmod load x"\n'
                                               'KERNEL=="sda", RUN+="/bin/a"\n'       # already listed: not twice
                                               'KERNEL=="sda", RUN="/bin/b"\n'        # replaces programs and builtins
                                               'KERNEL=="sda", RUN{program}+="/bin/c %k $env{DEVTYPE}"\n'
                                               'KERNEL=="sda", RUN:="/bin/d"\nKERNEL=="sda", RUN+="/bin/e"\n')
    fs = FS(str(root))
    out = udev.evaluate(udev.read_rules(fs), sysfs_device(fs, DEVICES["sda"]))
    assert [p for p, _, _ in out.run] == ["/bin/d"] and out.builtins == []
    _write(root, "etc/udev/rules.d/50.rules", 'KERNEL=="sda", RUN+="/bin/a", RUN{builtin}+="kmod load x"\n'
                                               'KERNEL=="sda", RUN+="/bin/a", RUN{program}+="/bin/c %k $env{DEVTYPE}"\n')
    fs = FS(str(root))
    out = udev.evaluate(udev.read_rules(fs), sysfs_device(fs, DEVICES["sda"]))
    assert [p for p, _, _ in out.run] == ["/bin/a", "/bin/c sda disk"]
    assert [b for b, _, _ in out.builtins] == ["kmod load x"]


def test_env_properties_assign_append_unset(root: Path):
    _write(root, "etc/udev/rules.d/50.rules", 'ENV{DEVTYPE}=="disk", ENV{A}="x"\nENV{A}+="y"\n'
                                               'ENV{A}=="x y", ENV{MAJOR}=="8", SYMLINK+="appended"\n'
                                               'ENV{A}="", ENV{UNSET}=="", SYMLINK+="unset-is-empty"\n'
                                               'ENV{A}!="x y", SYMLINK+="removed"\n')
    assert _links(root) == ["appended", "unset-is-empty", "removed"]


def test_rules_directories_masks_hidden_and_run(root: Path):
    rule = 'KERNEL=="sda", SYMLINK+="{}"\n'
    _write(root, "usr/lib/udev/rules.d/10-a.rules", rule.format("vendor-a"))
    _write(root, "etc/udev/rules.d/10-a.rules", rule.format("etc-a"))        # same name: replaces
    _write(root, "usr/lib/udev/rules.d/20-b.rules", rule.format("vendor-b"))
    _write(root, "etc/udev/rules.d/20-b.rules", "")                          # empty: masks
    _write(root, "usr/local/lib/udev/rules.d/30-c.rules", rule.format("local-c"))
    _write(root, "run/udev/rules.d/40-d.rules", rule.format("run-d"))        # gone at the next boot
    _write(root, "etc/udev/rules.d/.50-e.rules", rule.format("hidden-e"))
    _write(root, "etc/udev/rules.d/60-f.rules.orig", rule.format("orig-f"))
    _write(root, "lib/udev/rules.d/70-g.rules", rule.format("lib-g"))
    assert _links(root) == ["etc-a", "local-c", "lib-g"]


def test_unreadable_rules_file_raises(root: Path):
    path = root / "etc/udev/rules.d/50.rules"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir()  # a directory named *.rules cannot be read as a file
    with pytest.raises(FactError):
        udev.read_rules(FS(str(root)))


def test_read_once_per_fs(root: Path, monkeypatch):
    _write(root, "etc/udev/rules.d/50.rules", 'KERNEL=="sda", SYMLINK+="x"\n')
    fs = FS(str(root))
    first = udev.read_rules(fs)
    monkeypatch.setattr(FS, "read_text", lambda *a, **k: pytest.fail("read twice"))
    assert udev.read_rules(fs) is first
