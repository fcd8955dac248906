from __future__ import annotations
import pytest

from tunewatch.errors import ParseError
from tunewatch.parsers.ini import parse_ini

TUNED = """\
#
# tuned configuration
#
[main]
summary=SAS Grid tuning
include=throughput-performance

[sysctl]
vm.dirty_ratio = 40
kernel.sched_min_granularity_ns = ${f:calc_isolated_cores:2}
; comment
[bootloader]
cmdline = skew_tick=1
    isolcpus=2-7
[sysctl]
vm.dirty_ratio = 30
"""

NM = """\
[connection]\r
id=eth0\r
interface-name=eth0\r
\r
[ethtool]\r
ring-rx=4096\r
feature-lro=false\r
"""

LINK = """\
[Match]
OriginalName=eth* \\
  ens*
Driver=mlx5_core

[Link]
RxBufferSize = 4096
"""


def test_tuned_conf():
    conf = parse_ini(TUNED, "usr/lib/tuned/sas/tuned.conf")
    assert conf["main"] == {"summary": "SAS Grid tuning", "include": "throughput-performance"}
    assert conf["sysctl"] == {"vm.dirty_ratio": "30", "kernel.sched_min_granularity_ns": "${f:calc_isolated_cores:2}"}
    assert conf["bootloader"]["cmdline"] == "skew_tick=1 isolcpus=2-7"


def test_nm_keyfile_crlf():
    conf = parse_ini(NM, "x.nmconnection")
    assert conf["connection"]["interface-name"] == "eth0" and conf["ethtool"] == {"ring-rx": "4096", "feature-lro": "false"}


def test_link_file_continuation():
    conf = parse_ini(LINK, "10-mlx.link")
    assert conf["Match"]["OriginalName"] == "eth* ens*" and conf["Link"]["RxBufferSize"] == "4096"


def test_keys_before_section():
    assert parse_ini("a = 1\n[s]\nb=2 \n", "f") == {"": {"a": "1"}, "s": {"b": "2"}}


@pytest.mark.parametrize("text, line", [
    ("[main]\njust words\n", 2),
    ("[main\nx=1\n", 1),
    ("[main] trailing\n", 1),
    ("[s]\n=value\n", 2),
    ("   continued without key\n", 1),
])
def test_reject(text, line):
    with pytest.raises(ParseError) as e:
        parse_ini(text, "f")
    assert e.value.line == line
