from __future__ import annotations
import pytest

from tunewatch.parsers.udev_rules import LINE_SIZE, UdevToken, parse_udev_rules, parse_udev_rules_file

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
        ("SUBSYSTEM", None, "=="), ("ACTION", None, "=="), ("PROGRAM", None, "=="), ("ATTR", "read_ahead_kb", "=")]
    assert rule.tokens[2].value.startswith("/bin/awk -v bdi=$kernel 'BEGIN{ret=1}")
    assert rule.tokens[3].value == "15380"


def test_file():
    rules = parse_udev_rules(RULES, "etc/udev/rules.d/99-nfs-readahead.rules")
    # a continued rule carries the number of its last line (udev's line_nr); PROGRAM= is a match (parse_token())
    assert [r.line for r in rules] == [3, 5, 6, 7, 8, 9]
    run = rules[1].tokens[-1]
    assert run == UdevToken("RUN", None, "+=", "/sbin/ethtool -G $name rx 8192")
    assert rules[1].tokens[3] == UdevToken("DRIVERS", None, "==", "mlx5_core")
    assert rules[2].tokens == (UdevToken("ENV", "ID_NET_DRIVER", "!=", "vmxnet3"),) and rules[2].goto == "end"
    assert rules[5].label == "end" and rules[5].tokens == ()
    assert [t.op for t in rules[3].tokens] == ["-=", ":=", "="]
    assert rules[3].tokens[2].value == 'say "hi" C:\\x'
    assert rules[4].tokens[0].value == "none\tx" and rules[4].tokens[1].value == "SDA"


@pytest.mark.parametrize("line, why", [
    ('SUBSYSTEM=="bdi", ACTION=="add', "unterminated"),            # parse_line(): lexical error
    ('SUBSYSTEM "bdi"', "no operator"),
    ('SUBSYSTEM=="bdi", ATTR{x}', "Invalid key/value pair"),
    ('SUBSYSTEM==bdi', "not double-quoted"),
    ('SUBSYSTEM=="bdi"x', "Invalid key/value pair"),                  # 'x' is a key without operator
    ('=="bdi"', "Invalid key ''"),
    ('ATTR{x="1"', "no closing"),
    ('KERNEL="eth0", RUN+="x"', "Invalid operator for KERNEL"),       # parse_token(): match-only key
    ('KERNEL=="eth0", RUN-="x"', "Invalid operator for RUN"),
    ('KERNEL=="eth0", RUN{foo}+="x"', "Invalid attribute for RUN"),
    ('KERNEL=="eth0", RUN{builtin}+="nosuch"', "Unknown builtin"),
    ('KERNEL=="eth0", ATTRS{x}="1"', "Invalid operator for ATTRS"),
    ('KERNEL{x}=="eth0", RUN+="x"', "Invalid attribute for KERNEL"),
    ('KERNEL=="eth0", ENV{DEVTYPE}="x"', "cannot be set"),
    ('KERNEL=="eth0", NAME="%k"', "take no effect"),
    ('KERNEL=="eth0", RUN+=i"x"', "prefix 'i'"),
    ('KERNEL=="eth0", SUBSYSTEM=ee"net"', "not double-quoted"),
    ('KERNEL=="eth0", DRIVERS=="mlx5_core", FOO="1"', "Invalid key 'FOO'"),
    ('KERNEL=="eth0", RUN+=e"bad \\q escape"', "invalid escape"),
])
def test_dropped_line(line, why):
    """udev logs and drops the whole line; the file and the other lines stay."""
    parsed = parse_udev_rules_file("# c\n\n" + line + '\nKERNEL=="x", RUN+="ok"\n')
    dropped, kept = parsed.rules
    assert dropped.line == 3 and why in dropped.problem
    assert kept.problem is None and kept.tokens[-1].value == "ok"
    assert parse_udev_rules("# c\n\n" + line + '\nKERNEL=="x", RUN+="ok"\n') == [kept]


def test_dropped_line_keeps_valid_tokens():
    [rule] = parse_udev_rules_file('ACTION=="add", DRIVERS=="mlx5_core", KERNEL="x", RUN+="/sbin/ethtool -L $kernel '
                                   'combined 16"').rules
    assert rule.problem == "KERNEL=: Invalid operator for KERNEL."
    assert [t.key for t in rule.tokens] == ["ACTION", "DRIVERS", "RUN"]


def test_rewritten_operators_and_ignored_options():
    [rule] = parse_udev_rules('NAME+="n", ENV{A}:="1", ATTR{x}+="2", TAG:="t", OPTIONS="bogus", OPTIONS+="nowatch", '
                              'RUN:="p"')
    assert [(t.key, t.op) for t in rule.tokens] == [("NAME", "="), ("ENV", "="), ("ATTR", "="), ("TAG", "="),
                                                    ("OPTIONS", "="), ("RUN", ":=")]


def test_no_separator_needed_between_tokens():
    [rule] = parse_udev_rules('KERNEL=="a"SUBSYSTEM=="net"RUN+="x"')  # only a style notice in udev
    assert [t.key for t in rule.tokens] == ["KERNEL", "SUBSYSTEM", "RUN"]


def test_goto_label_and_duplicates():
    [rule] = parse_udev_rules('KERNEL=="a", GOTO="one", GOTO="two", LABEL="x", LABEL="y"')
    assert rule.goto == "one" and rule.label == "y" and [t.key for t in rule.tokens] == ["KERNEL"]


def test_comment_inside_continuation_and_line_number():
    text = 'KERNEL=="a", \\\n# a comment line inside the rule\n   RUN+="x"\n'
    [rule] = parse_udev_rules(text)
    assert rule.line == 3 and [t.key for t in rule.tokens] == ["KERNEL", "RUN"]


def test_empty_line_ends_continuation_and_eof_continuation_dropped():
    rules = parse_udev_rules_file('KERNEL=="a", \\\n\nRUN+="x" \\\n').rules
    assert rules[0].problem is None and [t.key for t in rules[0].tokens] == ["KERNEL"]
    assert "Unexpected EOF" in rules[1].problem


def test_backslash_followed_by_blank_does_not_continue():
    rules = parse_udev_rules('KERNEL=="a", \\ \nRUN+="x"\n')
    assert len(rules) == 1 and rules[0].line == 2 and [t.key for t in rules[0].tokens] == ["RUN"]


def test_cr_and_crlf_end_lines():
    rules = parse_udev_rules('KERNEL=="a", RUN+="1"\rKERNEL=="b", RUN+="2"\r\nKERNEL=="c", RUN+="3"\n')
    assert [r.line for r in rules] == [1, 2, 3]


def test_too_long_physical_line_ignores_the_file():
    parsed = parse_udev_rules_file('KERNEL=="a", RUN+="1"\nKERNEL=="b", RUN+="' + "x" * LINE_SIZE + '"\n')
    assert parsed.file_problem and "ignores the whole file" in parsed.file_problem
    assert all(r.problem for r in parsed.rules)


def test_too_long_continued_line_is_ignored_alone():
    half = "y" * (LINE_SIZE // 2)
    text = f'KERNEL=="a", RUN+="{half}" \\\n  RUN+="{half}"\nKERNEL=="b", RUN+="2"\n'
    rules = parse_udev_rules_file(text).rules
    assert "too long" in rules[0].problem and rules[1].problem is None


def test_escapes():
    [rule] = parse_udev_rules('RUN+="a\\"b\\n", RUN+=e"t\\tx\\x41\\101\\"", KERNEL==i"ETH*"')
    assert [t.value for t in rule.tokens] == ['a"b\\n', 't\txAA"', "ETH*"]
    assert rule.tokens[2].nocase
