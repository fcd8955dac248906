"""Command line: several reports from one scan, --rule/--skip-rule, "did you mean",
shell completion (shtab), `paths`, `python -m tunewatch`, waivers with YAML dates."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tunewatch.content.catalog import Content

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
EXAMPLE = str(TESTS / "snapshots" / "examples" / "azure-m-rebooted")


def tunewatch(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunewatch", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def scan(*args: str) -> subprocess.CompletedProcess:
    return tunewatch("scan", "--root", EXAMPLE, "--profile", "azure-sap-hana", *args)


def test_one_scan_writes_every_report(tmp_path):
    p = {fmt: tmp_path / f"r.{fmt}" for fmt in ("json", "junit", "prometheus", "html", "xccdf", "arf", "text")}
    run = scan("--report", f"json={p['json']}", "--report", f"junit={p['junit']}",
               "--output-prometheus", str(p["prometheus"]), "--output-html", str(p["html"]),
               "--output-xccdf", str(p["xccdf"]), "--output-arf", str(p["arf"]), "--output-text", str(p["text"]))
    assert run.returncode == 2, run.stderr
    assert "summary: 6 fail" in run.stdout  # the primary report (text) still goes to stdout
    report = json.loads(p["json"].read_text())
    started = report["scan"]["started_at"]
    # the same scan, not six: every report carries the same start time and verdicts
    prom = p["prometheus"].read_text()
    assert any(line.startswith("tunewatch_last_scan_timestamp_seconds") and abs(float(line.split()[-1]) - started) < 1
               for line in prom.splitlines()), prom[:400]
    fails = sum(o["status"] == "fail" for r in report["results"] for o in r["objects"])
    assert ET.parse(p["junit"]).getroot().get("failures") == str(fails)
    assert p["text"].read_text().count("FAIL ") == report["summary"]["fail"]
    for r in report["results"]:
        assert f'id="check-{r["check"]}"' in p["html"].read_text()
    assert p["xccdf"].read_text().count("<xccdf:rule-result ") == len(report["results"])
    assert "asset-report-collection" in p["arf"].read_text()


def test_only_one_report_may_use_stdout():
    run = scan("--report", "json=-")
    assert run.returncode == 1 and "only one report can go to standard output" in run.stderr
    run = scan("--format", "json", "--output", os.devnull, "--report", "text=-")
    assert run.returncode == 2 and "summary:" in run.stdout


def test_report_spec_is_checked():
    run = scan("--report", "yaml=/tmp/x")
    assert run.returncode == 1 and "FORMAT=FILE" in run.stderr


def test_rule_and_skip_rule(tmp_path):
    out = tmp_path / "r.json"
    run = scan("--rule", "nic-queue-count", "--rule", "irqbalance-disabled", "--format", "json", "-o", str(out))
    assert run.returncode == 2, run.stderr
    assert [r["check"] for r in json.loads(out.read_text())["results"]] == ["irqbalance-disabled", "nic-queue-count"]
    all_checks = [sel.check.id for sel in Content().resolve("azure-sap-hana").checks]
    run = scan("--skip-rule", "irqbalance-disabled", "--skip-rule", "nic-irq-affinity", "--format", "json", "-o", str(out))
    assert [r["check"] for r in json.loads(out.read_text())["results"]] == [
        c for c in all_checks if c not in ("irqbalance-disabled", "nic-irq-affinity")]
    # skipping every failing check leaves a passing scan
    failing = [r["check"] for r in json.loads(scan("--format", "json").stdout)["results"] if r["status"] == "fail"]
    run = scan(*[a for c in failing for a in ("--skip-rule", c)])
    assert run.returncode == 0, run.stdout


@pytest.mark.parametrize("args, fragment", [
    (("--rule", "nic-queue-cont"), "unknown check id 'nic-queue-cont' (did you mean 'nic-queue-count'?)"),
    (("--skip-rule", "irqbalance-disable"), "did you mean 'irqbalance-disabled'"),
    (("--rule", "nfs-readahead"), "check 'nfs-readahead' is not in profile 'azure-sap-hana'"),
])
def test_rule_errors(args, fragment):
    run = scan(*args)
    assert run.returncode == 1 and fragment in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_did_you_mean_for_profiles_and_checks():
    run = tunewatch("scan", "--root", EXAMPLE, "--profile", "azure-sap-hanna")
    assert run.returncode == 1 and "did you mean 'azure-sap-hana'" in run.stderr, run.stderr
    run = tunewatch("checks", "nic-irq-afinity")
    assert run.returncode == 1 and "did you mean 'nic-irq-affinity'" in run.stderr
    run = tunewatch("profiles", "bigip-ve")
    assert run.returncode == 1 and "did you mean 'bigip-ve-esxi'" in run.stderr
    run = tunewatch("scan", "--root", EXAMPLE, "--profile", "zzzz")
    assert run.returncode == 1 and "did you mean" not in run.stderr and "known: auto" in run.stderr


def test_waiver_with_unquoted_yaml_date(tmp_path):
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text("waivers:\n  - check: irqbalance-disabled\n    justification: vendor case 1234 open\n"
                       "    expires: 2099-12-31\n"   # unquoted: PyYAML reads a datetime.date
                       "  - check: nic-queue-count\n    justification: vendor case 1234 open\n"
                       "    expires: '2000-01-01'\n")  # quoted and expired
    out = tmp_path / "r.json"
    run = scan("--waivers", str(waivers), "--format", "json", "-o", str(out))
    assert run.returncode == 2, run.stderr
    status = {r["check"]: r for r in json.loads(out.read_text())["results"]}
    assert status["irqbalance-disabled"]["status"] == "waived"
    assert "waived until 2099-12-31" in status["irqbalance-disabled"]["objects"][0]["message"]
    assert status["nic-queue-count"]["status"] == "fail"
    assert "waiver expired on 2000-01-01" in status["nic-queue-count"]["objects"][0]["message"]
    waivers.write_text("waivers:\n  - check: irqbalance-disabled\n    justification: vendor case 1234 open\n"
                       "    expires: 2026-02-30\n")
    run = scan("--waivers", str(waivers))
    assert run.returncode == 1 and str(waivers) in run.stderr and "day is out of range" in run.stderr
    assert "Traceback" not in run.stderr
    waivers.write_text("waivers:\n  - check: irqbalance-disable\n    justification: vendor case 1234 open\n"
                       "    expires: 2099-01-01\n")
    run = scan("--waivers", str(waivers))
    assert run.returncode == 1 and "did you mean 'irqbalance-disabled'" in run.stderr


def test_paths_lists_shipped_directories():
    run = tunewatch("paths", cwd="/")
    assert run.returncode == 0, run.stderr
    paths = dict(line.split(None, 1) for line in run.stdout.splitlines())
    assert Path(paths["checks"], "schema", "waivers.schema.json").is_file()
    assert Path(paths["rules"], "tunewatch.rules.yml").is_file()
    assert Path(paths["dashboards"], "tunewatch-fleet.json").is_file()
    assert Path(paths["runbook"]).is_file()
    assert tunewatch("paths", "rules").stdout.strip() == paths["rules"]
    run = tunewatch("paths", "rulez")
    assert run.returncode == 1 and "did you mean 'rules'" in run.stderr


def test_python_dash_m_and_version():
    run = tunewatch("--version")
    assert run.returncode == 0 and run.stdout.startswith("tunewatch ")


def test_bash_completion_script(tmp_path):
    pytest.importorskip("shtab")
    run = tunewatch("completion", "bash")
    assert run.returncode == 0, run.stderr
    script = tmp_path / "tunewatch.bash"
    script.write_text(run.stdout)
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, timeout=30).returncode == 0
    # ask bash itself what it completes after `tunewatch scan --profile a`
    probe = (f"source {script}\nCOMP_WORDS=(tunewatch scan --profile az); COMP_CWORD=3; "
             "COMP_LINE='tunewatch scan --profile az'; COMP_POINT=${#COMP_LINE}\n"
             "_shtab_tunewatch tunewatch az scan --profile\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert set(done.stdout.split()) == {"azure-sap-hana", "azure-sas-grid-anf"}, done.stdout + done.stderr
    probe = probe.replace("--profile az", "--rule nic-irq-a").replace("COMP_CWORD=3", "COMP_CWORD=3") \
        .replace("az scan --profile", "nic-irq-a scan --rule").replace("(tunewatch scan --profile az)",
                                                                        "(tunewatch scan --rule nic-irq-a)")
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert set(done.stdout.split()) == {"nic-irq-affinity", "nic-irq-affinity-persistent"}, done.stdout + done.stderr


def test_zsh_completion_script(tmp_path):
    pytest.importorskip("shtab")
    run = tunewatch("completion", "zsh")
    assert run.returncode == 0 and "#compdef tunewatch" in run.stdout
    if shutil.which("zsh"):
        script = tmp_path / "_tunewatch"
        script.write_text(run.stdout)
        assert subprocess.run(["zsh", "-n", str(script)], capture_output=True, timeout=30).returncode == 0


@pytest.mark.parametrize("argv", [
    ["scan", "--root", "/tmp/x", "--format", "json", "--report", "xccdf=r.xml", "--output-html", "h.html", "-v"],
    ["scan", "--profile", "azure-sap-hana", "--rule", "nic-queue-count", "--timeout", "2m", "--metrics.detail"],
    ["serve", "--web.listen-address", "127.0.0.1:0", "--scan.interval", "30s", "--root", "/"],
    ["collect", "/tmp/snap", "-v"],
    ["checks", "-v", "nic-irq-affinity"],
    ["profiles", "azure-sap-hana"],
    ["validate-content", "--waivers", "w.yaml"],
    ["paths", "rules"],
    ["completion", "zsh"],
    ["export", "goss", "--profile", "bigip-ve-esxi", "--allow-command"],
    ["remediate", "--format", "ansible", "--root", "/tmp/x"],
])
def test_a_subcommands_own_parser_parses_as_the_whole_command_line(argv):
    """cli.build_parser(only=<command>) builds that subcommand alone (start-up, issue 22):
    every valid command line must come out the same as from the whole parser."""
    from tunewatch.cli import main as cli
    assert cli.command_of(argv) == argv[0]
    own = vars(cli.build_parser(argv[0]).parse_args(argv))
    whole = vars(cli.build_parser().parse_args(argv))
    assert own.pop("run", None) is whole.pop("run", None)  # export/remediate: the same function
    assert own == whole


def test_an_unknown_command_gets_the_whole_parsers_choices(capsys):
    from tunewatch.cli import main as cli
    assert cli._main(["scna", "--root", "/"]) == 1
    err = capsys.readouterr().err
    assert "invalid choice:" in err and "scna" in err  # (quotes around choices differ between Pythons)
    assert all(name in err.split("choose from", 1)[1] for name in ("scan", "collect", "paths", "remediate"))


def test_an_unknown_option_gets_the_subcommands_usage():
    out = scan("--bogus")
    assert out.returncode == 1
    assert "usage: tunewatch scan " in out.stderr and "tunewatch scan: error: unrecognized arguments: --bogus" \
        in out.stderr, out.stderr


def test_serve_help_reads_once_and_documents_every_flag():
    text = tunewatch("serve", "--help").stdout
    flat = " ".join(text.split())
    assert "a VM carrying a VM" not in flat and "every VM carrying this vSphere tag" in flat
    for flag in ("--log.level", "--log.format"):
        block = flat.split(f"{flag} {{", 1)[1].split("}", 1)[1].split(" --", 1)[0]
        assert len(block.split()) >= 4, (flag, block)  # a sentence of help after the choices


def test_a_missing_textfile_directory_is_named(tmp_path):
    out = scan("--format", "prometheus", "--output", str(tmp_path / "absent" / "tunewatch.prom"))
    assert out.returncode == 1
    assert f"textfile directory does not exist: '{tmp_path / 'absent'}'" in out.stderr, out.stderr
    assert ".tmp" not in out.stderr


def test_a_gossfile_whose_every_test_would_be_skipped_is_refused(tmp_path):
    """--files-in-root skips the runtime tests (they would judge this machine); on the Azure
    example that leaves none, and goss passes a file of skipped tests: refused, no file."""
    output = tmp_path / "goss.yaml"
    out = tunewatch("export", "goss", "--root", EXAMPLE, "--profile", "azure-sap-hana", "--files-in-root",
                    "--output", str(output))
    assert out.returncode == 1 and not output.exists()
    assert "would be skipped" in out.stderr and "irqbalance-disabled irqbalance" in out.stderr, out.stderr


def test_the_readme_remediation_of_a_shipped_example_says_why_it_refuses(tmp_path):
    """A shipped example records no boot id: the script says so (not "boot unknown") and
    TUNEWATCH_FORCE=1, as the README says, applies the persistent part to a copy."""
    copy = tmp_path / "copy"
    shutil.copytree(EXAMPLE, copy, symlinks=True)
    script = tmp_path / "fix.sh"
    assert scan().returncode == 2
    assert tunewatch("remediate", "--root", EXAMPLE, "--profile", "azure-sap-hana", "-o", str(script)).returncode == 0
    env = {**os.environ, "TUNEWATCH_ROOT": str(copy)}
    refused = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode == 3 and "the scan recorded no boot id" in refused.stderr, refused.stderr
    assert "boot unknown" not in refused.stderr
    forced = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                            env={**env, "TUNEWATCH_FORCE": "1"}, timeout=120)
    assert forced.returncode == 0 and "change(s)" in forced.stdout, forced.stderr
