"""facts/tuned_vars.py against redhat-performance/tuned 2.28.0-rc.1 (2bfa442), rule by rule:
merger.py `_merge_two()` (variables units: replace, prepend, redefinition), variables.py
`add_variable()`/`expand_static()`/`add_from_file()`, loader.py `_expand_profile_dir()`,
commands.py `unquote()`, plugins/base.py `_process_assignment_modifiers()`; and the
kernel-side effect of a value that cannot be told (facts/sysctl_writes.py)."""

from __future__ import annotations

import pytest

from tunewatch.facts.sysctl_writes import UNTOLD, ConfiguredValue, write
from tunewatch.facts.tuned_vars import (
    TunedVariables,
    assigned,
    calls_function,
    profile_variables,
    unquote,
    with_profile_dir,
)
from tunewatch.host.fs import FS
from tunewatch.results import UNKNOWN


def _variables(tmp_path, *profiles: dict) -> dict[str, str]:
    loaded = [(f"p{i}", f"etc/tuned/p{i}/tuned.conf", sections) for i, sections in enumerate(profiles)]
    return profile_variables(FS(str(tmp_path)), loaded).values


def test_later_profile_redefines_in_place_and_appends(tmp_path):
    got = _variables(tmp_path, {"variables": {"a": "1", "b": "2"}}, {"variables": {"b": "3", "c": "${a}${b}"}})
    assert list(got.items()) == [("a", "1"), ("b", "3"), ("c", "13")]


def test_replace_drops_the_older_variables(tmp_path):
    got = _variables(tmp_path, {"variables": {"a": "1"}}, {"variables": {"replace": "1", "b": "${a}"}})
    assert got == {"b": "${a}"}  # `a` is gone: the reference stays as written


def test_prepend_puts_new_names_first_and_keeps_redefined_in_place(tmp_path):
    # merger.py: `for variable in reversed(unit.options): if variable not in overwritten: move_to_end(last=False)`
    got = _variables(tmp_path, {"variables": {"a": "1", "b": "2"}},
                     {"variables": {"prepend": "1", "x": "${b}", "b": "5", "y": "9"}})
    assert list(got) == ["x", "y", "a", "b"]
    assert got["x"] == "${b}"  # defined before b in tuned's order: b is not known yet


def test_a_section_of_type_variables_counts_and_control_options_are_not_variables(tmp_path):
    got = _variables(tmp_path, {"mine": {"type": "variables", "enabled": "0", "k": "v"}, "main": {"x": "y"}})
    assert got == {"k": "v"}


def test_invalid_names_are_refused_and_escapes_undone(tmp_path):
    got = _variables(tmp_path, {"variables": {"a-b": "1", "ok": "x", "lit": r"\${ok}", "both": r"${ok}\${ok}"}})
    assert got == {"ok": "x", "lit": "${ok}", "both": "x${ok}"}


def test_one_pass_replacement_does_not_expand_a_value_again():
    v = TunedVariables()
    v.values.update({"a": "${b}", "b": "2"})  # as if `a` had been defined before `b` existed
    assert v.expand("${a}/${b}/${c}") == "${b}/2/${c}"


def test_include_reads_a_variables_file_and_a_missing_one_adds_nothing(tmp_path):
    d = tmp_path / "etc/tuned/p0"
    d.mkdir(parents=True)
    (d / "site.vars").write_text("dirty = 31457280   # 30 MiB\n[any]\nexpire=${dirty}\nflag\n")
    got = _variables(tmp_path, {"variables": {"include": "/etc/tuned/p0/site.vars", "after": "${expire}"}})
    assert got == {"dirty": "31457280", "expire": "31457280", "after": "31457280"}
    assert _variables(tmp_path, {"variables": {"include": "/etc/tuned/nowhere.vars", "x": "1"}}) == {"x": "1"}


def test_profile_dir_and_quotes():
    assert with_profile_dir("${i:PROFILE_DIR}/a:\\${i:PROFILE_DIR}", "usr/lib/tuned/sap/tuned.conf") == \
        "/usr/lib/tuned/sap/a:\\${i:PROFILE_DIR}"
    assert unquote('"4096 87380"') == "4096 87380"
    assert unquote('"a" "b"') == 'a" "b'  # ^"(.*)"$: only the outer pair
    assert unquote('"a') == '"a'


def test_functions_are_found_unless_escaped():
    assert calls_function("${f:exec:/bin/echo:1}")
    assert calls_function("x ${f:cpulist_invert:1}")
    assert not calls_function("\\${f:exec:x}")
    assert not calls_function("${foo}")


