"""Each chapter's claim list and pitfalls (fragments the chapter page includes), its test-source page,
and the catalogue of common bugs: all generated from claims.toml, the test modules and impls/mutants/."""

from __future__ import annotations

from pathlib import Path

import re

from docs_gen import FRAGMENTS as FRAGMENTS_DIR
from docs_gen import GENERATED_NOTE, write_output
from docs_gen.bug_feedback import FEEDBACK_DIR
from docs_gen.mathtext import plain, prose, rich
from docs_gen.mutant_claims import MEASURED, measured_failures
from docs_gen.spec_source import SpecTest, known_bugs, module_doc, read_tests, rel, tests_by_claim
from impls.mutants import KnownBug
from spec_tests.harness import claims as catalogue
from spec_tests.harness.claims import Chapter, Claim

_ESCAPE = str.maketrans({**{c: "\\" + c for c in "\\`*_[]|$#"}, "<": "&lt;", ">": "&gt;"})


def text(s: str) -> str:
    """Plain text made safe for Markdown (and for the math extension: no stray `$`)."""
    return " ".join(s.split()).translate(_ESCAPE)


# Where a claim's `source` in claims.toml points, on the site: the Sources page explains each
# citation (the two lecture notes, the papers); the contract page holds the implementation contract.
SOURCE_LINKS = {
    "beyond the lecture notes": "sources.md",
    "lecture note 1": "sources.md#lecture-note-1",
    "lecture note 2": "sources.md#lecture-note-2",
    "the implementation contract": "contract.md",
    "Vaswani et al. 2017": "sources.md#vaswani-2017",
    "Ba et al. 2016": "sources.md#ba-2016",
    "Xiong et al. 2020": "sources.md#xiong-2020",
    "Rabe and Staats 2021": "sources.md#rabe-2021",
    "Dao et al. 2022": "sources.md#dao-2022",
    "Su et al. 2021": "sources.md#su-2021",
    "Raffel et al. 2020": "sources.md#raffel-2020",
    "Press et al. 2022": "sources.md#press-2022",
    "Ainslie et al. 2023": "sources.md#ainslie-2023",
    "Beltagy et al. 2020": "sources.md#beltagy-2020",
    "Wang et al. 2020": "sources.md#wang-2020",
    "Choromanski et al. 2021": "sources.md#choromanski-2021",
    "Kitaev et al. 2020": "sources.md#kitaev-2020",
}
_SOURCE_RX = re.compile("|".join(re.escape(k) for k in sorted(SOURCE_LINKS, key=len, reverse=True)))


def source_words(source: str, prefix: str = "") -> str:
    """claims.toml's `source` as a reader follows it: each lecture note, paper or the contract linked
    to the Sources page (or the contract page), the rest as text."""
    out, i = [], 0
    for m in _SOURCE_RX.finditer(source):
        out += [plain(source[i:m.start()]), f"[{m.group(0)}]({prefix}{SOURCE_LINKS[m.group(0)]})"]
        i = m.end()
    out.append(plain(source[i:]))
    return "".join(out).replace(" ; ", "; ")


# How a known bug fails a claim, in the order its claim's section lists them: filed under it (CAUGHT_BY),
# recorded to fail it too (ALSO_CAUGHT_BY; tests/test_mutants.py checks both by running the bug), or seen
# failing it in the measured run of the whole suite behind the bug catalogue's table (MEASURED).
CAUGHT, RECORDED, SEEN = "caught", "recorded", "measured"
ROLES = (CAUGHT, RECORDED, SEEN)


def failing_bugs(mutants: list[KnownBug] | None = None,
                 measured: dict[str, list[str]] | None = None) -> dict[str, list[tuple[KnownBug, str]]]:
    """claim ID -> every known bug recorded or measured to fail it, with how: the one filed under it
    first, then those recorded to fail it too, then those only measured failing it; catalogue order within."""
    mutants = known_bugs() if mutants is None else mutants
    measured = measured_failures() if measured is None else measured
    out: dict[str, list[tuple[KnownBug, str]]] = {}
    for m in mutants:
        for cid in m.claims:
            out.setdefault(cid, []).append((m, CAUGHT if cid == m.caught_by else RECORDED))
        for cid in measured.get(m.name, ()):
            if cid not in m.claims:
                out.setdefault(cid, []).append((m, SEEN))
    return {cid: sorted(found, key=lambda f: ROLES.index(f[1])) for cid, found in out.items()}


