"""`--format html`: a well-formed, self-contained page with every check, everything escaped,
worst first, fixes grouped per NIC; rendered by real headless Chromium (DevTools protocol over
a pipe) with no console errors, no name broken across lines, and a screenshot."""

from __future__ import annotations

import base64
import copy
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser

import pytest

from tunewatch.scan import engine
from tunewatch.content.catalog import Content
from tunewatch.results import Fix
from tunewatch.outputs.html import _fix_html, _words, render_html

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
def content():
    return Content()


@pytest.fixture(scope="module")
def result(content):
    return engine.scan(content, content.resolve("azure-sap-hana"), EXAMPLE)


def test_cli_html_is_well_formed_and_lists_every_check(result, tmp_path):
    out = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "scan", "--root", EXAMPLE, "--profile",
                          "azure-sap-hana", "--format", "html", "--output", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr  # the rebooted host fails checks
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>")
    page = parse(html)
    assert page.script_tags == 0 and "link" not in page.tags  # self-contained, no JS
    ids = [r.check for r in result.results]
    assert page.sections[0] == "fix-first"
    assert page.sections[1:] == [f"check-{c}" for c in sorted(ids, key=lambda c: _rank(result, c))]
    text = " ".join(page.text)
    for cid in ids:
        assert cid in text
    assert page.tags.count("table") >= len(ids)
    assert "hanadb01" in text and "azure-sap-hana" in text


def _rank(result, cid):
    """Checks that need action first; then severity, then status, then content order."""
    order = {"fail": 0, "error": 1, "waived": 2, "pass": 3, "notapplicable": 4}
    severity = {"high": 0, "medium": 1, "low": 2}
    index = [r.check for r in result.results].index(cid)
    r = result.results[index]
    return (r.status not in ("fail", "error"), severity[r.severity], order[r.status], index)


def test_failures_come_first(result):
    page = parse(render_html(result))
    assert page.sections[1] == "check-" + next(r.check for r in result.results if r.status == "fail")
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
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</span> &amp; more" in html
    page = parse(html)
    assert page.script_tags == 0
    assert len(page.sections) == len(result.results) + 1  # and the fix-first summary
    assert '<script>alert("x")</script> & more' in "".join(page.text)


def test_unknown_host_renders(result):
    headless = copy.deepcopy(result)
    headless.host = None
    page = parse(render_html(headless))
    assert "host unknown" in " ".join(page.text)


def _section(html: str, cid: str) -> str:
    part = html[html.index(f'id="check-{cid}"'):]
    return part[:part.index("</section>")]


def test_severity_orders_checks_that_need_action(result):
    """A high-severity failure never comes after a medium or low one (status alone did that)."""
    shuffled = copy.deepcopy(result)
    first_fail = next(r for r in shuffled.results if r.status == "fail")
    first_fail.severity = "low"  # now the least severe failure, although first in content order
    page = parse(render_html(shuffled))
    failing = [s for s in page.sections[1:] if s[len("check-"):] in {r.check for r in shuffled.results
                                                                     if r.status == "fail"}]
    assert failing[-1] == f"check-{first_fail.check}"
    assert page.sections.index(failing[-1]) < min(page.sections.index(f"check-{r.check}") for r in shuffled.results
                                                  if r.status not in ("fail", "error"))
    fix_first = render_html(shuffled).split('id="fix-first"')[1].split("</section>")[0]
    assert fix_first.index(f"#check-{first_fail.check}\"") > fix_first.index('class="sev sev-medium"')


def _with_fixes(result):
    """The scan with `fix` data on the failing IRQ objects, one command per NIC (as the
    irq_affinity kind sets it), so the grouping is tested whatever the kinds set today."""
    fixed = copy.deepcopy(result)
    for o in next(r for r in fixed.results if r.check == "nic-irq-affinity").objects:
        if o.status == "fail" and o.fix is None:
            nic = o.object.split("/")[0]
            o.fix = Fix(command=f"tunewatch_set_irq_affinity_cpulist.sh 2-31 {nic}")
    return fixed


