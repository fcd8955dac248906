"""FS: every path resolved inside the root before use, nothing on a network mount touched,
only regular files read, each within its cap (fast unit checks; test_faults.py does the
same against a real hung FUSE mount)."""

from __future__ import annotations

import os

import pytest

from tunewatch.errors import FactError
from tunewatch.host.fs import FS, VALUE_MAX_BYTES, is_network_fstype

MOUNTINFO = ("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
             "40 22 0:50 / /opt/sas rw - nfs4 10.0.0.1:/sas rw,vers=4.1\n"
             "41 22 0:51 / /mnt/my\\040share rw - cifs //srv/share rw\n"
             "42 22 0:52 / /home/u/remote rw - fuse.sshfs u@h:/ rw\n"
             "43 22 0:53 / /proc/fs/nfsd rw - nfsd nfsd rw\n")


@pytest.fixture
def root(tmp_path):
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text(MOUNTINFO)
    for d in ("opt/sas/bin", "mnt/my share", "home/u/remote", "etc", "usr/lib"):
        (tmp_path / d).mkdir(parents=True)
    # each trap: reading it would hang (a FIFO) if the network rule did not stop it first
    os.mkfifo(tmp_path / "opt/sas/bin/pin.sh")
    os.mkfifo(tmp_path / "home/u/remote/x")
    (tmp_path / "etc/plain").write_text("ok\n")
    return tmp_path


@pytest.mark.parametrize("rel", [
    "opt/sas/bin/pin.sh", "opt//sas/bin/pin.sh", "opt/./sas/bin/pin.sh", "usr/../opt/sas/bin/pin.sh",
    "etc/../../../opt/sas/bin/pin.sh", "etc/via-file-link", "etc/via-dir-link/pin.sh", "etc/via-relative/pin.sh",
    "etc/chain/pin.sh", "home/u/remote/x", "mnt/my share/anything", "opt/sas"])
def test_every_shape_onto_a_network_mount_is_refused(root, rel):
    os.symlink("/opt/sas/bin/pin.sh", root / "etc/via-file-link")
    os.symlink("/opt/sas/bin", root / "etc/via-dir-link")
    os.symlink("../opt/sas/bin", root / "etc/via-relative")
    os.symlink("via-dir-link", root / "etc/chain")
    fs = FS(str(root))
    for reader in (fs.read_text, fs.path, fs.listdir, fs.is_dir, fs.resolves, fs.is_executable):
        with pytest.raises(FactError, match="network file system"):
            reader(rel)


def test_network_types_match_the_fstype_not_the_path(root):
    assert set(FS(str(root)).network_mounts) == {"opt/sas", "mnt/my share", "home/u/remote"}
    assert is_network_fstype("nfs") and is_network_fstype("nfs4") and is_network_fstype("fuse.glusterfs")
    assert not is_network_fstype("nfsd") and not is_network_fstype("fuse.lxcfs") and not is_network_fstype("ext4")
    assert FS(str(root)).read_value("etc/plain") == "ok"
    (root / "opt/sasdata").mkdir()  # a sibling whose name starts like the mount point is fine
    (root / "opt/sasdata/f").write_text("x")
    assert FS(str(root)).read_text("opt/sasdata/f") == "x"


def test_links_never_leave_the_root(root, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret").write_text("host file")
    os.symlink(str(outside / "secret"), root / "etc/abs")  # absolute: resolved against the root
    os.symlink("../../../../../../../../" + str(outside / "secret"), root / "etc/rel")
    fs = FS(str(root))
    assert fs.read_text("etc/abs") is None and fs.read_text("etc/rel") is None
    assert fs.path("../../etc/plain") == str(root / "etc/plain")


def test_a_link_loop_is_an_error(root):
    os.symlink("b", root / "etc/a")
    os.symlink("a", root / "etc/b")
    with pytest.raises(FactError, match="too many levels"):
        FS(str(root)).read_text("etc/a")


@pytest.mark.parametrize("make, kind", [
    (os.mkfifo, "a FIFO"),
    (lambda p: os.mknod(p, 0o644 | 0o020000, os.makedev(1, 5)), "a character device"),
    (os.mkdir, "a directory"),
])
def test_only_regular_files_are_read(root, make, kind):
    make(root / "etc/special")
    os.symlink("special", root / "etc/link-to-special")
    fs = FS(str(root))
    for rel in ("etc/special", "etc/link-to-special"):
        with pytest.raises(FactError, match=kind):
            fs.read_text(rel)


def test_size_caps(root):
    with open(root / "etc/huge", "wb") as f:
        f.truncate(VALUE_MAX_BYTES + 1)
    fs = FS(str(root))
    with pytest.raises(FactError, match="larger than"):
        fs.read_value("etc/huge")
    assert len(fs.read_text("etc/huge")) == VALUE_MAX_BYTES + 1
    with pytest.raises(FactError, match="larger than"):
        fs.read_text("etc/huge", max_bytes=1000)


def test_directory_listings_cache_links_but_see_new_entries(root):
    fs = FS(str(root))
    assert fs.read_value("etc/plain") == "ok"
    os.symlink("plain", root / "etc/new-link")  # appears after etc/ was listed
    assert fs.read_value("etc/new-link") == "ok"
    (root / "usr/lib/later").mkdir()
    os.symlink("/etc", root / "usr/lib/later/etc-link")
    assert fs.read_value("usr/lib/later/etc-link/plain") == "ok"