def _claim_link(cid: str, claims: dict[str, Claim], prefix: str = "") -> str:
    c = claims.get(cid)
    return f"[{cid}]({prefix}{_chapter_pages()[c.chapter]}#{c.anchor})" if c else cid


def _failing_bugs_lines(cid: str, claims: dict[str, Claim], found: list[tuple[KnownBug, str]]) -> list[str]:
    """A claim's known bugs, each linked to its card on the Common bugs page."""
    if not found:
        return []
    out = ["", "*Known bugs that fail it* (each links to its card on [Common bugs](bugs.md)):", ""]
    for m, role in found:
        card = f"[{readable_name(m.name)}](bugs.md#{bug_anchor(m)})"
        if role == CAUGHT:
            out.append(f"- {card}: caught by this claim.")
        else:
            out.append(f"- {card}, filed under {_claim_link(m.caught_by, claims)}: also fails this claim"
                       + (" (measured)." if role == SEEN else "."))
    if any(role == SEEN for _, role in found):
        out += ["", "*(measured)*: seen failing it when the whole suite was run against every known bug "
                    "([the table](bugs.md#claims-each-bug-fails))."]
    return out


def claims_fragment(chapter: Chapter, claims: dict[str, Claim], by_claim: dict[str, list[SpecTest]],
                    bugs: dict[str, list[tuple[KnownBug, str]]] | None = None) -> str:
    """The chapter's claims: ID (the anchor failures link to), statement, source, the tests, linked, and
    the known bugs that fail it (`bugs`, from failing_bugs(); by default the catalogue's)."""
    bugs = failing_bugs() if bugs is None else bugs
    out = [GENERATED_NOTE.format(source=f"spec_tests/claims.toml, spec_tests/{chapter.module}, impls/mutants/ "
                                        f"and {rel(MEASURED)}"), ""]
    mine = [c for c in claims.values() if c.chapter == chapter.id]
    if not chapter.path.exists():
        out += [f'!!! info "Chapter being written"',
                f"    `spec_tests/{chapter.module}` does not exist yet: its claims are listed here and will",
                "    link their tests as soon as the module lands.", ""]
    for c in mine:
        tests = by_claim.get(c.id, [])
        out += [f"### {c.id}: {rich(c.summary)} {{ #{c.anchor} }}", "", rich(c.statement), ""]
        out += [f"*Source:* {source_words(c.source)}."]
        if tests:
            out += [f"*Enforced by* {len(tests)} test{'s' if len(tests) > 1 else ''}:", ""]
            for t in tests:
                page = _source_page_of(t)
                line = f"- [`{t.name}`]({page}#{t.anchor})"
                out.append(line + (f": {prose(t.doc)}" if t.doc else ""))
        else:
            out += ["", "!!! warning \"Not yet enforced\"",
                    f"    No test carries `@claim(\"{c.id}\")` yet. Until one does, this claim is a statement,",
                    "    not a check, and the conformance matrix has no row for it."]
        out += _failing_bugs_lines(c.id, claims, bugs.get(c.id, []))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _source_page_of(test: SpecTest) -> str:
    return f"source/{Path(test.module).stem}.md"


def pitfalls_fragment(chapter: Chapter, claims: dict[str, Claim], mutants: list[KnownBug]) -> str:
    """One admonition per known bug caught by a claim of this chapter: the bug, its code, its claim."""
    out = [GENERATED_NOTE.format(source="impls/mutants/"), ""]
    mine = [m for m in mutants if m.caught_by in claims and claims[m.caught_by].chapter == chapter.id]
    if not mine:
        out.append("*No bug of the catalogue (`impls/mutants/`) is caught by this chapter's claims yet.*")
    for m in mine:
        out += _bug_admonition(m, claims, link_prefix="")
    return "\n".join(out).rstrip() + "\n"


# Words of a known bug's name as a reader says them (`layer_norm_eps_outside_sqrt` is
# "LayerNorm: eps outside sqrt").
_NAME_WORDS = {"sqrt d model": "sqrt(d_model)", "sqrt num heads": "sqrt(num_heads)", "nan": "NaN",
               "sin cos": "sin/cos", "top left": "top-left", "feature major": "feature-major",
               "layer norm": "LayerNorm", "mha": "multi-head attention", "pe": "positional encoding",
               "kv": "K/V", "gqa": "GQA", "t5": "T5", "rope": "RoPE", "sqrt": "the square root",
               "lecture note code": "the lecture note's code", "1e 6": "1e-6", "d model": "d_model", "of v": "of V",
               "float16": "float16", "num heads": "num_heads", "eps": "eps"}


