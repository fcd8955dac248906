"""Declarative content: checks, profiles, tailoring and waivers (ComplianceAsCode style).

A check is data (id, title, rationale, severity, references, kind + vars); the kind in
code holds the logic. Everything is validated against checks/schema/*.json when loaded,
and a kind's variables against the kind's own schema once a profile has set them, so a
bad parameter type in a profile or tailoring is reported against that file and pointer.

Validation runs once per content version: the validated checks and profiles are cached
(marshal, under $XDG_CACHE_HOME/tunewatch or ~/.cache/tunewatch) keyed by the identity
(path, inode, size, mtime, ctime: `contentkey`) of every content and schema file and of the
kinds' sources, the content directory and the tunewatch version. A valid cache means no
YAML parsing and no jsonschema import at all; a
missing, stale, corrupt or unwritable cache only means validating again, with the same
error messages. Tailoring and waiver files are user input and always validated.
"""

from __future__ import annotations

import json
import os

from .. import __version__, kinds
from ..errors import ContentError, did_you_mean
from .records import Check, Profile, ResolvedProfile, SelectedCheck
from .references import load_sources, resolve_all, sources_path
from .yamlsrc import Document, load_schemas, load_yaml, validate

TYPE_CHECKING = False  # annotations are strings
if TYPE_CHECKING:
    from _hashlib import HASH

    from jsonschema.protocols import Validator

    from .waivers import Waiver

CACHE_FORMAT = 5  # 2: checks/defaults; 3: checks/references.yaml too; 4: file identities as the key; 5: checks/layouts

# Folders of a content directory that hold no checks; every other folder is an area of checks
# (network, storage, ...): a new one is picked up without a change here.
NOT_CHECK_AREAS = frozenset({"profiles", "schema", "defaults", "layouts"})
# Reports list checks in content order: these areas first, in this order (the host's own
# network, its storage, the hypervisor, then the rest), any other folder after them by name.
AREA_ORDER = ("network", "storage", "vmware", "system")


# The top-level directories that ship with tunewatch (setup.py copies them into the package).
SHIPPED = ("checks", "rules", "dashboards", "docs", "contrib")


def shipped_dir(name: str) -> str | None:
    """`name` (checks, rules, dashboards, docs, contrib) as this tunewatch sees it.

    A source checkout (also an editable install) uses its top-level directory, the source of
    truth; an installed wheel uses the copy setup.py put into the package, read as plain files
    when the package is on disk (venv, --user, --target, system) and through
    importlib.resources only when it is not (a zip).
    """
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tunewatch/, above content/
    if os.path.basename(os.path.dirname(package)) == "exporter":  # <checkout>/exporter/tunewatch
        checkout = os.path.join(os.path.dirname(os.path.dirname(package)), name)
        if os.path.isdir(checkout):
            return checkout
    on_disk = os.path.join(package, "data", name)
    if os.path.isdir(on_disk):  # an installed wheel: no importlib.resources (~10 ms of imports) needed
        return on_disk
    import importlib.resources  # only for a package that is not plain files (inside a zip)
    import pathlib

    packaged = importlib.resources.files("tunewatch") / "data" / name
    if isinstance(packaged, pathlib.Path) and packaged.is_dir():
        return str(packaged)
    return None


def _shipped_layout(component: str) -> dict | None:
    """checks/layouts/<component>.yaml of the shipped content, for content without it; None
    when there is none (a fact that needs it is then an error)."""
    import yaml

    try:
        with open(os.path.join(default_content_dir(), "layouts", f"{component}.yaml"), encoding="utf-8") as f:
            return yaml.safe_load(f)
    except (ContentError, OSError):
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
        raise ContentError(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "checks"),
                           "content directory not found (set --content or TUNEWATCH_CONTENT)")
    return found


def _clone(value):
    """A deep copy of YAML/JSON data (mappings, lists, scalars), as copy.deepcopy makes
    one, without importing copy (and weakref with it) on every start (docs/architecture.md#start-up-cost)."""
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tunewatch")


