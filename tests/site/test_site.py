"""The built textbook site in a real browser: headless Chromium (Debian's package) driven by Playwright.

Run after `python -m docs_gen --katex && mkdocs build --strict` (CI's docs stage):

    pytest tests/site            # MHA_SPEC_SITE=DIR picks another built site, CHROMIUM=PATH another browser

The site is served from its folder on 127.0.0.1; each page is opened in a fresh browser context
and must typeset all its math (no raw TeX delimiters left in the text), show what it is for
(tables, plots), request nothing from outside localhost and log no console error. One screenshot
per page is kept under .artifacts/screenshots/.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import threading
from pathlib import Path

import pytest

from spec_tests.harness import claims

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("MHA_SPEC_SITE", ROOT / "site"))
SHOTS = ROOT / ".artifacts" / "screenshots"

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# Raw TeX left in the visible text means the math was not typeset.
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\frac|\\sqrt|\\mathbb|\\operatorname")

# (page, what it must show): home, a chapter with math, the matrix, the benchmarks.
# The site is built with `use_directory_urls: false` (pages are page.html, so it also opens from disk).
# Each chapter's page, without its .md: "sdpa".
CHAPTERS = [c.page.removesuffix(".md") for c in claims.chapters().values()]

PAGES = {
    "home": "",
    "chapter": "sdpa.html",
    "conformance": "conformance.html",
    "benchmarks": "benchmarks.html",
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
        _keep_screenshot(self.page, name)

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
        for target in ("contract.html", "conventions.html", "sdpa.html", "conformance.html", "instructors.html",
                       "sources.html"):
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

@pytest.fixture(params=CHAPTERS, scope="module")
def chapter(request, browser, server):
    """The chapter at a desktop width, its math typeset (or given up on after 15 s), opened once for
    every test of it; its screenshot is .artifacts/screenshots/toc-CHAPTER.png."""
    context, page, _ = _open(browser, server, request.param + ".html", {"width": 1280, "height": 900},
                             f"toc-{request.param}")
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


# ---------------------------------------------------------------- every chapter, on a phone
# Each chapter at a phone's width (390 px): its math typeset (in the text, the claims list and the
# table of contents), no raw TeX or stray backticks left in the text, and nothing wider than the
# screen (wide equations and tables scroll inside their own box).

PHONE = {"width": 390, "height": 844}
STRAY_BACKTICK = re.compile(r"`")


# px: a longer page is kept as its top (Chromium rasterises a long page slowly, and CI's two cores are busy with the
# other lanes meanwhile); MHA_SPEC_SHOT_HEIGHT sets another height
TALLEST_SHOT = int(os.environ.get("MHA_SPEC_SHOT_HEIGHT", "3000"))


def _keep_screenshot(page, name: str) -> None:
    """Keep a screenshot of the page for a person to look at (it decides no test). The page's top, up to
    TALLEST_SHOT px: the bug catalogue and the libraries page run to over 100,000 px, and a full-page shot of them
    took over 30 s on a loaded CI machine (the 48 shots at up to 12,000 px, some 50 MB of PNG, took a good part of
    the stage). If even that times out, the visible part alone is kept."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = str(SHOTS / f"{name}.png")
    size = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
    try:
        if size[1] <= TALLEST_SHOT:
            page.screenshot(path=path, full_page=True, timeout=60_000)
        else:
            page.screenshot(path=path, full_page=True, timeout=60_000,
                            clip={"x": 0, "y": 0, "width": size[0], "height": TALLEST_SHOT})
    except Exception:  # playwright's TimeoutError: the screenshot is for a person, not a verdict
        page.screenshot(path=path, timeout=60_000)


def _open(browser, base: str, path: str, viewport: dict, shot: str):
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    response = page.goto(base + path, wait_until="networkidle")
    assert response is not None and response.ok, f"{path}: HTTP {response.status if response else 'no response'}"
    try:
        page.wait_for_function(
            "() => [...document.querySelectorAll('.arithmatex')].every(e => e.querySelector('.katex'))", timeout=15_000)
    except Exception:  # reported by the assertions below, with what is missing
        pass
    _keep_screenshot(page, shot)
    return context, page, errors


_TEXT_OUTSIDE_CODE = """(sel) => {
    const root = document.querySelector(sel);
    if (!root) return '';
    const copy = root.cloneNode(true);
    copy.querySelectorAll('pre, code, .katex, .katex-mathml, annotation, script, style').forEach(e => e.remove());
    return copy.innerText;
}"""


