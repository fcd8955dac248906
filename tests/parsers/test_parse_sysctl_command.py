"""Command lines that apply sysctl files (parsers/sysctl_command.py) and modprobe.d
`install` lines (parsers/modprobe.py), as the programs read their arguments."""

from __future__ import annotations

import pytest

from tunewatch.errors import ParseError
from tunewatch.parsers.modprobe import parse_modprobe_install
from tunewatch.parsers.sysctl_command import find_sysctl_runs, loads_module

# nfs-utils 2.6.2 systemd/50-nfs.conf and 2.6.3 systemd/60-nfs.rules, verbatim
INSTALL = ("/sbin/modprobe --ignore-install sunrpc $CMDLINE_OPTS && /sbin/sysctl -q --pattern sunrpc --system")
RULE_RUN = "/sbin/sysctl -q --pattern ^sunrpc --system"


def test_nfs_utils_install_line_loads_then_applies_sunrpc_keys() -> None:
    [run] = find_sysctl_runs(INSTALL)
    assert (run.consumer, run.system, run.pattern) == ("procps", True, "sunrpc")
    assert loads_module(INSTALL, "sunrpc") and not loads_module(INSTALL, "lockd")
    assert run.limits("sunrpc.tcp_slot_table_entries") and not run.limits("fs.nfs.nlm_tcpport")


def test_udev_hook_pattern_is_a_regex_searched_in_the_key() -> None:
    [run] = find_sysctl_runs(RULE_RUN)
    assert run.limits("sunrpc.tcp_max_slot_table_entries")
    [other] = find_sysctl_runs("/sbin/sysctl -q --pattern ^fs.nfs.n[sl]m --system")
    assert other.limits("fs.nfs.nlm_grace_period") and not other.limits("sunrpc.tcp_slot_table_entries")


def test_quoted_alternation_is_not_a_pipe() -> None:
    [run] = find_sysctl_runs("/sbin/sysctl -q --pattern 'fs.nfs.(nfs_callback_tcpport|idmap_cache_timeout)' --system")
    assert run.limits("fs.nfs.idmap_cache_timeout") and not run.limits("fs.nfs.nlm_tcpport")


def test_systemd_sysctl_prefix_as_path_or_dotted() -> None:
    [a] = find_sysctl_runs("/usr/lib/systemd/systemd-sysctl --prefix=/sunrpc")
    [b] = find_sysctl_runs("systemd-sysctl --prefix /proc/sys/net/ipv4")
    assert a.consumer == "systemd-sysctl" and a.limits("sunrpc.tcp_slot_table_entries")
    assert b.limits("net.ipv4.tcp_rmem") and not b.limits("net.core.rmem_max")
    [c] = find_sysctl_runs("systemd-sysctl")
    assert c.limits("anything.at.all")


@pytest.mark.parametrize("command", ["sysctl -w sunrpc.tcp_slot_table_entries=128", "sysctl -a", "echo sysctl --system",
                                     "modprobe sunrpc"])
def test_commands_that_apply_no_file(command: str) -> None:
    assert find_sysctl_runs(command) == []


def test_load_one_file_and_bad_pattern() -> None:
    [run] = find_sysctl_runs("sysctl -p /etc/sysctl.d/90-nfs.conf")
    assert run.files == ("/etc/sysctl.d/90-nfs.conf",) and not run.system
    [bad] = find_sysctl_runs("sysctl --pattern '(' --system")
    assert not bad.limits("sunrpc.tcp_slot_table_entries")  # procps refuses it: nothing applied


def test_modprobe_install_lines() -> None:
    text = "# nfs\ninstall sunrpc " + INSTALL + "\noptions sunrpc tcp_slot_table_entries=128\ninstall rpc-rdma /bin/true\n"
    found = parse_modprobe_install(text, "x.conf")
    assert [(i.module, i.line) for i in found] == [("sunrpc", 2), ("rpc_rdma", 4)]
    assert found[0].command == INSTALL
    with pytest.raises(ParseError):
        parse_modprobe_install("install sunrpc\n", "bad.conf")
