"""systemd's test/udev-test.py cases run against tunewatch's udev engine.

The cases (udev_test_cases.yaml) keep each udev-test.py rules text verbatim and its expected
and unexpected links; the device tree is sysfs-shaped (sysfs_tree.py) and read through the
same FS and engine as a host snapshot. Programs: only `/bin/echo` and `/bin/false`, which
the cases use, are emulated (the engine never runs a program); no shell is ever run.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
import yaml

from tunewatch.facts import udev
from tunewatch.facts.udev_device import sysfs_device
from tunewatch.host.fs import FS

from sysfs_tree import DEVICES, build

CASES = yaml.safe_load((Path(__file__).parent / "udev_test_cases.yaml").read_text())
GENERATED = {
    "10k_tags": "\n".join(f'KERNEL=="sda", TAG+="test{i + 1}"' for i in range(10_000)),
    "10k_tags_continuation": ",\\\n".join(('KERNEL=="sda"', *(f'TAG+="test{i + 1}"' for i in range(10_000)))),
    "overlong_comment": "# " + "0123456789" * 58 + "\n   # " + "0123456789" * 110,
}


def _echo_escapes(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in "01234567":
            j = i + 1 + (1 if text[i + 1] == "0" else 0)
            digits = ""
            while j < len(text) and len(digits) < 3 and text[j] in "01234567":
                digits += text[j]
                j += 1
            out.append(chr(int(digits or "0", 8)))
            i = j
        elif text[i] == "\\" and text[i + 1:i + 2] == "n":
            out.append("\n")
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def fake_program(cmd: str):
    """udev splits the command like a shell word list, keeping backslashes (EXTRACT_RETAIN_ESCAPE)."""
    lex = shlex.shlex(cmd, posix=True)
    lex.whitespace_split, lex.escape = True, ""
    argv = list(lex)
    if argv[:1] == ["/bin/false"]:
        return False, ""
    if argv[:1] != ["/bin/echo"]:
        return None
    args, newline, escapes = argv[1:], True, False
    while args and args[0] in ("-n", "-e", "-ne", "-en"):
        newline = newline and "n" not in args[0]
        escapes = escapes or "e" in args[0]
        args = args[1:]
    text = " ".join(args)
    return True, (_echo_escapes(text) if escapes else text) + ("\n" if newline else "")


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("udev-test-sys")
    build(str(root))
    return root


def _devices(case: dict) -> list[dict]:
    return case.get("devices") or [{"device": case["device"], "exp": case.get("exp", []),
                                    "not_exp": case.get("not_exp", [])}]


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["test"] for c in CASES["cases"]])
def test_udev_test_case(case: dict, tree: Path):
    rules = case["rules"]
    if case.get("rules_generate"):
        rules = GENERATED[case["rules_generate"]] + "\n" + rules
    rules_dir = tree / "etc/udev/rules.d"
    rules_dir.mkdir(parents=True, exist_ok=True)
    (rules_dir / "udev-test.rules").write_text(rules)
    fs = FS(str(tree))
    files = udev.read_rules(fs)
    for want in _devices(case):
        dev = sysfs_device(fs, DEVICES[want["device"]], program=fake_program)
        links = udev.evaluate(files, dev).devlinks
        missing = [link for link in want.get("exp") or [] if link not in links]
        unexpected = [link for link in want.get("not_exp") or [] if link in links]
        assert not missing and not unexpected, f"{want['device']}: links {links}"


def test_every_skip_has_a_reason():
    assert all(s.get("reason") for s in CASES["skipped"])
    translated = {c["test"] for c in CASES["cases"]}
    assert not translated & {s["test"] for s in CASES["skipped"]}