def _math_claims(chapter: str) -> list[str]:
    """The IDs of this chapter's claims whose summary holds math (docs_gen typesets it in the heading)."""
    from docs_gen.mathtext import rich

    return [c.id for c in claims.catalogue().values() if claims.chapters()[c.chapter].page == chapter + ".md"
            and "$" in rich(c.summary)]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_on_a_phone(browser, server, chapter):
    context, page, errors = _open(browser, server, f"{chapter}.html", PHONE, f"phone-{chapter}")
    try:
        assert not errors, f"{chapter}: uncaught errors: {errors}"
        text = page.evaluate(_TEXT_OUTSIDE_CODE, "article")
        raw = RAW_TEX.findall(text)
        assert not raw, f"{chapter}: raw TeX left in the text: {raw[:10]}"
        ticks = [ln.strip() for ln in text.splitlines() if STRAY_BACKTICK.search(ln)]
        assert not ticks, f"{chapter}: literal backticks in the text (code that was not rendered as code): {ticks[:5]}"
        want = _math_claims(chapter)
        typeset = page.evaluate("""(ids) => ids.filter(id => {
            const h = document.getElementById(id.toLowerCase());
            return h && h.querySelector('.katex');
        })""", want)
        assert sorted(typeset) == sorted(want), (f"{chapter}: claims whose heading should show typeset math but "
                                                 f"does not: {sorted(set(want) - set(typeset))}")
        cut = page.evaluate("""() => [...document.querySelectorAll('article .katex-display')]
            .filter(k => k.scrollWidth > k.clientWidth + 1
                         && !['auto', 'scroll'].includes(getComputedStyle(k).overflowX))
            .map(k => k.textContent.slice(0, 60))""")
        assert not cut, f"{chapter}: display equations cut off on a phone (wider than the screen, not scrollable): {cut}"
        width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], (f"{chapter}: the page is {width[0]} px wide on a {width[1]} px screen "
                                      "(something overflows instead of scrolling inside its box)")
    finally:
        context.close()


def test_table_of_contents_typesets_math(chapter):
    """The table of contents repeats the headings (claim titles among them): their math typeset too."""
    chapter, page = chapter
    raw = page.evaluate(r"""() => [...document.querySelectorAll('.md-sidebar--secondary .md-nav__link')]
        .map(a => { const c = a.cloneNode(true); c.querySelectorAll('.katex').forEach(k => k.remove());
                    return c.textContent; })
        .filter(t => /\\\(|\\\)|\\[a-zA-Z]+\{|\$/.test(t))""")
    assert not raw, f"{chapter}: raw TeX in the table of contents: {raw[:5]}"
    if _math_claims(chapter):
        typeset = page.locator(".md-sidebar--secondary .md-nav__link .katex").count()
        assert typeset > 0, f"{chapter}: the claims' math is not typeset in the table of contents"


def test_conformance_matrix_fits_the_page(browser, server):
    """At a desktop width every column of the matrix is on screen: no table wider than its box."""
    context, page, errors = _open(browser, server, "conformance.html", {"width": 1280, "height": 900}, "conformance-1280")
    try:
        over = page.evaluate("""() => [...document.querySelectorAll('table.spec-matrix')]
            .map(t => [t.closest('h3, div')?.previousElementSibling?.innerText || '', t.scrollWidth,
                       t.parentElement.clientWidth])
            .filter(([_, w, box]) => w > box + 1)""")
        assert page.locator("table.spec-matrix").count() >= 5, "the matrix tables are missing"
        assert not over, f"matrix tables wider than the page (title, width, room): {over}"
        statements = page.locator("table.spec-matrix td.spec-statement[title]").count()
        assert statements >= 30, f"only {statements} statements carry their full text on hover"
        assert page.locator("table.spec-matrix td.spec-statement .katex").count() >= 5, "no typeset math in the matrix"
        body = page.inner_text("article")
        assert "not applicable" in body, "the implementations table does not count 'not applicable' apart"
    finally:
        context.close()


