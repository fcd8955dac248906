"""`--format html`: one self-contained page for a person (inline CSS, no JavaScript).

What to do comes first: a "fix first" list of the checks that need action, then every check
ordered worst first. Checks that need action (fail, error) come before the others; within
each group the order is severity (high, medium, low), then status, then content order.

A failing object's fix is data (`fix`: command, file + change, note; never parsed from the
message). Objects of one NIC with the same fix (36 IRQs, one command) share one row, so the
command is shown once per NIC; each object's value is behind a <details>. Passing objects fold
into a <details>. The "fix first"
list says how to get every fix as a script or playbook (`tunewatch remediate`).

References name the article (title, publisher, date; linked when the URL is known). Runbook
links use a published base URL (`--runbook-url`, TUNEWATCH_RUNBOOK_URL); without one the
report embeds each check's runbook section, so a mailed report never points at a local file.
Identifiers never break inside a word: no `break-all` or `overflow-wrap: anywhere`; names
are `nowrap`; wide tables scroll sideways, and below 900 px each object's row becomes a block
of labelled lines so that its fix stays in sight.

Data comes from `report.to_dict` (the stable JSON shape) and, when given, the content
(rationale, references); every value is escaped with html.escape.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
from html import escape

from ..content.references import cite
from ..results import ScanResult
from . import runbook as runbook_md
from .report import to_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..content.catalog import Check, Content

_ORDER = {"fail": 0, "error": 1, "waived": 2, "pass": 3, "notapplicable": 4}
_SEVERITY = {"high": 0, "medium": 1, "low": 2}
_STATUSES = ("fail", "error", "waived", "pass", "notapplicable")
_ACTION = ("fail", "error")

_CSS = """
:root { --fail:#c62828; --error:#8e24aa; --waived:#00838f; --pass:#2e7d32; --notapplicable:#757575; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #212121; background: #fafafa;
       word-break: normal; overflow-wrap: normal; }
