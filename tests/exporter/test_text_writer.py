"""`scan --format prometheus` writes the 0.0.4 text itself (no prometheus_client import);
it must be byte for byte what prometheus_client's generate_latest writes for the same
families, on real scans (default and detail) and on hostile label values and numbers."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from tunewatch.scan import engine
from tunewatch.content.catalog import Content
from tunewatch.outputs import prometheus as prom

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "snapshots", "examples")


def library_text(families) -> str:
    registry = CollectorRegistry(auto_describe=False)

    class Collector:
        def collect(self):
            return iter(prom.client_families(families))

    registry.register(Collector())
    return generate_latest(registry).decode("utf-8")


@pytest.mark.parametrize("example", sorted(os.listdir(EXAMPLES)))
@pytest.mark.parametrize("detail", [False, True])
def test_scan_text_is_the_library_text(example, detail):
    root = os.path.join(EXAMPLES, example)
    if not os.path.isdir(root):
        pytest.skip("not a snapshot")
    content = Content()
    result = engine.scan(content, content.resolve("auto"), root)
    families = prom._scan_families(result, detail) + prom.result_health_families(result) + [prom.build_info()]
    text = prom.render(result, detail)
    assert text == library_text(families)
    assert "tunewatch_check_status{" in text


def test_hostile_labels_numbers_and_counters():
    gauge = prom._gauge("tw_test", 'help with \\ backslash,\nnewline and "quotes"', ("b", "a"))
    for value in (0.0, 1.0, -2.5, 1e-7, 123456789.0, 1234567.0, 12345678901234.0, float("inf"), float("-inf"),
                  float("nan"), 0.1 + 0.2, 3):
        gauge.add_metric([f'v{value}"\\\n\u2026', "z\u00e9"], value)
    counter = prom._counter("tw_things_total", "Things.", ("reason",))
    counter.add_metric(["x"], 4.0)
    plain = prom._counter("tw_plain", "No suffix.")
    plain.add_metric([], 1.0)
    empty = prom._gauge("tw_empty", "No samples.")
    families = [gauge, counter, plain, empty]
    ours = prom.text_exposition(families)
    # prometheus_client before 0.26 writes a stray 0 into exponents from e+10 up
    # (f'e+0{dot - 1}': "1.2345678901234e+013"); 0.26 writes Go's form, as we do. Prometheus
    # parses both to the same float, so the declared floor (0.17) is compared without it.
    assert ours == re.sub(r"e\+0(\d\d)\b", r"e+\1", library_text(families))
    # Go's strconv.FormatFloat(v, 'g', -1, 64), which the Prometheus text format follows
    assert 'b="v12345678901234.0\\"\\\\\\n\u2026"} 1.2345678901234e+13\n' in ours
    assert "tw_things_total{reason=\"x\"} 4.0" in ours


def test_format_prometheus_does_not_import_prometheus_client():
    code = ("import sys; from tunewatch.cli.main import _main; "
            f"_main(['scan', '--root', {os.path.join(EXAMPLES, 'azure-m-rebooted')!r}, '--format', 'prometheus']); "
            "sys.stderr.write(str(sorted(m for m in sys.modules if m.startswith('prometheus_client'))))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "tunewatch_check_status" in run.stdout
    assert run.stderr.strip().splitlines()[-1] == "[]"


def test_serve_live_series_fast_path_is_the_library_text():
    """exposition.Exposition writes the per-scrape scan-health series with the same writer:
    byte for byte what prometheus_client writes for them."""
    import types

    from tunewatch.serve.exposition import Exposition, expose, extra_families

    state = types.SimpleNamespace(first_scan_done=True, last_success=False, result=None, result_duration_seconds=1.5,
                                  result_completed_at=1.7e9, scan_in_progress=True, scans_total=7,
                                  scan_errors_total={"timeout": 2}, scans_skipped_total=1,
                                  running_seconds=lambda: 12.25)

    def live(s):
        return prom.serve_families(s) + extra_families(s, {"accepted": 3})

    exposition = Exposition(live)
    body, content_type, gzipped = exposition.metrics(state, None, None)
    library = expose(live(state), False)
    assert body.startswith(library) and not gzipped and content_type.startswith("text/plain")
    assert b"process_" in body[len(library):] or b"python_info" in body[len(library):]