def test_bug_cards_show_real_feedback(browser, server):
    context, page, errors = _open(browser, server, "bugs.html", {"width": 1280, "height": 900}, "bugs")
    try:
        text = page.evaluate(_TEXT_OUTSIDE_CODE, "article")
        ticks = [ln.strip() for ln in text.splitlines() if STRAY_BACKTICK.search(ln)]
        assert not ticks, f"literal backticks on the bugs page: {ticks[:5]}"
        old = re.findall(r"\bseed (?:0\d\d|notes?)\b|\bthe seeds\b|\bseed's\b", text, flags=re.I)
        assert not old, f"the bugs page cites the lecture notes as {old[:3]}: say 'lecture note 1/2' (Sources)"
        cards = page.locator("article .admonition.bug").count()
        feedback = page.locator("article .admonition.bug details.failure pre").count()
        assert cards >= 20, f"only {cards} bug cards"
        assert feedback >= cards * 0.9, f"only {feedback} of {cards} cards show the failure message a learner gets"
        first = page.locator("article .admonition.bug details.failure pre").first.text_content()
        assert "does not hold" in first and "reproduce" in first, f"not a failure message of the suite: {first[:300]}"
    finally:
        context.close()


# ---------------------------------------------------------------- the mask explorer

EXPLORER_CASES = [  # (L_q, L_k, real keys per sequence, causal alignment)
    (3, 5, [5, 2], "bottom-right"),
    (4, 6, [6], "top-left"),
    (2, 4, [0, 4], "none"),  # a sequence with no real key: every row exactly 0
]


@pytest.mark.parametrize("L_q, L_k, lengths, alignment", EXPLORER_CASES)
def test_mask_explorer_matches_the_reference(browser, server, L_q, L_k, lengths, alignment):
    """The explorer's visibility grid and weights for one configuration equal the reference's."""
    import numpy as np

    from docs_gen.mask_explorer import reference_weights

    context, page, errors = _open(browser, server, "masks.html", {"width": 1280, "height": 900}, "masks")
    try:
        root = page.locator("#mask-explorer")
        assert root.count() == 1, "the masks chapter has no mask explorer"
        root.locator("input[name=L_q]").fill(str(L_q))
        root.locator("input[name=L_k]").fill(str(L_k))
        root.locator("input[name=lengths]").fill(", ".join(map(str, lengths)))
        root.locator("select[name=alignment]").select_option(alignment)
        shot = f"mask-explorer-{L_q}x{L_k}-{alignment}"
        root.screenshot(path=str(SHOTS / f"{shot}.png"))
        seen = page.evaluate("""() => {
            const read = (kind, attr) => [...document.querySelectorAll(`#mask-explorer table[data-kind=${kind}]`)]
                .map(t => [...t.querySelectorAll('tr')].slice(1)
                    .map(tr => [...tr.querySelectorAll('td')].map(td => Number(td.getAttribute(attr)))));
            return {visible: read('visible', 'data-visible'), weights: read('weights', 'data-weight')};
        }""")
        expected = reference_weights(L_q, L_k, lengths, alignment)  # (B, L_q, L_k)
        visible = np.asarray(seen["visible"], dtype=bool)
        weights = np.asarray(seen["weights"], dtype=float)
        assert weights.shape == expected.shape, f"the explorer shows {weights.shape}, the reference {expected.shape}"
        # A visible key can still get a weight that rounds to 0 in float64 only when its score is
        # hundreds below the row's maximum: not with this example's values.
        assert np.array_equal(visible, expected > 0), (f"visibility grid differs from the reference:\n"
                                                       f"{visible.astype(int)}\nreference:\n{(expected > 0).astype(int)}")
        np.testing.assert_allclose(weights, expected, rtol=1e-12, atol=1e-15,
                                   err_msg="the explorer's weights differ from reference.attention_weights")
        assert not errors, f"uncaught errors: {errors}"
    finally:
        context.close()



# The mask algebra's controls, composed with padding and causal by AND: (L_q, L_k, lengths, alignment, window
# (left, right), key segment ids, query segment ids, prefix-LM prefix); None leaves a control empty.
ALGEBRA_CASES = [
    (6, 6, [6, 4], "bottom-right", (2, 0), None, None, None),  # a causal window, two back
    (3, 6, [6], "none", (1, 1), None, None, None),  # a band, bottom-right aligned for L_q < L_k
    (6, 6, [6, 5], "bottom-right", None, [0, 0, 1, 1, 1, 2], None, None),  # packed documents AND causal
    (4, 6, [6], "none", (None, 0), [0, 0, 0, 1, 1, 1], [0, 1, 1, 1], None),  # query ids of their own
    (6, 6, [6, 3], "none", None, None, None, 3),  # prefix-LM, a padded sequence
    (6, 6, [6], "none", (1, None), [0, 0, 1, 1, 1, 1], None, 2),  # window AND documents AND prefix-LM
]