@pytest.mark.parametrize(("value", "current", "written"), [
    ("300", "500", "300"),     # no modifier: as given
    (">", "500", ">"),         # one character: as given
    (">300", "500", None),     # not greater: nothing
    (">700", "500", "700"),
    ("<300", "500", "300"),
    ("<700", "500", None),
    (">500", "500", None),     # equal is neither
    (">x", "500", ">x"),       # not integers: the value as given, `>` included
    (">300", "4096 87380", ">300"),
    ("< 300", " 500", " 300"),  # Python's int() takes the blanks (tuned is Python); the rest as written
])
def test_assignment_modifiers(value, current, written):
    assert assigned(value, current) == written


def test_an_untold_write_of_a_paired_limit_makes_both_forms_unknown_unless_the_other_is_zero():
    assert UNTOLD == UNKNOWN  # the text kinds/sysctl shows as the prediction
    values = {"vm.dirty_ratio": ConfiguredValue("40", "a")}
    write(values, "vm.dirty_bytes", ConfiguredValue(UNTOLD, "tuned"))
    assert values["vm.dirty_bytes"].value == UNTOLD and values["vm.dirty_ratio"].value == UNTOLD
    values = {"vm.dirty_ratio": ConfiguredValue("0", "a")}
    write(values, "vm.dirty_bytes", ConfiguredValue(UNTOLD, "tuned"))
    assert values["vm.dirty_ratio"].value == "0"


# plugin_vm.py (tuned >= 2.26) `_dirty_bytes()`, `_dirty_background_bytes()`, `_dirty_option()`
@pytest.mark.parametrize(("option", "value", "written"), [
    ("dirty_bytes", "40%", ("dirty_ratio", "40")),  # throughput-performance 2.26
    ("dirty_bytes", " 30% ", ("dirty_ratio", "30")),  # virtual-guest 2.26: value.strip().endswith("%")
    ("dirty_background_bytes", "10%", ("dirty_background_ratio", "10")),
    ("dirty_bytes", "31457280", ("dirty_bytes", "31457280")),
    ("dirty_ratio", "40", ("dirty_ratio", "40")),
    ("dirty_bytes", "8192", ("dirty_bytes", "8192")),  # twice the page size: the lowest taken
    ("dirty_bytes", "${f:virt_check:1:2}", ("dirty_bytes", "${f:virt_check:1:2}")),  # not checked: unknown later
])
def test_vm_dirty_option_writes(option, value, written):
    from tunewatch.facts.tuned import vm_dirty_option
    assert vm_dirty_option(option, value) == (*written, None)


@pytest.mark.parametrize(("option", "value", "why"), [
    ("dirty_bytes", "30M", "must be an integer"),  # `_dirty_option()`: int(value) raises ValueError
    ("dirty_bytes", "8191", "must be at least twice the page size (8192)"),  # `_check_twice_pagesize()`
    ("dirty_bytes", "101%", "dirty_ratio = '101' must be between 0 and 100"),  # `_check_ratio()` on the ratio
    ("dirty_ratio", "-1", "must be between 0 and 100"),
    ("dirty_background_bytes", "0", "must be positive"),  # `_check_positive()`
    ("dirty_ratio", "40%", "must be an integer"),  # only the *_bytes options take a `%`
])
def test_vm_dirty_option_refuses(option, value, why):
    from tunewatch.facts.tuned import vm_dirty_option
    refused = vm_dirty_option(option, value)[2]
    assert refused is not None and why.replace("must be an integer", "is not an integer") in refused


@pytest.mark.parametrize(("pattern", "applied"), [("^Linux sas", True), ("^Linux hana", False)])
def test_uname_regex_takes_the_variables(tmp_path, pattern, applied):
    """loader.py `load()`: `_expand_vars_in_regexes()` after the merge, so a unit's uname_regex
    may name a variable; units/manager.py `create()` then matches it against the uname."""
    from tunewatch.content.catalog import Content
    from tunewatch.facts.tuned import read_active_tuned
    (tmp_path / "etc/tuned/p").mkdir(parents=True)
    (tmp_path / "etc/tuned/active_profile").write_text("p\n")
    (tmp_path / "etc/tuned/p/tuned.conf").write_text(
        f"[variables]\nhost_re={pattern}\n\n[sysctl]\nuname_regex=${{host_re}}\nvm.swappiness=5\n")
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/hostname").write_text("sas01\n")
    (tmp_path / "proc/sys/kernel/osrelease").write_text("5.14.0-427.el9.x86_64\n")
    (tmp_path / "proc/sys/kernel/version").write_text(RHEL94_VERSION)
    profile = read_active_tuned(FS(str(tmp_path)), Content().defaults.layouts["tuned"])
    assert profile is not None and ("sysctl" in profile.applied) is applied
    assert ("vm.swappiness" in profile.sysctl) is applied


