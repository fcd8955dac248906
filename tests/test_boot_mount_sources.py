"""How a path mounts at the next boot beyond a plain fstab line: which autofs entry
(facts/automount.py) on maps autofs reads in ways a whitespace split does not (the first
entry of a key counts, a dropped entry mounts nothing and says why, `&` is the key looked
up, a key holds escaped blanks), and the drop-ins systemd applies to a mount unit
(facts/mount_units.py)."""

from __future__ import annotations

from pathlib import Path

from tunewatch.facts.automount import autofs_for, read_autofs
from tunewatch.host.fs import FS

ENABLED = "etc/systemd/system/multi-user.target.wants/autofs.service"
UNIT = "usr/lib/systemd/system/autofs.service"


def host(tmp_path: Path, auto_sas: str, master: str = "/sas /etc/auto.sas -hard,rw\n") -> FS:
    for rel, text in (("etc/auto.master", master), ("etc/auto.sas", auto_sas),
                      (UNIT, "[Unit]\nDescription=Automounts\n[Service]\nExecStart=/usr/sbin/automount\n"
                             "[Install]\nWantedBy=multi-user.target\n")):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / ENABLED).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / ENABLED).symlink_to("/" + UNIT)
    return FS(str(tmp_path))


def test_the_first_entry_of_a_key_counts(tmp_path: Path) -> None:
    fs = host(tmp_path, "data -nconnect=8 srv:/a\ndata -nconnect=1 srv:/b\n")
    got = read_autofs(fs)["/sas/data"]
    assert (got.options, got.location, got.line, got.problem) == (("hard", "rw", "nconnect=8"), "srv:/a", 1, None)


def test_a_dropped_entry_says_why_and_yields_to_a_valid_one(tmp_path: Path) -> None:
    fs = host(tmp_path, 'data -nconnect=8 "srv:/a\ndata -nconnect=4 srv:/b\nlost -rw srv:/l\n   # indented\n')
    mounts = read_autofs(fs)
    assert (mounts["/sas/data"].location, mounts["/sas/data"].problem) == ("srv:/b", None)
    assert mounts["/sas/lost"].problem == \
        "autofs drops the entry at /etc/auto.sas line 3: bad map entry (a line after it starts with a blank)"


def test_a_wildcard_entry_is_read_for_the_key_looked_up(tmp_path: Path) -> None:
    fs = host(tmp_path, 'sas\\ data -rw srv:/x\n* -nconnect=8 srv:/home/& "srv:/&"\n')
    assert read_autofs(fs)["/sas/sas data"].location == "srv:/x"
    found = autofs_for(fs, "/sas/alice")
    assert found is not None
    assert (found.location, found.options, found.key) == ("srv:/home/alice srv:/&", ("hard", "rw", "nconnect=8"), "*")


def test_an_entry_autofs_refuses_mounts_nothing(tmp_path: Path) -> None:
    fs = host(tmp_path, "data -rw srv!:/a\n")
    assert read_autofs(fs)["/sas/data"].problem == \
        'autofs refuses the entry at /etc/auto.sas line 1: invalid character "!" found in location srv!:/a'


def test_a_map_tunewatch_cannot_read_makes_its_paths_unknown(tmp_path: Path) -> None:
    import pytest

    from tunewatch.errors import FactError
    from tunewatch.facts.automount import autofs_unread
    from tunewatch.facts.boot_mounts import boot_mount_for, read_boot_mounts

    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/amd.x").write_text("x type:=nfs;rhost:=srv;rfs:=/x\n")
    fs = host(tmp_path, "data -rw srv:/d\n+auto.sas\n",
              "/sas /etc/auto.sas\n/home ldap:ou=auto.home,dc=example,dc=com\n/net -hosts\n/amd file,amd:/etc/amd.x\n")
    assert autofs_unread(fs, "/sas/data") == \
        "/etc/auto.sas line 2 includes the map auto.sas from another source (etc/auto.master:1)"
    assert autofs_unread(fs, "/home/alice") == \
        "the map of type ldap (/home ldap:ou=auto.home,dc=example,dc=com): its entries are not on this host " \
        "(etc/auto.master:2)"
    assert "of type hosts (/net -hosts)" in (autofs_unread(fs, "/net/srv/export") or "")
    assert "amd-format" in (autofs_unread(fs, "/amd/x") or "")
    assert autofs_unread(fs, "/scratch") is None
    mounts = read_boot_mounts(fs)
    assert boot_mount_for(mounts, fs, "/sas/data") is not None  # the file's own entry comes first
    with pytest.raises(FactError, match="may be mounted at boot by autofs from a map tunewatch cannot read"):
        boot_mount_for(mounts, fs, "/home/alice")
    assert boot_mount_for(mounts, fs, "/scratch") is None  # nothing mounts it: "not configured"


