from __future__ import annotations
import pytest
from hypothesis import given, settings, strategies as st

from tunewatch.errors import ParseError
from tunewatch.parsers.sysctl_conf import SysctlSetting, parse_sysctl_conf, sysctl_key_to_path

CONF = """\
# /etc/sysctl.d/90-sas.conf
; semicolon comment
net.core.rmem_max = 16777216\r
net.ipv4.tcp_rmem=4096   87380\t16777216
-net.ipv4.conf.eth9.rp_filter = 0
net/ipv4/ip_forward = 1
net/ipv4/conf/eth0.100/rp_filter=2

  vm.dirty_bytes =  	 
- kernel.sched_autogroup_enabled = 0
"""


def test_sysctl_d():
    got = parse_sysctl_conf(CONF, "etc/sysctl.d/90-sas.conf")
    assert got == [
        SysctlSetting("net.core.rmem_max", "16777216", 3, False),
        SysctlSetting("net.ipv4.tcp_rmem", "4096 87380 16777216", 4, False),
        SysctlSetting("net.ipv4.conf.eth9.rp_filter", "0", 5, True),
        SysctlSetting("net.ipv4.ip_forward", "1", 6, False),
        SysctlSetting("net.ipv4.conf.eth0/100.rp_filter", "2", 7, False),
        SysctlSetting("vm.dirty_bytes", "", 9, False),
        SysctlSetting("kernel.sched_autogroup_enabled", "0", 10, True),
    ]


@pytest.mark.parametrize("text, line", [
    ("net.core.rmem_max 16777216\n", 1),
    ("vm.swappiness=10\nnet.core.somaxconn\n", 2),
    ("= 1\n", 1),
    ("- = 1\n", 1),
])
def test_reject(text, line):
    with pytest.raises(ParseError) as e:
        parse_sysctl_conf(text, "etc/sysctl.conf")
    assert e.value.line == line


@pytest.mark.parametrize("key, path", [
    ("vm.dirty_bytes", "proc/sys/vm/dirty_bytes"),
    ("net.ipv4.conf.eth0/100.rp_filter", "proc/sys/net/ipv4/conf/eth0.100/rp_filter"),
    ("net/ipv4/conf/eth0.100/rp_filter", "proc/sys/net/ipv4/conf/eth0.100/rp_filter"),
    ("sunrpc.tcp_slot_table_entries", "proc/sys/sunrpc/tcp_slot_table_entries"),
    ("kernel.hostname", "proc/sys/kernel/hostname"),
])
def test_key_to_path(key, path):
    assert sysctl_key_to_path(key) == path


@pytest.mark.parametrize("key", [
    "", "/etc/passwd", ".vm", "vm..dirty", "vm.", "net/../../etc/shadow", "net.ipv4/...x", "a/./b",
    "net/ipv4/", "vm.x\0y", "..", "a/..",
])
def test_key_to_path_rejects_escapes(key):
    with pytest.raises(ParseError):
        sysctl_key_to_path(key)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_key_to_path_stays_under_proc_sys(key):
    try:
        path = sysctl_key_to_path(key)
    except ParseError:
        return
    parts = path.split("/")
    assert parts[:2] == ["proc", "sys"] and not {"", ".", ".."} & set(parts)


_key = st.from_regex(r"[a-z][a-z0-9_]{0,8}(\.[a-z0-9_]{1,8}){1,4}", fullmatch=True)
_value = st.text(st.characters(blacklist_categories=("C",)), max_size=20)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _key, _value, st.sampled_from(["=", " = ", "=  "]),
                          st.sampled_from([".", "/"])), max_size=6))
def test_generated_round_trip(items):
    text = "# gen\n" + "".join(f"{'-' if ign else ''}{key.replace('.', sep)}{eq}{value}\n"
                               for ign, key, value, eq, sep in items)
    got = parse_sysctl_conf(text, "t")
    assert got == [SysctlSetting(key, " ".join(value.split()), i + 2, ign)
                   for i, (ign, key, value, _eq, _sep) in enumerate(items)]
