"""`--format html`: one self-contained page for a person (inline CSS, no JavaScript).

Data comes from `report.to_dict` (the stable JSON shape), so the page shows exactly what the
JSON report holds. Every value is escaped with html.escape; checks are ordered worst first
and, within a check, failing objects come first.
"""

from __future__ import annotations

import datetime as dt
from html import escape

from ..engine import ScanResult
from .report import to_dict

_ORDER = {"fail": 0, "error": 1, "waived": 2, "pass": 3, "notapplicable": 4}
_STATUSES = ("fail", "error", "waived", "pass", "notapplicable")

_CSS = """
:root { --fail:#c62828; --error:#8e24aa; --waived:#00838f; --pass:#2e7d32; --notapplicable:#757575; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #212121; background: #fafafa; }
header { background: #263238; color: #fff; padding: 16px 24px; }
header h1 { margin: 0 0 4px; font-size: 20px; }
header p { margin: 2px 0; color: #cfd8dc; }
main { padding: 16px 24px; max-width: 1400px; }
.summary { display: flex; gap: 8px; flex-wrap: wrap; margin: 12px 0 0; padding: 0; list-style: none; }
.summary li { padding: 4px 10px; border-radius: 4px; background: #37474f; }
.badge { display: inline-block; min-width: 88px; text-align: center; padding: 2px 8px; border-radius: 4px;
         color: #fff; font-weight: 600; font-size: 12px; text-transform: uppercase; }
.s-fail { background: var(--fail); } .s-error { background: var(--error); } .s-waived { background: var(--waived); }
.s-pass { background: var(--pass); } .s-notapplicable { background: var(--notapplicable); }
section { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; margin: 12px 0; padding: 12px 16px; }
section h2 { font-size: 16px; margin: 0 0 8px; display: flex; gap: 10px; align-items: center; flex-wrap: wrap; }
.id { font-family: ui-monospace, monospace; color: #546e7a; font-weight: normal; font-size: 13px; }
.sev { font-size: 12px; color: #455a64; border: 1px solid #b0bec5; border-radius: 4px; padding: 1px 6px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-top: 1px solid #eeeeee; }
th { color: #546e7a; font-weight: 600; }
td.obj, td.val { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-all; }
footer { color: #757575; padding: 8px 24px 24px; font-size: 12px; }
"""


def _badge(status: str) -> str:
    return f'<span class="badge s-{escape(status)}">{escape(status)}</span>'


def _check_section(r: dict) -> str:
    objects = sorted(r["objects"], key=lambda o: _ORDER.get(o["status"], 9))
    rows = "\n".join(
        f'<tr><td class="obj">{escape(str(o["object"]))}</td><td>{_badge(o["status"])}</td>'
        f'<td class="val">{escape(str(o["expected"]))}</td><td class="val">{escape(str(o["actual"]))}</td>'
        f'<td>{escape(str(o["message"]))}'
        + (f' <em>(waiver {escape(str(o["waiver"]))})</em>' if o.get("waiver") else "") + "</td></tr>"
        for o in objects)
    cid = escape(r["check"])
    return (f'<section id="check-{cid}">\n'
            f'<h2>{_badge(r["status"])} {escape(r["title"])} <span class="id">{cid}</span>'
            f' <span class="sev">{escape(r["severity"])}</span></h2>\n'
            f'<table>\n<thead><tr><th>object</th><th>status</th><th>expected</th><th>actual</th>'
            f'<th>message</th></tr></thead>\n<tbody>\n{rows}\n</tbody>\n</table>\n</section>')


def render_html(result: ScanResult) -> str:
    d = to_dict(result)
    host = d["host"] or {}
    hostname = host.get("hostname", "unknown host")
    started = dt.datetime.fromtimestamp(d["scan"]["started_at"], dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    summary = "".join(f'<li>{_badge(s)} {d["summary"].get(s, 0)}</li>' for s in _STATUSES)
    results = sorted(d["results"], key=lambda r: _ORDER.get(r["status"], 9))  # stable: content order within
    hostline = (f'{escape(hostname)} &middot; {escape(str(host.get("platform", "")))} &middot; '
                f'{escape(str(host.get("os", "")))} &middot; kernel {escape(str(host.get("kernel", "")))}'
                if host else "host unknown")
    verdict = "compliant" if result.compliant else "not compliant"
    sections = "\n".join(_check_section(r) for r in results)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tunewatch: {escape(hostname)} ({escape(d["profile"])})</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>tunewatch report: {escape(hostname)} &mdash; {escape(verdict)}</h1>
<p>{hostline}</p>
<p>profile <strong>{escape(d["profile"])}</strong> &middot; root {escape(d["root"])} &middot; scanned {started}
 in {d["scan"]["duration_seconds"] * 1000:.0f} ms &middot; {len(d["results"])} checks</p>
<ul class="summary">{summary}</ul>
</header>
<main>
{sections}
</main>
<footer>{escape(d["tool"])} {escape(d["version"])} &middot; content digest {escape(str(d["content_digest"]))}</footer>
</body>
</html>
"""
