from __future__ import annotations
import pytest

from tunewatch.errors import ParseError
from tunewatch.parsers.modprobe import ModprobeOptions, parse_modprobe_conf

CONF = """\
# /etc/modprobe.d/sunrpc.conf
options sunrpc tcp_slot_table_entries=128 tcp_max_slot_table_entries=128
blacklist floppy
install usb-storage /bin/true
alias eth0 mlx5_core
softdep mlx5_ib pre: mlx5_core
remove foo /bin/true
options mlx4-core log_num_mgm_entry_size=-1 \\
    debug_level=1 enable_64b_cqe_eqe
\toptions  nfs  nfs4_disable_idmapping=0\r
options ixgbe allow_unsupported_sfp="1 2" dash-param=3
options lonely
"""


def test_options_lines():
    got = parse_modprobe_conf(CONF, "etc/modprobe.d/sunrpc.conf")
    assert got == [
        ModprobeOptions("sunrpc", {"tcp_slot_table_entries": "128", "tcp_max_slot_table_entries": "128"}, 2),
        ModprobeOptions("mlx4_core", {"log_num_mgm_entry_size": "-1", "debug_level": "1", "enable_64b_cqe_eqe": "1"}, 8),
        ModprobeOptions("nfs", {"nfs4_disable_idmapping": "0"}, 10),
        ModprobeOptions("ixgbe", {"allow_unsupported_sfp": "1 2", "dash_param": "3"}, 11),
        ModprobeOptions("lonely", {}, 12),
    ]


def test_options_without_module():
    with pytest.raises(ParseError) as e:
        parse_modprobe_conf("# x\noptions\n", "m")
    assert e.value.line == 2


def test_empty_and_comments():
    assert parse_modprobe_conf("", "m") == [] and parse_modprobe_conf("# options sunrpc a=1\n", "m") == []