@pytest.mark.parametrize("scenario", ["tuned_vm_unit_writes_bytes_before_ratio.fail",
                                      "tuned_2_26_dirty_bytes_percent_writes_ratio.fail",
                                      "tuned_vm_plugin_after_sysctl_zeroes_bytes.fail",
                                      "tuned_2_26_virtual_guest_without_reapply_zeroes_bytes.fail"])
def test_the_fix_for_a_vm_unit_that_zeroes_the_bytes_makes_it_pass(tmp_path, scenario):
    """kinds/sysctl._vm_unit_fix(): the [vm] lines it gives, put where it says (merged into the
    profile's [vm] section, or a new profile that includes the last one, then activated as
    its note says), leave vm.dirty_bytes at the wanted value after the next boot; and where a
    [sysctl] unit follows the [vm] one, the usual fix (the drop-in, reapply_sysctl) does."""
    import re
    import shutil
    from pathlib import Path

    from tunewatch.content.catalog import Content
    from tunewatch.scan import engine

    root = tmp_path / "root"
    shutil.copytree(Path(__file__).parent / "scenarios" / "sysctl" / scenario / "root", root, symlinks=True)
    content = Content()
    profile = content.resolve("azure-sas-grid-anf")

    def dirty_bytes():
        result = engine.scan(content, profile, str(root))
        check = next(r for r in result.results if r.check == "vm-dirty-settings-persistent")
        return next(o for o in check.objects if o.object == "vm.dirty_bytes")

    before = dirty_bytes()
    assert before.status == "fail" and before.fix is not None
    target = root / before.fix.file.lstrip("/")
    if before.fix.file == "/etc/tuned/tuned-main.conf":
        # a [sysctl] unit follows the [vm] one: reapply_sysctl writes the drop-in again after it
        from tunewatch.kinds.sysctl import SYSCTL_FILE
        kept = [line for line in (target.read_text() if target.exists() else "").splitlines()
                if not line.startswith("reapply_sysctl")]
        target.write_text("\n".join([*kept, before.fix.change]) + "\n")
        (root / SYSCTL_FILE.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / SYSCTL_FILE.lstrip("/")).write_text("vm.dirty_bytes = 31457280\n")
        after = dirty_bytes()
        assert (after.status, after.predicted) == ("pass", "31457280"), after.message
        return
    assert before.fix.file.endswith("/tuned.conf")
    if target.exists():  # the lines go into the profile's own [vm] section
        text = target.read_text()
        section, _, lines = before.fix.change.partition("\n")
        text = text.replace(section + "\n", before.fix.change + "\n", 1) if section in text else \
            text + "\n" + before.fix.change + "\n"
        target.write_text(text)
    else:
        target.parent.mkdir(parents=True)
        target.write_text(before.fix.change + "\n")
    (root / "etc/tuned/active_profile").write_text(re.search(r"tuned-adm profile (.+)$", before.fix.note).group(1))
    after = dirty_bytes()
    assert (after.status, after.predicted) == ("pass", "31457280"), after.message


def test_remediate_leaves_a_vm_unit_zeroing_to_the_admin():
    """No sysctl.d drop-in wins over a tuned [vm] unit that zeroes the bytes after it: the
    plan says what to change in which profile (a manual step), and writes no drop-in for it."""
    from pathlib import Path

    from tunewatch.content.catalog import Content
    from tunewatch.remediate.hostview import scan_host
    from tunewatch.remediate.plan import build_plan
    from tunewatch.remediate.steps import MANUAL

    root = Path(__file__).parent / "scenarios/sysctl/tuned_2_26_dirty_bytes_percent_writes_ratio.fail/root"
    content = Content()
    plan = build_plan(scan_host(content, content.resolve("azure-sas-grid-anf"), str(root)))
    mine = [s for s in plan.steps if s.check == "vm-dirty-settings-persistent"]
    assert [s.phase for s in mine] == [MANUAL]
    assert "/etc/tuned/throughput-performance-tunewatch/tuned.conf" in mine[0].summary
    assert "drop=dirty_ratio" in mine[0].summary


RHEL94_VERSION = "#1 SMP PREEMPT_DYNAMIC Wed Apr 10 10:29:16 EDT 2024\n"  # proc/sys/kernel/version of 5.14.0-427


