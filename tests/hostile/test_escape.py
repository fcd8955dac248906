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


@pytest.mark.parametrize("name", NAMES + ["eth0", "sas\\x2ddata.mount", "net.ipv4.tcp_rmem=4096 87380 16777216"])
def test_sh_quotes_as_shlex_does(name):
    """escape.sh is shlex.quote's rule without importing shlex: the same word for every name."""
    import shlex
    assert escape.sh(name) == shlex.quote(name)


def test_autofs_and_unit_setting_fields():
    # autofs map entries: `*` and `&` are the map's own syntax and stay; a blank, a quote, a
    # backslash (lookup_file.c read_one() gives both meanings) or a control byte is refused
    assert escape.autofs_field("*", "key") == "*"
    assert escape.autofs_field("10.0.2.4:/vol/&", "location") == "10.0.2.4:/vol/&"
    for bad in ("sas data", 'sas"data', "sas\\data", "sas\ndata", "sas\x1bdata", ""):
        with pytest.raises(escape.Unexpressible, match="autofs map line"):
            escape.autofs_field(bad, "key")
    # a .mount unit's Options=: specifiers expand there (systemd.mount(5): write `%%`)
    assert escape.unit_setting("rw,context=%h", "options") == "rw,context=%%h"
    for bad in ("rw\nWhat=/dev/sdz1", "rw,x\\"):
        with pytest.raises(escape.Unexpressible, match="unit file setting"):
            escape.unit_setting(bad, "options")


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
