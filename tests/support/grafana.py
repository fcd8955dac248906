"""Run the queries of a Grafana dashboard against a real Prometheus the way Grafana would.

Grafana is not needed: the dashboard JSON gives each panel target (instant or range),
each templating variable (`label_values(metric, label)` -> Prometheus labels API) and each
annotation (a range query with the annotation's `step`). Variables are interpolated with
the rules of Grafana's Prometheus data source (public/app/plugins/datasource/prometheus,
`interpolateQueryExpr`):

* a variable that is neither multi-value nor include-All: the value as it is;
* a multi-value / include-All variable: each value regex-escaped (`.` -> `\\\\.`, i.e. `\\.`
  inside the PromQL string), several values as `(a|b)`;
* "All" selected: the variable's `allValue` (e.g. `.*`), unescaped, when it has one,
  else all values as above.

Built-in variables: `$__range` is the dashboard time range in seconds, `$__interval` and
`$__rate_interval` the step used for range queries.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .snapshots import label_values, query_range

_SPECIAL = re.compile(r"[$^*+?.()|\\{}\[\]]")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass(frozen=True)
class Query:
    dashboard: str
    kind: str  # "panel", "variable" or "annotation"
    title: str  # panel title, variable name or annotation name
    ref: str  # refId ("" for variables and annotations)
    expr: str
    instant: bool
    step: float | None = None  # annotations: their step (seconds)
    row: str = ""  # the row a panel sits under

    @property
    def id(self) -> str:
        if self.kind == "variable":
            return f"{self.dashboard}/${self.title}"
        if self.kind == "annotation":
            return f"{self.dashboard}/annotation:{self.title}"
        return f"{self.dashboard}/{self.title}/{self.ref}"


@dataclass
class Dashboard:
    path: Path
    doc: dict = field(repr=False)

    @classmethod
    def load(cls, path: Path) -> "Dashboard":
        return cls(Path(path), json.loads(Path(path).read_text()))

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def range_seconds(self) -> int:
        """The default time range (`time.from` = now-<n><unit>) in seconds."""
        m = re.fullmatch(r"now-(\d+)([smhdw])", self.doc.get("time", {}).get("from", "now-6h"))
        assert m, f"{self.path}: unsupported time.from {self.doc.get('time')}"
        return int(m.group(1)) * _UNITS[m.group(2)]

    def variables(self) -> dict[str, dict]:
        return {v["name"]: v for v in self.doc["templating"]["list"]}

    def queries(self) -> list[Query]:
        out: list[Query] = []
        row = ""
        for top in self.doc["panels"]:
            if top.get("type") == "row":
                row = top["title"]  # collapsed rows hold their panels inside
            for panel in [top, *top.get("panels", [])]:
                for target in panel.get("targets", []):
                    out.append(Query(self.name, "panel", panel["title"], target["refId"], target["expr"],
                                     bool(target.get("instant")), row=row))
        for name, var in self.variables().items():
            if var["type"] == "query":
                query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
                out.append(Query(self.name, "variable", name, "", query, True))
        for ann in self.doc.get("annotations", {}).get("list", []):
            if ann.get("expr"):
                out.append(Query(self.name, "annotation", ann["name"], "", ann["expr"], False,
                                 step=duration_seconds(ann.get("step", "60s"))))
        return out


def duration_seconds(text: str) -> float:
    m = re.fullmatch(r"(\d+)([smhdw])", text)
    assert m, f"unsupported duration {text!r}"
    return int(m.group(1)) * _UNITS[m.group(2)]


def regex_escape(value: str) -> str:
    """Grafana's prometheusSpecialRegexEscape: escape for a regex inside a PromQL string."""
    return _SPECIAL.sub(lambda m: "\\\\" + m.group(0), value.replace("\\", "\\\\\\\\"))


def interpolate_value(var: Mapping[str, Any], values: Sequence[str] | str) -> str:
    """What Grafana writes for `$var` given the selection (`"$__all"` = All)."""
    multi = bool(var.get("multi")) or bool(var.get("includeAll"))
    if values == "$__all":
        if var.get("allValue"):
            return var["allValue"]
        raise ValueError(f"{var['name']}: All without allValue needs the option list")
    if isinstance(values, str):
        values = [values]
    if not multi:
        assert len(values) == 1, f"{var['name']} is single-valued"
        return values[0]
    escaped = [regex_escape(v) for v in values]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


def substitute(expr: str, variables: Mapping[str, str], range_seconds: float, interval_seconds: float) -> str:
    """Replace $var / ${var} / [[var]] and Grafana's built-ins; fail on anything left over."""
    builtins = {
        "__range": f"{int(range_seconds)}s", "__range_s": str(int(range_seconds)),
        "__range_ms": str(int(range_seconds * 1000)), "__interval": f"{int(interval_seconds)}s",
        "__interval_ms": str(int(interval_seconds * 1000)),
        # max($__interval + scrape interval, 4 * scrape interval) with Grafana's 15 s default
        "__rate_interval": f"{int(max(interval_seconds + 15, 60))}s",
    }
    values = {**builtins, **variables}

    def repl(m: re.Match) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        if name not in values:
            raise KeyError(f"no value for Grafana variable {m.group(0)} in {expr!r}")
        return values[name]
    return re.sub(r"\$\{(\w+)\}|\[\[(\w+)\]\]|\$([A-Za-z_]\w*)", repl, expr)


_LABEL_VALUES = re.compile(r"\s*label_values\(\s*(?:(.+?)\s*,\s*)?([a-zA-Z_]\w*)\s*\)\s*")


def run(prom: Any, query: Query, variables: Mapping[str, str], range_seconds: float,
        window: float = 600.0, step: float = 5.0) -> tuple[str, list[dict]]:
    """Run one dashboard query like Grafana; returns (PromQL or API call, result list).

    Panel targets: instant ones as instant queries; range ones over the last `window`
    seconds at `step` (Grafana would use the dashboard range, 24 h at about one point a
    minute, but a test Prometheus has only seconds of history and points on a minute grid
    could all fall before it). Annotations: range query over `window` at their own step,
    ending now. Variables: the labels API with the `match[]` selector.
    """
    now = time.time()
    if query.kind == "variable":
        m = _LABEL_VALUES.fullmatch(query.expr)
        assert m, f"{query.id}: only label_values(...) variable queries are supported: {query.expr!r}"
        match = substitute(m.group(1), variables, range_seconds, step) if m.group(1) else None
        values = label_values(prom, m.group(2), match, lookback=range_seconds)
        return f"label_values({match}, {m.group(2)})", [{"value": v} for v in values]
    promql = substitute(query.expr, variables, range_seconds, step)
    if query.kind == "annotation":
        return promql, query_range(prom, promql, now - window, now, query.step or step)
    if query.instant:
        return promql, prom.query(promql, at=now)
    return promql, [r for r in query_range(prom, promql, now - window, now, step) if r.get("values")]
