"""Shared test helpers (importable as `support` once tests/ is on sys.path; the
tests/exporter conftest puts it there).

procs.py   free_port(), wait_until(), http_get()/http_request() (no proxies, optional
           basic auth / insecure TLS), ManagedProcess / managed(): start a binary with logs
           in a work dir, wait_http(), stop by PID (SIGTERM, then SIGKILL), always.
prom.py    start_prometheus(workdir, scrape_configs, rule_files=..., alertmanagers=...),
           start_node_exporter(workdir, textfile_dir), start_alertmanager(workdir, config):
           context managers on free 127.0.0.1 ports with temp config and data dirs, ready
           before they yield, stopped by PID after. Prometheus.query()/query_value()/
           wait_for_query()/targets()/rules()/alerts()/reload(); static_job() builds a
           scrape config; promtool()/check_metrics() run the real promtool.
scanresults.py  synthetic ScanResults built from the engine's dataclasses: result(),
           check(), obj(), irq_obj(), big_host() (416 CPUs, 8 nodes, 4x64 data IRQs, 50 NFS).
"""

from __future__ import annotations
