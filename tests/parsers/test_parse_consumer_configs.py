"""Configuration read as its consumer reads it: nfs-utils conffile.c, tuned's configparser,
autofs maps, systemd mount unit names and the kernel's vm.dirty_* handlers."""

from __future__ import annotations

import pytest

from tunewatch.errors import ParseError
from tunewatch.facts.mount_units import escape_path
from tunewatch.facts.sysctl import ConfiguredValue
from tunewatch.facts.sysctl_writes import replay, systemd_sysctl_order
from tunewatch.parsers.autofs import parse_master
from tunewatch.parsers.nfs_conf import lookup, parse_conf
from tunewatch.parsers.tuned_conf import parse_tuned_conf, parse_tuned_main


def test_nfs_conf_cuts_inline_comments_but_not_quoted_values():
    text = ('[nfsrahead]\nnfs=15380\t# 15 MiB\nnfs4 = 15380 ; v4\n[ Server "10.0.2.4" ]\nrsize = "64k # kept"\n'
            'outside\n[general]\nlast=1')  # no newline after the last line: conffile.c ignores it
    entries = parse_conf(text, "etc/nfs.conf")
    assert [(e.section, e.arg, e.tag, e.value) for e in entries] == [
        ("nfsrahead", None, "nfs", "15380"), ("nfsrahead", None, "nfs4", "15380"),
        ("Server", "10.0.2.4", "rsize", "64k # kept")]
    assert lookup(entries, "NFSRAHEAD", "NFS").value == "15380"
    assert lookup(entries, "server", "rsize", "10.0.2.4").source == "etc/nfs.conf:5"


def test_nfs_conf_ignores_assignments_outside_a_section_and_joins_backslash_lines():
    entries = parse_conf("a=1\n[s]\nb=x\\\ny\n", "f")
    assert [(e.tag, e.value) for e in entries] == [("b", "x  y")]


def test_tuned_conf_inline_comment_needs_a_blank_before_it():
    conf = parse_tuned_conf("[sysctl]\nvm.dirty_bytes = 31457280   # 30 MiB\nkernel.x=a#b\n", "t")
    assert conf["sysctl"] == {"vm.dirty_bytes": "31457280", "kernel.x": "a#b"}
    assert parse_tuned_main("reapply_sysctl = 0 # off\n", "m") == {"reapply_sysctl": "0"}
    with pytest.raises(ParseError):
        parse_tuned_conf("vm.x = 1\n", "t")  # no section: tuned cannot load the profile


def test_autofs_master_and_maps():
    entries, includes = parse_master("/sas /etc/auto.sas --timeout=300 -hard,rw\n/- file:/etc/auto.direct\n"
                                     "+dir:/etc/auto.master.d\n+auto.master\n/net -hosts\n")
    assert [(e.mount_point, e.map_type, e.map_name, e.options) for e in entries] == [
        ("/sas", "", "/etc/auto.sas", ("hard", "rw")), ("/-", "file", "/etc/auto.direct", ()),
        ("/net", "hosts", "", ())]
    assert [i for i, _ in includes] == ["dir:/etc/auto.master.d", "auto.master"]


@pytest.mark.parametrize("path, unit", [("/", "-"), ("/sas/data", "sas-data"), ("/sas-data", "sas\\x2ddata"),
                                        ("//sas//data/", "sas-data"), ("/.hidden", "\\x2ehidden")])
def test_mount_unit_names_are_systemd_escape_path(path, unit):
    assert escape_path(path) == unit


def _cv(value):
    return ConfiguredValue(value, f"src {value}")


def test_dirty_ratio_write_zeroes_bytes_only_when_it_changes():
    values = replay({}, [("vm.dirty_bytes", _cv("31457280"))])
    assert values["vm.dirty_ratio"].value == "0"  # the kernel's 20 zeroed by the bytes write
    same = replay(values, [("vm.dirty_ratio", _cv("0"))])
    assert same["vm.dirty_bytes"].value == "31457280"  # no change of the ratio: bytes stay
    changed = replay(values, [("vm.dirty_ratio", _cv("40"))])
    assert changed["vm.dirty_bytes"].value == "0" and "dirty_ratio_handler()" in changed["vm.dirty_bytes"].source


def test_out_of_range_writes_change_nothing():
    values = replay({}, [("vm.dirty_bytes", _cv("31457280")), ("vm.dirty_bytes", _cv("0")),
                         ("vm.dirty_ratio", _cv("101")), ("vm.dirty_ratio", _cv("abc"))])
    assert values["vm.dirty_bytes"].value == "31457280" and values["vm.dirty_ratio"].value == "0"


def test_background_forms_zero_each_other_on_every_write():
    values = replay({}, [("vm.dirty_background_bytes", _cv("314572800")), ("vm.dirty_background_ratio", _cv("10"))])
    assert values["vm.dirty_background_bytes"].value == "0"


def test_systemd_sysctl_writes_each_key_once_in_order_of_its_last_differing_assignment():
    order = systemd_sysctl_order([("a", _cv("1")), ("b", _cv("2")), ("a", _cv("1")), ("b", _cv("3"))])
    assert [(k, v.value) for k, v in order] == [("a", "1"), ("b", "3")]
    order = systemd_sysctl_order([("a", _cv("1")), ("b", _cv("2")), ("a", _cv("5"))])
    assert [k for k, _ in order] == ["b", "a"]
