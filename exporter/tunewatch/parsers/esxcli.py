"""Saved esxcli output, recognised by content rather than by file name.

`esxcli system settings advanced list [-o /Path]` prints blank-line separated records of
indented `Label: value` lines (Path, Type, Int Value, String Value, ...);
`esxcli hardware cpu global get` prints one record (CPU Packages, Hyperthreading Active,
...). Advanced records get a normalised "Value": the Int Value of integer options, the
String Value of string ones. A shell prompt or other stray text between records is skipped.
"""

from __future__ import annotations

import re

from .._record import FrozenRecord
from ..errors import ParseError
from ._text import lines

_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9 ()/._-]*")
_CPU_LABELS = {"CPU Packages", "CPU Cores", "CPU Threads", "Hyperthreading Active"}


class EsxcliOutput(FrozenRecord):
    __slots__ = ("kind", "records")
    kind: str  # "advanced", "cpu_global" or "unknown"
    records: tuple[dict[str, str], ...]

    def __init__(self, kind: str, records: tuple[dict[str, str], ...]):
        self.kind = kind
        self.records = records


def _records(text: str) -> list[dict[str, str]]:
    records: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for _n, line in lines(text):
        if not line.strip():
            if current:
                records.append(current)
            current = {}
            continue
        label, colon, value = line.strip().partition(":")
        if colon and _LABEL.fullmatch(label.rstrip()) and value[:1] in ("", " ", "\t"):
            current[label.rstrip()] = value.strip()
    if current:
        records.append(current)
    return records


def _with_value(record: dict[str, str]) -> dict[str, str]:
    if "Value" in record:
        return record
    kind = record.get("Type", "").lower()
    if kind == "integer" or (kind != "string" and not record.get("String Value")):
        value = record.get("Int Value", "")
    else:
        value = record.get("String Value", "")
    return {**record, "Value": value}


def parse_esxcli(text: str, source: str) -> EsxcliOutput:
    records = _records(text)
    if not records:
        raise ParseError(source, "no `Label: value` lines: not esxcli output")
    if any("Path" in r and ("Type" in r or "Int Value" in r or "String Value" in r) for r in records):
        return EsxcliOutput("advanced", tuple(_with_value(r) if "Path" in r else r for r in records))
    if any(_CPU_LABELS & r.keys() for r in records):
        return EsxcliOutput("cpu_global", tuple(records))
    return EsxcliOutput("unknown", tuple(records))
