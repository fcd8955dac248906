from __future__ import annotations
import pytest

from tunewatch.errors import ParseError
from tunewatch.parsers.ethtool_args import EthtoolCommand, find_ethtool_commands, parse_ethtool_options
from tunewatch.parsers.shellvars import parse_shell_assignments


def test_suse_value_from_typographic_quotes():
    value = parse_shell_assignments("ETHTOOL_OPTIONS=’-L eth0 combined 16’\n", "ifcfg-eth0")["ETHTOOL_OPTIONS"]
    [cmd] = parse_ethtool_options(value, "eth0", "ifcfg-eth0")
    assert cmd == EthtoolCommand("eth0", (("channels.combined", "16"),), 0)


def test_rhel_several_commands_and_device_variable():
    cmds = parse_ethtool_options("-K ${DEVICE} lro off gro on tso off; -G $DEVICE rx 4096 tx 4096 ;"
                                 "-C ${DEVICE} rx-usec 25 adaptive-rx off", "eth1", "ifcfg-eth1")
    assert [c.interface for c in cmds] == ["eth1", "eth1", "eth1"]
    assert dict(cmds[0].settings) == {"features.large-receive-offload": "off",
                                      "features.generic-receive-offload": "on",
                                      "features.tcp-segmentation-offload": "off"}
    assert dict(cmds[1].settings) == {"rings.rx": "4096", "rings.tx": "4096"}
    # ethtool rejects `rx-usec` (a typo seed 001 contains): the whole -C command applies nothing
    assert cmds[2].settings == () and "'rx-usec'" in cmds[2].problem and "'rx-usecs'" in cmds[2].problem


@pytest.mark.parametrize("value, iface, settings", [
    ("-L combined 8", "eth3", {"channels.combined": "8"}),
    ("-K iface tso off", "eth3", {"features.tcp-segmentation-offload": "off"}),
    ("-G eth4 rx-jumbo 1024 rx-mini 64", "eth4", {"rings.rx-jumbo": "1024", "rings.rx-mini": "64"}),
    ("--set-channels eth3 rx 4 tx 4 other 1", "eth3", {"channels.rx": "4", "channels.tx": "4", "channels.other": "1"}),
    ("--offload eth3 rx off tx off sg off rxvlan on txvlan on ntuple on rxhash on gso off", "eth3",
     {"features.rx-checksumming": "off", "features.tx-checksumming": "off", "features.scatter-gather": "off",
      "features.rx-vlan-offload": "on", "features.tx-vlan-offload": "on", "features.ntuple-filters": "on",
      "features.receive-hashing": "on", "features.generic-segmentation-offload": "off"}),
    ("--features eth3 rx-gro-hw off", "eth3", {"features.rx-gro-hw": "off"}),
    ("--coalesce eth3 tx-usecs 8 adaptive-tx on", "eth3", {"coalesce.tx-usecs": "8", "coalesce.adaptive-tx": "on"}),
])
def test_single_option_forms(value, iface, settings):
    [cmd] = parse_ethtool_options(value, "eth3", "f")
    assert (cmd.interface, dict(cmd.settings)) == (iface, settings)


@pytest.mark.parametrize("value", ["", "autoneg off speed 1000 duplex full", "-s eth0 speed 1000", "-A eth0 rx on",
                                   "-K", "-L eth0", ";;"])
def test_ignored(value):
    assert parse_ethtool_options(value, "eth0", "f") == []


def test_bad_quoting_in_value():
    with pytest.raises(ParseError):
        parse_ethtool_options("-K eth0 'lro off", "eth0", "ifcfg-eth0")


SCRIPT = """\
#!/bin/bash
# ethtool -K eth0 lro on
ethtool -G eth0 rx 4096 tx 4096 && /sbin/ethtool -K eth0 lro off || echo failed
[Service]
ExecStart=/usr/sbin/ethtool -G eth1 rx 512
ExecStartPost=-/bin/sh -c "ethtool -K $IFACE gro off; /usr/sbin/ethtool -C ${DEVICE_IFACE} rx-usecs 50"
if [ "$2" = up ]; then ./ethtool -L $1 combined 4 >/dev/null 2>&1; fi
/usr/sbin/ethtool -G eth2 \\
    rx 1024
ethtool -s eth0 speed 1000 autoneg off
ethtool "unbalanced -K eth0 lro off
echo ethtool -K eth0 lro on
ethtool --debug 1 -L %k combined 2
ethtool -k eth0; ethtool -i eth0
"""


def test_find_in_script():
    cmds = find_ethtool_commands(SCRIPT, "etc/NetworkManager/dispatcher.d/30-ethtool")
    got = [(c.line, c.interface, dict(c.settings)) for c in cmds]
    assert got == [
        (3, "eth0", {"rings.rx": "4096", "rings.tx": "4096"}),
        (3, "eth0", {"features.large-receive-offload": "off"}),
        (5, "eth1", {"rings.rx": "512"}),
        (6, "$IFACE", {"features.generic-receive-offload": "off"}),
        (6, "${DEVICE_IFACE}", {"coalesce.rx-usecs": "50"}),
        (7, "$1", {"channels.combined": "4"}),
        (8, "eth2", {"rings.rx": "1024"}),
        (13, "%k", {"channels.combined": "2"}),
    ]


