"""Content error corpus: every malformed check, profile, tailoring or waiver file is a
content error that exits 1 and names the file, the line (where it has one) and the JSON
pointer, with no Python traceback (docs/snapshot-contract.md, Results).

Each tests/content_errors/<case>/ holds either `content/...` (files dropped into a copy of
checks/ at the same relative path) or a `tailoring.yaml` / `waivers.yaml` given to
`tunewatch scan --root tests/snapshots/examples/azure-m-tuned`. The expected file, line,
pointer and a message fragment of each case are in CASES below.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tunewatch.cli import main as cli

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
CORPUS = TESTS / "content_errors"
ROOT = str(TESTS / "snapshots" / "examples" / "azure-m-tuned")


@dataclass(frozen=True)
class Expect:
    file: str  # regular expression matched against the path as printed (content-relative for checks/)
    line: int | None
    pointer: str | None
    fragment: str
    xfail: str | None = None


CASES: dict[str, Expect] = {
    # checks
    "check_yaml_syntax": Expect(r"system/broken-syntax\.yaml", 4, None, "YAML syntax error"),
    "check_missing_title": Expect(r"system/no-title\.yaml", 1, "/", "'title' is a required property"),
    "check_bad_severity": Expect(r"system/bad-severity\.yaml", 5, "/severity", "'critical' is not one of"),
    "check_unknown_key": Expect(
        r"system/unknown-key\.yaml", 9, "/colour", "'colour' was unexpected"),
    "check_references_wrong_type": Expect(r"system/references-string\.yaml", 6, "/references", "not of type 'array'"),
    "check_id_not_file_name": Expect(r"system/irqbalance-gone\.yaml", 1, "/id", "does not match its file name"),
    "check_unknown_kind": Expect(r"system/unknown-kind\.yaml", 8, "/kind", "unknown check kind 'process_missing'"),
    "check_bad_var_type": Expect(r"network/queues-sixteen\.yaml", 10, "/vars/max_queues",
                                 "'sixteen' is not of type 'integer'"),
    "check_duplicate_key": Expect(r"system/duplicate-key\.yaml", 11, "/vars/process", "duplicate key 'process'"),
    "check_duplicate_id": Expect(r"storage/nic-queue-count\.yaml", 1, "/id", "duplicate check id 'nic-queue-count'"),
    "check_bad_applicability": Expect(r"system/bad-applicability\.yaml", 9, "/applicability/hypervisor", "'hypervisor'"),
    "check_bad_regex_in_vars": Expect(
        r"network/bad-regex\.yaml", 10, "/vars/patterns/1", "regex"),
    # a new folder under checks/ is an area of its own: its checks are loaded and validated
    "check_runtime_check_unknown": Expect(r"kernel/somaxconn-persistent\.yaml", 9, "/runtime_check",
                                          "runtime_check 'somaxconn' names no check of this content"),
    # a required variable nobody sets is the check's fault, not the profile's that selects it
    "check_required_var_unset": Expect(r"kernel/somaxconn\.yaml", 10, "/vars", "'source' is a required property"),
    # profiles
    "profile_unknown_check": Expect(r"profiles/typo\.yaml", 6, "/select/1", "unknown check id 'nic-queue-cnt'"),
    "profile_extends_unknown": Expect(r"profiles/child\.yaml", 4, "/extends", "unknown profile 'azure-sap-hana-v2'"),
    "profile_extends_loop": Expect(r"profiles/loop-[ab]\.yaml", 4, "/extends", "profile extends loop"),
    "profile_bad_var_type": Expect(r"profiles/sixteen\.yaml", 7, "/vars/nic-queue-count/max_queues",
                                   "'sixteen' is not of type 'integer'"),
    "profile_vars_unknown_check": Expect(r"profiles/vars-typo\.yaml", 6, "/vars/nic-queue-cnt",
                                         "unknown check id 'nic-queue-cnt'"),
    # tailoring
    "tailoring_unknown_check": Expect(r"tailoring\.yaml", 5, "/select/1", "unknown check id 'nfs-mount-optoins'"),
    "tailoring_var_wrong_type": Expect(r"tailoring\.yaml", 5, "/vars/nic-queue-count/max_queues",
                                       "'sixteen' is not of type 'integer'"),
    "tailoring_unknown_profile": Expect(r"tailoring\.yaml", 2, "/profile", "unknown profile 'azure-sap-hanna'"),
    "tailoring_bad_scope_regex": Expect(r"tailoring\.yaml", 8, "/scope/interfaces/exclude/0/name",
                                        "is not a 'regex'"),
    "tailoring_unknown_var": Expect(r"tailoring\.yaml", 5, "/vars/nic-queue-count", "'max_queue' was unexpected"),
    # waivers
    "waiver_missing_justification": Expect(r"waivers\.yaml", 2, "/waivers/0", "'justification' is a required"),
    "waiver_bad_date": Expect(r"waivers\.yaml", 4, "/waivers/0/expires", "bad expiry date"),
    "waiver_unknown_check": Expect(r"waivers\.yaml", 5, "/waivers/1/check", "unknown check id 'irqbalance-stopped'"),
    "waivers_list_not_mapping": Expect(r"waivers\.yaml", 1, "/", "expected a mapping"),
    "waiver_duplicate_key": Expect(r"waivers\.yaml", 5, "/waivers/0/expires", "duplicate key 'expires'"),
    # an unquoted `expires: 2026-06-30` is a YAML date and accepted (tests/test_cli.py); a time is not
    "waiver_time_not_date": Expect(r"waivers\.yaml", 4, "/waivers/0/expires", "give a day (YYYY-MM-DD), not a time"),
    "waivers_empty_file": Expect(r"waivers\.yaml", None, "/", "expected a mapping"),
    # an unquoted impossible date: PyYAML fails building it; the value is still named by line and pointer
    "waiver_unquoted_impossible_date": Expect(r"waivers\.yaml", 4, "/waivers/0/expires",
                                              "YAML value error: day is out of range for month"),
    "tailoring_unquoted_impossible_date": Expect(r"tailoring\.yaml", 6, "/unselect/0",
                                                 "YAML value error: month must be in 1..12"),
    # bombs and broken schemas: refused fast, in little memory, with file and reason
    "tailoring_billion_laughs": Expect(r"tailoring\.yaml", None, None, "expands to more than 50000 YAML nodes"),
    "waivers_deep_nesting": Expect(r"waivers\.yaml", 2, None, "nested deeper than 64 levels"),
    "check_billion_laughs": Expect(r"system/laughs\.yaml", None, None, "expands to more than 50000 YAML nodes"),
    "profile_deep_nesting": Expect(r"profiles/deep\.yaml", 2, None, "nested deeper than 64 levels"),
    "schema_without_id": Expect(r"schema/waivers\.schema\.json", None, None, 'schema has no "$id"'),
}


def _param(case: str):
    exp = CASES[case]
    marks = [pytest.mark.xfail(strict=True, reason=exp.xfail)] if exp.xfail else []
    return pytest.param(case, id=case, marks=marks)


def _invocations(case: str, tmp_path: Path) -> list[list[str]]:
    """The commands that must reject the case: validate-content and scan."""
    directory = CORPUS / case
    if (directory / "content").is_dir():
        content = tmp_path / "checks"
        shutil.copytree(REPO / "checks", content)
        shutil.copytree(directory / "content", content, dirs_exist_ok=True)
        return [["validate-content", "--content", str(content)],
                ["scan", "--root", ROOT, "--content", str(content)]]
    (user_file,) = directory.iterdir()
    option = "--" + user_file.stem  # --tailoring / --waivers
    return [["validate-content", option, str(user_file)], ["scan", "--root", ROOT, option, str(user_file)]]


def check_stderr(err: str, exp: Expect) -> None:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("tunewatch: error:")]
    assert len(lines) == 1, err
    where = rf"tunewatch: error: \S*{exp.file}" + (rf":{exp.line}:" if exp.line is not None else ":")
    assert re.match(where, lines[0]), f"{lines[0]!r} does not name {exp.file} line {exp.line}"
    if exp.pointer is not None:
        assert f" at {exp.pointer} " in lines[0], f"{lines[0]!r} lacks pointer {exp.pointer}"
    assert exp.fragment in lines[0], lines[0]


def test_corpus_is_complete() -> None:
    on_disk = {p.name for p in CORPUS.iterdir() if p.is_dir()}
    assert on_disk == set(CASES)
    assert len(CASES) >= 15


@pytest.mark.parametrize("case", [_param(c) for c in sorted(CASES)])
def test_content_error(case: str, tmp_path: Path, capsys) -> None:
    for argv in _invocations(case, tmp_path):
        rc = cli.main(argv)
        out, err = capsys.readouterr()
        assert rc == 1, f"{' '.join(argv)} exited {rc}: {out[-300:]}{err}"
        check_stderr(err, CASES[case])


@pytest.mark.parametrize("case", ["check_bad_var_type", "profile_extends_loop", "waiver_bad_date",
                                  "tailoring_var_wrong_type"])
def test_content_error_real_process(case: str, tmp_path: Path) -> None:
    """The same through a real process: exit status 1, one line on stderr, nothing on stdout."""
    for argv in _invocations(case, tmp_path):
        p = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", *argv], capture_output=True, text=True, timeout=60)
        assert p.returncode == 1, p.stderr
        assert p.stdout == ""
        check_stderr(p.stderr, CASES[case])


def test_missing_user_files_are_content_errors(tmp_path: Path, capsys) -> None:
    for option in ("--tailoring", "--waivers"):
        rc = cli.main(["scan", "--root", ROOT, option, str(tmp_path / "nope.yaml")])
        err = capsys.readouterr().err
        assert rc == 1 and "nope.yaml" in err and "cannot read" in err and "Traceback" not in err


def test_non_utf8_waivers_file(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "waivers.yaml"
    bad.write_bytes(b"waivers:\n  - check: nic-queue-count\n    justification: caf\xe9 machine down\n")
    rc = cli.main(["scan", "--root", ROOT, "--waivers", str(bad)])
    err = capsys.readouterr().err
    assert rc == 1 and "waivers.yaml" in err and "UTF-8" in err
