"""autofs file maps read as autofs 5.1 reads them (parsers/autofs_map.py, parsers/autofs_entry.py).

Each expectation below is what autofs's own functions give (modules/lookup_file.c
read_one(), lib/parse_subs.c sanitize_path()/chunklen()/dequote(), modules/parse_sun.c
parse_mount()): they were checked against those functions built from the autofs sources
(random and realistic maps, ~40,000 of them, no difference), and the cases kept here are
the rules each one shows.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tunewatch.parsers.autofs_entry import parse_entry, sanitize_key
from tunewatch.parsers.autofs_map import read_map


def entries(text: str) -> list[tuple[str, str]]:
    return [(e.key, e.entry) for e in read_map(text) if e.problem is None]


def mount(entry: str, key: str = "k", master: str = "", append: bool = True):
    sun = parse_entry(entry, key, master, append)
    return None if sun is None else (sun.options, sun.location, sun.problem)


def test_plain_entries_comments_and_continuations():
    text = ("# comment\nsasdata -fstype=nfs,vers=3 \\\n  10.0.2.4:/sasdata\n* -rw srv:/home/&\n\n"
            "\tindented -rw srv:/i\n+auto.other\n")
    assert entries(text) == [("sasdata", "-fstype=nfs,vers=3   10.0.2.4:/sasdata"), ("*", "-rw srv:/home/&"),
                             ("indented", "-rw srv:/i"), ("+auto.other", "")]
    assert [e.line for e in read_map(text)] == [2, 4, 6, 7]


def test_a_line_after_an_entry_that_starts_with_a_blank_drops_the_entry():
    # read_one() st_getent: a newline followed by a blank goes on in st_badent, and anything
    # but blanks there makes the entry "bad map entry": an indented comment does it too
    text = "sasdata -fstype=nfs,nconnect=8 10.0.2.4:/sasdata\n    # moved to ANF\nother -rw 10.0.2.5:/o\n"
    found = read_map(text)
    assert [(e.key, e.problem is None) for e in found] == [("sasdata", False), ("other", True)]
    assert "bad map entry" in (found[0].problem or "")
    assert entries("a -rw s:/a\n   \nb -rw s:/b\n") == [("a", "-rw s:/a"), ("b", "-rw s:/b")]  # a blank line is fine
    assert entries("# c\n  indented -rw s:/x\nb -rw s:/b\n") == [("b", "-rw s:/b")]  # a comment swallows it


def test_quotes_and_escapes_stay_in_the_key_and_sanitize_key_takes_them_out():
    assert entries('"sas data" -rw srv:/x\nsas\\ work -rw srv:/w\n') == [
        ('"sas data"', "-rw srv:/x"), ("sas\\ work", "-rw srv:/w")]
    assert sanitize_key('"sas data"', direct=False) == "sas data"
    assert sanitize_key("sas\\ work", direct=False) == "sas work"
    assert sanitize_key("a/b", direct=False) is None  # an indirect key with a slash
    assert sanitize_key("sasdata", direct=True) is None  # a direct key must be a path
    assert sanitize_key("//sas//data/", direct=True) == "/sas/data/"  # slashes made one, the last one kept
    assert sanitize_key("sas\x01", direct=False) is None
    assert sanitize_key("sasé", direct=False) is None  # a non-ASCII byte is < 32 as a signed char
    assert sanitize_key('"sasé"', direct=False) == "sasé"  # not checked inside quotes


def test_an_unmatched_quote_drops_the_entry():
    found = read_map('sasdata -fstype=nfs,nconnect=8 "10.0.2.4:/sasdata\nother -rw s:/o\n')
    assert found[0].key == "sasdata" and 'unmatched "' in (found[0].problem or "")
    assert found[1].problem is None


def test_odd_corners_of_read_one():
    assert entries("k -rw s:/x\nj a") == [("k", "-rw s:/x")]  # a one-byte entry at the end, no newline: dropped
    assert entries("k -rw s:/x\nj ab") == [("k", "-rw s:/x"), ("j", "ab")]
    assert entries("key\nnext -rw s:/n\n") == [("next", "-rw s:/n")]  # a key alone
    assert entries("key \nnext -rw s:/n\n") == [("keynext", "-rw s:/n")]  # st_entspc keeps the key on a newline
    assert entries("*x -rw s:/x\n* -rw s:/&\n") == [("*", "-rw s:/&")]  # `*` must stand alone


def test_options_location_and_the_key_in_place_of_ampersand():
    assert mount("-fstype=nfs,vers=3   10.0.2.4:/sasdata", master="hard,rw") == (
        ("hard", "rw", "fstype=nfs", "vers=3"), "10.0.2.4:/sasdata", None)
    assert mount("-rw srv:/home/&", key="alice") == (("rw",), "srv:/home/alice", None)
    assert mount("-rw srv:/x/&", key="my key") == (("rw",), "srv:/x/my key", None)
    assert mount('-rw "srv:/x/&"', key="a") == (("rw",), "srv:/x/&", None)  # not inside quotes
    assert mount('-"rw,hard" -nconnect=8 srv:/x # the ANF volume') == (("rw", "hard", "nconnect=8"), "srv:/x", None)
    assert mount("-rw s1:/a s2:/b") == (("rw",), "s1:/a s2:/b", None)  # replicated
    assert mount("-rw srv:/vol:x") == (("rw",), "srv:/vol/x", None)  # slashify_colons
    assert mount("-rw / srv:/a /b srv:/b") is None  # a multi-mount
    assert mount("-rw") == (("rw",), "", "the entry is empty")
    assert mount("-rw srv!:/x")[2] == 'invalid character "!" found in location srv!:/x'


def test_master_options_joined_as_concat_options_joins_them():
    assert mount("-rw,nconnect=8 srv:/x", master="rw")[0] == ("rw", "nconnect=8")  # master held: the entry's alone
    assert mount("-nconnect=8 srv:/x", master="hard,rw")[0] == ("hard", "rw", "nconnect=8")
    assert mount("-nconnect=8 srv:/x", master="hard,rw", append=False)[0] == ("nconnect=8",)
    assert mount("srv:/x", master="hard,rw", append=False)[0] == ("hard", "rw")  # no options: the master's


LINES = ["sasdata -fstype=nfs,nconnect=8 10.0.2.4:/sasdata", "* -rw srv:/home/&", '"my key" -rw srv:/x', "# c", "",
         "  ", "a\\ b -rw s:/x", "e -rw \\", "   s:/e", "+auto.other", "\tg -rw s:/g", "h -rw s1:/a s2:/b",
         "é -rw s:/e",
         "k", "k ", "j a"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(LINES), st.text(alphabet=' \t\n"\\#*+-:/&ab', max_size=12)), max_size=8),
       st.booleans())
def test_the_plain_line_shortcut_reads_as_read_one(lines, newline_at_end):
    text = "\n".join(lines) + ("\n" if newline_at_end else "")
    assert read_map(text) == read_map(text, fast=False)


ENTRIES = ["-fstype=nfs,rsize=65536,nconnect=8 10.0.2.4:/sasdata", "-rw srv:/home/&", "-rw s1:/a s2:/b", "-rw",
           "srv:/x", "-rw / srv:/a /b srv:/b", "-x=a:b srv:/p", "-rw srv:/vol:x", "-rw host1 host2:/p", "/dev/cdrom",
           ":/dev/cdrom", "-rw srv:/x -hard"]


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.sampled_from(ENTRIES), st.text(alphabet=' \t"\\#-:/&,=ab', max_size=24)),
       st.sampled_from(["k", "my key", "a:b", "&"]), st.sampled_from(["", "rw", "hard,rw"]), st.booleans())
def test_the_plain_entry_shortcut_cuts_as_parse_mount(entry, key, master, append):
    assert parse_entry(entry, key, master, append) == parse_entry(entry, key, master, append, fast=False)