header { background: #263238; color: #fff; padding: 16px 24px; }
header h1 { margin: 0 0 4px; font-size: 20px; }
header p { margin: 2px 0; color: #cfd8dc; }
main { padding: 16px 24px; max-width: 1400px; }
.summary { display: flex; gap: 8px; flex-wrap: wrap; margin: 12px 0 0; padding: 0; list-style: none; }
.summary li { padding: 4px 10px; border-radius: 4px; background: #37474f; }
.badge { display: inline-block; min-width: 88px; text-align: center; padding: 2px 8px; border-radius: 4px;
         color: #fff; font-weight: 600; font-size: 12px; text-transform: uppercase; white-space: nowrap; }
.s-fail { background: var(--fail); } .s-error { background: var(--error); } .s-waived { background: var(--waived); }
.s-pass { background: var(--pass); } .s-notapplicable { background: var(--notapplicable); }
section { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; margin: 12px 0; padding: 12px 16px; }
section h2 { font-size: 16px; margin: 0 0 8px; display: flex; gap: 10px; align-items: center; flex-wrap: wrap; }
.fixfirst { border-left: 4px solid var(--fail); }
.fixfirst ol { margin: 4px 0; padding-left: 22px; }
.fixfirst li { margin: 6px 0; }
.name { font-family: ui-monospace, monospace; white-space: nowrap; }
.nw { white-space: nowrap; }
td.fix { min-width: 14em; }
.id { color: #546e7a; font-weight: normal; font-size: 13px; }
.sev { font-size: 12px; color: #455a64; border: 1px solid #b0bec5; border-radius: 4px; padding: 1px 6px; white-space: nowrap; }
.sev-high { color: #b71c1c; border-color: #ef9a9a; }
.about { color: #37474f; margin: 4px 0 8px; }
.about p { margin: 4px 0; }
.about ul { margin: 2px 0; padding-left: 20px; }
.wide { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-top: 1px solid #eeeeee; }
th { color: #546e7a; font-weight: 600; white-space: nowrap; }
td.val { font-family: ui-monospace, monospace; }
td.fix { background: #fff8e1; border-left: 3px solid #ffb300; }
code { font-family: ui-monospace, monospace; background: #f5f5f5; padding: 1px 4px; border-radius: 3px; }
details { margin-top: 6px; }
summary { cursor: pointer; color: #546e7a; }
pre { background: #f5f5f5; padding: 4px 8px; margin: 2px 0; overflow-x: auto; max-width: 100%;
      font: 12px/1.4 ui-monospace, monospace; white-space: pre-wrap; }
li pre, td pre { margin: 2px 0; }
.runbook { border-left: 3px solid #90a4ae; padding: 2px 10px; margin: 6px 0; }
footer { color: #757575; padding: 8px 24px 24px; font-size: 12px; }
@media (max-width: 900px) {
  /* a phone or a half-screen mail window: each object becomes a block of labelled lines, so
     the fix column is never scrolled out of sight; a shared fix follows its first object */
  .wide table, .wide tbody, .wide tr, .wide td { display: block; }
  .wide thead { display: none; }
  .wide tr { border-top: 1px solid #e0e0e0; padding: 4px 0; }
  .wide td { border-top: 0; padding: 1px 8px; }
  .wide td:first-child, .wide td:nth-child(2) { display: inline-block; }
  .wide td[data-label]::before { content: attr(data-label) ": "; color: #546e7a; font-weight: 600; }
  .wide td.fix { margin: 2px 8px; }
}
"""  # noqa: E501 - CSS rules kept one a line


def _badge(status: str) -> str:
    return f'<span class="badge s-{escape(status)}">{escape(status)}</span>'


def _name(text: str) -> str:
    return f'<span class="name">{escape(text)}</span>'


def _words(text: str) -> str:
    """Escaped text that wraps only at spaces: a browser may also break after "-" or "/",
    which splits names like multi-user.target.wants, so such tokens are kept whole."""
    return " ".join(f'<span class="nw">{escape(t)}</span>' if any(c in t for c in "-/._:@=") else escape(t)
                    for t in text.split(" "))


def _fix_key(o: dict) -> str:
    return json.dumps(o.get("fix") or {}, sort_keys=True)


def _fix_html(fix: dict) -> str:
    """A fix as a reader applies it: the command, the file and what it must hold, a note."""
    parts = []
    if fix.get("command"):
        parts.append(f"<code>{_words(fix['command'])}</code>")
    if fix.get("file"):
        parts.append(f"in {_name(fix['file'])}:" + (f"<pre>{escape(fix['change'])}</pre>" if fix.get("change") else ""))
    elif fix.get("change"):
        parts.append(f"<pre>{escape(fix['change'])}</pre>")
    if fix.get("note"):
        parts.append(f"<span>{_words(fix['note'])}</span>")
    # a line break between parts; a <pre> block already ends its line
    return "".join(p + ("" if p.endswith("</pre>") or i == len(parts) - 1 else "<br>") for i, p in enumerate(parts))


def _rank(r: dict) -> tuple:
    return (r["status"] not in _ACTION, _SEVERITY.get(r["severity"], 9), _ORDER.get(r["status"], 9))


def _nic(obj: str) -> str:
    return obj.split("/", 1)[0]  # "eth1/irq45" belongs to eth1


def _waiver(obj: dict) -> str:
    return f' <em>(waiver {escape(str(obj["waiver"]))})</em>' if obj.get("waiver") else ""


def _object_rows(objects: list[dict], with_fix: bool = True) -> str:
    """One row per object, or per run of objects of one NIC that share one fix (its
    command once); the run's objects and their values are listed behind a <details>."""
    rows = []
    keyed = sorted(objects, key=lambda o: (_ORDER.get(o["status"], 9), _nic(str(o["object"])), _fix_key(o)))
    i = 0
    while i < len(keyed):
        o = keyed[i]
        fix = o.get("fix") or {}
        j = i + 1
        while (j < len(keyed) and fix and keyed[j]["status"] == o["status"]
               and _nic(str(keyed[j]["object"])) == _nic(str(o["object"])) and _fix_key(keyed[j]) == _fix_key(o)):
            j += 1
        run = keyed[i:j]
        fix_cell = ""
        if with_fix:
            fix_cell = '<td class="fix" data-label="fix">' + (_fix_html(fix) if fix else "") + "</td>"
        if len(run) == 1:
            obj = run[0]
            rows.append(f'<tr><td>{_name(str(obj["object"]))}</td><td>{_badge(obj["status"])}</td>'
                        f'<td class="val" data-label="expected">{_words(str(obj["expected"]))}</td>'
                        f'<td class="val" data-label="actual">{_words(str(obj["actual"]))}</td>'
                        f'<td data-label="finding">{_words(str(obj["message"]))}{_waiver(obj)}</td>{fix_cell}</tr>')
        else:  # one row for the run (36 IRQs of a NIC, one fix); each object's value behind <details>
            leaves = [str(obj["object"]).partition("/")[2] or str(obj["object"]) for obj in run]
            each = "".join(f'<li>{_name(str(obj["object"]))}: {_words(str(obj["actual"]))}{_waiver(obj)}</li>'
                           for obj in run)
            rows.append(f'<tr><td>{len(run)} objects of {_name(_nic(str(o["object"])))} '
                        f'<small>({_name(leaves[0])} &hellip; {_name(leaves[-1])})</small></td>'
                        f'<td>{_badge(o["status"])}</td>'
                        f'<td class="val" data-label="expected">{_words(str(o["expected"]))}</td>'
                        f'<td class="val" data-label="actual">{_words(str(o["actual"]))} '
                        '<small>(the first)</small></td>'
                        f'<td data-label="finding">{_words(str(o["message"]))}'
                        f'<details><summary>each of the {len(run)}</summary><ul>{each}</ul></details></td>'
                        f'{fix_cell}</tr>')
        i = j
    return "\n".join(rows)


def _table(rows: str, fix_column: bool = True) -> str:
    fix = "<th>fix</th>" if fix_column else ""
    return (f'<div class="wide"><table>\n<thead><tr><th>object</th><th>status</th><th>expected</th>'
            f"<th>actual</th><th>finding</th>{fix}</tr></thead>\n<tbody>\n{rows}\n</tbody>\n</table></div>")


def _about(check: Check | None, runbook: str | None, cid: str, sections: dict[str, str]) -> str:
    parts = []
    if check is not None:
        refs = []
        for ref in check.references:
            text = _words(cite(ref))
            refs.append(f'<li><a href="{escape(ref["url"])}">{text}</a></li>' if ref.get("url") else f"<li>{text}</li>")
        # what the check wants, why and its sources: folded, so the findings stay near the top
        parts.append(f"<details><summary>What, why and references</summary><p>{_words(check.description)}</p>"
                     f"<p><strong>Why:</strong> {_words(check.rationale)}</p>"
                     f"<p><strong>References:</strong></p><ul>{''.join(refs)}</ul></details>")
    if runbook:
        parts.append(f'<p><a href="{escape(runbook)}#{escape(cid)}">Runbook: how to fix {_name(cid)} '
                     "now and across reboots</a></p>")
    elif cid in sections:  # no published runbook: the section itself, never a link to a local file
        body = runbook_md.to_html(sections[cid], anchor=lambda name: f"#check-{name}")
        parts.append(f'<details><summary>Runbook: how to fix {_name(cid)} now and across reboots</summary>'
                     f'<div class="runbook">{body}</div></details>')
    return f'<div class="about">{"".join(parts)}</div>' if parts else ""


def _readd(objects: list[dict]) -> str:
    """Objects whose verdict after a re-add of the device differs from the next-boot one."""
    differ = [o for o in objects if o.get("after_readd") and o["after_readd"]["status"] != o["status"]
              and o["status"] not in ("notapplicable", "waived")]
    items = "".join(f'<li>{_name(str(o["object"]))} {_badge(o["after_readd"]["status"])} '
                    f'{_words(str(o["after_readd"]["source"]))}</li>' for o in differ)
    return (f'<div class="readd"><p><strong>After a re-add of the device</strong> (a VF re-added during host '
            f"servicing, a driver reload; not a reboot):</p><ul>{items}</ul></div>") if differ else ""


def _check_section(r: dict, check: Check | None, runbook: str | None, sections: dict[str, str]) -> str:
    cid = r["check"]
    shown = [o for o in r["objects"] if o["status"] not in ("pass", "notapplicable")]
    quiet = [o for o in r["objects"] if o["status"] in ("pass", "notapplicable")]
    body = _table(_object_rows(shown)) if shown else ""
    if quiet:
        table = _table(_object_rows(quiet, with_fix=False), fix_column=False)
        label = f"{len(quiet)} passing object{'s' if len(quiet) != 1 else ''}" if any(
            o["status"] == "pass" for o in quiet) else "not applicable"
        body += table if not shown and len(quiet) <= 4 else f"<details><summary>{label}</summary>{table}</details>"
    return (f'<section id="check-{escape(cid)}">\n'
            f'<h2>{_badge(r["status"])} {escape(r["title"])} <span class="id">{_name(cid)}</span>'
            f' <span class="sev sev-{escape(r["severity"])}">{escape(r["severity"])}</span></h2>\n'
            f"{_about(check, runbook, cid, sections)}\n{_readd(r['objects'])}{body}\n</section>")


def _remediate_hint(d: dict) -> str:
    argv = f"tunewatch remediate --root {shlex.quote(str(d['root']))} --profile {shlex.quote(str(d['profile']))}"
    return ('<div class="remediate"><p>All of these fixes as one script or playbook to review and run, for this host '
            "and this boot (both refuse to run on another host or after a reboot):</p>"
            f"<pre>{escape(argv)} -o fix.sh\n{escape(argv)} --format ansible -o fix.yml</pre></div>")


def _fix_first(results: list[dict], runbook: str | None, d: dict) -> str:
    todo = [r for r in results if r["status"] in _ACTION]
    if not todo:
        return ('<section class="fixfirst" id="fix-first"><h2>Fix first</h2>'
                "<p>Nothing fails or errors: no action needed.</p></section>")
    items = []
    for r in todo:
        bad = [o for o in r["objects"] if o["status"] in _ACTION]
        fixes: dict[str, tuple[dict, list[str]]] = {}
        for o in bad:
            if o.get("fix"):
                nics = fixes.setdefault(_fix_key(o), (o["fix"], []))[1]
                if _nic(str(o["object"])) not in nics:
                    nics.append(_nic(str(o["object"])))
        # the command or file of each fix; its note is in the check's own section
        fix_html = "".join(f"<li>{_fix_html({k: v for k, v in f.items() if k != 'note'} if len(f) > 1 else f)} "
                           f"<small>({', '.join(_name(n) for n in nics)})</small></li>"
                           for f, nics in fixes.values())
        link = f' &middot; <a href="{escape(runbook)}#{escape(r["check"])}">runbook</a>' if runbook else ""
        items.append(f'<li><span class="sev sev-{escape(r["severity"])}">{escape(r["severity"])}</span> '
                     f'<a href="#check-{escape(r["check"])}">{escape(r["title"])}</a> '
                     f'{_badge(r["status"])} <small>{len(bad)} object{"s" if len(bad) != 1 else ""}</small>{link}'
                     + (f"<ul>{fix_html}</ul>" if fix_html else "") + "</li>")
    return (f'<section class="fixfirst" id="fix-first"><h2>Fix first</h2>\n{_remediate_hint(d)}\n<ol>\n'
            + "\n".join(items) + "\n</ol></section>")


def render_html(result: ScanResult, content: Content | None = None, runbook_url: str | None = None) -> str:
    d = to_dict(result)
    runbook = runbook_url or None  # a published runbook; else each section is embedded
    sections = {} if runbook else runbook_md.load_sections()
    host = d["host"] or {}
    hostname = host.get("hostname", "unknown host")
    started = dt.datetime.fromtimestamp(d["scan"]["started_at"], dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    summary = "".join(f'<li>{_badge(s)} {d["summary"].get(s, 0)}</li>' for s in _STATUSES)
    results = sorted(d["results"], key=_rank)  # stable: content order within a rank
    hostline = (f'{escape(hostname)} &middot; {escape(str(host.get("platform", "")))} &middot; '
                f'{escape(str(host.get("os", "")))} &middot; kernel {escape(str(host.get("kernel", "")))}'
                if host else "host unknown")
    verdict = "compliant" if result.compliant else "not compliant"
    checks = content.checks if content is not None else {}
    body = "\n".join(_check_section(r, checks.get(r["check"]), runbook, sections) for r in results)
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
{_fix_first(results, runbook, d)}
{body}
</main>
<footer>{escape(d["tool"])} {escape(d["version"])} &middot; content digest {escape(str(d["content_digest"]))}</footer>
</body>
</html>
"""
