"""The built textbook site in a real browser: headless Chromium (Debian's package) driven by Playwright.

Run after `python -m docs_gen --katex && mkdocs build --strict` (CI's docs stage):

    pytest docs_tests            # MHA_SPEC_SITE=DIR picks another built site, CHROMIUM=PATH another browser

The site is served from its folder on 127.0.0.1; each page is opened in a fresh browser context
and must typeset all its math (no raw TeX delimiters left in the text), show what it is for
(tables, plots), request nothing from outside localhost and log no console error. One screenshot
per page is kept under .artifacts/screenshots/.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("MHA_SPEC_SITE", ROOT / "site"))
SHOTS = ROOT / ".artifacts" / "screenshots"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# Raw TeX left in the visible text means the math was not typeset.
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\frac|\\sqrt|\\mathbb|\\operatorname")

# (page, what it must show) for the pages the issue names: home, a chapter with math, the matrix, the benchmarks.
PAGES = {
    "home": "",
    "chapter": "sdpa/",
    "conformance": "conformance/",
    "benchmarks": "benchmarks/",
}


def _chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("no Chromium found: install Debian's package (apt-get install chromium) or set CHROMIUM=PATH")
    return path


@pytest.fixture(scope="module")
def server():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE}: run `python -m docs_gen --katex && mkdocs build --strict` first")
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output for failures
        pass


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the 'browser' extra)")
    with sync_api.sync_playwright() as pw:
        # A fresh profile per launch (Playwright makes a temporary --user-data-dir); no browser download.
        b = pw.chromium.launch(executable_path=_chromium(), args=FLAGS, chromium_sandbox=False)
        yield b
        b.close()


class Visit:
    """One page load: what it requested, what it logged, and the page itself."""

    def __init__(self, browser, base: str, path: str, name: str):
        self.base = base
        self.requests: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.errors_waiting = ""
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url}: {r.failure}"))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        response = self.page.goto(base + path, wait_until="networkidle")
        assert response is not None and response.ok, f"{path}: HTTP {response.status if response else 'no response'}"
        # KaTeX runs on Material's document$; wait until every math element holds typeset output
        # (if it never does, test_math_is_typeset says how much is missing).
        try:
            self.page.wait_for_function(
                "() => [...document.querySelectorAll('.arithmatex')].every(e => e.querySelector('.katex'))",
                timeout=15_000)
        except Exception as exc:  # playwright's TimeoutError
            self.errors_waiting = str(exc).splitlines()[0]
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def close(self):
        self.context.close()

    def text_outside_code(self) -> str:
        """The page's visible text, without code blocks (which may legitimately hold backslashes)."""
        return self.page.evaluate("""() => {
            const main = document.querySelector('article') || document.body;
            const copy = main.cloneNode(true);
            copy.querySelectorAll('pre, code, .katex-mathml, annotation, script, style').forEach(e => e.remove());
            return copy.innerText;
        }""")


@pytest.fixture(params=list(PAGES), scope="module")
def visit(request, browser, server):
    v = Visit(browser, server, PAGES[request.param], request.param)
    yield request.param, v
    v.close()


def test_nothing_is_requested_from_outside_localhost(visit):
    name, v = visit
    outside = [u for u in v.requests if not (u.startswith(v.base) or u.startswith(("data:", "blob:", "about:")))]
    assert not outside, f"{name}: requests leaving localhost: {outside}"
    assert not v.failed, f"{name}: failed requests: {v.failed}"


def test_no_console_errors(visit):
    name, v = visit
    assert not v.errors, f"{name}: console errors: {v.errors}"


def test_math_is_typeset(visit):
    name, v = visit
    counts = v.page.evaluate("""() => ({
        math: document.querySelectorAll('.arithmatex').length,
        typeset: document.querySelectorAll('.arithmatex .katex').length,
        errors: document.querySelectorAll('.katex-error').length })""")
    assert counts["errors"] == 0, f"{name}: {counts['errors']} formulas KaTeX could not parse"
    assert counts["typeset"] >= counts["math"], (f"{name}: only {counts['typeset']} of {counts['math']} formulas "
                                                 f"typeset {v.errors_waiting}")
    raw = RAW_TEX.findall(v.text_outside_code())
    assert not raw, f"{name}: raw TeX left in the text: {raw[:10]}"
    if name == "chapter":
        assert counts["math"] >= 5, f"the chapter should have formulas to typeset, found {counts['math']}"


