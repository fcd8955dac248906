"""_escape.py, the one quoting layer: each function on the names of the hostile suite."""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from tunewatch import _escape as escape

NAMES = ["$(id>x)", "`reboot`", "a;reboot", os.fsdecode(b"e\xff\x1b[2J"), "hanadb01\ntouch /tmp/x #",
         "{{ lookup('pipe','reboot') }}", "<script>alert(1)</script>\x07", "it's \"quoted\"\\", ""]


@pytest.mark.parametrize("name", NAMES)
def test_sh_word_is_the_value(name):
    got = subprocess.run(["bash", "-c", f"printf %s {escape.sh(name)}"], capture_output=True, check=True).stdout
    assert got == os.fsencode(name)


@pytest.mark.parametrize("name", NAMES)
def test_text_comment_xml_and_label_carry_no_raw_control_byte(name):
    for shown in (escape.text(name), escape.comment(name)):
        assert not any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f for c in shown), repr(shown)
        shown.encode("utf-8")  # valid UTF-8
    escape.label(name).encode("utf-8")  # a label value may hold any UTF-8 (the exposition escapes \n)
    assert "{{" not in escape.comment(name)
    escape.xml(name).encode("utf-8")


def test_labels_shortened_stay_unique_and_short():
    a, b = "/m/" + "d" * 200 + "1", "/m/" + "d" * 200 + "2"
    assert escape.label(a) != escape.label(b) and len(escape.label(a)) == 100
    assert escape.label("short") == "short"


def test_refusals_name_the_value_and_the_place():
    with pytest.raises(escape.Unexpressible, match="fstab"):
        escape.fstab_field("/sas\ndata", "mount point")
    assert escape.fstab_field("/with space\\", "mount point") == "/with\\040space\\134"
    with pytest.raises(escape.Unexpressible, match="udev"):
        escape.plain_name('x"y', "driver name", "a udev rule")  # as remediate/nic.py writes a udev rule
    with pytest.raises(escape.Unexpressible, match="ETHTOOL_OPTS"):
        escape.plain_name("a;reboot", "interface name", "an ifcfg ETHTOOL_OPTS value")
    assert escape.plain_name("enP30832s1", "interface name", "x") == "enP30832s1"


def test_goss_yaml_round_trips_without_template_actions():
    data = {"file": {"/etc/{{ x }}": {"title": "{{ lookup('pipe','reboot') }} {{{ }}", "meta": {"o": "a\nb"}}}}
    text = escape.goss_yaml(data)
    assert "{{" not in text
    assert yaml.safe_load(text) == data


def test_the_fleet_text_report_escapes_vm_names_and_vcenter_messages():
    """A VM name (host data) with ESC and a newline cannot clear the screen or forge a verdict line."""
    from tunewatch.outputs.fleet import render_fleet
    out = render_fleet("text", "https://vc.example", "login\x1b[2Jrefused\nfleet summary: all pass", [])
    assert "\x1b" not in out and out.count("\n") == 1 and "\\x1b[2J" in out