def test_identical_fixes_are_shown_once_per_nic(result, content):
    fixed = _with_fixes(result)
    html = render_html(fixed, content)
    affinity = next(r for r in fixed.results if r.check == "nic-irq-affinity")
    for nic in ("enP30832s1", "enP30833s2"):
        failing = [o for o in affinity.objects if o.status == "fail" and o.object.startswith(nic + "/")]
        fixes = {json.dumps(o.fix.to_dict(), sort_keys=True) for o in failing}
        assert len(failing) > 10 and len(fixes) == 1  # many IRQ rows, one fix
        cell = _fix_html(failing[0].fix.to_dict())
        section = _section(html, "nic-irq-affinity")
        assert section.count(cell) == 1  # one fix cell for the NIC's rows (messages may name the command too)
        assert f"{len(failing)} objects of " in section and f"each of the {len(failing)}</summary>" in section
        fix_first = html.split('id="fix-first"')[1].split("</section>")[0]
        command = _fix_html({"command": failing[0].fix.command})  # its note is in the check's section only
        assert fix_first.count(command) == 1 and cell not in fix_first


def test_fix_cell_reads_the_fix_not_the_message(result, content):
    """The fix column shows `fix` (command, file + change, note); a message that merely
    ends in ": something" gives no fix cell content."""
    changed = copy.deepcopy(result)
    obj = next(o for r in changed.results for o in r.objects if o.status == "fail")
    obj.message = "eth9 is wrong: rm -rf /"
    obj.fix = Fix(file="/etc/sysctl.d/99-tunewatch.conf", change="vm.dirty_bytes = 629145600", note="then reboot")
    html = render_html(changed, content)
    assert "<code>rm" not in html
    cell = _fix_html(obj.fix.to_dict())
    assert "/etc/sysctl.d/99-tunewatch.conf" in cell and "<pre>vm.dirty_bytes = 629145600</pre>" in cell
    assert cell in html and "then reboot" in cell


def test_rationale_references_and_runbook_links(result, content):
    html = render_html(result, content, "https://wiki.example/tunewatch/runbook.md")
    runbook = open(os.path.join(os.path.dirname(__file__), "..", "docs", "runbook.md"), encoding="utf-8").read()
    for r in result.results:
        check = content.checks[r.check]
        section = _section(html, r.check)
        assert _words(check.rationale) in section
        for ref in check.references:  # title and publisher from checks/references.yaml, never "seed NNN"
            assert _words(ref["title"]) in section and ref.get("publisher")
            if ref.get("url"):
                assert f'href="{ref["url"]}"' in section
        assert "seed 0" not in section
        assert f'href="https://wiki.example/tunewatch/runbook.md#{r.check}"' in section
        assert f"\n### {r.check}\n" in runbook  # the anchor exists (GitHub heading anchor)


def test_without_a_runbook_url_the_sections_are_embedded(result, content):
    html = render_html(result, content)
    assert "file://" not in html and "runbook.md" not in html
    section = _section(html, "nic-irq-affinity")
    assert "<summary>Runbook: how to fix" in section
    assert "<pre><code>systemctl disable --now irqbalance" in section  # the fenced block, escaped
    assert 'href="#check-nic-irq-affinity-persistent"' in section  # runbook links stay inside the report
    parse(html)


def test_report_says_how_to_get_the_fixes_as_a_script(result, content):
    fix_first = render_html(result, content).split('id="fix-first"')[1].split("</section>")[0]
    assert f"tunewatch remediate --root {EXAMPLE} --profile azure-sap-hana -o fix.sh" in fix_first
    assert "--format ansible" in fix_first


def test_css_never_breaks_words():
    from tunewatch.outputs import html as html_module
    assert "break-all" not in html_module._CSS and "anywhere" not in html_module._CSS
    assert "white-space: nowrap" in html_module._CSS.split(".name {")[1].split("}")[0]


