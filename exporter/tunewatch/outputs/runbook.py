"""The runbook's per-check sections (docs/runbook.md), for reports that embed them.

A report mailed or archived must not point at `file://.../runbook.md` on the machine that
wrote it: without a published runbook URL the HTML report carries each check's section
itself. Only the Markdown the runbook uses is rendered (paragraphs, lists, fenced code,
`code`, [text](url) links); everything is escaped first.
"""

from __future__ import annotations

import os
import re
from html import escape

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)|<(https://[^>\s]+)>")
_CODE = re.compile(r"`([^`]+)`")


def runbook_path() -> str | None:
    from ..content.catalog import shipped_dir
    docs = shipped_dir("docs")
    path = os.path.join(docs, "runbook.md") if docs else None
    return path if path and os.path.isfile(path) else None


def sections(text: str) -> dict[str, str]:
    """`### id` heading -> the Markdown up to the next heading."""
    found: dict[str, list[str]] = {}
    current = None
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("#"):
            current = line[4:].strip() if line.startswith("### ") else None
            if current:
                found[current] = []
            continue
        if current:
            found[current].append(line)
    return {k: "\n".join(v).strip() for k, v in found.items()}


def load_sections() -> dict[str, str]:
    path = runbook_path()
    if path is None:
        return {}
    with open(path, encoding="utf-8") as f:
        return sections(f.read())


def _inline(text: str, anchor: Callable[[str], str]) -> str:
    """Escaped text with `code` and [links]; a link to "#id" goes to anchor(id)."""
    out, pos = [], 0
    for m in _LINK.finditer(text):
        out.append(_code(text[pos:m.start()]))
        if m.group(3):  # <https://...>: the URL is its own text
            out.append(f'<a href="{escape(m.group(3))}">{escape(m.group(3))}</a>')
        else:
            url = anchor(m.group(2)[1:]) if m.group(2).startswith("#") else m.group(2)
            out.append(f'<a href="{escape(url)}">{_code(m.group(1))}</a>')
        pos = m.end()
    return "".join(out) + _code(text[pos:])


def _code(text: str) -> str:
    parts = _CODE.split(text)
    return "".join(f"<code>{escape(p)}</code>" if i % 2 else escape(p) for i, p in enumerate(parts))


def to_html(markdown: str, anchor: Callable[[str], str] = lambda name: "#" + name) -> str:
    blocks: list[str] = []
    para: list[str] = []
    items: list[str] = []
    code: list[str] | None = None

    def flush() -> None:
        if para:
            blocks.append(f"<p>{_inline(' '.join(para), anchor)}</p>")
            para.clear()
        if items:
            blocks.append("<ul>" + "".join(f"<li>{_inline(i, anchor)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in markdown.splitlines():
        if code is not None:
            if line.startswith("```"):
                blocks.append(f"<pre><code>{escape(chr(10).join(code))}</code></pre>")
                code = None
            else:
                code.append(line)
        elif line.startswith("```"):
            flush()
            code = []
        elif not line.strip():
            flush()
        elif re.match(r"\s*[-*] ", line):
            if para:
                flush()
            items.append(re.sub(r"^\s*[-*] ", "", line))
        elif items and line.startswith("  "):
            items[-1] += " " + line.strip()
        else:
            para.append(line.strip())
    if code is not None:
        blocks.append(f"<pre><code>{escape(chr(10).join(code))}</code></pre>")
    flush()
    return "\n".join(blocks)
