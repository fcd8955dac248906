from __future__ import annotations
import pytest
from hypothesis import given, settings, strategies as st

from tunewatch.errors import ParseError
from tunewatch.parsers.fstab import FstabEntry, parse_fstab

FSTAB = """\
# /etc/fstab: static file system information.
#
UUID=0a3407de-014b-458b-b5c1-848e92a327a3 /               xfs     defaults        0 1\r
/dev/mapper/vg-swap  none  swap  sw  0  0

10.0.0.4:/sasvol  /sas\\040data  nfs  rw,bg,hard,nointr,rsize=1048576,wsize=1048576,tcp,nfsvers=3,timeo=600,actimeo=0,_netdev 0 0   \t
tmpfs /tmp tmpfs size=2g
   # indented comment
server:/export /mnt/export nfs4 _netdev,nconnect=8 0
"""


def test_real_looking_fstab():
    root, swap, nfs, tmp, nfs4 = parse_fstab(FSTAB, "etc/fstab")
    assert root == FstabEntry("UUID=0a3407de-014b-458b-b5c1-848e92a327a3", "/", "xfs", (("defaults", None),), 0, 1, 3)
    assert swap.file == "none" and swap.line == 4
    assert nfs.file == "/sas data" and nfs.line == 6
    opts = dict(nfs.options)
    assert opts["nfsvers"] == "3" and opts["tcp"] is None and opts["bg"] is None and opts["_netdev"] is None
    assert opts["rsize"] == "1048576"
    assert (tmp.freq, tmp.passno, tmp.options) == (0, 0, (("size", "2g"),))
    assert (nfs4.vfstype, nfs4.freq, nfs4.passno, nfs4.line) == ("nfs4", 0, 0, 9)


def test_empty():
    assert parse_fstab("", "etc/fstab") == [] and parse_fstab("\n# only\n\n", "etc/fstab") == []


@pytest.mark.parametrize("line", [
    "/dev/sda1 / xfs",
    "/dev/sda1 / xfs defaults x 0",
    "/dev/sda1 / xfs defaults 0 -1",
    "/dev/sda1 / xfs defaults 0 1 extra",
    "/dev/sda1 / xfs defaults 0 ١",
])
def test_reject_with_line(line):
    with pytest.raises(ParseError) as e:
        parse_fstab("# header\n" + line + "\n", "etc/fstab")
    assert e.value.line == 2


def _escape(s):
    return s.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")


_word = st.text(st.characters(blacklist_categories=("Z", "C"), blacklist_characters="#"), min_size=1, max_size=12)
_path = st.text(st.characters(blacklist_categories=("Zl", "Zp", "C")) | st.sampled_from(" \t"), min_size=1, max_size=16)
_opts = st.lists(st.tuples(st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
                           st.none() | st.from_regex(r"[A-Za-z0-9:/._-]{0,10}", fullmatch=True)), min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_word, _path, _word, _opts, st.integers(0, 9), st.integers(0, 9)), max_size=5))
def test_generated_entries_round_trip(entries):
    text = "# generated\n" + "".join(
        f"{_escape(spec)}\t{_escape(file)}  {vfs} {','.join(k if v is None else f'{k}={v}' for k, v in opts)} {freq} {passno}\n"
        for spec, file, vfs, opts, freq, passno in entries)
    parsed = parse_fstab(text, "etc/fstab")
    assert parsed == [FstabEntry(spec, file, vfs, tuple(opts), freq, passno, i + 2)
                      for i, (spec, file, vfs, opts, freq, passno) in enumerate(entries)]