@pytest.mark.parametrize("L_q, L_k, lengths, alignment, window, kv_ids, q_ids, prefix", ALGEBRA_CASES)
def test_mask_explorer_composes_windows_documents_and_prefix_lm(browser, server, L_q, L_k, lengths, alignment,
                                                              window, kv_ids, q_ids, prefix):
    """The explorer's window, segment ids and prefix-LM, ANDed with padding and causal, equal the reference's."""
    import numpy as np

    from docs_gen.mask_explorer import reference_weights

    context, page, errors = _open(browser, server, "masks.html", {"width": 1280, "height": 900}, "masks")
    try:
        root = page.locator("#mask-explorer")
        text = lambda v: "" if v is None else ", ".join(map(str, v)) if isinstance(v, list) else str(v)  # noqa: E731
        fields = {"L_q": str(L_q), "L_k": str(L_k), "lengths": text(lengths),
                  "window_left": text(window and window[0]), "window_right": text(window and window[1]),
                  "kv_segment_ids": text(kv_ids), "q_segment_ids": text(q_ids), "prefix": text(prefix)}
        for name, value in fields.items():
            root.locator(f"input[name={name}]").fill(value)
        root.locator("select[name=alignment]").select_option(alignment)
        assert root.locator(".mx-error").inner_text().strip() == "", root.locator(".mx-error").inner_text()
        shot = "-".join(f"{n}{text(v) if not isinstance(v, tuple) else text(list(v))}" for n, v in
                        (("w", window), ("docs", kv_ids), ("prefix", prefix)) if v is not None)
        root.screenshot(path=str(SHOTS / f"mask-explorer-{L_q}x{L_k}-{''.join(c if c.isalnum() or c == '-' else '_' for c in shot)}.png"))
        seen = page.evaluate("""() => {
            const read = (kind, attr) => [...document.querySelectorAll(`#mask-explorer table[data-kind=${kind}]`)]
                .map(t => [...t.querySelectorAll('tr')].slice(1)
                    .map(tr => [...tr.querySelectorAll('td')].map(td => Number(td.getAttribute(attr)))));
            return {visible: read('visible', 'data-visible'), weights: read('weights', 'data-weight')};
        }""")
        expected = reference_weights(L_q, L_k, lengths, alignment, window_size=window, q_segment_ids=q_ids,
                                     kv_segment_ids=kv_ids, prefix=prefix)  # (B, L_q, L_k)
        visible, weights = np.asarray(seen["visible"], dtype=bool), np.asarray(seen["weights"], dtype=float)
        assert weights.shape == expected.shape, f"the explorer shows {weights.shape}, the reference {expected.shape}"
        assert np.array_equal(visible, expected > 0), (f"visibility grid differs from the reference:\n"
                                                       f"{visible.astype(int)}\nreference:\n{(expected > 0).astype(int)}")
        np.testing.assert_allclose(weights, expected, rtol=1e-12, atol=1e-15,
                                   err_msg="the explorer's weights differ from reference.attention_weights")
        assert not errors, f"uncaught errors: {errors}"
    finally:
        context.close()


# ---------------------------------------------------------------- the product stands on its own

PAPERS = ["1706.03762", "1607.06450", "2002.04745", "2205.14135", "2112.05682", "2104.09864", "1910.10683",
          "2108.12409", "2305.13245", "2006.04768", "2009.14794", "2001.04451", "2004.05150"]
# Citations a reader cannot follow: files outside the repository, and the lecture notes by their old
# working name instead of "lecture note 1/2" (the Sources page).
UNFOLLOWABLE = re.compile(r"\bseed (?:0\d\d|notes?)\b|\bthe seeds\b|\bseed's\b|DESIGN\.md|\.\./shared|CLAIMS\.md", re.I)


def _visible_html_text(path: Path) -> str:
    """A built page's text outside code blocks and scripts (code may quote anything)."""
    html = path.read_text(encoding="utf-8")
    html = re.sub(r"<(pre|script|style|code)\b.*?</\1>", " ", html, flags=re.S | re.I)
    return re.sub(r"<[^>]+>", " ", html)


