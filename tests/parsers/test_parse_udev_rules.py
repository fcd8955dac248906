from __future__ import annotations
import pytest

from tunewatch.errors import ParseError
from tunewatch.parsers.udev_rules import UdevToken, parse_udev_rules

SEED = ("SUBSYSTEM==\"bdi\", ACTION==\"add\", PROGRAM=\"/bin/awk -v bdi=$kernel 'BEGIN{ret=1} {if ($4 == bdi) "
        "{ret=0}} END{exit ret}' /proc/fs/nfsfs/volumes\", ATTR{read_ahead_kb}=\"15380\"")

RULES = """\
# /etc/udev/rules.d/99-nfs-readahead.rules

""" + SEED + """\r
ACTION=="add", SUBSYSTEM=="net", KERNEL=="eth*", \\
    DRIVERS=="mlx5_core", RUN+="/sbin/ethtool -G $name rx 8192"
ENV{ID_NET_DRIVER}!="vmxnet3",GOTO="end"
TAG-="systemd", OPTIONS:="nowatch" , NAME="say \\"hi\\" C:\\x"
ATTR{queue/scheduler}=e"none\\tx", KERNEL==i"SDA"
LABEL="end"
"""


def test_seed_rule():
    [rule] = parse_udev_rules(SEED, "r")
    assert rule.line == 1
    assert [(t.key, t.attr, t.op) for t in rule.tokens] == [
        ("SUBSYSTEM", None, "=="), ("ACTION", None, "=="), ("PROGRAM", None, "="), ("ATTR", "read_ahead_kb", "=")]
    assert rule.tokens[2].value.startswith("/bin/awk -v bdi=$kernel 'BEGIN{ret=1}")
    assert rule.tokens[3].value == "15380"


def test_file():
    rules = parse_udev_rules(RULES, "etc/udev/rules.d/99-nfs-readahead.rules")
    assert [r.line for r in rules] == [3, 4, 6, 7, 8, 9]
    run = rules[1].tokens[-1]
    assert run == UdevToken("RUN", None, "+=", "/sbin/ethtool -G $name rx 8192")
    assert rules[1].tokens[3] == UdevToken("DRIVERS", None, "==", "mlx5_core")
    assert rules[2].tokens == (UdevToken("ENV", "ID_NET_DRIVER", "!=", "vmxnet3"), UdevToken("GOTO", None, "=", "end"))
    assert [t.op for t in rules[3].tokens] == ["-=", ":=", "="]
    assert rules[3].tokens[2].value == 'say "hi" C:\\x'
    assert rules[4].tokens[0].value == "none\tx" and rules[4].tokens[1].value == "SDA"


@pytest.mark.parametrize("line", [
    'SUBSYSTEM=="bdi", ACTION=="add',
    'SUBSYSTEM "bdi"',
    'SUBSYSTEM=="bdi", ATTR{x}',
    'SUBSYSTEM==bdi',
    'SUBSYSTEM=="bdi"x',
    '=="bdi"',
    'ATTR{x="1"',
])
def test_reject(line):
    with pytest.raises(ParseError) as e:
        parse_udev_rules("# c\n\n" + line + "\n", "r")
    assert e.value.line == 3
