"""The package is complete: an sdist built from a clean copy of the sources builds a wheel
that, installed with `pip install --target` into a temporary folder and run from outside
the checkout (so the checkout's checks/ cannot be used), scans an example host; the wheel
carries the content, rules, dashboards, docs, LICENSE, py.typed and PEP 621 metadata.

Builds use the project's own build backend without build isolation (no network needed):
`setuptools.build_meta` for the sdist, `pip wheel --no-build-isolation` for the wheel.
"""

from __future__ import annotations

import email
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "tests" / "snapshots" / "examples" / "azure-m-rebooted"
SOURCES = ("pyproject.toml", "setup.cfg", "setup.py", "MANIFEST.in", "LICENSE", "README.md",
           "exporter", "checks", "rules", "dashboards", "docs", "contrib")
SHIPPED = ("checks", "rules", "dashboards", "docs")


def run(*args, cwd, env=None, timeout=300) -> subprocess.CompletedProcess:
    done = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args}: rc {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


def _files(root: Path) -> set[str]:
    """What setup.py copies: every file but caches and dotfiles (dashboards/.lint is the
    linter's configuration for the checkout, not content)."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and not any(part.startswith(".") for part in p.relative_to(root).parts)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("wheel", reason="building a wheel without isolation needs the `wheel` package")
    work = tmp_path_factory.mktemp("package")
    src = work / "src"
    src.mkdir()
    for name in SOURCES:  # a clean copy: no build/, egg-info or caches of the checkout leak in
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        elif path.exists():
            shutil.copy2(path, src / name)
    dist = work / "dist"
    run(sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(dist)!r})", cwd=src)
    sdist = next(dist.glob("tunewatch-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        tar.extractall(work / "unpacked", filter="data")
    from_sdist = next((work / "unpacked").iterdir())
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
        "-w", str(dist), str(from_sdist), cwd=work)
    wheel = next(dist.glob("tunewatch-*.whl"))
    target = work / "target"
    run(sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(target),
        str(wheel), cwd=work)
    print(f"\nsdist {sdist.name}: {sdist.stat().st_size} bytes; wheel {wheel.name}: {wheel.stat().st_size} bytes")
    return {"sdist": sdist, "wheel": wheel, "target": target, "work": work, "from_sdist": from_sdist}


def _env(target: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TUNEWATCH_CONTENT")}
    env["PYTHONPATH"] = str(target)
    return env


def test_sdist_holds_the_content_and_license(built):
    with tarfile.open(built["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for name in ("LICENSE", "README.md", "pyproject.toml", "setup.py", "exporter/tunewatch/py.typed",
                 "checks/schema/check.schema.json", "checks/profiles/azure-sap-hana.yaml",
                 "rules/tunewatch.rules.yml", "dashboards/tunewatch-host.json", "docs/runbook.md"):
        assert name in names, name


def test_wheel_ships_content_metadata_license_and_types(built):
    with zipfile.ZipFile(built["wheel"]) as whl:
        names = set(whl.namelist())
        meta = email.message_from_string(whl.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
    for name in SHIPPED:
        top = REPO / name
        shipped = {n.split(f"tunewatch/data/{name}/", 1)[1] for n in names if n.startswith(f"tunewatch/data/{name}/")}
        assert shipped == _files(top), name  # every file of the source of truth, nothing else
    assert "tunewatch/py.typed" in names and "tunewatch/__main__.py" in names
    # PEP 639: an SPDX expression, the license file under .dist-info/licenses/, no license
    # classifier (setuptools refuses both together)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(n for n in names if "dist-info" in n)
    assert meta["License-Expression"] == "Apache-2.0" and meta.get_all("License-File") == ["LICENSE"]
    assert tuple(int(x) for x in meta["Metadata-Version"].split(".")) >= (2, 4)
    assert meta["Name"] == "tunewatch" and meta["Requires-Python"] == ">=3.9"
    classifiers = meta.get_all("Classifier")
    assert not [c for c in classifiers if c.startswith("License ::")] and "Typing :: Typed" in classifiers
    assert {f"Programming Language :: Python :: 3.{v}" for v in range(9, 14)} <= set(classifiers)
    # no public home yet: no placeholder address is presented as a real one
    assert not meta.get_all("Project-URL"), meta.get_all("Project-URL")
    required = {re.sub(r"[-_.]+", "-", re.split(r"[<>=;! ]", r)[0]).lower() for r in meta.get_all("Requires-Dist")}
    assert required >= {"prometheus-client", "jsonschema", "pyyaml", "shtab"}
    # RHEL 8's glibc 2.28 has no bcrypt 5 wheel; jsonschema 4.17 has no `referencing`
    assert any(r.replace(" ", "").startswith("bcrypt") and "<5" in r for r in meta.get_all("Requires-Dist"))
    assert any(r.replace(" ", "").startswith("jsonschema>=4.18") for r in meta.get_all("Requires-Dist"))


def test_target_install_scans_an_example_from_outside_the_checkout(built, tmp_path):
    target, env = built["target"], _env(built["target"])
    where = run(sys.executable, "-c", "import tunewatch, tunewatch.content.catalog as c; print(tunewatch.__file__); "
                "print(c.default_content_dir())", cwd=tmp_path, env=env).stdout.split()
    assert where[0].startswith(str(target)) and where[1] == str(target / "tunewatch" / "data" / "checks")
    out = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "tunewatch", "scan", "--root", str(EXAMPLE), "--profile",
                           "azure-sap-hana", "--format", "json", "--output", str(out)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr  # the rebooted example fails checks: the content was found
    report = json.loads(out.read_text())
    assert report["summary"]["fail"] == 6 and len(report["results"]) == 8
    paths = run(sys.executable, "-m", "tunewatch", "paths", cwd=tmp_path, env=env).stdout
    listed = dict(line.split(None, 1) for line in paths.splitlines())
    for name in SHIPPED:
        assert listed[name] == str(target / "tunewatch" / "data" / name)
    assert (target / "tunewatch" / "data" / "rules" / "tunewatch.rules.yml").is_file()
    validate = run(sys.executable, "-m", "tunewatch", "validate-content", cwd=tmp_path, env=env).stdout
    assert str(target) in validate
