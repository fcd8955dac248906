"""A report's fix is data the reader pastes: each host value in it is quoted for where it
goes (escape.py), so a mount point, autofs key or interface name never becomes a second
command or a forged line. The end-to-end run of every fix command on the hostile snapshots
is tests/hostile/test_artefacts.py::test_report_fix_commands_keep_names_as_one_word."""

from __future__ import annotations

from tunewatch.facts.boot_mounts import BootMount
from tunewatch.kinds import nfs_mount_options, nfs_nconnect

GIVEN = (("rw", None), ("hard", None), ("vers", "3"))
WANTED = ["hard", "vers=3", "nconnect=8"]
VARS = {"options": WANTED, "source": "fstab"}


def _autofs(key: str, spec: str = "10.0.2.4:/sasdata") -> BootMount:
    return BootMount("/sasdata", spec, "nfs", GIVEN, (), "/etc/auto.sas line 1 (autofs)", "/etc/auto.sas", map_key=key)


def _unit(given=GIVEN) -> BootMount:
    return BootMount("/sasdata", "10.0.2.4:/sasdata", "nfs", given, (), "/etc/systemd/system/sasdata.mount",
                     "/etc/systemd/system/sasdata.mount")


def test_an_autofs_entry_is_written_as_the_map_holds_it():
    for fix in (nfs_nconnect._fix(_autofs("sasdata"), 8), nfs_mount_options._fix(_autofs("sasdata"), GIVEN, WANTED,
                                                                                  VARS)):
        assert fix.change.startswith("sasdata -") and fix.change.endswith(" 10.0.2.4:/sasdata"), fix
        assert "nconnect=8" in fix.change


def test_an_autofs_key_a_map_line_cannot_hold_gets_no_line():
    for key in ("sas data\n/etc/x -rw evil:/x", 'sas"data', "sas\\data"):
        for fix in (nfs_nconnect._fix(_autofs(key), 8), nfs_mount_options._fix(_autofs(key), GIVEN, WANTED, VARS)):
            assert fix.change is None and fix.file == "/etc/auto.sas", fix
            assert "autofs map line" in fix.note and "by hand" in fix.note


def test_a_mount_unit_fix_doubles_percent_as_systemd_expands_specifiers():
    fix = nfs_nconnect._fix(_unit(GIVEN + (("context", "%h"),)), 8)
    assert fix.change == "[Mount]\nOptions=rw,hard,vers=3,context=%%h,nconnect=8", fix
    assert fix.note == "then systemctl daemon-reload"

