"""`--vsphere.tag CATEGORY/TAG` (or a bare `TAG`): the VMs carrying a vSphere tag.

Tags live in the vSphere Automation (REST) API, not in the SOAP API pyVmomi speaks, so
they are read here with the standard library over the same host, port, TLS settings
(`ca_file`, `insecure_skip_verify`) and credentials as the SOAP session, under the same
overall `timeout` (one deadline for the whole exchange: login, reads, logout).

Two URL schemes, tried in this order:
- `/api` (vSphere 7.0 U2 and later): `POST /api/session`, `/api/cis/tagging/...`,
  operations as `?action=...`, bare JSON answers.
- `/rest` (vSphere 6.5 to 8.x, deprecated since 7.0 U2; the only one vcsim of govmomi
  v0.46.0 serves for tagging): `POST /rest/com/vmware/cis/session`,
  `/rest/com/vmware/cis/tagging/...`, ids as `id:<id>`, operations as `?~action=...`,
  answers wrapped in {"value": ...}.
A 404 on the `/api` login selects `/rest` (one extra request).

Flow: create a session with HTTP basic auth (the password is only ever in that header),
list the categories (and each one's name), list the tags of the categories named (all tags
when a bare TAG is given) and read each one's name, then `list-attached-objects-on-tags`;
objects of type VirtualMachine have the VM's managed object id (vm-42), which the SOAP
side's VM list is matched on; finally delete the session.

Privileges: reading tags, categories and associations needs the read privilege
(System.Read, in the built-in Read-only role) on the tags and categories, and only objects
the account can read are listed as attached. Tags and categories are not children of the
vCenter inventory: only a global permission or a permission on the tag object applies.
"""

from __future__ import annotations

import base64
import http.client
import json
import urllib.parse
from dataclasses import dataclass

from ..errors import FactError
from .client import _explain, _ssl_context, match_names, run_with_deadline
from .config import VsphereConfig

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VM_TYPE = "VirtualMachine"
MAX_ANSWER = 16 << 20  # bytes of one JSON answer; a bound, not a real limit
SESSION_HEADER = "vmware-api-session-id"


class UnknownTag(FactError):
    """A --vsphere.tag that names no tag the account can read."""


@dataclass(frozen=True)
class Scheme:
    name: str
    session: str
    category: str
    tag: str
    association: str
    action: str  # the query parameter naming an operation
    id_prefix: str  # before an id in a path
    wrapped: bool  # answers are {"value": ...}

    def item(self, base: str, ident: str) -> str:
        return f"{base}/{self.id_prefix}{urllib.parse.quote(ident, safe=':')}"

    def op(self, path: str, operation: str) -> str:
        return f"{path}?{self.action}={operation}"


API = Scheme("/api", "/api/session", "/api/cis/tagging/category", "/api/cis/tagging/tag",
             "/api/cis/tagging/tag-association", "action", "", False)
REST = Scheme("/rest", "/rest/com/vmware/cis/session", "/rest/com/vmware/cis/tagging/category",
              "/rest/com/vmware/cis/tagging/tag", "/rest/com/vmware/cis/tagging/tag-association", "~action", "id:",
              True)


def parse_selector(text: str) -> tuple[str | None, str]:
    """(category, tag) of `CATEGORY/TAG`, (None, tag) of a bare `TAG`. The first `/`
    separates them (a category name cannot be given with a `/` in it)."""
    category, sep, tag = text.partition("/")
    if not sep:
        return None, text
    return category, tag


def check_selector(text: str) -> str | None:
    """Why the command-line value is malformed, or None."""
    category, tag = parse_selector(text)
    if not tag or category == "":
        return f"{text!r}: expected CATEGORY/TAG or TAG"
    return None


class HTTPStatus(Exception):
    def __init__(self, method: str, path: str, status: int, reason: str):
        super().__init__(f"{method} {path}: HTTP {status} {reason}".strip())
        self.status, self.path = status, path


