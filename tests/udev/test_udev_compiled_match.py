"""compile_match() (the engine's per-scan form of a token) agrees with match_string() on
every pattern shape: subsystem words, empty, `?*`, `|` alternatives with and without an
empty one, globs, brackets, escapes, case folding, both operators, unset values."""

import itertools

from tunewatch.facts.udev_match import compile_match, match_string

PATTERNS = ["", "?*", "sda", "sd*", "sd[a-c]", "sd[!a]", "a|b", "a|", "|a", "|", "a*|b", "A|b", "nvme?n*",
            "subsystem", "bus", "class", "Subsystem", r"a\*b", r"a\b", "[", "x[:digit:]", "*", "?", "0:6*",
            "block|net", "NET", "a||b"]
VALUES = [None, "", "sda", "sdb", "SDA", "a", "b", "A", "ab", "a*b", "a\\b", "nvme0n1", "subsystem", "bus",
          "SUBSYSTEM", "net", "block", "0:60", "[", "x7", " ", "a|b"]


def test_compiled_agrees_with_match_string():
    for pattern, op, nocase, subsystem_key in itertools.product(PATTERNS, ("==", "!="), (False, True),
                                                                (False, True)):
        compiled = compile_match(pattern, op, nocase, subsystem_key)
        for value in VALUES:
            assert compiled(value) == match_string(pattern, op, value, nocase, subsystem_key), \
                (pattern, op, nocase, subsystem_key, value)


def test_no_rules_files_first():
    """A scan whose host has no rules files (the first list a process evaluates may be [])."""
    from tunewatch.facts import udev, udev_ruleset

    udev_ruleset._LAST = (None, None)
    out = udev.evaluate([], udev.UdevDevice({"SUBSYSTEM": "module", "KERNEL": "sunrpc"}))
    assert out.run == [] and out.attrs == {}
