"""Real `tunewatch serve` subprocesses on (copies of) the example snapshots, for live tests.

    with start_serves(tmp_path / "serve", [("azure-m-tuned", EXAMPLES / "azure-m-tuned", "azure-sap-hana")]) as (s,):
        static_job("tunewatch", s.address)

Snapshots are copied with their symlinks kept as they are (sysfs `device`/`driver` links
are relative and the facts read their basenames; systemd `wants` links are absolute and
resolved inside the root by tunewatch), so a copy scans exactly like the original.

A `SwitchableRoot` is a directory whose `current` symlink is atomically re-pointed from one
copy to another: `tunewatch serve --root <dir>/current` then sees a different host at its
next scan. Serve it with a long `--scan.interval` and trigger the scan with
`ServedSnapshot.rescan()` after the switch: a periodic scan could straddle the switch and
read half of each tree.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from .procs import LOOPBACK, ManagedProcess, OnLoopback, free_port, http_request, wait_until

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "tests" / "snapshots" / "examples"

# Each example with the profile its README names.
EXAMPLE_PROFILES = {
    "azure-m-tuned": "azure-sap-hana",
    "azure-m-rebooted": "azure-sap-hana",
    "vmware-vmxnet3-default": "vmware-sap-hana",
    "vmware-vmxnet3-tuned": "vmware-sap-hana",
    "sas-anf": "azure-sas-grid-anf",
    "bigip-ve-esxi": "bigip-ve-esxi",
}


def example(name: str) -> Path:
    """Path of an example snapshot; skips the test when it has not been generated."""
    path = EXAMPLES / name
    if not path.is_dir():
        import pytest
        pytest.skip(f"example snapshot {name} not generated (python3 tests/snapshots/build_examples.py)")
    return path


def copy_example(name: str, dest: Path) -> Path:
    """Copy example `name` to `dest` (symlinks kept as links); returns `dest`."""
    shutil.copytree(example(name), dest, symlinks=True)
    return dest


def set_boot_time(root: Path, btime: int) -> None:
    """Rewrite the `btime` line of `root`/proc/stat (everything else unchanged)."""
    stat = Path(root) / "proc" / "stat"
    text, n = re.subn(r"(?m)^btime \d+$", f"btime {int(btime)}", stat.read_text())
    assert n == 1, f"{stat}: expected exactly one btime line"
    stat.write_text(text)


def boot_time(root: Path) -> int:
    m = re.search(r"(?m)^btime (\d+)$", (Path(root) / "proc" / "stat").read_text())
    assert m, f"{root}/proc/stat has no btime"
    return int(m.group(1))


def set_nic_driver(root: Path, interface: str, *, version: str | None = None, firmware: str | None = None,
                   combined: int | None = None) -> None:
    """Edit `root`/ethtool/<interface>.json: driver version / firmware (`ethtool -i`), and
    the combined channel count (`ethtool -l`) - what a driver reload changes and resets."""
    path = Path(root) / "ethtool" / f"{interface}.json"
    doc = json.loads(path.read_text())
    if version is not None:
        doc["driver"]["version"] = version
    if firmware is not None:
        doc["driver"]["firmware-version"] = firmware
    if combined is not None:
        doc["channels"]["combined"] = combined
    path.write_text(json.dumps(doc, indent=1) + "\n")


class SwitchableRoot:
    """`<directory>/current` -> one of several snapshot copies, switched atomically."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.link = self.directory / "current"

    def add(self, name: str, example_name: str) -> Path:
        """Copy example `example_name` to `<directory>/<name>`; returns the copy."""
        return copy_example(example_name, self.directory / name)

    def switch(self, name: str) -> None:
        """Point `current` at `<directory>/<name>` (rename over the old link: atomic)."""
        target = self.directory / name
        assert target.is_dir(), target
        tmp = self.directory / f".current.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        tmp.symlink_to(name)  # relative: the whole directory stays relocatable
        os.replace(tmp, self.link)

    @property
    def current(self) -> str:
        return os.readlink(self.link)


# --- tunewatch serve ---------------------------------------------------------------------


def serve_argv(root: Path, profile: str, port: int, interval: str = "1s", *extra: str) -> list[str]:
    return [sys.executable, "-m", "tunewatch.cli.main", "serve", "--root", str(root), "--profile", profile,
            "--web.listen-address", f"{LOOPBACK}:{port}", "--scan.interval", interval, *extra]


