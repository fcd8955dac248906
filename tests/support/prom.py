"""Real Prometheus, node_exporter, Alertmanager and promtool for tests.

    with start_prometheus(tmp_path / "prom", scrape_configs=[static_job("tw", addr)]) as prom:
        prom.wait_for_query('up{job="tw"} == 1')
        prom.query('tunewatch_check_status{status="fail"} == 1')

Each starter picks a free 127.0.0.1 port, writes its config under the given work dir (its
TSDB / storage goes there too), waits until the process is ready (bounded), and stops it
by PID when the `with` block ends, whatever happened. A port lost to a race is retried.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import pytest
import yaml

from .procs import LOOPBACK, HTTPResult, ManagedProcess, OnLoopback, free_port, http_get, http_request, wait_until

BINARIES = {
    "prometheus": ("prometheus",),
    "promtool": ("promtool",),
    "node_exporter": ("prometheus-node-exporter", "node_exporter"),
    "alertmanager": ("prometheus-alertmanager", "alertmanager"),
    "amtool": ("amtool",),
}
START_TIMEOUT = 30.0


def find_binary(name: str) -> str | None:
    for candidate in BINARIES.get(name, (name,)):
        path = shutil.which(candidate)
        if path:
            return path
    return None


def require_binary(name: str) -> str:
    """Path of the binary, or skip the test (with the Debian package to install)."""
    path = find_binary(name)
    if path is None:
        pytest.skip(f"{name} not installed (Debian: prometheus, prometheus-node-exporter, prometheus-alertmanager)")
    return path


def static_job(job: str, *targets: str, scheme: str = "http", interval: str = "1s",
               metrics_path: str = "/metrics", **extra: Any) -> dict:
    """A scrape config for fixed targets ("127.0.0.1:port"); extra keys go in as they are
    (basic_auth, tls_config, honor_labels, ...)."""
    return {"job_name": job, "scrape_interval": interval, "scrape_timeout": "1s" if interval == "1s" else "10s",
            "scheme": scheme, "metrics_path": metrics_path, "static_configs": [{"targets": list(targets)}], **extra}


def _start_with_port(make_argv: Callable[[int], Sequence[str]], workdir: Path, name: str,
                     ready_path: str, attempts: int = 3) -> tuple[ManagedProcess, int]:
    """Start on a free port, wait for `ready_path`; retry on another port if it lost the race."""
    last: AssertionError | None = None
    for _ in range(attempts):
        port = free_port()
        process = ManagedProcess(make_argv(port), workdir, name).start()
        try:
            process.wait_http(f"http://{LOOPBACK}:{port}{ready_path}", START_TIMEOUT)
            return process, port
        except AssertionError as e:
            process.stop()
            last = e
            if "address already in use" not in process.logs().lower():
                raise
    assert last is not None
    raise last


# --- Prometheus --------------------------------------------------------------------------


class PrometheusAPIError(AssertionError):
    pass


@dataclass
class Prometheus(OnLoopback):
    process: ManagedProcess
    port: int
    config_path: Path

    def api(self, path: str, params: Mapping[str, Any] | None = None, method: str = "GET") -> Any:
        query = urllib.parse.urlencode(params or {})
        if method == "POST":
            result = http_request(f"{self.url}{path}", "POST", data=query.encode(),
                                  headers={"Content-Type": "application/x-www-form-urlencoded"})
        else:
            result = http_get(f"{self.url}{path}" + (f"?{query}" if query else ""))
        doc = result.json()
        if doc.get("status") != "success":
            raise PrometheusAPIError(f"{path} {params}: {doc.get('errorType')}: {doc.get('error')}")
        return doc["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        """Instant query; returns the result list ([{"metric": {...}, "value": [t, "v"]}, ...])."""
        params: dict[str, Any] = {"query": expr}
        if at is not None:
            params["time"] = at
        data = self.api("/api/v1/query", params, method="POST")
        return data["result"] if data["resultType"] in ("vector", "matrix") else [{"metric": {}, "value": data["result"]}]

    def query_value(self, expr: str) -> float | None:
        """Value of a query expected to return at most one sample; None when empty."""
        result = self.query(expr)
        assert len(result) <= 1, f"{expr} returned {len(result)} series: {result}"
        return float(result[0]["value"][1]) if result else None

    def wait_for_query(self, expr: str, predicate: Callable[[list[dict]], bool] = bool,
                       timeout: float = 20.0) -> list[dict]:
        """Poll until `predicate(query(expr))`; returns that result."""
        last: list[list[dict]] = [[]]

        def probe() -> list[dict] | None:
            last[0] = self.query(expr)
            return last[0] if predicate(last[0]) else None
        return wait_until(probe, timeout, 0.25,
                          lambda: f"{expr} -> {last[0]}\ntargets: {self.targets_health()}\n{self.process.describe()}")

    def targets(self) -> list[dict]:
        return self.api("/api/v1/targets")["activeTargets"]

    def targets_health(self) -> list[tuple[str, str, str]]:
        return [(t["labels"].get("job", ""), t["health"], t.get("lastError", "")) for t in self.targets()]

    def wait_for_targets_up(self, job: str | None = None, timeout: float = 20.0) -> None:
        def probe() -> bool:
            targets = [t for t in self.targets() if job is None or t["labels"].get("job") == job]
            return bool(targets) and all(t["health"] == "up" for t in targets)
        wait_until(probe, timeout, 0.25, lambda: f"targets not up: {self.targets_health()}")

    def rules(self) -> list[dict]:
        return self.api("/api/v1/rules")["groups"]

    def alerts(self) -> list[dict]:
        return self.api("/api/v1/alerts")["alerts"]

    def reload(self) -> None:
        result = http_request(f"{self.url}/-/reload", "POST")
        assert result.status == 200, f"reload failed: {result.status} {result.text}"


def prometheus_config(scrape_configs: Iterable[dict], rule_files: Iterable[str | Path] = (),
                      alertmanagers: Iterable[str] = (), scrape_interval: str = "1s",
                      evaluation_interval: str = "1s") -> dict:
    config: dict[str, Any] = {
        "global": {"scrape_interval": scrape_interval, "scrape_timeout": "1s" if scrape_interval == "1s" else "10s",
                   "evaluation_interval": evaluation_interval},
        "scrape_configs": list(scrape_configs),
    }
    if rule_files:
        config["rule_files"] = [str(p) for p in rule_files]
    if alertmanagers:
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": list(alertmanagers)}]}]}
    return config


@contextlib.contextmanager
def start_prometheus(workdir: Path, scrape_configs: Iterable[dict] = (), *, rule_files: Iterable[str | Path] = (),
                     alertmanagers: Iterable[str] = (), scrape_interval: str = "1s",
                     evaluation_interval: str = "1s", extra_args: Sequence[str] = (),
                     config: dict | None = None, agent: bool = False) -> Iterator[Prometheus]:
    """Run Prometheus with a temp config and TSDB in `workdir`; `config` replaces the generated one.
    `agent`: agent mode (scrape and remote-write only; its WAL in `workdir`), the feature flag
    of Prometheus 2.x (`--enable-feature=agent`; 3.x spells it `--agent`)."""
    binary = require_binary("prometheus")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "prometheus.yml"
    doc = config if config is not None else prometheus_config(scrape_configs, rule_files, alertmanagers,
                                                              scrape_interval, evaluation_interval)
    config_path.write_text(yaml.safe_dump(doc, sort_keys=False))

    storage = ([agent_flag(binary), f"--storage.agent.path={workdir / 'data'}"] if agent
               else [f"--storage.tsdb.path={workdir / 'data'}"])

    def argv(port: int) -> list[str]:
        return [binary, f"--config.file={config_path}", *storage,
                f"--web.listen-address={LOOPBACK}:{port}", "--web.enable-lifecycle", "--log.level=warn",
                *extra_args]
    process, port = _start_with_port(argv, workdir, "prometheus-agent" if agent else "prometheus", "/-/ready")
    try:
        yield Prometheus(process, port, config_path)
    finally:
        process.stop()


def prometheus_major(binary: str) -> int:
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    words = (done.stdout + done.stderr).split()
    version = words[words.index("version") + 1] if "version" in words else "2"
    return int(version.split(".")[0])


def agent_flag(binary: str) -> str:
    return "--agent" if prometheus_major(binary) >= 3 else "--enable-feature=agent"


def remote_write_receiver_flag(binary: str | None = None) -> str:
    """Prometheus >= 2.33 (Debian 12 ships 2.42): --web.enable-remote-write-receiver."""
    return "--web.enable-remote-write-receiver"


# --- node_exporter ------------------------------------------------------------------------


@dataclass
class NodeExporter(OnLoopback):
    process: ManagedProcess
    port: int

    def metrics(self) -> HTTPResult:
        return http_get(f"{self.url}/metrics")


@contextlib.contextmanager
def start_node_exporter(workdir: Path, textfile_dir: Path | None = None, collectors: Sequence[str] = (),
                        extra_args: Sequence[str] = ()) -> Iterator[NodeExporter]:
    """node_exporter with every default collector off; the textfile collector on when
    `textfile_dir` is given, plus any `collectors` named."""
    binary = require_binary("node_exporter")
    workdir = Path(workdir)
    args = ["--collector.disable-defaults"]
    if textfile_dir is not None:
        args += ["--collector.textfile", f"--collector.textfile.directory={textfile_dir}"]
    args += [f"--collector.{c}" for c in collectors]

    def argv(port: int) -> list[str]:
        return [binary, f"--web.listen-address={LOOPBACK}:{port}", *args, *extra_args]
    process, port = _start_with_port(argv, workdir, "node_exporter", "/metrics")
    try:
        yield NodeExporter(process, port)
    finally:
        process.stop()


# --- Alertmanager ------------------------------------------------------------------------


@dataclass
class Alertmanager(OnLoopback):
    process: ManagedProcess
    port: int

    def alerts(self) -> list[dict]:
        return http_get(f"{self.url}/api/v2/alerts").json()


DEFAULT_ALERTMANAGER_CONFIG = {"route": {"receiver": "null", "group_wait": "0s", "group_interval": "1s"},
                               "receivers": [{"name": "null"}]}


@contextlib.contextmanager
def start_alertmanager(workdir: Path, config: dict | None = None,
                       extra_args: Sequence[str] = ()) -> Iterator[Alertmanager]:
    """Alertmanager without clustering (no gossip port), temp storage in `workdir`."""
    binary = require_binary("alertmanager")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "alertmanager.yml"
    config_path.write_text(yaml.safe_dump(config or DEFAULT_ALERTMANAGER_CONFIG, sort_keys=False))

    def argv(port: int) -> list[str]:
        return [binary, f"--config.file={config_path}", f"--storage.path={workdir / 'data'}",
                f"--web.listen-address={LOOPBACK}:{port}", "--cluster.listen-address=", "--log.level=warn",
                *extra_args]
    process, port = _start_with_port(argv, workdir, "alertmanager", "/-/ready")
    try:
        yield Alertmanager(process, port)
    finally:
        process.stop()


# --- promtool ----------------------------------------------------------------------------


def promtool(*args: str, stdin: str | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Run promtool with `args`; returns the completed process (text stdout/stderr)."""
    binary = require_binary("promtool")
    return subprocess.run([binary, *args], input=stdin, capture_output=True, text=True, timeout=timeout)


def check_metrics(exposition: str) -> subprocess.CompletedProcess:
    """`promtool check metrics` on an exposition (stdin): returncode 0 and no output = clean."""
    return promtool("check", "metrics", stdin=exposition)