def test_find_in_udev_run_value():
    [cmd] = find_ethtool_commands("/sbin/ethtool -G $name rx 8192", "r")
    assert (cmd.interface, cmd.settings, cmd.line) == ("$name", (("rings.rx", "8192"),), 1)


def test_find_nothing():
    assert find_ethtool_commands("", "x") == [] and find_ethtool_commands("#!/bin/sh\nexit 0\n", "x") == []


@pytest.mark.parametrize("line", [
    "ExecStart=/usr/bin/logger ethtool -K eth0 lro off",
    "echo 'run: ethtool -K eth0 lro off'",
    "logger -t x ethtool -G eth0 rx 1",
    "sh -c 'echo hi' ethtool -K eth0 lro off",
])
def test_ethtool_as_an_argument_is_not_a_command(line):
    assert find_ethtool_commands(line, "x") == []


@pytest.mark.parametrize("line, iface", [
    ("sudo /usr/sbin/ethtool -K eth0 lro off", "eth0"),
    ("DEV=eth5 ethtool -K eth5 lro off", "eth5"),
    ("ExecStart=/bin/bash -c '/sbin/ethtool -K eth6 lro off'", "eth6"),
    ("then ethtool -K eth7 lro off # trailing comment", "eth7"),
])
def test_command_position(line, iface):
    [cmd] = find_ethtool_commands(line, "x")
    assert cmd.interface == iface and dict(cmd.settings) == {"features.large-receive-offload": "off"}


# -- parameter names as the real ethtool accepts them ----------------------------------

import shutil  # noqa: E402
import subprocess  # noqa: E402

from tunewatch.parsers.ethtool_args import PARAMS  # noqa: E402

ETHTOOL = shutil.which("ethtool") or "/usr/sbin/ethtool"
_OPT = {"coalesce": "-C", "rings": "-G", "channels": "-L"}


def _ethtool_says_unknown(option: str, param: str, value: str) -> bool:
    """Run the real ethtool on `lo`: argument parsing happens before any ioctl, so an
    unknown parameter is reported whatever the device supports (nothing is changed: lo
    supports none of these operations)."""
    proc = subprocess.run([ETHTOOL, option, "lo", param, value], capture_output=True, text=True, timeout=10)
    return "unknown parameter" in proc.stderr or "bad command line" in proc.stderr


@pytest.mark.skipif(not shutil.which("ethtool") and not __import__("os").path.exists(ETHTOOL), reason="no ethtool")
@pytest.mark.parametrize("section, param", [(s, p) for s in ("coalesce", "rings", "channels")
                                            for p in ("rx-usecs", "rx-frames", "adaptive-rx", "tx-usecs", "rx",
                                                      "rx-mini", "rx-jumbo", "tx", "combined", "other")
                                            if p in PARAMS[s]])
def test_table_names_are_accepted_by_ethtool(section, param):
    value = "off" if param.startswith("adaptive") else "1"
    assert not _ethtool_says_unknown(_OPT[section], param, value)
    [cmd] = parse_ethtool_options(f"{_OPT[section]} eth0 {param} {value}", "eth0", "f")
    assert cmd.problem is None


@pytest.mark.skipif(not shutil.which("ethtool") and not __import__("os").path.exists(ETHTOOL), reason="no ethtool")
@pytest.mark.parametrize("option, param, right", [("-C", "rx-usec", "rx-usecs"), ("-C", "rx_usecs", "rx-usecs"),
                                                  ("-G", "rx-min", "rx-mini"), ("-L", "comb", None),
                                                  ("-C", "rx-usecs-irqs", "rx-usecs-irq")])
def test_typos_are_rejected_like_ethtool(option, param, right):
    assert _ethtool_says_unknown(option, param, "1")
    [cmd] = parse_ethtool_options(f"{option} eth0 {param} 1", "eth0", "f")
    assert cmd.settings == () and f"'{param}'" in cmd.problem
    assert (f"'{right}'" in cmd.problem) if right else "spelt" not in cmd.problem


@pytest.mark.parametrize("value, problem", [("-C eth0 rx-usecs 25us", "a number expected"),
                                            ("-C eth0 adaptive-rx yes", "on or off expected"),
                                            ("-K eth0 lro false", "on or off expected")])
def test_bad_values_reject_the_command(value, problem):
    [cmd] = parse_ethtool_options(value, "eth0", "f")
    assert cmd.settings == () and problem in cmd.problem


def test_hex_numbers_are_read_as_ethtool_reads_them():
    [cmd] = parse_ethtool_options("-G eth0 rx 0x200", "eth0", "f")
    assert dict(cmd.settings) == {"rings.rx": "512"}


@pytest.mark.parametrize("word, number", [("096", "96"), ("010", "10"), ("0x10", "16"), ("0X1f", "31")])
def test_numbers_read_as_ethtool_netlink_reads_them(word, number):
    """netlink/parser.c parse_u32(): "0x" then hex, else base 10 (leading zeros allowed);
    hypothesis found "096" raising ValueError when numbers were read like strtoul(..., 0)."""
    [cmd] = parse_ethtool_options(f"-G eth0 rx {word}", "eth0", "f")
    assert dict(cmd.settings) == {"rings.rx": number} and cmd.problem is None
