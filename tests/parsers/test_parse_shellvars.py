from __future__ import annotations
import pytest
from hypothesis import given, settings, strategies as st

from tunewatch.errors import ParseError
from tunewatch.parsers.shellvars import parse_shell_assignments

IFCFG_SUSE = """\
BOOTPROTO='static'
STARTMODE='auto'
IPADDR='10.0.0.5/24'
ETHTOOL_OPTIONS=’-L eth0 combined 16’
MTU=9000   # jumbo
"""

IFCFG_RHEL = """\
DEVICE=eth1\r
ONBOOT=yes\r
ETHTOOL_OPTS="-K ${DEVICE} lro off; -G ${DEVICE} rx 4096"\r
export ZONE=public\r
if [ -f /etc/foo ]; then\r
  . /etc/foo\r
fi\r
"""

OS_RELEASE = r'''NAME="SLES"
VERSION="15-SP5"
PRETTY_NAME="SUSE Linux Enterprise Server 15 SP5"
ID="sles"
ID_LIKE="suse"
VERSION_ID="15.5"
CPE_NAME="cpe:/o:suse:sles:15:sp5"
QUOTED="say \"hi\" \$HOME \\ \n"
'''


def test_suse_typographic_quotes():
    values = parse_shell_assignments(IFCFG_SUSE, "etc/sysconfig/network/ifcfg-eth0")
    assert values["ETHTOOL_OPTIONS"] == "-L eth0 combined 16"
    assert values["BOOTPROTO"] == "static" and values["MTU"] == "9000"


def test_rhel_ifcfg():
    values = parse_shell_assignments(IFCFG_RHEL, "ifcfg-eth1")
    assert values == {"DEVICE": "eth1", "ONBOOT": "yes", "ZONE": "public",
                      "ETHTOOL_OPTS": "-K ${DEVICE} lro off; -G ${DEVICE} rx 4096"}


def test_os_release():
    values = parse_shell_assignments(OS_RELEASE, "etc/os-release")
    assert values["PRETTY_NAME"] == "SUSE Linux Enterprise Server 15 SP5"
    assert values["QUOTED"] == 'say "hi" $HOME \\ \\n'


@pytest.mark.parametrize("line, value", [
    ("A=“x y”", "x y"),
    ("A=‘x y’", "x y"),
    ("A='it’s'", "it’s"),
    ("A=’-K eth0 lro off'", "-K eth0 lro off"),
    ("A=“x\"y", "xy"),
    ("A=\"it’s\"", "it’s"),
    ("A='a'\\''b'", "a'b"),
    ("A=a\\ b c", "a b"),
    ("A=x;B=y", "x"),
    ("A=", ""),
    ("A=$(rm -rf /)", "$"),
])
def test_quoting(line, value):
    assert parse_shell_assignments(line, "f")["A"] == value


@pytest.mark.parametrize("text", ["A='abc\n", 'B=1\nA="abc\n', "A=’abc\n", "A=“abc"])
def test_unterminated_quote(text):
    with pytest.raises(ParseError) as e:
        parse_shell_assignments(text, "f")
    assert e.value.line == text.count("\n", 0, text.index("A=")) + 1


def test_non_assignments_ignored():
    assert parse_shell_assignments("echo 'unterminated\nfor i in 1 2; do :; done\n# A=1\n", "f") == {}


def _single_quote(value):
    return "'" + value.replace("'", "'\\''") + "'"


def _double_quote(value):
    return '"' + "".join("\\" + c if c in '$`"\\' else c for c in value) + '"'


_value = st.text(st.characters(blacklist_characters="\n\r"), max_size=20)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.from_regex(r"[A-Z_][A-Z0-9_]{0,10}", fullmatch=True), st.tuples(_value, st.booleans()),
                       max_size=6))
def test_quoted_values_round_trip(items):
    text = "".join(f"{k}={_single_quote(v) if single else _double_quote(v)}\n" for k, (v, single) in items.items())
    assert parse_shell_assignments(text, "f") == {k: v for k, (v, _s) in items.items()}