def readable_name(name: str) -> str:
    """A known bug's file name as a heading: `layer_norm_eps_outside_sqrt` -> "LayerNorm: eps outside the square root"."""
    words = " " + name.replace("_", " ") + " "
    for k, v in _NAME_WORDS.items():
        words = words.replace(f" {k} ", f" {v} ")
    words = words.strip()
    for lead in ("LayerNorm", "multi-head attention", "positional encoding", "GQA", "T5", "RoPE"):
        if words.startswith(lead + " ") and not words.startswith(lead + ":"):
            words = lead + ":" + words[len(lead):]
    return words if words.startswith("d_") else words[0].upper() + words[1:]


def bug_anchor(m: KnownBug) -> str:
    return m.name.replace("_", "-")


def _bug_admonition(m: KnownBug, claims: dict[str, Claim], link_prefix: str, feedback: bool = False,
                    fails_table: bool = False) -> list[str]:
    """One known bug as a card: what it is, the claim that catches it and why, its code; on the bugs
    page also the failure message a learner gets for it (from a real run) and the claims it fails."""
    where = _claim_link(m.caught_by, claims, link_prefix)
    also = [_claim_link(cid, claims, link_prefix) for cid in m.claims if cid != m.caught_by]
    if also:
        where += ", and also fails " + ", ".join(also)
    lines = [f'!!! bug "{readable_name(m.name)}"', ""]
    lines += [f"    **The bug:** {prose(m.bug)}.", "", f"    **Caught by** {where} (`impls/mutants/{m.name}.py`).", ""]
    if m.doc:  # its first paragraph says what BUG says; the rest says why the claim catches it
        for para in m.doc.split("\n\n")[1:]:
            para = " ".join(para.split())
            lead = f"Caught by {m.caught_by}:"
            if para.startswith(lead):  # the line above already names the claim; say what this paragraph is
                lines += ["    **Why it fails the claim:** " + prose(para[len(lead):].strip()), ""]
            else:
                lines += ["    " + prose(para), ""]
    for fname, start, end in m.spans:
        lines += [f'    ```python title="impls/mutants/{m.name}.py: {fname}"',
                  f'    --8<-- "{rel(m.path)}:{start}:{end}"', "    ```", ""]
    fb = FEEDBACK_DIR / f"{m.name}.feedback.md"
    if feedback and fb.exists():
        lines += ['    ???+ failure "What you see when your code has this bug"', "",
                  f'        --8<-- "{rel(fb)}"', ""]
    elif not feedback:
        lines += [f"    The failure message this bug produces, and every claim it fails:"
                  f" [Common bugs]({link_prefix}bugs.md#{bug_anchor(m)}).", ""]
    if fails_table:
        lines += [f"    Every claim this bug fails: [the table below](#claims-each-bug-fails).", ""]
    return lines


def _chapter_pages() -> dict[str, str]:
    return {c.id: c.page for c in catalogue.chapters().values()}


def source_page(chapter: Chapter, claims: dict[str, Claim]) -> str:
    """Every test of one chapter module: its claims, its docstring, its code (included from the file)."""
    title = f"Tests: {chapter.title}"
    out = [GENERATED_NOTE.format(source=f"spec_tests/{chapter.module}"), "", f"# {title}", ""]
    out += [f"The executable half of the chapter [{chapter.title}](../{chapter.page}): every test of",
            f"`spec_tests/{chapter.module}`, with the claims it enforces and its code, included from the file.", ""]
    if not chapter.path.exists():
        out += [f"`spec_tests/{chapter.module}` is being written; this page fills in when it lands.", ""]
        return "\n".join(out)
    doc = module_doc(chapter.path)
    if doc:
        out += ["```text", *doc.splitlines(), "```", ""]
    run = f"pytest --impl PATH --chapter {chapter.id}"
    out += [f"Run this chapter against your file: `{run}`.", ""]
    for t in read_tests(chapter.path):
        links = ", ".join(f"[{cid}](../{_claim_page(cid, claims)}#{cid.lower()})" for cid in t.claims) or "none"
        out += [f"## `{t.name}` {{ #{t.anchor} }}", "", f"*Claims:* {links}", ""]
        if t.doc:
            out += [prose(t.doc), ""]
        out += [f'```python title="spec_tests/{chapter.module}, lines {t.start}-{t.end}"',
                f'--8<-- "spec_tests/{chapter.module}:{t.start}:{t.end}"', "```", ""]
    return "\n".join(out).rstrip() + "\n"


