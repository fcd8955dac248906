"""Which autofs entry mounts a path at the next boot (facts/automount.py), on maps autofs
reads in ways a whitespace split does not: the first entry of a key counts, a dropped
entry mounts nothing and says why, `&` is the key looked up, a key holds escaped blanks."""

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
