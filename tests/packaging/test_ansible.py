"""contrib/ansible/rollout.yml: `ansible-playbook --syntax-check` and `ansible-lint
--profile production` clean; the README's command, run for real on localhost (local
connection, throwaway config and textfile directories, --skip-tags package,units), writes
the TUNEWATCH_ARGS it names, and the textfile unit then runs the scan with them; the whole
first play passes --check on a host without the package; its Prometheus play, run locally,
writes file_sd targets that `promtool check config` accepts with the example scrape jobs.

ansible-playbook comes from the test extras (ansible-core); ansible-lint needs Python >= 3.10,
so .ci/install puts it in a venv of its own (build/ci/tools) instead of the test extras, with
the `ansible` package for its collections (community.general: zypper), which every run here
finds through ANSIBLE_COLLECTIONS_PATH.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from .conftest import EXAMPLE, REPO, VERSION, artefact, clean_env, missing, tool, unit_command

PLAYBOOKS = REPO / "contrib" / "ansible"
TOOLS = REPO / "build" / "ci" / "tools"


def executable(name: str) -> str:
    for candidate in (Path(sys.executable).parent / name, REPO / "build" / "ci" / "tools" / "bin" / name):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if not found:
        missing(f"{name} not installed (.ci/install installs it)")
    return found


def collections() -> str:
    """The site-packages of build/ci/tools, whose `ansible` package brings community.general."""
    found = glob.glob(str(TOOLS / "lib" / "python3*" / "site-packages" / "ansible_collections" / "community" / "general"))
    if not found:
        missing("community.general not installed (.ci/install puts the ansible package in build/ci/tools)")
    return str(Path(found[0]).parents[2])


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = clean_env(ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(kwargs.pop("tmp")), ANSIBLE_HOME=str(kwargs.pop("home")),
                    ANSIBLE_COLLECTIONS_PATH=collections())
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env,
                          cwd=kwargs.pop("cwd", PLAYBOOKS), **kwargs)


def readme_command() -> list[str]:
    """The ansible-playbook command of contrib/ansible/README.md, as the shell splits it."""
    text = (PLAYBOOKS / "README.md").read_text()
    [line] = [ln for block in re.findall(r"```sh\n(.*?)```", text, re.S) for ln in block.splitlines()
              if ln.startswith("ansible-playbook ")]
    return shlex.split(line)


def env_file(path: Path) -> dict[str, str]:
    """An EnvironmentFile= as systemd reads it (systemd.exec(5)): KEY=VALUE lines, a value in
    double quotes with backslash escapes, or unquoted."""
    values = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if value.startswith('"') and value.endswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        values[key.strip()] = value
    return values


def local_inventory(tmp_path: Path) -> Path:
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("[tunewatch_hosts]\n"
                         f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    return inventory


def test_syntax_check(tmp_path):
    done = run([executable("ansible-playbook"), "--syntax-check", "-i", "inventory.example.ini", "rollout.yml"],
               tmp=tmp_path, home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ansible_lint_production_profile(tmp_path):
    done = run([executable("ansible-lint"), "--profile", "production", "--nocolor", "rollout.yml"],
               tmp=tmp_path, home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Profile 'production' was required, and it passed" in done.stdout + done.stderr


def test_prometheus_play_writes_targets_promtool_accepts(tmp_path):
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("[tunewatch_hosts]\nhana01.example.com\nsas01.example.com\n[prometheus]\n"
                         f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    targets = tmp_path / "file_sd" / "tunewatch-textfile.yml"
    # only the Prometheus play: the hosts of the first play are not in --limit
    done = run([executable("ansible-playbook"), "-i", str(inventory), "--limit", "localhost", "-e", "ansible_become=false",
                "-e", f"tunewatch_targets_file={targets}", "rollout.yml"], tmp=tmp_path, home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert yaml.safe_load(targets.read_text()) == [
        {"targets": ["hana01.example.com:9100", "sas01.example.com:9100"], "labels": {"tunewatch": "textfile"}}]
    config = yaml.safe_load((PLAYBOOKS / "prometheus.example.yml").read_text())
    config.pop("rule_files")
    shutil.copy(targets, targets.with_name("tunewatch-serve.yml"))
    for job in config["scrape_configs"]:
        job["file_sd_configs"][0]["files"] = [str(targets.parent / Path(f).name) for f in job["file_sd_configs"][0]["files"]]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    check = subprocess.run([tool("promtool"), "check", "config", str(tmp_path / "prometheus.yml")],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


def test_readme_command_writes_the_intended_args(tmp_path):
    """The README's command, word for word but for the inventory (localhost, local connection)
    and the places it writes (a throwaway config and textfile directory), run for real: the
    env file holds TUNEWATCH_ARGS whole, and the textfile unit's command line built from it
    scans with the profile and exits 0 (compliance is in the metrics)."""
    argv = readme_command()
    assert argv[:3] == ["ansible-playbook", "-i", "inventory.ini"] and argv[3] == "contrib/ansible/rollout.yml", argv
    assert argv[4:] == ["-e", '{"tunewatch_args": "--profile azure-sap-hana"}'], argv
    config, textfile = tmp_path / "etc" / "tunewatch", tmp_path / "node-exporter"
    config.mkdir(parents=True)
    done = run([executable("ansible-playbook"), "-i", str(local_inventory(tmp_path)), str(REPO / argv[3]), *argv[4:],
                "-e", "ansible_become=false", "-e", f"tunewatch_config_dir={config}",
                "-e", f"tunewatch_textfile_dir={textfile}", "--skip-tags", "package,units", "--limit", "localhost"],
               tmp=tmp_path, home=tmp_path, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    written = env_file(config / "textfile.env")
    assert written == {"TUNEWATCH_ARGS": "--profile azure-sap-hana", "TUNEWATCH_TEXTFILE_DIR": str(textfile)}, written
    assert textfile.is_dir()
    # the unit as systemd runs it with that file: --profile and its value stay together
    unit = REPO / "contrib" / "systemd" / "tunewatch-textfile.service"
    args = {**written, "TUNEWATCH_ARGS": f"--root {EXAMPLE} {written['TUNEWATCH_ARGS']}"}
    command, env = unit_command(unit, args)
    assert command[-2:] == ["--profile", "azure-sap-hana"], command
    assert command[:2] == ["/usr/bin/env", "tunewatch"], command
    scan = subprocess.run([sys.executable, "-m", "tunewatch", *command[2:]], capture_output=True, text=True, timeout=300,
                          env={**clean_env(), "TUNEWATCH_TEXTFILE_DIR": str(textfile)}, cwd=tmp_path)
    assert scan.returncode == 0, scan.stderr
    assert 'profile="azure-sap-hana"' in (textfile / "tunewatch.prom").read_text()


def test_split_args_are_refused(tmp_path):
    """What the shell leaves of `-e tunewatch_args="--profile azure-sap-hana"`: Ansible splits
    it at the space; the playbook stops before writing anything and says how to pass it."""
    config = tmp_path / "etc"
    config.mkdir()
    done = run([executable("ansible-playbook"), "-i", str(local_inventory(tmp_path)), "rollout.yml",
                "-e", "tunewatch_args=--profile azure-sap-hana", "-e", "ansible_become=false",
                "-e", f"tunewatch_config_dir={config}", "--skip-tags", "package,units", "--limit", "localhost"],
               tmp=tmp_path, home=tmp_path)
    assert done.returncode != 0
    # (older ansible-core prints the message JSON-escaped: its quotes as \")
    message = done.stdout.replace('\\"', '"')
    assert """pass it as JSON, -e '{"tunewatch_args": "--profile azure-sap-hana"}'""" in message, done.stdout
    assert not list(config.iterdir())


def test_check_mode_on_a_host_without_the_package(tmp_path):
    """--check of the whole first play on localhost, which has no tunewatch package: the copy
    shows as a change, the install and what needs the package are skipped, nothing fails."""
    artefact(f"tunewatch_{VERSION}-1_amd64.deb")
    copied = Path(f"/var/tmp/tunewatch_{VERSION}-1_amd64.deb")
    was_there = copied.exists()
    done = run([executable("ansible-playbook"), "-i", str(local_inventory(tmp_path)), "rollout.yml", "--check",
                "-e", '{"tunewatch_args": "--profile azure-sap-hana"}', "-e", "ansible_become=false",
                "-e", f"tunewatch_textfile_dir={tmp_path / 'node-exporter'}", "--limit", "localhost"],
               tmp=tmp_path, home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    recap = re.search(r"localhost\s*: ok=(\d+)\s+changed=(\d+)\s+unreachable=0\s+failed=0\s+skipped=(\d+)", done.stdout)
    assert recap and int(recap.group(2)) >= 1, done.stdout
    assert "TASK [Install the .deb]" in done.stdout and not (tmp_path / "node-exporter").exists()
    assert was_there or not copied.exists()  # --check copied nothing
