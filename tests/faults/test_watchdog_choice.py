"""The scan forks its watchdog child only when a mount it can reach may hang
(`hangsafe.needs_watchdog`): a FUSE or unknown mount at or below the root, or a mountinfo
that cannot be read, keeps the fork; a root on local file systems only is scanned here."""

from __future__ import annotations

import os

import pytest

from tunewatch.scan import engine
from tunewatch.scan import hangsafe
from tunewatch.content.catalog import Content
from tunewatch.host.fs import NETWORK_FSTYPES

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "snapshots", "examples", "azure-m-rebooted")
LINE = "{id} 1 0:{id} / {point} rw,relatime - {fstype} src rw\n"


def _mountinfo(tmp_path, mounts: list[tuple[str, str]]) -> str:
    path = tmp_path / "mountinfo"
    path.write_text("".join(LINE.format(id=20 + n, point=point.replace(" ", "\\040"), fstype=fstype)
                            for n, (point, fstype) in enumerate(mounts)))
    return str(path)


@pytest.fixture
def forks(monkeypatch):
    calls = []
    real = os.fork

    def counting_fork():
        calls.append(1)
        return real()

    monkeypatch.setattr(os, "fork", counting_fork)
    return calls


def _scan_counts(monkeypatch, forks, mountinfo: str, root: str = EXAMPLE) -> int:
    monkeypatch.setattr(hangsafe, "MOUNTINFO", mountinfo)
    content = Content()
    result = engine.scan_with_watchdog(content, content.resolve("azure-sap-hana"), root, timeout=60)
    assert not result.timed_out and result.results and result.host is not None
    return len(forks)


def test_local_mounts_only_scan_without_a_fork(tmp_path, monkeypatch, forks):
    info = _mountinfo(tmp_path, [("/", "ext4"), ("/proc", "proc"), ("/tmp", "tmpfs"), ("/sys/fs/cgroup", "cgroup2")])
    assert _scan_counts(monkeypatch, forks, info) == 0


def test_a_fuse_mount_under_the_root_forks(tmp_path, monkeypatch, forks):
    root = os.path.realpath(EXAMPLE)
    info = _mountinfo(tmp_path, [("/", "ext4"), (root + "/proc/irq", "fuse.tw-unknown")])
    assert _scan_counts(monkeypatch, forks, info) == 1


@pytest.mark.parametrize("fstype", ["nfs4", "autofs", "fuse.lxcfs", "9p", "tw-unknown"])
def test_a_mount_containing_the_root_decides(tmp_path, fstype):
    root = tmp_path / "snap dir"
    (root / "proc").mkdir(parents=True)
    info = _mountinfo(tmp_path, [("/", "ext4"), (str(tmp_path), fstype), ("/elsewhere", "nfs")])
    hangsafe.MOUNTINFO, saved = info, hangsafe.MOUNTINFO
    try:
        assert hangsafe.needs_watchdog(str(root))  # on a mount that may hang
        assert hangsafe.needs_watchdog(str(root / "proc"))
        assert not hangsafe.needs_watchdog("/usr")  # an nfs mount elsewhere does not matter
        assert hangsafe.needs_watchdog("/")  # ... unless the root holds it
        info2 = _mountinfo(tmp_path, [("/", "ext4"), (str(root / "proc"), fstype)])  # escaped space in the point
        hangsafe.MOUNTINFO = info2
        assert hangsafe.needs_watchdog(str(root)) and not hangsafe.needs_watchdog(str(tmp_path / "other"))
    finally:
        hangsafe.MOUNTINFO = saved


def test_unreadable_or_empty_mountinfo_forks(tmp_path, monkeypatch, forks):
    assert _scan_counts(monkeypatch, forks, str(tmp_path / "missing")) == 1
    (tmp_path / "bad").write_text("not a mountinfo line\n")
    assert _scan_counts(monkeypatch, forks, str(tmp_path / "bad")) == 2
    (tmp_path / "empty").write_text("")
    assert _scan_counts(monkeypatch, forks, str(tmp_path / "empty")) == 3


def test_local_types_are_never_network_types():
    assert not hangsafe.LOCAL_FSTYPES & NETWORK_FSTYPES
    assert "autofs" not in hangsafe.LOCAL_FSTYPES and not any(t.startswith(("fuse.", "nfs"))
                                                               for t in hangsafe.LOCAL_FSTYPES)


def test_the_in_process_scan_reads_the_host_mount_table_once(tmp_path, monkeypatch, forks):
    """hangsafe reads the host's mountinfo to choose; the scan's network-mount guard takes
    those bytes instead of opening /proc/self/mountinfo again (issue 22: no file twice)."""
    from tunewatch.host import fs

    info = _mountinfo(tmp_path, [("/", "ext4"), ("/proc", "proc")])
    opened = []
    real = os.open

    def counting(path, *args, **kwargs):
        if str(path).endswith("mountinfo") and not str(path).startswith(os.path.realpath(EXAMPLE)):
            opened.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(fs.os, "open", counting)
    assert _scan_counts(monkeypatch, forks, info) == 0
    assert opened == [info]
