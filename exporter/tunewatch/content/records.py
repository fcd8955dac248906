"""The records of loaded content (content/catalog.py builds them): a check, a profile, a
check as a profile selects it (its variables resolved) and a resolved profile. The
engine, the outputs and remediation read them; catalog.py re-exports them.
"""

from __future__ import annotations

from .._record import Record

TYPE_CHECKING = False  # annotations are strings
if TYPE_CHECKING:
    from .yamlsrc import Document


class Check(Record):
    __slots__ = ("id", "title", "description", "rationale", "severity", "references", "kind", "vars",
                 "applicability", "objects", "runtime_check", "doc")
    _norepr = ('doc',)  # as field(repr=False)
    id: str
    title: str
    description: str
    rationale: str
    severity: str
    references: list[dict]
    kind: str
    vars: dict
    applicability: dict | None
    objects: dict
    runtime_check: str | None
    doc: Document

    def __init__(self,
                 id: str, title: str, description: str, rationale: str, severity: str, references: list[dict],
                 kind: str, vars: dict, applicability: dict | None, objects: dict, runtime_check: str | None,
                 doc: Document):
        self.id = id
        self.title = title
        self.description = description
        self.rationale = rationale
        self.severity = severity
        self.references = references
        self.kind = kind
        self.vars = vars
        self.applicability = applicability
        self.objects = objects
        self.runtime_check = runtime_check
        self.doc = doc


class Profile(Record):
    __slots__ = ("id", "title", "description", "extends", "select", "unselect", "scope", "vars", "doc")
    _norepr = ('doc',)  # as field(repr=False)
    id: str
    title: str
    description: str
    extends: str | None
    select: list[str] | str
    unselect: list[str]
    scope: dict
    vars: dict
    doc: Document

    def __init__(self,
                 id: str, title: str, description: str, extends: str | None, select: list[str] | str,
                 unselect: list[str], scope: dict, vars: dict, doc: Document):
        self.id = id
        self.title = title
        self.description = description
        self.extends = extends
        self.select = select
        self.unselect = unselect
        self.scope = scope
        self.vars = vars
        self.doc = doc


class SelectedCheck(Record):
    __slots__ = ("check", "vars")
    check: Check
    vars: dict

    def __init__(self, check: Check, vars: dict):
        self.check = check
        self.vars = vars


class ResolvedProfile(Record):
    __slots__ = ("id", "base", "title", "checks", "scope")
    id: str  # the profile, or the tailoring's name when tailored
    base: str
    title: str
    checks: list[SelectedCheck]
    scope: dict

    def __init__(self, id: str, base: str, title: str, checks: list[SelectedCheck], scope: dict):
        self.id = id
        self.base = base
        self.title = title
        self.checks = checks
        self.scope = scope
