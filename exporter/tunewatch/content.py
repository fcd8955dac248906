"""Declarative content: checks, profiles, tailoring and waivers (ComplianceAsCode style).

A check is data (id, title, rationale, severity, references, kind + vars); the kind in
code holds the logic. Everything is validated against checks/schema/*.json when loaded,
and a kind's variables against the kind's own schema once a profile has set them, so a
bad parameter type in a profile or tailoring is reported against that file and pointer.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field

import jsonschema
from referencing import Registry, Resource

from . import kinds
from .errors import ContentError
from .yamlsrc import Document, load_yaml, validate

CHECK_AREAS = ("network", "storage", "vmware", "system")


def shipped_dir(name: str) -> str | None:
    """`name` (checks, rules, dashboards, docs, contrib) as this tunewatch sees it.

    A source checkout (also an editable install) uses its top-level directory, the source of
    truth; an installed wheel uses the copy setup.py put into the package, found through
    importlib.resources so venv, --user, --target and system installs all work.
    """
    import importlib.resources  # local: this hunk stays inside the function
    import pathlib

    package = os.path.dirname(os.path.abspath(__file__))
    if os.path.basename(os.path.dirname(package)) == "exporter":  # <checkout>/exporter/tunewatch
        checkout = os.path.join(os.path.dirname(os.path.dirname(package)), name)
        if os.path.isdir(checkout):
            return checkout
    packaged = importlib.resources.files(__package__) / "data" / name
    if isinstance(packaged, pathlib.Path) and packaged.is_dir():  # not inside a zip
        return str(packaged)
    return None


def default_content_dir() -> str:
    """$TUNEWATCH_CONTENT, else the checks/ of a checkout or the copy inside the package."""
    env = os.environ.get("TUNEWATCH_CONTENT")
    if env:
        if not os.path.isdir(os.path.join(env, "schema")):
            raise ContentError(env, "TUNEWATCH_CONTENT is not a content directory (no schema/ in it)")
        return os.path.abspath(env)
    found = shipped_dir("checks")
    if found is None or not os.path.isdir(os.path.join(found, "schema")):
        raise ContentError(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "checks"),
                           "content directory not found (set --content or TUNEWATCH_CONTENT)")
    return found


def did_you_mean(word: str, known) -> str:
    """` (did you mean 'nic-queue-count'?)` for a mistyped id, else ``."""
    import difflib  # local: this hunk stays next to default_content_dir

    close = difflib.get_close_matches(word, sorted(known), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


@dataclass
class Check:
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
    doc: Document = field(repr=False)


@dataclass
class Profile:
    id: str
    title: str
    description: str
    extends: str | None
    select: list[str] | str
    unselect: list[str]
    scope: dict
    vars: dict
    doc: Document = field(repr=False)


@dataclass
class SelectedCheck:
    check: Check
    vars: dict


@dataclass
class ResolvedProfile:
    id: str  # the profile, or the tailoring's name when tailored
    base: str
    title: str
    checks: list[SelectedCheck]
    scope: dict


@dataclass
class Waiver:
    check: str
    object: str | None
    justification: str
    expires: dt.date
    source: str

    def active(self, today: dt.date) -> bool:
        return today <= self.expires


class Content:
    def __init__(self, directory: str | None = None):
        self.directory = directory or default_content_dir()
        self._validators = self._load_schemas()
        self.checks: dict[str, Check] = {}
        self.profiles: dict[str, Profile] = {}
        digest = hashlib.sha256()
        for area in CHECK_AREAS:
            for name in sorted(os.listdir(os.path.join(self.directory, area)) if os.path.isdir(
                    os.path.join(self.directory, area)) else []):
                if name.endswith((".yaml", ".yml")):
                    check = self._load_check(os.path.join(self.directory, area, name), digest)
                    self.checks[check.id] = check
        profile_dir = os.path.join(self.directory, "profiles")
        for name in sorted(os.listdir(profile_dir)):
            if name.endswith((".yaml", ".yml")):
                profile = self._load_profile(os.path.join(profile_dir, name), digest)
                self.profiles[profile.id] = profile
        self.digest = digest.hexdigest()[:12]
        for profile in self.profiles.values():  # catch unknown ids and bad vars at load time
            self.resolve(profile.id)

    # -- loading ---------------------------------------------------------------------
    def _load_schemas(self) -> dict[str, jsonschema.protocols.Validator]:
        schema_dir = os.path.join(self.directory, "schema")
        resources, schemas = [], {}
        for name in sorted(os.listdir(schema_dir)):
            path = os.path.join(schema_dir, name)
            try:
                with open(path, encoding="utf-8") as f:
                    schema = json.load(f)
            except (OSError, json.JSONDecodeError) as e:
                raise ContentError(path, f"schema is not readable JSON: {e}") from e
            resources.append((schema["$id"], Resource.from_contents(schema)))
            schemas[name.split(".")[0]] = schema
        registry = Registry().with_resources(resources)
        return {kind: jsonschema.Draft202012Validator(schema, registry=registry,
                                                       format_checker=jsonschema.FormatChecker())
                for kind, schema in schemas.items()}

    def _document(self, path: str, schema: str, digest=None, text: str | None = None) -> Document:
        doc = load_yaml(path, text)
        if digest is not None:
            digest.update(json.dumps(doc.data, sort_keys=True, default=str).encode())
        if not isinstance(doc.data, dict):
            raise doc.error(f"expected a mapping at the top of a {schema} file")
        validate(doc, self._validators[schema])
        return doc

    def _load_check(self, path: str, digest) -> Check:
        doc = self._document(path, "check", digest)
        d = doc.data
        if os.path.splitext(os.path.basename(path))[0] != d["id"]:
            raise doc.error(f"check id {d['id']!r} does not match its file name", "/id")
        if d["id"] in self.checks:
            raise doc.error(f"duplicate check id {d['id']!r}", "/id")
        if d["kind"] not in kinds.KINDS:
            raise doc.error(f"unknown check kind {d['kind']!r} (known: {', '.join(sorted(kinds.KINDS))})", "/kind")
        return Check(d["id"], d["title"], d["description"].strip(), d["rationale"].strip(), d["severity"],
                     d["references"], d["kind"], d.get("vars", {}), d.get("applicability"), d.get("objects", {}),
                     d.get("runtime_check"), doc)

    def _load_profile(self, path: str, digest=None, text: str | None = None) -> Profile:
        doc = self._document(path, "profile", digest, text)
        d = doc.data
        return Profile(d["id"], d["title"], d["description"].strip(), d.get("extends"), d.get("select", []),
                       d.get("unselect", []), d.get("scope", {}), d.get("vars", {}), doc)

    # -- profiles --------------------------------------------------------------------
    def _chain(self, profile_id: str, doc: Document | None = None, pointer: str = "") -> list[Profile]:
        chain: list[Profile] = []
        current: str | None = profile_id
        while current:
            if current not in self.profiles:
                where = doc or (chain[-1].doc if chain else None)
                if where is None:
                    raise ContentError("--profile", f"unknown profile {current!r} (known: {', '.join(sorted(self.profiles))})")
                raise where.error(f"unknown profile {current!r}", pointer if where is doc else "/extends")
            if any(p.id == current for p in chain):
                raise chain[-1].doc.error(f"profile extends loop through {current!r}", "/extends")
            chain.append(self.profiles[current])
            current = chain[-1].extends
        return list(reversed(chain))

    def resolve(self, profile_id: str, tailoring: Document | None = None) -> ResolvedProfile:
        chain = self._chain(profile_id, tailoring, "/profile")
        layers: list[tuple[Document, dict, list | str, list, dict]] = [
            (p.doc, p.vars, p.select, p.unselect, p.scope) for p in chain]
        if tailoring is not None:
            t = tailoring.data
            layers.append((tailoring, t.get("vars", {}), t.get("select", []), t.get("unselect", []), t.get("scope", {})))
        selected: list[str] = []
        scope: dict = {}
        for doc, _vars, select, unselect, layer_scope in layers:
            ids = list(self.checks) if select == "all" else select
            for i, cid in enumerate(ids):
                if cid not in self.checks:
                    raise doc.error(f"unknown check id {cid!r}", f"/select/{i}")
                if cid not in selected:
                    selected.append(cid)
            for i, cid in enumerate(unselect):
                if cid not in self.checks:
                    raise doc.error(f"unknown check id {cid!r}", f"/unselect/{i}")
                if cid in selected:
                    selected.remove(cid)
            for i, cid in enumerate(_vars):
                if cid not in self.checks:
                    raise doc.error(f"vars for unknown check id {cid!r}", f"/vars/{cid}")
            scope.update(copy.deepcopy(layer_scope))
        resolved = [SelectedCheck(self.checks[cid], self._merged_vars(self.checks[cid], layers)) for cid in selected]
        name = tailoring.data["tailoring"] if tailoring is not None else profile_id
        return ResolvedProfile(name, profile_id, chain[-1].title, resolved, scope)

    def _merged_vars(self, check: Check, layers) -> dict:
        merged = copy.deepcopy(check.vars)
        origin = {k: (check.doc, f"/vars/{k}") for k in merged}
        for doc, layer_vars, *_ in layers:
            for key, value in layer_vars.get(check.id, {}).items():
                merged[key] = copy.deepcopy(value)
                origin[key] = (doc, f"/vars/{check.id}/{key}")
        schema = kinds.KINDS[check.kind].VARS_SCHEMA
        errors = list(jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
                      .iter_errors(merged))
        if errors:
            err = jsonschema.exceptions.best_match(errors)
            path = list(err.absolute_path)
            if path and path[0] in origin:
                doc, pointer = origin[path[0]]
                pointer += "".join(f"/{p}" for p in path[1:])
            else:
                missing = err.message.split("'")[1] if err.validator == "required" else ""
                doc, pointer = (layers[-1][0] if layers else check.doc), f"/vars/{check.id}/{missing}".rstrip("/")
            raise doc.error(f"bad parameter for check {check.id!r} (kind {check.kind}): {err.message}", pointer)
        return merged

    # -- user files --------------------------------------------------------------------
    def load_tailoring(self, path: str) -> Document:
        doc = self._document(path, "tailoring")
        self.resolve(doc.data["profile"], doc)  # unknown ids and bad vars fail now, with the file named
        return doc

    def load_waivers(self, path: str) -> list[Waiver]:
        """Waivers; `expires` may be quoted text or a YAML date (`expires: 2026-12-31` unquoted)."""
        try:
            doc = load_yaml(path)
        except ValueError as e:  # PyYAML builds dates itself: `expires: 2026-02-30` fails in there
            raise ContentError(path, f"bad date: {e}") from e
        entries = doc.data.get("waivers") if isinstance(doc.data, dict) else None
        for i, w in enumerate(entries if isinstance(entries, list) else []):
            expires = w.get("expires") if isinstance(w, dict) else None
            if isinstance(expires, dt.datetime):  # a date object's subclass: check it first
                raise doc.error("bad expiry date: give a day (YYYY-MM-DD), not a time", f"/waivers/{i}/expires")
            if isinstance(expires, dt.date):  # YAML 1.1 reads an unquoted YYYY-MM-DD as a date
                w["expires"] = expires.isoformat()
        if not isinstance(doc.data, dict):
            raise doc.error("expected a mapping at the top of a waivers file")
        validate(doc, self._validators["waivers"])
        waivers = []
        for i, w in enumerate(doc.data["waivers"]):
            if w["check"] not in self.checks:
                raise doc.error(f"waiver for unknown check id {w['check']!r}{did_you_mean(w['check'], self.checks)}",
                                f"/waivers/{i}/check")
            try:
                expires = dt.date.fromisoformat(w["expires"])
            except ValueError as e:
                raise doc.error(f"bad expiry date: {e}", f"/waivers/{i}/expires") from e
            waivers.append(Waiver(w["check"], w.get("object"), w["justification"], expires,
                                  f"{path}:{doc.line(f'/waivers/{i}')}"))
        return waivers
