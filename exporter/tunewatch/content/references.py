"""The source articles checks cite (`checks/references.yaml`), resolved into each check's
references at load time so that every output names an article by title and publisher
(and links it when the URL is known), never by a bare seed number."""

from __future__ import annotations

import os

from ..errors import ContentError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _hashlib import HASH
    from collections.abc import Iterable
    from typing import Protocol

    from .yamlsrc import Document

    class Check(Protocol):
        """What is read and set here of catalog.Check (a Protocol: catalog imports this module)."""
        id: str
        doc: Document
        references: list[dict]

FILE = "references.yaml"
_FIELDS = {"title": True, "publisher": True, "date": False, "url": False}  # name -> required


def sources_path(directory: str) -> str:
    return os.path.join(directory, FILE)


def load_sources(directory: str) -> dict[str, dict]:
    """seed id -> {title, publisher, date?, url?}; a content directory without the file cites
    articles by the titles its checks give."""
    from .yamlsrc import load_yaml
    path = sources_path(directory)
    if not os.path.exists(path):
        return {}
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise doc.error("expected a mapping of seed ids to articles")
    for seed, article in doc.data.items():
        where = f"/{seed}"
        if not isinstance(seed, str) or not (len(seed) == 3 and seed.isdigit()):
            raise doc.error(f"seed id {seed!r} is not three digits in quotes (\"000\")", where)
        if not isinstance(article, dict):
            raise doc.error("expected a mapping with title and publisher", where)
        for name in article:
            if name not in _FIELDS:
                raise doc.error(f"unknown field {name!r} (known: {', '.join(_FIELDS)})", f"{where}/{name}")
        for name, required in _FIELDS.items():
            value = article.get(name)
            if (required and value is None) or (value is not None and not (isinstance(value, str) and value.strip())):
                raise doc.error(f"{name} must be a non-empty string", f"{where}/{name}")
        if str(article.get("url", "https://")).split("//")[0] != "https:":
            raise doc.error("url must start with https://", f"{where}/url")
    return doc.data


def resolve(check_id: str, references: list[dict], sources: dict[str, dict], path: str) -> list[dict]:
    """A check's references with their article's title, publisher, date and URL filled in
    (what the check file says wins: a section, or a URL deeper into the article)."""
    resolved = []
    for n, ref in enumerate(references):
        seed = ref.get("seed")
        if seed is None:
            resolved.append(dict(ref))
            continue
        if seed not in sources:
            if sources or "title" not in ref:
                raise ContentError(path, f"check {check_id}: reference seed {seed!r} is not in {FILE} "
                                         f"(known: {', '.join(sorted(sources)) or 'none'})", pointer=f"/references/{n}")
            resolved.append(dict(ref))
            continue
        resolved.append({**sources[seed], **ref, "title": sources[seed]["title"]})
    return resolved


def resolve_all(checks: Iterable[Check], sources: dict[str, dict], digest: HASH | None = None) -> None:
    """Seeds in checks' references become title, publisher and URL; the sources count in the
    content digest (reports name them)."""
    import json
    if digest is not None:
        digest.update(json.dumps(sources, sort_keys=True).encode())
    for check in checks:
        check.references = resolve(check.id, check.doc.data["references"], sources, check.doc.path)


def cite(ref: dict) -> str:
    """"Title", Publisher, date (section): one line naming the article for a reader."""
    parts = [f"\u201c{ref['title']}\u201d"] + [ref[k] for k in ("publisher", "date") if ref.get(k)]
    return ", ".join(parts) + (f" ({ref['section']})" if ref.get("section") else "")