class Content:
    def __init__(self, directory: str | None = None, use_cache: bool = True):
        self.directory = directory or default_content_dir()
        self._validator_table: dict[str, Validator] | None = None
        self._vars_checked = False  # every profile's merged vars passed the kinds' schemas
        self.checks: dict[str, Check] = {}
        self.profiles: dict[str, Profile] = {}
        self.default_docs: list[Document] = []  # checks/defaults: driver and module defaults
        self.layout_docs: list[Document] = []  # checks/layouts: where a component reads its files
        check_files, profile_files = self._content_files()
        default_files = self._default_files()
        layout_files = self._default_files("layouts")
        sources = [sources_path(self.directory)] if os.path.exists(sources_path(self.directory)) else []
        key = self._cache_key(check_files + profile_files + default_files + layout_files + sources) \
            if use_cache else None
        if key is not None and self._load_cache(key):
            return
        import hashlib  # the digest of validated content: the cache keeps it

        digest = hashlib.sha256()
        self._validators  # noqa: B018 - a broken schema is reported before any check
        for path in check_files:
            check = self._load_check(path, digest)
            self.checks[check.id] = check
        self._check_runtime_checks()
        for path in profile_files:
            profile = self._load_profile(path, digest)
            self.profiles[profile.id] = profile
        self.default_docs = [self._document(path, "defaults", digest) for path in default_files]
        self.layout_docs = [self._document(path, "layouts", digest) for path in layout_files]
        self._sources = load_sources(self.directory)
        self._resolve_references(digest)
        self.digest = digest.hexdigest()[:12]
        for profile in self.profiles.values():  # catch unknown ids and bad vars at load time
            self.resolve(profile.id)
        self._vars_checked = True
        if key is not None:
            self._save_cache(key)

    def _check_runtime_checks(self) -> None:
        """A `-persistent` check's runtime_check names a check of this content."""
        for check in self.checks.values():
            if check.runtime_check is not None and check.runtime_check not in self.checks:
                raise check.doc.error(f"runtime_check {check.runtime_check!r} names no check of this content"
                                      f"{did_you_mean(check.runtime_check, self.checks)}", "/runtime_check")

    def _resolve_references(self, digest: HASH | None = None) -> None:
        resolve_all(self.checks.values(), self._sources, digest)

    def _content_files(self) -> tuple[list[str], list[str]]:
        checks = []
        order = {area: i for i, area in enumerate(AREA_ORDER)}
        for area in sorted(os.listdir(self.directory), key=lambda a: (order.get(a, len(order)), a)):
            area_dir = os.path.join(self.directory, area)
            if area in NOT_CHECK_AREAS or area.startswith((".", "_")) or not os.path.isdir(area_dir):
                continue
            for name in sorted(os.listdir(area_dir)):
                if name.endswith((".yaml", ".yml")):
                    checks.append(os.path.join(area_dir, name))
        profile_dir = os.path.join(self.directory, "profiles")
        profiles = [os.path.join(profile_dir, n) for n in sorted(os.listdir(profile_dir))
                    if n.endswith((".yaml", ".yml"))]
        return checks, profiles

    def _default_files(self, area: str = "defaults") -> list[str]:
        d = os.path.join(self.directory, area)
        return [os.path.join(d, n) for n in sorted(os.listdir(d) if os.path.isdir(d) else [])
                if n.endswith((".yaml", ".yml"))]

    @property
    def defaults(self):
        """Driver and module defaults (facts/defaults.py), for the boot prediction, and the
        layouts the fact readers need (checks/layouts: the shipped tuned layout when this
        content has none)."""
        from ..facts.defaults import Defaults

        if getattr(self, "_defaults", None) is None:
            layouts = {doc.data["component"]: doc.data for doc in self.layout_docs}
            if "tuned" not in layouts:
                layouts["tuned"] = _shipped_layout("tuned")
            self._defaults = Defaults((doc.data for doc in self.default_docs), layouts)
        return self._defaults

    # -- the validated-content cache (contentkey) ----------------------------------------
    def _cache_key(self, files: list[str]) -> str | None:
        from . import cachekey as contentkey

        return contentkey.content_key(self.directory, CACHE_FORMAT, __version__, kinds, files)

    def _load_cache(self, key: str) -> bool:
        from .cachekey import load

        cached = load(cache_dir(), self.directory, key)
        if cached is None:
            return False
        try:
            checks = [self._check_from(Document(*entry)) for entry in cached["checks"]]
            profiles = [self._profile_from(Document(*entry)) for entry in cached["profiles"]]
            default_docs = [Document(*entry) for entry in cached["defaults"]]
            layout_docs = [Document(*entry) for entry in cached["layouts"]]
            digest = cached["digest"]
            sources = cached["sources"]
        except Exception:  # noqa: BLE001 - any damage: validate again
            return False
        self.checks = {c.id: c for c in checks}
        self.profiles = {p.id: p for p in profiles}
        self.default_docs = default_docs
        self.layout_docs = layout_docs
        self._sources = sources  # checks/references.yaml as validated (part of the key): no YAML here
        self._resolve_references()
        self.digest = digest
        self._vars_checked = True
        return True

    def _save_cache(self, key: str) -> None:
        from .cachekey import save

        save(cache_dir(), self.directory, {
            "key": key, "digest": self.digest,
            "checks": [(c.doc.path, c.doc.data, c.doc.lines) for c in self.checks.values()],
            "profiles": [(p.doc.path, p.doc.data, p.doc.lines) for p in self.profiles.values()],
            "defaults": [(d.path, d.data, d.lines) for d in self.default_docs],
            "layouts": [(d.path, d.data, d.lines) for d in self.layout_docs],
            "sources": self._sources})

    # -- loading ---------------------------------------------------------------------
    @property
    def _validators(self) -> dict[str, Validator]:
        if self._validator_table is None:
            self._validator_table = load_schemas(os.path.join(self.directory, "schema"))
        return self._validator_table

    def _document(self, path: str, schema: str, digest: HASH | None = None, text: str | None = None) -> Document:
        doc = load_yaml(path, text)
        if digest is not None:
            digest.update(json.dumps(doc.data, sort_keys=True, default=str).encode())
        if not isinstance(doc.data, dict):
            raise doc.error(f"expected a mapping at the top of a {schema} file")
        validate(doc, self._validators[schema])
        return doc

    def _load_check(self, path: str, digest: HASH | None) -> Check:
        doc = self._document(path, "check", digest)
        d = doc.data
        if os.path.splitext(os.path.basename(path))[0] != d["id"]:
            raise doc.error(f"check id {d['id']!r} does not match its file name", "/id")
        if d["id"] in self.checks:
            raise doc.error(f"duplicate check id {d['id']!r}", "/id")
        if d["kind"] not in kinds.KINDS:
            raise doc.error(f"unknown check kind {d['kind']!r} (known: {', '.join(sorted(kinds.KINDS))})", "/kind")
        return self._check_from(doc)

    @staticmethod
    def _check_from(doc: Document) -> Check:
        d = doc.data
        return Check(d["id"], d["title"], d["description"].strip(), d["rationale"].strip(), d["severity"],
                     d["references"], d["kind"], d.get("vars", {}), d.get("applicability"), d.get("objects", {}),
                     d.get("runtime_check"), doc)

    def _load_profile(self, path: str, digest: HASH | None = None, text: str | None = None) -> Profile:
        return self._profile_from(self._document(path, "profile", digest, text))

    @staticmethod
    def _profile_from(doc: Document) -> Profile:
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
                    raise ContentError("--profile", f"unknown profile {current!r}"
                                                    f" (known: {', '.join(sorted(self.profiles))})")
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
            layers.append((tailoring, t.get("vars", {}), t.get("select", []), t.get("unselect", []),
                           t.get("scope", {})))
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
            for cid in _vars:
                if cid not in self.checks:
                    raise doc.error(f"vars for unknown check id {cid!r}", f"/vars/{cid}")
            scope.update(_clone(layer_scope))
        check_vars = tailoring is not None or not self._vars_checked  # plain profiles: checked when cached
        resolved = [SelectedCheck(self.checks[cid], self._merged_vars(self.checks[cid], layers, check_vars))
                    for cid in selected]
        name = tailoring.data["tailoring"] if tailoring is not None else profile_id
        return ResolvedProfile(name, profile_id, chain[-1].title, resolved, scope)

    def _merged_vars(self, check: Check, layers: list[tuple], check_vars: bool = True) -> dict:
        merged = _clone(check.vars)
        origin = {k: (check.doc, f"/vars/{k}") for k in merged}
        for doc, layer_vars, *_ in layers:
            for key, value in layer_vars.get(check.id, {}).items():
                merged[key] = _clone(value)
                origin[key] = (doc, f"/vars/{check.id}/{key}")
        if not check_vars:
            return merged
        import jsonschema

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
                unknown = [k for k in merged if k not in schema.get("properties", {}) and k in origin]
                if err.validator == "additionalProperties" and unknown:  # the file that added it
                    doc, pointer = origin[unknown[0]][0], origin[unknown[0]][1].rsplit("/", 1)[0]
                else:  # a required variable nobody set: the check's own file
                    doc, pointer = check.doc, "/vars" if "vars" in check.doc.data else "/kind"
            raise doc.error(f"bad parameter for check {check.id!r} (kind {check.kind}): {err.message}", pointer)
        return merged

    # -- user files --------------------------------------------------------------------
    def load_tailoring(self, path: str) -> Document:
        doc = self._document(path, "tailoring")
        self.resolve(doc.data["profile"], doc)  # unknown ids and bad vars fail now, with the file named
        return doc

    def load_waivers(self, path: str) -> list[Waiver]:
        from .waivers import load_waivers

        return load_waivers(path, self.checks, self._validators["waivers"])