class RestSession:
    """One keep-alive HTTPS connection and one API session. Not thread-safe."""

    def __init__(self, cfg: VsphereConfig):
        self.cfg = cfg
        self.scheme = API
        self._token: str | None = None
        self._conn = http.client.HTTPSConnection(cfg.host, cfg.port, timeout=cfg.timeout,
                                                 context=_ssl_context(cfg))

    def _request(self, method: str, path: str, body: dict | None = None, login: bool = False) -> Any:
        headers = {"Accept": "application/json"}
        if login:
            pair = f"{self.cfg.username}:{self.cfg.password}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        elif self._token is not None:
            headers[SESSION_HEADER] = self._token
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        self._conn.request(method, path, body=data, headers=headers)
        reply = self._conn.getresponse()
        raw = reply.read(MAX_ANSWER + 1)
        if reply.status >= 300:
            raise HTTPStatus(method, path.split("?", 1)[0], reply.status, reply.reason or "")
        if len(raw) > MAX_ANSWER:
            raise FactError(f"{method} {path}: answer larger than {MAX_ANSWER >> 20} MiB")
        if not raw.strip():
            return None
        value = json.loads(raw.decode("utf-8"))
        if self.scheme.wrapped and isinstance(value, dict) and "value" in value:
            value = value["value"]
        return value

    def login(self) -> None:
        for scheme in (API, REST):
            self.scheme = scheme
            try:
                token = self._request("POST", scheme.session, login=True)
            except HTTPStatus as e:
                if e.status == 404 and scheme is API:
                    continue  # before vSphere 7.0 U2, or vcsim: the /rest scheme
                raise
            if not isinstance(token, str) or not token:
                raise FactError(f"POST {scheme.session}: no session id in the answer")
            self._token = token
            return

    def logout(self) -> None:
        if self._token is not None:
            try:
                self._request("DELETE", self.scheme.session)
            except Exception:  # noqa: BLE001 - the session expires on the server anyway
                pass
            self._token = None
        self._conn.close()

    # -- reads -------------------------------------------------------------------------
    def categories(self) -> dict[str, str]:
        """{category id: name}"""
        s = self.scheme
        return {cid: (self._request("GET", s.item(s.category, cid)) or {}).get("name", "")
                for cid in self._request("GET", s.category) or []}

    def tag_ids(self, category_id: str | None) -> list[str]:
        """The tags of one category, or all tags (None)."""
        s = self.scheme
        if category_id is None:
            return list(self._request("GET", s.tag) or [])
        if s is API:
            return list(self._request("POST", s.op(s.tag, "list-tags-for-category"),
                                      {"category_id": category_id}) or [])
        return list(self._request("POST", s.op(s.item(s.tag, category_id), "list-tags-for-category"), {}) or [])

    def tag(self, tag_id: str) -> tuple[str, str]:
        """(name, category id)"""
        s = self.scheme
        model = self._request("GET", s.item(s.tag, tag_id)) or {}
        return model.get("name", ""), model.get("category_id", "")

    def attached_vms(self, tag_ids: list[str]) -> set[str]:
        """Managed object ids of the VMs carrying one of the tags."""
        s = self.scheme
        found = self._request("POST", s.op(s.association, "list-attached-objects-on-tags"), {"tag_ids": tag_ids})
        return {obj.get("id", "") for entry in found or [] for obj in entry.get("object_ids") or []
                if obj.get("type") == VM_TYPE}


def _explain_rest(cfg: VsphereConfig, e: BaseException, scheme: Scheme) -> FactError:
    where = f"vSphere {cfg.endpoint}: tags ({scheme.name} API)"
    if isinstance(e, UnknownTag):
        return e
    if isinstance(e, HTTPStatus):
        if e.status == 401 and e.path == scheme.session:
            return FactError(f"{where}: login refused: wrong user name or password (from {cfg.path} or the "
                             "environment)")
        if e.status == 401:
            return FactError(f"{where}: session refused ({e}); the session expired or was deleted")
        if e.status == 403:
            return FactError(f"{where}: permission denied; the account needs the Read-only role as a global "
                             "permission (tags are not in the vCenter inventory)")
        return FactError(f"{where}: {e}"[:500])
    if isinstance(e, (ValueError, AttributeError, TypeError)):  # not the JSON the API documents
        return FactError(f"{where}: unexpected answer: {e}"[:500])
    explained = _explain(cfg, e)
    text = str(explained)
    prefix = f"vSphere {cfg.endpoint}: "
    return FactError(where + ": " + text[len(prefix):] if text.startswith(prefix) else text)


def _resolve(rest: RestSession, cfg: VsphereConfig, selectors: list[str]) -> set[str]:
    wanted = [parse_selector(s) for s in selectors]
    categories = rest.categories()
    if any(category is None for category, _tag in wanted):
        ids = rest.tag_ids(None)
    else:
        names = {category for category, _tag in wanted}
        ids = [t for cid, name in sorted(categories.items()) if name in names for t in rest.tag_ids(cid)]
    tags = {tid: rest.tag(tid) for tid in dict.fromkeys(ids)}
    chosen: list[str] = []
    unknown: list[str] = []
    for text, (category, tag) in zip(selectors, wanted):
        hits = [tid for tid, (name, cid) in tags.items()
                if name == tag and (category is None or categories.get(cid) == category)]
        if not hits:
            unknown.append(text)
        chosen += hits
    if unknown:
        known = sorted(f"{categories.get(cid, '?')}/{name}" for name, cid in tags.values())
        shown = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "")
        missing = [c for c, _t in wanted if c is not None and c not in categories.values()]
        raise UnknownTag(f"vSphere {cfg.endpoint}: no tag {', '.join(map(repr, unknown))}"
                         + (f" (no category {', '.join(map(repr, sorted(set(missing))))})" if missing else "")
                         + (f"; tags the account can read: {shown}" if known else "; the account can read no tag")
                         + " (tags need the Read-only role as a global permission)")
    return rest.attached_vms(list(dict.fromkeys(chosen)))


def tagged_vm_ids(cfg: VsphereConfig, selectors: list[str]) -> set[str]:
    """Managed object ids (vm-42) of the VMs carrying any of the tags. FactError (UnknownTag
    for a tag that exists nowhere) when the tag API cannot be read; never longer than the
    config's timeout."""
    rest = RestSession(cfg)

    def run() -> set[str]:
        try:
            rest.login()
            return _resolve(rest, cfg, selectors)
        except Exception as e:  # noqa: BLE001 - every failure gets a clear message
            raise _explain_rest(cfg, e, rest.scheme) from None
        finally:
            rest.logout()
    return run_with_deadline(run, cfg.timeout, f"vSphere {cfg.endpoint}: tags")


def select_vms(cfg: VsphereConfig, vms: list, patterns: list[str], tags: list[str]) -> list:
    """The VMs (rows of Session.list_vms) matching any glob OR carrying any tag."""
    ids = tagged_vm_ids(cfg, tags) if tags else set()
    by_name = {id(vm) for vm in match_names(vms, patterns)} if patterns else set()
    return [vm for vm in vms if id(vm) in by_name or getattr(vm[0], "_moId", None) in ids]