def _claim_page(cid: str, claims: dict[str, Claim]) -> str:
    c = claims.get(cid)
    return _chapter_pages()[c.chapter] if c else "index.md"


def bugs_page(claims: dict[str, Claim], mutants: list[KnownBug]) -> str:
    """docs/bugs.md: the whole catalogue, grouped by the chapter whose claim catches each bug: an index
    by chapter, then one card per bug with the failure message a learner gets for it."""
    chapters = catalogue.chapters()
    fails = FRAGMENTS_DIR / "bugs.claims_failed.md"
    out = [GENERATED_NOTE.format(source="impls/mutants/ and runs of the suite against them"), "", "# Common bugs", ""]
    out += [f"{len(mutants)} implementations, each correct but for **one** bug of the kind learners (and",
            "the lecture notes' own code) really write. Each card says what the bug is, which claim catches",
            "it and why, shows the buggy code, and shows the failure message the suite prints for it, taken",
            "from a real run (`python -m docs_gen --bug-feedback` refreshes them). `tests/test_mutants.py`",
            "runs the suite against every one and fails unless its claim catches it. Read them as a list of",
            "what goes wrong, and of how you will recognise it in your own code: the claim that fails",
            "points at the bug.", ""]
    by_chapter = [(ch, [m for m in mutants if m.caught_by in claims and claims[m.caught_by].chapter == ch.id])
                  for ch in chapters.values()]
    out += ["## Index", ""]
    for ch, mine in by_chapter:
        if not mine:
            continue
        out += [f"**{ch.title}** ([chapter]({ch.page}))", "", "| bug | what goes wrong | caught by |", "| --- | --- | --- |"]
        for m in mine:
            c = claims[m.caught_by]
            out.append(f"| [{readable_name(m.name)}](#{bug_anchor(m)}) | {prose(m.bug)} | "
                       f"[{m.caught_by}]({chapters[c.chapter].page}#{c.anchor}) |")
        out.append("")
    orphans = [m for m in mutants if m.caught_by not in claims]
    if orphans:
        out += ["Bugs whose claim is not in the catalogue: " + ", ".join(f"`{m.name}`" for m in orphans), ""]
    for ch, mine in by_chapter:
        if not mine:
            continue
        out += [f"## {ch.title}", ""]
        for m in mine:
            out += [f"### {readable_name(m.name)} {{ #{bug_anchor(m)} }}", ""]
            out += _bug_admonition(m, claims, "", feedback=True, fails_table=fails.exists())
    killed = FRAGMENTS_DIR / "mutation.kill_rate.md"  # docs_gen/validation.py: the generated mutants' kill rate
    if killed.exists():
        out += ["## Generated mutants { #generated-mutants }", "", f'--8<-- "{rel(killed)}"', ""]
    if fails.exists():
        out += ["## Claims each bug fails { #claims-each-bug-fails }", "",
                "A bug rarely breaks one claim only. This table, from a run of the whole suite against every",
                "known bug, lists every claim each one fails:", "", f'--8<-- "{rel(fails)}"', ""]
    return "\n".join(out).rstrip() + "\n"


def write_all(docs: Path, fragments: Path) -> list[Path]:
    """Write every fragment and page this module owns; return their paths."""
    chapters, claims = catalogue.chapters(), catalogue.catalogue()
    by_claim = tests_by_claim(chapters)
    mutants = known_bugs()
    bugs = failing_bugs(mutants)
    written = []
    for ch in chapters.values():
        written.append(_write(fragments / f"{ch.id}.claims.md", claims_fragment(ch, claims, by_claim, bugs)))
        written.append(_write(fragments / f"{ch.id}.pitfalls.md", pitfalls_fragment(ch, claims, mutants)))
        written.append(_write(docs / ch.source_page, source_page(ch, claims)))
    written.append(_write(docs / "bugs.md", bugs_page(claims, mutants)))
    return written


def _write(path: Path, content: str) -> Path:
    return write_output(path, content)
