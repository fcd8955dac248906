"""facts/tuned_version.py: the installed tuned's version, read from tuned/version.py as text,
and what it changes in a [vm] unit (facts/tuned.vm_dirty_option, vm_unit_stops)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tunewatch.content.catalog import Content
from tunewatch.facts.tuned import vm_dirty_option, vm_unit_stops
from tunewatch.facts.tuned_version import parse_version, read_tuned_version
from tunewatch.host.fs import FS

# tuned v2.22.0 tuned/version.py, verbatim
UPSTREAM_2_22 = ('TUNED_VERSION_MAJOR = 2\nTUNED_VERSION_MINOR = 22\nTUNED_VERSION_PATCH = 0\n\n'
                 'TUNED_VERSION_STR = "%d.%d.%d" % (TUNED_VERSION_MAJOR, TUNED_VERSION_MINOR, TUNED_VERSION_PATCH)\n')


def _layouts() -> dict:
    return Content().defaults.layouts["tuned"]


def _install(root, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_upstream_file_parses_and_code_is_never_taken():
    assert parse_version(UPSTREAM_2_22) == (2, 22, 0)
    assert parse_version(UPSTREAM_2_22.replace("TUNED_VERSION_PATCH = 0\n", "")) is None
    # an expression is not a number: the file is read, never run
    assert parse_version(UPSTREAM_2_22.replace("MINOR = 22", "MINOR = int('26')")) is None
    spaced = "TUNED_VERSION_MAJOR = 2  # major\nTUNED_VERSION_MINOR=26\nTUNED_VERSION_PATCH = 1\n"
    assert parse_version(spaced) == (2, 26, 1)


@pytest.mark.parametrize("rel", ["usr/lib/python3.9/site-packages/tuned/version.py",
                                 "usr/lib/python3/dist-packages/tuned/version.py",
                                 "usr/lib/python2.7/site-packages/tuned/version.py",
                                 "usr/local/lib/python3.11/dist-packages/tuned/version.py"])
def test_each_distribution_path_is_found(tmp_path, rel):
    _install(tmp_path, rel, UPSTREAM_2_22)
    found = read_tuned_version(FS(str(tmp_path)), _layouts())
    assert (found.version, found.source) == ((2, 22, 0), rel)


def test_unknown_when_absent_disagreeing_or_unreadable(tmp_path):
    fs_layouts = _layouts()
    assert read_tuned_version(FS(str(tmp_path)), fs_layouts).version is None
    _install(tmp_path, "usr/lib/python3.6/site-packages/tuned/version.py", UPSTREAM_2_22)
    _install(tmp_path, "usr/lib/python3.9/site-packages/tuned/version.py", UPSTREAM_2_22.replace("= 22", "= 25"))
    both = read_tuned_version(FS(str(tmp_path)), fs_layouts)
    assert both.version is None and "disagree" in both.source and "2.25.0" in both.source
    os.remove(tmp_path / "usr/lib/python3.9/site-packages/tuned/version.py")
    os.mkfifo(tmp_path / "usr/lib/python3.9/site-packages/tuned/version.py")  # never opened: no hang
    odd = read_tuned_version(FS(str(tmp_path)), fs_layouts)
    assert odd.version is None and "python3.9" in odd.source
    assert read_tuned_version(FS(str(tmp_path)), {}).version is None  # content without the table


@pytest.mark.parametrize(("version", "written"), [
    ((2, 24, 0), None),  # plugin_vm.py has no dirty_* option: "Unknown option", dropped
    ((2, 25, 0), ("dirty_bytes", "31457280")),
    ((2, 26, 0), ("dirty_bytes", "31457280"))])
def test_an_integer_option_is_written_from_2_25(version, written):
    option, value, refused = vm_dirty_option("dirty_bytes", "31457280", version)
    assert (None if refused else (option, value)) == written
    if written is None:
        assert "Unknown option" in refused and "2.24.0" in refused


@pytest.mark.parametrize(("version", "written", "stops"), [
    ((2, 24, 0), None, False),
    ((2, 25, 1), None, True),  # "must be an integer", then the UnboundLocalError ends the unit
    ((2, 26, 0), ("dirty_ratio", "40"), False)])
def test_a_percent_is_the_ratio_from_2_26(version, written, stops):
    option, value, refused = vm_dirty_option("dirty_bytes", "40%", version)
    assert (None if refused else (option, value)) == written
    assert vm_unit_stops("dirty_bytes", "40%", version) is stops
    assert vm_unit_stops("dirty_bytes", "1", version) is False  # too small: refused, the unit goes on


def test_collect_copies_the_version_file(tmp_path):
    """A snapshot scans like the host: tuned/version.py and /proc/cpuinfo are collected with the profiles."""
    host = tmp_path / "host"
    _install(host, "usr/lib/python3.9/site-packages/tuned/version.py", UPSTREAM_2_22)
    _install(host, "etc/tuned/active_profile", "virtual-guest\n")
    _install(host, "proc/sys/kernel/osrelease", "5.14.0-427.el9.x86_64\n")
    _install(host, "proc/cpuinfo", "processor\t: 0\nmodel name\t: AMD EPYC 7V12 64-Core Processor\n\n")
    out = tmp_path / "snap"
    subprocess.run(["tunewatch", "collect", "--root", str(host), str(out)], check=False, capture_output=True,
                   timeout=120)
    assert (out / "usr/lib/python3.9/site-packages/tuned/version.py").read_text() == UPSTREAM_2_22
    assert "AMD EPYC" in (out / "proc/cpuinfo").read_text()  # a unit's cpuinfo_regex is matched against it


def _persistent_object(scenario: str, key: str):
    """`key`'s object of vm-dirty-settings-persistent on a sysctl scenario's root."""
    from tunewatch.scan import engine
    root = os.path.join(os.path.dirname(__file__), "scenarios", "sysctl", scenario, "root")
    content = Content()
    result = engine.scan(content, content.resolve("azure-sas-grid-anf"), root)
    check = next(r for r in result.results if r.check == "vm-dirty-settings-persistent")
    return next(o for o in check.objects if o.object == key)


def test_a_refused_option_says_so_beside_the_value_that_stays():
    """The pass of tuned_2_25_refuses_percent_dirty_bytes names the [vm] line that wrote nothing and why."""
    dirty = _persistent_object("tuned_2_25_refuses_percent_dirty_bytes.pass", "vm.dirty_bytes")
    assert (dirty.status, dirty.predicted) == ("pass", "31457280")
    assert dirty.source.startswith("configured by etc/sysctl.d/90-sas.conf:2; ")
    assert "[vm] dirty_bytes = 40% writes nothing" in dirty.source and "tuned 2.25.0 takes N% from 2.26" in dirty.source


def test_a_dropped_option_nothing_else_sets_is_named_where_the_value_comes_from():
    """tuned_2_22_drops_vm_dirty_bytes: nothing sets vm.dirty_bytes at boot, and the source
    names the admin's [vm] line that tuned 2.22 drops, not only the kernel default; the fix
    says where else the value can go."""
    dirty = _persistent_object("tuned_2_22_drops_vm_dirty_bytes.fail", "vm.dirty_bytes")
    assert (dirty.status, dirty.predicted) == ("fail", "0")
    assert dirty.source.startswith("never applied: tuned profile sas-performance (etc/tuned/sas-performance/tuned.conf):"
                                   " [vm] dirty_bytes = 31457280 writes nothing: tuned 2.22.0 has no [vm] dirty_bytes")
    assert dirty.fix.change == "vm.dirty_bytes = 31457280" and "[sysctl]" in dirty.fix.note
    # a key the profile's [vm] unit never names keeps the plain kernel-default source
    other = _persistent_object("tuned_2_22_drops_vm_dirty_bytes.fail", "vm.dirty_expire_centisecs")
    assert "writes nothing" not in (other.source or "")
