"""Metric families and their 0.0.4 text, without prometheus_client.

`Family` holds what GaugeMetricFamily/CounterMetricFamily hold; `text_exposition` writes
families byte for byte as prometheus_client's generate_latest does (gauges and counters
without timestamps or _created samples: all tunewatch exports; tests/exporter/
test_text_writer.py compares the two), and `client_families` hands them to the library for
serve's text and OpenMetrics writers. Importing prometheus_client only to write a textfile
cost ~50 ms per `scan --format prometheus` (docs/architecture.md#start-up-cost).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms of start-up: docs/architecture.md#start-up-cost
if TYPE_CHECKING:
    from collections.abc import Iterable


def _utf8(value: str) -> str:
    from .._escape import utf8
    return value if value.__class__ is str and value.isascii() else utf8(value)


class Sample:
    """One sample (a plain class: a NamedTuple costs a namedtuple build at import)."""
    __slots__ = ("name", "labels", "value")

    def __init__(self, name: str, labels: dict, value: float):
        self.name, self.labels, self.value = name, labels, value


class Family:
    """One metric family: what GaugeMetricFamily/CounterMetricFamily hold, without the library."""

    def __init__(self, name: str, documentation: str, typ: str, labels: Iterable[str] = ()):
        self.name, self.documentation, self.type = name, documentation, typ
        self._labelnames = tuple(labels)
        self.samples: list[Sample] = []

    def add_metric(self, labels: Iterable[str], value: float) -> None:
        # label values are valid UTF-8 whatever a host names things (escape.utf8): one
        # undecodable interface name must not cost the whole page
        self.samples.append(Sample(self.name + "_total" if self.type == "counter" else self.name,
                                   dict(zip(self._labelnames, map(_utf8, labels))), value))


def client_families(families: list[Family]) -> list:
    """The same families as prometheus_client metric objects (for its writers)."""
    from prometheus_client.core import Metric as ClientMetric

    out = []
    for family in families:
        metric = ClientMetric(family.name, family.documentation, family.type)
        for sample in family.samples:
            metric.add_sample(sample.name, sample.labels, sample.value)
        out.append(metric)
    return out


def _go_float(value: float) -> str:
    """prometheus_client.utils.floatToGoString."""
    d = float(value)
    if d == float("inf"):
        return "+Inf"
    if d == float("-inf"):
        return "-Inf"
    if d != d:
        return "NaN"
    text = repr(d)
    dot = text.find(".")
    if d > 0 and dot > 6:  # Go switches to exponents sooner than Python
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return text


def _label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def text_exposition(families: list[Family]) -> str:
    """Text format 0.0.4 as prometheus_client's generate_latest writes it (gauges and
    counters without timestamps or _created samples: all tunewatch exports)."""
    out = []
    for family in families:
        name = family.name + "_total" if family.type == "counter" else family.name
        doc = family.documentation.replace("\\", "\\\\").replace("\n", "\\n")
        out.append(f"# HELP {name} {doc}\n# TYPE {name} {family.type}\n")
        for sample in family.samples:
            labels = ",".join(f'{k}="{_label_value(v)}"' for k, v in sorted(sample.labels.items()))
            out.append(f"{sample.name}{{{labels}}} {_go_float(sample.value)}\n" if labels
                       else f"{sample.name} {_go_float(sample.value)}\n")
    return "".join(out)


# --- per-scan metrics ------------------------------------------------------------------
