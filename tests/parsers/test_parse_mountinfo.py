from __future__ import annotations
import pytest
from hypothesis import given, settings, strategies as st

from tunewatch.errors import ParseError
from tunewatch.parsers.mountinfo import MountInfo, parse_mountinfo
from tunewatch.parsers._text import option_value, options_splitter, split_options

NFS = ("123 28 0:53 / /sas\\040data rw,noatime,nodiratime shared:75 - nfs 10.0.0.4:/sasvol "
       "rw,vers=3,rsize=65536,wsize=65536,namlen=255,acdirmin=0,hard,proto=tcp,nconnect=8,timeo=600,"
       "retrans=2,sec=sys,mountaddr=10.0.0.4,mountvers=3,mountport=635,mountproto=tcp,local_lock=none,"
       "addr=10.0.0.4")


def test_proc5_example():
    [m] = parse_mountinfo("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n", "mi")
    assert m == MountInfo(36, 35, 98, 0, "/mnt1", "/mnt2", (("rw", None), ("noatime", None)), ("master:1",),
                          "ext3", "/dev/root", (("rw", None), ("errors", "continue")), 1)


def test_nfs_with_escaped_space():
    text = "22 1 8:1 / / rw,relatime shared:1 - xfs /dev/sda1 rw,attr2\r\n\n" + NFS + "   \r\n"
    root, nfs = parse_mountinfo(text, "proc/self/mountinfo")
    assert root.optional_fields == ("shared:1",) and root.line == 1
    assert nfs.mount_point == "/sas data" and nfs.line == 3
    assert (nfs.major, nfs.minor, nfs.fstype, nfs.source) == (0, 53, "nfs", "10.0.0.4:/sasvol")
    opts = dict(nfs.super_options)
    assert opts["nconnect"] == "8" and opts["vers"] == "3" and opts["hard"] is None
    assert dict(nfs.mount_options) == {"rw": None, "noatime": None, "nodiratime": None}


def test_no_optional_fields_and_escapes():
    [m] = parse_mountinfo("40 22 0:35 /a\\011b /mnt/x\\134y rw - tmpfs my\\040src rw,size=10k", "mi")
    assert (m.root, m.mount_point, m.source, m.optional_fields) == ("/a\tb", "/mnt/x\\y", "my src", ())
    assert m.super_options == (("rw", None), ("size", "10k"))


def test_several_optional_fields():
    [m] = parse_mountinfo("40 22 0:35 / /m rw shared:5 master:3 propagate_from:2 unbindable - tmpfs t rw", "mi")
    assert m.optional_fields == ("shared:5", "master:3", "propagate_from:2", "unbindable")


@pytest.mark.parametrize("line", [
    "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 ext3 /dev/root rw,errors=continue",  # no separator
    "36 35 98:0 /mnt1 /mnt2 rw - ext3",  # too few
    "x 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw",
    "36 35 98-0 /mnt1 /mnt2 rw - ext3 /dev/root rw",
    "36 35 98:a /mnt1 /mnt2 rw - ext3 /dev/root rw",
    "36 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw extra",
])
def test_reject_with_line(line):
    with pytest.raises(ParseError) as e:
        parse_mountinfo("22 1 8:1 / / rw - xfs /dev/sda1 rw\n" + line + "\n", "mi")
    assert e.value.line == 2


def _escape(s: str) -> str:
    return (s.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
             .replace("\n", "\\012").replace("\r", "\\015"))


_path = st.text(min_size=1, max_size=20)
_opts = st.lists(st.tuples(st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
                           st.none() | st.from_regex(r"[A-Za-z0-9:/._-]{0,10}", fullmatch=True)), min_size=1, max_size=5)


def _opt_text(pairs):
    return ",".join(k if v is None else f"{k}={v}" for k, v in pairs)


@st.composite
def _mount(draw):
    return dict(mount_id=draw(st.integers(0, 10**6)), parent_id=draw(st.integers(0, 10**6)),
                major=draw(st.integers(0, 4095)), minor=draw(st.integers(0, 2**20)),
                root=draw(_path), mount_point=draw(_path), mount_options=tuple(draw(_opts)),
                optional_fields=tuple(draw(st.lists(st.from_regex(r"(shared|master|propagate_from):[0-9]{1,4}|unbindable",
                                                                  fullmatch=True), max_size=3))),
                fstype=draw(st.from_regex(r"[a-z0-9]{1,6}(\.[a-z]{1,6})?", fullmatch=True)),
                source=draw(_path), super_options=tuple(draw(_opts)))


@settings(max_examples=200, deadline=None)
@given(st.lists(_mount(), max_size=4), st.sampled_from(["\n", "\r\n"]))
def test_generated_lines_round_trip(mounts, eol):
    text = "".join(
        f"{m['mount_id']} {m['parent_id']} {m['major']}:{m['minor']} {_escape(m['root'])} {_escape(m['mount_point'])} "
        f"{_opt_text(m['mount_options'])} {' '.join(m['optional_fields'])}{' ' if m['optional_fields'] else ''}- "
        f"{m['fstype']} {_escape(m['source'])} {_opt_text(m['super_options'])}{eol}" for m in mounts)
    parsed = parse_mountinfo(text, "mi")
    assert [MountInfo(**m, line=i + 1) for i, m in enumerate(mounts)] == parsed


@pytest.mark.parametrize("field", ["rw,vers=3,hard", "rw,,noatime", ",", "", "a=", "=b", "a=b=c", "rw,rw,a=1,a=2",
                                   "addr=10.0.0.1,mountaddr=10.0.0.1", "sec=sys,,,proto=tcp,"])
def test_options_splitter_agrees_with_split_options(field):
    """The memoising splitter of a table gives what split_options gives, the first time
    and when the field or its options come again."""
    split = options_splitter()
    for _ in range(2):
        assert split(field) == split_options(field)
        assert split(field + ",extra") == split_options(field + ",extra")


@pytest.mark.parametrize("ids, what", [("x 35 98:0", "mount id"), ("36  98:0", None), ("36 35 :0", "major"),
                                       ("36 35 98:", "minor"), ("36 35 98:0x", "minor"),
                                       ("36 35 98:123456789012345678901", "minor"), ("٣٦ 35 98:0", "mount id")])
def test_numbers_checked_one_by_one(ids, what):
    """The fast test of the four numbers at once refuses what uint() refuses, and the error
    still names the field."""
    line = f"{ids} /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw\n"
    with pytest.raises(ParseError) as e:
        parse_mountinfo(line, "mi")
    if what:
        assert what in str(e.value)


def test_long_numbers_still_parse():
    [m] = parse_mountinfo("12345678901 12345678902 98:0 / /m rw - ext3 /dev/root rw\n", "mi")
    assert (m.mount_id, m.parent_id) == (12345678901, 12345678902)


def test_option_value_is_the_last_one():
    """As the kernel and mount read options: the last `key=` counts; a flag has no value."""
    pairs = split_options("rw,nconnect=4,hard,nconnect=8,rsize")
    assert option_value(pairs, "nconnect") == "8"
    assert option_value(pairs, "rsize") is None
    assert option_value(pairs, "wsize") is None
    assert option_value(pairs, "nconnect") == dict(pairs).get("nconnect")
