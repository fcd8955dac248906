from __future__ import annotations
import pytest

from tunewatch.errors import ParseError
from tunewatch.parsers.proc_stat import parse_btime

STAT = """\
cpu  1093 0 1376 183021 127 0 45 0 0 0
cpu0 546 0 699 91499 60 0 22 0 0 0
intr 66315 0 9 0 0 0
ctxt 150129
btime 1763885062
processes 1772
procs_running 1
"""


def test_btime():
    assert parse_btime(STAT) == 1763885062
    assert parse_btime(STAT.replace("\n", "\r\n")) == 1763885062


@pytest.mark.parametrize("text", ["", "cpu 1 2 3\n", "btime\n", "btime abc\n", "btime 12 34\n", "btime -5\n"])
def test_reject(text):
    with pytest.raises(ParseError) as e:
        parse_btime(text)
    assert e.value.source == "proc/stat"


def test_real_proc_stat():
    try:
        with open("/proc/stat") as f:
            text = f.read()
    except OSError:
        pytest.skip("no /proc/stat")
    assert parse_btime(text) > 0
