"""contrib/ansible/rollout.yml: `ansible-playbook --syntax-check` and `ansible-lint
--profile production` clean, and its Prometheus play, run locally, writes file_sd targets
that `promtool check config` accepts with the example scrape jobs.

ansible-playbook comes from the test extras (ansible-core); ansible-lint needs Python >= 3.10,
so .ci/install puts it in a venv of its own (build/ci/tools) instead of the test extras.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from .conftest import REPO, clean_env, missing, tool

PLAYBOOKS = REPO / "contrib" / "ansible"


def executable(name: str) -> str:
    for candidate in (Path(sys.executable).parent / name, REPO / "build" / "ci" / "tools" / "bin" / name):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if not found:
        missing(f"{name} not installed (.ci/install installs it)")
    return found


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = clean_env(ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(kwargs.pop("tmp")), ANSIBLE_HOME=str(kwargs.pop("home")))
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, cwd=PLAYBOOKS, **kwargs)


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