def test_no_page_cites_what_a_reader_cannot_follow():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE}")
    found = {}
    for page in sorted(SITE.rglob("*.html")):
        if "assets" in page.parts:
            continue
        hits = sorted(set(UNFOLLOWABLE.findall(_visible_html_text(page))))
        if hits:
            found[str(page.relative_to(SITE))] = hits
    assert not found, f"pages citing files a reader does not have, or 'seed' for a lecture note: {found}"


def test_sources_and_contract_pages(browser, server):
    context, page, errors = _open(browser, server, "sources.html", {"width": 1280, "height": 900}, "sources")
    try:
        hrefs = page.eval_on_selector_all("article a", "els => els.map(e => e.getAttribute('href'))")
        missing = [p for p in PAPERS if not any(h and f"arxiv.org/abs/{p}" in h for h in hrefs)]
        assert not missing, f"the Sources page does not link these papers: {missing}"
        raw = RAW_TEX.findall(page.evaluate(_TEXT_OUTSIDE_CODE, "article"))
        assert not raw, f"sources: raw TeX left in the text: {raw[:5]}"
        for anchor in ("lecture-note-1", "lecture-note-2", "vaswani-2017"):
            assert page.locator(f"#{anchor}").count() == 1, f"the Sources page has no #{anchor} to cite"
    finally:
        context.close()
    context, page, errors = _open(browser, server, "contract.html", {"width": 1280, "height": 900}, "contract")
    try:
        body = page.inner_text("article")
        for words in ("scaled_dot_product_attention", "bottom-right", "ValueError", "BACKEND", "float64"):
            assert words in body, f"the contract page does not mention {words!r}"
        # the contract as a file from the site itself; a repository link only when one was configured
        assert page.locator("article a[href='downloads/CONTRACT.txt']").count() == 1, "no download of the contract"
        if os.environ.get("MHA_SPEC_REPO_URL"):
            assert page.locator(".md-source").count() >= 1, "no link to the configured repository"
        else:
            assert page.locator(".md-source, a[href*='github.com/mha-spec']").count() == 0, "a placeholder repository link"
        raw = RAW_TEX.findall(page.evaluate(_TEXT_OUTSIDE_CODE, "article"))
        assert not raw, f"contract: raw TeX left in the text: {raw[:5]}"
        assert page.locator("article .katex").count() >= 2, "the contract's formulas are not typeset"
    finally:
        context.close()


def test_site_opens_from_disk(browser):
    """file://: the built pages link to page.html files, so the site works without a server."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto((SITE / "index.html").resolve().as_uri(), wait_until="load")
        page.locator("article a[href='sdpa.html']").first.click()
        page.wait_for_load_state("load")
        assert page.url.endswith("/sdpa.html"), f"following a link from disk led to {page.url}"
        page.wait_for_function("() => document.querySelectorAll('.arithmatex .katex').length > 5", timeout=15_000)
    finally:
        context.close()


def test_chapter_offers_its_notebook_for_download(browser, server):
    """A chapter's page links its notebook, served by the site itself; the home page, the template and
    the contract; no page links the repository unless one was configured at build time."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    try:
        page.goto(server + "masks.html", wait_until="load")
        link = page.locator("article a[href='notebooks/masks.ipynb']")
        assert link.count() == 1, "the Masks chapter has no link to notebooks/masks.ipynb"
        assert link.get_attribute("download") == "masks.ipynb"
        with page.expect_download() as info:
            link.click()
        saved = Path(info.value.path())
        notebook = json.loads(saved.read_text())
        tags = [t for cell in notebook["cells"] for t in cell.get("metadata", {}).get("tags", [])]
        assert tags == ["implementation", "check"], f"masks.ipynb's tagged cells: {tags}"
        page.goto(server, wait_until="load")
        for href in ("downloads/template.py", "downloads/CONTRACT.txt"):
            assert page.locator(f"article a[href='{href}']").count() >= 1, f"the home page does not link {href}"
            assert (SITE / href).is_file(), f"the built site does not carry {href}"
        if not os.environ.get("MHA_SPEC_REPO_URL"):
            for html in SITE.glob("*.html"):
                assert "github.com/mha-spec" not in html.read_text(), f"{html.name} links a placeholder repository"
    finally:
        context.close()
