"""The parser's one-expression token and line readers give what udev's character loop gives: every
line of Debian 12's rule set (tests/udev/debian12-rules) and lines built to sit on its
edges (keys with `-`/`!`/`:`, blanks, commas, `i`/`e` prefixes, backslashes, errors) parse
to the same rules with and without it."""

import itertools
import os

import pytest

from tunewatch.parsers import udev_rules

HERE = os.path.dirname(os.path.abspath(__file__))
PIECES = ['KERNEL=="sd*"', 'ATTR{queue/x}="1"', 'A-B=="x"', 'FOO!BAR="y"', 'K:="z"', 'ENV{X} += "a b"',
          'NAME = i"q"', 'TAG+=e"\\x41"', 'RUN+="/bin/echo \\"hi\\""', 'SUBSYSTEM=="a|b"', 'X  ==  "v"',
          'ATTR {x}=="1"', '="x"', 'KERNEL=="unterminated', 'KERNEL==ii"x"', 'LABEL="end"', 'GOTO="end"',
          'IMPORT{builtin}="path_id"', 'ENV{ID}!="?*"', 'ATTRS{v}=="a\\b"', 'KERNEL=="x",,', '  ', ',']


def _slow_only(monkeypatch):
    class Never:
        @staticmethod
        def match(line, pos):
            return None

        @staticmethod
        def findall(line):
            return [("", "", "", "", "", "x")]  # a character no token takes: _lex() reads the line
    monkeypatch.setattr(udev_rules, "_TOKEN", Never)
    monkeypatch.setattr(udev_rules, "_LINE", Never)


def _lines():
    for d, _, names in os.walk(os.path.join(HERE, "debian12-rules")):
        for n in sorted(names):
            if n.endswith(".rules"):
                with open(os.path.join(d, n), encoding="utf-8") as f:
                    yield f.read()
    for a, b in itertools.product(PIECES, repeat=2):
        yield f"{a}, {b}\n{a}{b}\n{a} {b}\n"


@pytest.mark.parametrize("text", list(_lines()))
def test_fast_lexer_agrees(text, monkeypatch):
    fast = udev_rules.parse_udev_rules_file(text)
    _slow_only(monkeypatch)
    assert udev_rules.parse_udev_rules_file(text) == fast