def test_null_maps_and_second_entries_for_an_indirect_mount_point_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/auto.other").write_text("data -nconnect=1 srv:/other\nmore -rw srv:/more\n")
    fs = host(tmp_path, "data -nconnect=8 srv:/a\n",
              "/scratch -null\n/scratch /etc/auto.other\n/sas /etc/auto.sas\n/sas /etc/auto.other\n")
    mounts = read_autofs(fs)
    assert sorted(mounts) == ["/sas/data"]  # master_parse.y: nulled, then "ignoring duplicate indirect mount"
    assert mounts["/sas/data"].location == "srv:/a"


def test_the_fix_for_a_wildcard_entry_keeps_its_ampersand(tmp_path: Path) -> None:
    from tunewatch.facts.boot_mounts import boot_mount_for, read_boot_mounts
    from tunewatch.kinds.base import boot_mount_fix

    fs = host(tmp_path, "* -nconnect=1 &:/home/&\n")
    bm = boot_mount_for(read_boot_mounts(fs), fs, "/sas/alice")
    assert bm is not None and (bm.spec, bm.map_key, bm.map_location) == ("alice:/home/alice", "*", "&:/home/&")
    fix = boot_mount_fix(bm, "hard,rw,nconnect=8")
    assert (fix.file, fix.change) == ("/etc/auto.sas", "* -hard,rw,nconnect=8 &:/home/&")


def test_mount_unit_dropins_as_systemd_finds_them(tmp_path: Path) -> None:
    from tunewatch.facts.mount_units import _prefixes, mount_dropins

    assert _prefixes("sas-vol-data.mount") == ["sas-vol-.mount", "sas-.mount"]
    assert _prefixes("sas--data.mount") == ["sas--.mount", "sas-.mount"]  # dropin.c: a trailing dash chopped once
    assert _prefixes("sasdata.mount") == [] and _prefixes("-.mount") == []
    for rel, text in (("etc/systemd/system/sas-data.mount.d/20-b.conf", "[Mount]\nOptions=from-etc-specific\n"),
                      ("etc/systemd/system/sas-.mount.d/20-b.conf", "[Mount]\nOptions=from-etc-prefix\n"),
                      ("etc/systemd/system/sas-.mount.d/30-c.conf", "[Mount]\nWhat=srv:/c\n"),
                      ("usr/lib/systemd/system/sas-data.mount.d/10-a.conf", "[Mount]\nOptions=from-usr\n"),
                      ("usr/lib/systemd/system/sas-data.mount.d/30-c.conf", "[Mount]\nWhat=never-read\n")):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "etc/systemd/system/sas-data.mount.d/40-masked.conf").symlink_to("/dev/null")
    (tmp_path / "usr/lib/systemd/system/sas-data.mount.d/40-masked.conf").write_text("[Mount]\nOptions=masked\n")
    got = mount_dropins(FS(str(tmp_path)), "sas-data.mount")
    assert got == [("usr/lib/systemd/system/sas-data.mount.d/10-a.conf", {"Options": "from-usr"}),
                   ("etc/systemd/system/sas-data.mount.d/20-b.conf", {"Options": "from-etc-specific"}),
                   ("etc/systemd/system/sas-.mount.d/30-c.conf", {"What": "srv:/c"})]


def test_what_starts_a_mount_no_target_names(tmp_path: Path) -> None:
    from tunewatch.facts.services import started_by

    system = tmp_path / "etc/systemd/system"
    (system / "multi-user.target.wants").mkdir(parents=True)
    for name, unit in (("app.service", "Requires=sas-data.mount\n"), ("off.service", "Wants=scratch.mount\n"),
                       ("grid.service", "RequiresMountsFor=/sas/data/config /opt\n")):
        (system / name).write_text(f"[Unit]\n{unit}\n[Service]\nExecStart=/bin/true\n")
    for name in ("app.service", "grid.service"):  # off.service is not enabled
        (system / "multi-user.target.wants" / name).symlink_to(f"/etc/systemd/system/{name}")
    fs = FS(str(tmp_path))
    assert started_by(fs, "sas-data.mount", "/sas/data") == "app.service"
    assert started_by(fs, "sas-data-config.mount", "/sas/data/config") == "grid.service"
    assert started_by(fs, "sas.mount", "/sas") == "grid.service"  # a path under it needs it mounted first
    assert started_by(fs, "scratch.mount", "/scratch") is None  # wanted by a unit that does not start
    assert started_by(fs, "sas-home.mount", "/sas/home") is None
    # a link to the unit systemd-fstab-generator writes at boot: no unit file here, still started
    (system / "remote-fs.target.wants").mkdir()
    (system / "remote-fs.target.wants/sas-home.mount").symlink_to("/run/systemd/generator/sas-home.mount")
    assert started_by(FS(str(tmp_path)), "sas-home.mount", "/sas/home") == "remote-fs.target.wants"