class DevTools:
    """Chromium's DevTools protocol over --remote-debugging-pipe (fd 3 in, fd 4 out, NUL-framed JSON)."""

    def __init__(self, chromium: str, profile_dir: str):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def as_fds_3_and_4():  # in the child: our pipe ends become fds 3 and 4, where the pipe is expected
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome_r, from_chrome_w)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)  # dup2 makes them inheritable; every other fd stays close-on-exec

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={profile_dir}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=as_fds_3_and_4)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                raise AssertionError("no answer from chromium in time")
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise AssertionError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: str | None = None, timeout: float = 60, **params) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next_id:
                assert "error" not in answer, answer
                return answer["result"]
            self.events.append(answer)

    def wait_event(self, method: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if event.get("method") == method:
                    self.events.remove(event)
                    return event
            self.events.append(self._read(deadline))

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (AssertionError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # our own child, by its pid
            self.proc.wait(timeout=10)
        for fd in (self._to_chrome, self._from_chrome):
            os.close(fd)


@pytest.fixture
def devtools(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium not installed (Debian package chromium)")
    browser = DevTools(chromium, str(tmp_path / "chromium-profile"))
    try:
        yield browser
    finally:
        browser.close()


def _load(browser: DevTools, url: str, width: int) -> str:
    """Open url in a fresh tab of `width` CSS px; return the session with console/log events enabled."""
    target = browser.call("Target.createTarget", url="about:blank")["targetId"]
    session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
        browser.call(domain, session)
    browser.call("Emulation.setDeviceMetricsOverride", session, width=width, height=900, deviceScaleFactor=1,
                 mobile=False)
    browser.call("Page.navigate", session, url=url)
    browser.wait_event("Page.loadEventFired")
    browser.call("Runtime.evaluate", session, expression="1", awaitPromise=True)  # let queued events arrive
    return session


def _console_errors(browser: DevTools) -> list[str]:
    errors = []
    for event in browser.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            errors.append("exception: " + params["exceptionDetails"].get("text", ""))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            errors.append(f"log: {params['entry']['source']}: {params['entry']['text']}")
    return errors


def test_console_error_detector_catches_errors(devtools, tmp_path):
    """Control: the detector used below sees a console.error and a missing resource."""
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><body><img src="missing.png"><script>console.error("boom")</script>'
                    "</body></html>")
    _load(devtools, page.as_uri(), 800)
    errors = _console_errors(devtools)
    assert any("boom" in e for e in errors) and any("missing.png" in e or "ERR_FILE_NOT_FOUND" in e
                                                    for e in errors), errors


@pytest.mark.parametrize("width", [1400, 720])
def test_chromium_renders_without_console_errors_or_broken_names(devtools, tmp_path, width):
    out = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "tunewatch.cli.main", "scan", "--root", EXAMPLE, "--profile",
                          "azure-sap-hana", "--output-html", str(out)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    session = _load(devtools, out.as_uri(), width)
    assert _console_errors(devtools) == []
    broken = devtools.call("Runtime.evaluate", session, returnByValue=True, expression=(
        "[...document.querySelectorAll('.name, .nw, .badge, .sev')]"
        ".filter(e => e.getClientRects().length > 1 || e.getBoundingClientRect().height > 2.2 * "
        "parseFloat(getComputedStyle(e).lineHeight || 16)).map(e => e.textContent)"))["result"]["value"]
    assert broken == [], f"names wrapped across lines at {width}px: {broken[:10]}"
    # every fix cell in sight without scrolling sideways (below 900 px rows become blocks)
    hidden = devtools.call("Runtime.evaluate", session, returnByValue=True, expression=(
        "[...document.querySelectorAll('td.fix')].filter(e => e.getBoundingClientRect().right > "
        "document.documentElement.clientWidth + 1).map(e => e.textContent.slice(0, 60))"))["result"]["value"]
    assert hidden == [], f"fix cells cut off at {width}px: {hidden[:5]}"
    sections = devtools.call("Runtime.evaluate", session, returnByValue=True,
                             expression="document.querySelectorAll('section').length")["result"]["value"]
    assert sections == 9  # fix first + 8 checks
    height = devtools.call("Runtime.evaluate", session, returnByValue=True,
                           expression="document.documentElement.scrollHeight")["result"]["value"]
    assert height <= (5000 if width == 720 else 4000), f"{height}px tall at {width}px"
    shot = devtools.call("Page.captureScreenshot", session, format="png", captureBeyondViewport=True)
    png = base64.b64decode(shot["data"])
    assert png.startswith(b"\x89PNG") and len(png) > 20000
    path = tmp_path / f"report-{width}.png"
    path.write_bytes(png)
    keep = os.environ.get("TUNEWATCH_SCREENSHOT_DIR")  # set it to keep the screenshots for a look
    if keep:
        shutil.copy(path, os.path.join(keep, path.name))


def test_readd_verdict_shown_where_it_differs(content) -> None:
    base = os.path.join(os.path.dirname(__file__), "snapshots", "examples")
    oneshot = render_html(engine.scan(content, content.resolve("azure-sap-hana"),
                                      os.path.join(base, "azure-m-pinned-oneshot")))
    udev = render_html(engine.scan(content, content.resolve("azure-sap-hana"), os.path.join(base, "azure-m-pinned-udev")))
    assert oneshot.count('<div class="readd">') == 1 and "After a re-add of the device" in oneshot
    assert '<div class="readd">' not in udev