def test_the_page_shows_what_it_is_for(visit):
    name, v = visit
    page = v.page
    if name == "home":
        body = page.inner_text("article")
        for words in ("pytest --impl", "Check your own implementation", "pip install"):
            assert words in body, f"home page lacks {words!r}"
        hrefs = page.eval_on_selector_all("article a", "els => els.map(e => e.getAttribute('href'))")
        for target in ("conventions/", "sdpa/", "conformance/", "instructors/"):
            assert any(h and target in h for h in hrefs), f"home page has no link to {target}"
    elif name == "chapter":
        assert page.locator("article pre code").count() >= 3, "the chapter should show the reference code"
        assert page.locator("#sdpa-1").count() == 1, "the claim anchor #sdpa-1 is missing"
        assert page.locator(".tabbed-set").count() >= 1, "per-implementation tabs are missing"
    elif name == "conformance":
        rows = page.locator("article table tbody tr").count()
        cells = page.locator(".spec-cell").count()
        assert rows >= 30 and cells >= 30, f"the matrix has {rows} rows and {cells} status cells"
    elif name == "benchmarks":
        if not any((ROOT / "spec_tests" / "benchmarks").glob("bench_*.py")):
            pytest.skip("no benchmark suite (spec_tests/benchmarks/bench_*.py) in this tree: nothing to plot yet")
        images = page.eval_on_selector_all(
            "article img", "els => els.map(e => [e.getAttribute('src'), e.complete && e.naturalWidth > 0])")
        svgs = [src for src, ok in images if src.endswith(".svg")]
        assert svgs, "the benchmarks page shows no plot"
        assert all(ok for src, ok in images), f"plots that did not load: {[s for s, ok in images if not ok]}"
        assert page.locator("article table").count() >= 1, "the benchmarks page shows no table"


# ------------------------------------------------------------------------------------------------
# Every chapter teaches by showing: a figure, a worked example with its output, and exercises that
# name the claims checking them, each with its command and a collapsed hint.

def _chapter_pages() -> list[str]:
    import tomllib

    with open(ROOT / "spec_tests" / "claims.toml", "rb") as f:
        return [c["page"].removesuffix(".md") for c in tomllib.load(f)["chapter"]]


@pytest.fixture(params=_chapter_pages(), scope="module")
def chapter(request, browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    response = page.goto(server + request.param + "/", wait_until="networkidle")
    assert response is not None and response.ok, f"{request.param}: HTTP {response.status if response else '-'}"
    yield request.param, page
    context.close()


def _section(page, title: str) -> dict | None:
    """The h2 titled `title` and what follows it up to the next h2: its text, images and details boxes."""
    return page.evaluate("""(title) => {
        const h = [...document.querySelectorAll('article h2')].find(e => e.textContent.replace('¶', '').trim() === title);
        if (!h) return null;
        const out = {text: '', images: 0, details: 0, closed: 0, code: 0};
        for (let e = h.nextElementSibling; e && e.tagName !== 'H2'; e = e.nextElementSibling) {
            out.text += e.innerText + '\\n';
            out.code += e.matches('pre') ? 1 : e.querySelectorAll('pre').length;
            const ds = e.matches('details') ? [e] : [...e.querySelectorAll('details')];
            out.details += ds.length;
            out.closed += ds.filter(d => !d.open).length;
        }
        return out;
    }""", title)


def test_each_chapter_has_a_figure(chapter):
    name, page = chapter
    images = page.eval_on_selector_all(
        "article img", "els => els.map(e => [e.getAttribute('src'), e.complete && e.naturalWidth > 0])")
    figures = [src for src, ok in images if src and src.endswith(".svg")]
    inline = page.locator("article figure svg").count()  # a drawing inlined in the page, not an icon
    assert figures or inline, f"{name}: no figure (no <img> of an SVG, no inline <svg>) in the chapter"
    broken = [src for src, ok in images if not ok]
    assert not broken, f"{name}: images that did not load: {broken}"
    captions = page.eval_on_selector_all(
        "article figcaption", "els => els.map(e => { const c = e.cloneNode(true); "
        "c.querySelectorAll('code, .katex-mathml, annotation').forEach(x => x.remove()); return c.innerText; })")
    raw = [c for c in captions if "$" in c or "`" in c or "\\" in c]
    assert not raw, f"{name}: captions with raw TeX or backticks: {raw}"


def test_each_chapter_has_a_worked_example(chapter):
    name, page = chapter
    section = _section(page, "Worked example")
    assert section is not None, f"{name}: no section titled 'Worked example'"
    assert section["code"] >= 2, f"{name}: the worked example should show its code and its printed output"
    assert f"docs_gen/worked_examples/{name}.py" in section["text"], f"{name}: the example's file is not named"


def test_each_chapter_has_exercises_with_commands_and_hints(chapter):
    name, page = chapter
    section = _section(page, "Exercises")
    assert section is not None, f"{name}: no section titled 'Exercises'"
    commands = re.findall(r"pytest --impl \S+ --claim [A-Z]+-\d+(?:,[A-Z]+-\d+)*", section["text"])
    assert len(commands) >= 2, f"{name}: {len(commands)} exercise commands (`pytest --impl ... --claim ID`)"
    assert section["details"] >= len(commands), f"{name}: {section['details']} hints for {len(commands)} exercises"
    assert section["closed"] == section["details"], f"{name}: every hint should start collapsed"