def _selection_root(tmp_path, units: str, main: str = "", cpuinfo: str | None = None,
                    release: str = "5.14.0-427.el9.x86_64\n", version: str | None = RHEL94_VERSION,
                    arch: str | None = None):
    from tunewatch.content.catalog import Content
    from tunewatch.facts.tuned import read_active_tuned
    (tmp_path / "etc/tuned/p").mkdir(parents=True)
    (tmp_path / "etc/tuned/active_profile").write_text("p\n")
    (tmp_path / "etc/tuned/tuned-main.conf").write_text(main)
    (tmp_path / "etc/tuned/p/tuned.conf").write_text(units)
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/hostname").write_text("sas01\n")
    (tmp_path / "proc/sys/kernel/osrelease").write_text(release)
    if version is not None:
        (tmp_path / "proc/sys/kernel/version").write_text(version)
    if arch is not None:
        (tmp_path / "proc/sys/kernel/arch").write_text(arch)
    if cpuinfo is not None:
        (tmp_path / "proc/cpuinfo").write_text(cpuinfo)
    return read_active_tuned(FS(str(tmp_path)), Content().defaults.layouts["tuned"])


AMD_UNIT = "[sysctl.amd]\ntype=sysctl\ncpuinfo_regex=model name\\s+:.*\\bAMD\\b\nvm.swappiness=5\n"


@pytest.mark.parametrize(("main", "cpuinfo", "applied", "unknown"), [
    ("", "model name\t: AMD EPYC 7V12 64-Core Processor\n", True, False),
    ("", "model name\t: Intel(R) Xeon(R) Platinum 8272CL\n", False, False),
    ("", None, False, True),  # a snapshot without /proc/cpuinfo
    ("cpuinfo_string = AMD\n", None, False, False),  # tuned-main.conf's string replaces /proc/cpuinfo
    ("cpuinfo_string = model name : AMD\n", "model name\t: Intel\n", True, False)])
def test_a_cpuinfo_regex_is_matched_as_tuned_matches_it(tmp_path, main, cpuinfo, applied, unknown):
    """units/manager.py `_unit_matches_cpuinfo()`: re.search(regex, tuned-main.conf cpuinfo_string
    or /proc/cpuinfo, re.MULTILINE); without either, whether the unit starts is not known."""
    profile = _selection_root(tmp_path, AMD_UNIT, main, cpuinfo)
    assert profile is not None
    assert ("sysctl.amd" in profile.applied, "sysctl.amd" in profile.unknown_start) == (applied, unknown)


def test_a_unit_the_uname_rules_out_needs_no_cpuinfo(tmp_path):
    """The thunderx units of throughput-performance on x86_64: uname_regex=aarch64 does not
    match, so tuned skips them whatever /proc/cpuinfo says (and it is not read); a
    uname_string in tuned-main.conf is matched instead of the uname."""
    units = AMD_UNIT.replace("cpuinfo_regex", "uname_regex=aarch64\ncpuinfo_regex")
    assert _selection_root(tmp_path / "a", units).unknown_start == {}
    assert not (tmp_path / "a/proc/cpuinfo").exists()
    arm = _selection_root(tmp_path / "b", units, "uname_string = aarch64\n", "model name\t: AMD\n")
    assert arm.applied == ("sysctl.amd",)


def test_the_uname_is_os_uname_of_the_root_kernel(tmp_path):
    """units/manager.py matches uname_regex against `" ".join(os.uname())`: on the live root
    the five proc/sys/kernel fields (and this process's machine on a kernel without
    kernel.arch) give exactly that string."""
    import os

    from tunewatch.facts.tuned import _uname
    assert _uname(FS("/")) == (" ".join(os.uname()), "")


def test_a_uname_regex_on_the_machine_is_known_only_where_the_machine_is(tmp_path):
    """`uname_regex=x86_64`: Ubuntu's release names no machine, so a snapshot of a kernel
    before 6.1 (no kernel.arch) cannot tell whether tuned starts the unit; with kernel.arch,
    or RHEL's release suffix, it can. Before, the uname was `Linux <host> <release>` and the
    unit was taken as skipped on Ubuntu: keys it writes were judged unwritten."""
    units = "[sysctl.x86]\ntype=sysctl\nuname_regex=x86_64\nvm.swappiness=5\n"
    ubuntu = "6.8.0-1015-azure\n"
    untold = _selection_root(tmp_path / "a", units, release=ubuntu)
    assert untold.applied == () and "proc/sys/kernel/arch" in untold.unknown_start["sysctl.x86"]  # in steps only
    known = _selection_root(tmp_path / "b", units, release=ubuntu, arch="x86_64\n")
    assert known.applied == ("sysctl.x86",) and known.unknown_start == {}
    assert _selection_root(tmp_path / "c", units).unknown_start == {}  # 5.14.0-427.el9.x86_64
    arm = _selection_root(tmp_path / "d", units, release="5.14.0-427.el9.aarch64\n")
    assert arm.applied == () and arm.unknown_start == {}
    no_version = _selection_root(tmp_path / "e", units, version=None)
    assert "proc/sys/kernel/version" in no_version.unknown_start["sysctl.x86"]