@dataclass
class ServedSnapshot(OnLoopback):
    """One `tunewatch serve` subprocess."""

    name: str
    root: Path
    profile: str
    process: ManagedProcess
    port: int

    def rescan(self) -> None:
        """POST /-/rescan (the scan runs in the background; 202 = requested)."""
        result = http_request(f"{self.url}/-/rescan", "POST", data=b"")
        assert result.status == 202, f"{self.name}: /-/rescan -> {result.status} {result.text}"

    def metrics(self) -> str:
        return http_request(f"{self.url}/metrics").text

    def describe(self) -> str:
        return f"[{self.name} on {self.address}, root {self.root}] {self.process.describe()}"


@contextlib.contextmanager
def start_serves(workdir: Path, specs: Sequence[tuple[str, Path, str]], interval: str = "1s",
                 extra_args: Sequence[str] = (), ready_timeout: float = 30.0,
                 attempts: int = 3) -> Iterator[list[ServedSnapshot]]:
    """Start `tunewatch serve` for each (name, root, profile) at once, each on its own free
    127.0.0.1 port; wait (bounded) until every one is ready (first scan done); stop each by
    PID when the block ends. A port lost to a race is retried on another port."""
    workdir = Path(workdir)
    served: list[ServedSnapshot] = []

    def launch(name: str, root: Path, profile: str) -> ServedSnapshot:
        port = free_port()
        process = ManagedProcess(serve_argv(root, profile, port, interval, *extra_args), workdir / name,
                                 "tunewatch").start()
        return ServedSnapshot(name, Path(root), profile, process, port)

    try:
        served.extend(launch(*spec) for spec in specs)
        for i, item in enumerate(list(served)):
            for attempt in range(attempts):
                try:
                    item.process.wait_http(f"{item.url}/-/ready", ready_timeout)
                    break
                except AssertionError:
                    item.process.stop()
                    if attempt + 1 == attempts or "address already in use" not in item.process.logs().lower():
                        raise
                    item = served[i] = launch(item.name, item.root, item.profile)
        yield served
    finally:
        for item in served:
            item.process.stop()


# --- Prometheus helpers that the Prometheus class does not have --------------------------


def query_range(prom: Any, expr: str, start: float, end: float, step: float) -> list[dict]:
    """Range query; returns the matrix ([{"metric": {...}, "values": [[t, "v"], ...]}, ...])."""
    data = prom.api("/api/v1/query_range", {"query": expr, "start": start, "end": end, "step": step},
                    method="POST")
    return data["result"]


def label_values(prom: Any, label: str, match: str | None = None, lookback: float = 3600.0) -> list[str]:
    """What Grafana's `label_values(match, label)` asks Prometheus (labels API, time range)."""
    now = time.time()
    params: dict[str, Any] = {"start": now - lookback, "end": now}
    if match:
        params["match[]"] = match
    return sorted(prom.api(f"/api/v1/label/{label}/values", params))


def state_report(prom: Any, alertmanager: Any = None, served: Sequence[ServedSnapshot] = ()) -> str:
    """Prometheus targets, rule health and alerts (and Alertmanager's alerts): for timeouts."""
    lines = []
    try:
        lines.append(f"targets: {prom.targets_health()}")
        for group in prom.rules():
            for rule in group["rules"]:
                if rule.get("health") != "ok" or rule.get("type") == "alerting" and rule.get("alerts"):
                    lines.append(f"rule {group['name']}/{rule.get('name')}: health={rule.get('health')} "
                                 f"error={rule.get('lastError', '')!r} alerts="
                                 f"{[(a['labels'].get('check'), a['state']) for a in rule.get('alerts', [])]}")
        alerts = [(a["labels"].get("alertname"), a["labels"].get("check"), a["state"]) for a in prom.alerts()]
        lines.append(f"Prometheus alerts: {alerts}")
    except Exception as e:  # noqa: BLE001 - diagnostics only
        lines.append(f"(Prometheus API failed: {e!r})")
    lines.append(prom.process.describe())
    if alertmanager is not None:
        try:
            alerts = [(a["labels"].get("alertname"), a["labels"].get("check"), a["status"])
                      for a in alertmanager.alerts()]
            lines.append(f"Alertmanager alerts: {alerts}")
        except Exception as e:  # noqa: BLE001
            lines.append(f"(Alertmanager API failed: {e!r})")
        lines.append(alertmanager.process.describe())
    for item in served:
        lines.append(item.describe())
    return "\n".join(lines)


def wait_for(probe: Any, timeout: float, what: str, prom: Any, alertmanager: Any = None,
             served: Sequence[ServedSnapshot] = ()) -> Any:
    """wait_until with the Prometheus / Alertmanager / exporter state in the failure message."""
    return wait_until(probe, timeout, 0.25, lambda: f"{what}\n{state_report(prom, alertmanager, served)}")
