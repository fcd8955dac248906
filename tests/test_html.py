"""`--format html`: a well-formed, self-contained page with every check, everything escaped."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from tunewatch import engine
from tunewatch.content import Content
from tunewatch.outputs.html import render_html

EXAMPLE = os.path.join(os.path.dirname(__file__), "snapshots", "examples", "azure-m-rebooted")
VOID = {"meta", "br", "hr", "img", "link", "input", "wbr"}


class Page(HTMLParser):
    """Checks tag balance and collects what the tests look at."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []
        self.sections: list[str] = []
        self.text: list[str] = []
        self.script_tags = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "script":
            self.script_tags += 1
        if tag == "section":
            self.sections.append(dict(attrs).get("id", ""))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    assert not page.errors, page.errors[:5]
    assert not page.stack, f"unclosed: {page.stack}"
    return page


@pytest.fixture(scope="module")
def result():
    content = Content()
    return engine.scan(content, content.resolve("azure-sap-hana"), EXAMPLE)


def test_cli_html_is_well_formed_and_lists_every_check(result, tmp_path):
    out = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "tunewatch.cli", "scan", "--root", EXAMPLE, "--profile",
                          "azure-sap-hana", "--format", "html", "--output", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr  # the rebooted host fails checks
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>")
    page = parse(html)
    assert page.script_tags == 0 and "link" not in page.tags  # self-contained, no JS
    ids = [r.check for r in result.results]
    assert page.sections == [f"check-{c}" for c in sorted(ids, key=lambda c: _rank(result, c))]
    text = " ".join(page.text)
    for cid in ids:
        assert cid in text
    assert page.tags.count("table") == len(ids)
    assert "hanadb01" in text and "azure-sap-hana" in text


def _rank(result, cid):
    order = {"fail": 0, "error": 1, "waived": 2, "pass": 3, "notapplicable": 4}
    statuses = [r.status for r in result.results]
    index = [r.check for r in result.results].index(cid)
    return (order[statuses[index]], index)


def test_failures_come_first(result):
    page = parse(render_html(result))
    assert page.sections[0] == "check-" + next(r.check for r in result.results if r.status == "fail")
    html = render_html(result)
    affinity = html[html.index('id="check-nic-irq-affinity"'):]
    affinity = affinity[:affinity.index("</section>")]
    first_fail, last_pass = affinity.find("s-fail\">fail</span></td>"), affinity.rfind("s-pass\">pass</span></td>")
    assert first_fail != -1 and (last_pass == -1 or first_fail < last_pass)


def test_everything_is_escaped(result):
    evil = copy.deepcopy(result)
    obj = evil.results[0].objects[0]
    obj.message = '<script>alert("x")</script> & more'
    obj.object = "<b>eth0</b>"
    evil.results[0].title = "title </section><section>"
    html = render_html(evil)
    assert "<script>" not in html and "<b>eth0</b>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more" in html
    page = parse(html)
    assert page.script_tags == 0
    assert len(page.sections) == len(result.results)
    assert '<script>alert("x")</script> & more' in " ".join(page.text)


def test_unknown_host_renders(result):
    headless = copy.deepcopy(result)
    headless.host = None
    page = parse(render_html(headless))
    assert "host unknown" in " ".join(page.text)
