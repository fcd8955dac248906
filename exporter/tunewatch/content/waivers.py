"""Waivers: an accepted failure of one check (or one object of it) until a day.

A waiver file is user input, validated on every load against checks/schema/waivers.json.
The engine imports this module only when a scan has waivers (docs/architecture.md#start-up-cost).
"""

from __future__ import annotations

import datetime as dt

from .._record import Record
from ..errors import did_you_mean
from ..results import FAIL, WAIVED, worst
from .yamlsrc import load_yaml, validate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection

    from jsonschema.protocols import Validator

    from ..results import CheckResult


class Waiver(Record):
    __slots__ = ("check", "object", "justification", "expires", "source")
    check: str
    object: str | None
    justification: str
    expires: dt.date
    source: str

    def __init__(self, check: str, object: str | None, justification: str, expires: dt.date, source: str):
        self.check = check
        self.object = object
        self.justification = justification
        self.expires = expires
        self.source = source

    def active(self, today: dt.date) -> bool:
        return today <= self.expires


def load_waivers(path: str, checks: Collection[str], validator: Validator) -> list[Waiver]:
    """The waivers of `path` for the known `checks`; `expires` may be quoted text or a YAML
    date (`expires: 2026-12-31` unquoted)."""
    doc = load_yaml(path)  # PyYAML builds dates itself: `expires: 2026-02-30` fails in there, named by line
    entries = doc.data.get("waivers") if isinstance(doc.data, dict) else None
    for i, w in enumerate(entries if isinstance(entries, list) else []):
        expires = w.get("expires") if isinstance(w, dict) else None
        if isinstance(expires, dt.datetime):  # a date object's subclass: check it first
            raise doc.error("bad expiry date: give a day (YYYY-MM-DD), not a time", f"/waivers/{i}/expires")
        if isinstance(expires, dt.date):  # YAML 1.1 reads an unquoted YYYY-MM-DD as a date
            w["expires"] = expires.isoformat()
    if not isinstance(doc.data, dict):
        raise doc.error("expected a mapping at the top of a waivers file")
    validate(doc, validator)
    waivers = []
    for i, w in enumerate(doc.data["waivers"]):
        if w["check"] not in checks:
            raise doc.error(f"waiver for unknown check id {w['check']!r}{did_you_mean(w['check'], checks)}",
                            f"/waivers/{i}/check")
        try:
            expires = dt.date.fromisoformat(w["expires"])
        except ValueError as e:
            raise doc.error(f"bad expiry date: {e}", f"/waivers/{i}/expires") from e
        waivers.append(Waiver(w["check"], w.get("object"), w["justification"], expires,
                              f"{path}:{doc.line(f'/waivers/{i}')}"))
    return waivers


def apply_waivers(result: CheckResult, waivers: list[Waiver], today: dt.date) -> None:
    """A matching active waiver turns a failure into `waived`; an expired one says so."""
    mine = [w for w in waivers if w.check == result.check]
    if not mine:
        return
    for obj in result.objects:
        if obj.status != FAIL:
            continue
        for w in (w for w in mine if w.object in (None, obj.object)):
            if w.active(today):
                obj.status, obj.waiver = WAIVED, w.source
                obj.message += f" [waived until {w.expires}: {w.justification}]"
                break
            obj.message += f" [waiver expired on {w.expires} ({w.source})]"
    result.status = worst(o.status for o in result.objects)
