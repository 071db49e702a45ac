"""Each chapter's claim list and pitfalls (fragments the chapter page includes), its test-source page,
and the catalogue of common bugs: all generated from claims.toml, the test modules and impls/mutants/."""

from __future__ import annotations

from pathlib import Path

from docs_gen import GENERATED_NOTE
from docs_gen.spec_source import (Chapter, Claim, Mutant, SpecTest, load_catalogue, module_doc, read_mutants,
                                  read_tests, rel, tests_by_claim)

_ESCAPE = str.maketrans({**{c: "\\" + c for c in "\\`*_[]|$#"}, "<": "&lt;", ">": "&gt;"})


def text(s: str) -> str:
    """Plain text made safe for Markdown (and for the math extension: no stray `$`)."""
    return " ".join(s.split()).translate(_ESCAPE)


def source_words(source: str) -> str:
    """claims.toml's `source` as a reader wants it: `000 §2` is seed 000's section 2."""
    if source == "beyond":
        return "beyond the seeds (the notes point at it; the product covers it)"
    if source == "DESIGN.md":
        return "the implementation contract"
    return f"seed notes {text(source)}"


def claims_fragment(chapter: Chapter, claims: dict[str, Claim], by_claim: dict[str, list[SpecTest]]) -> str:
    """The chapter's claims: ID (the anchor failures link to), statement, source, and the tests, linked."""
    out = [GENERATED_NOTE.format(source=f"spec_tests/claims.toml and spec_tests/{chapter.module}"), ""]
    mine = [c for c in claims.values() if c.chapter == chapter.id]
    if not chapter.path.exists():
        out += [f'!!! info "Chapter being written"',
                f"    `spec_tests/{chapter.module}` does not exist yet: its claims are listed here and will",
                "    link their tests as soon as the module lands.", ""]
    for c in mine:
        tests = by_claim.get(c.id, [])
        out += [f"### {c.id}: {text(c.summary)} {{ #{c.anchor} }}", "", text(c.statement), ""]
        out += [f"*Source:* {source_words(c.source)}."]
        if tests:
            out += [f"*Enforced by* {len(tests)} test{'s' if len(tests) > 1 else ''}:", ""]
            for t in tests:
                page = _source_page_of(t)
                line = f"- [`{t.name}`]({page}#{t.anchor})"
                out.append(line + (f": {text(t.doc)}" if t.doc else ""))
        else:
            out += ["", "!!! warning \"Not yet enforced\"",
                    f"    No test carries `@claim(\"{c.id}\")` yet. Until one does, this claim is a statement,",
                    "    not a check, and the conformance matrix has no row for it."]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _source_page_of(test: SpecTest) -> str:
    return f"source/{Path(test.module).stem}.md"


def pitfalls_fragment(chapter: Chapter, claims: dict[str, Claim], mutants: list[Mutant]) -> str:
    """One admonition per known bug caught by a claim of this chapter: the bug, its code, its claim."""
    out = [GENERATED_NOTE.format(source="impls/mutants/"), ""]
    mine = [m for m in mutants if m.caught_by in claims and claims[m.caught_by].chapter == chapter.id]
    if not mine:
        out.append("*No bug of the catalogue (`impls/mutants/`) is caught by this chapter's claims yet.*")
    for m in mine:
        out += _bug_admonition(m, claims, link_prefix="")
    return "\n".join(out).rstrip() + "\n"


def _bug_admonition(m: Mutant, claims: dict[str, Claim], link_prefix: str) -> list[str]:
    claim = claims.get(m.caught_by)
    where = f"[{m.caught_by}]({link_prefix}{_chapter_pages()[claim.chapter]}#{claim.anchor})" if claim else m.caught_by
    title = m.name.replace("_", " ").capitalize()
    lines = [f'!!! bug "{title}"', ""]
    lines += [f"    **The bug:** {text(m.bug)}.", "", f"    **Caught by** {where} (mutant `impls/mutants/{m.name}.py`).", ""]
    if m.doc:  # its first paragraph says what BUG says; the rest says why the claim catches it
        for para in m.doc.split("\n\n")[1:]:
            para = " ".join(para.split())
            lead = f"Caught by {m.caught_by}:"
            if para.startswith(lead):  # the line above already names the claim; say what this paragraph is
                lines += ["    **Why it fails the claim:** " + text(para[len(lead):].strip()), ""]
            else:
                lines += ["    " + text(para), ""]
    for fname, start, end in m.spans:
        lines += [f'    ```python title="impls/mutants/{m.name}.py: {fname}"',
                  f'    --8<-- "{rel(m.path)}:{start}:{end}"', "    ```", ""]
    return lines


def _chapter_pages() -> dict[str, str]:
    chapters, _ = load_catalogue()
    return {c.id: c.page for c in chapters.values()}


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
            out += [text(t.doc), ""]
        out += [f'```python title="spec_tests/{chapter.module}, lines {t.start}-{t.end}"',
                f'--8<-- "spec_tests/{chapter.module}:{t.start}:{t.end}"', "```", ""]
    return "\n".join(out).rstrip() + "\n"


def _claim_page(cid: str, claims: dict[str, Claim]) -> str:
    c = claims.get(cid)
    return _chapter_pages()[c.chapter] if c else "index.md"


def bugs_page(claims: dict[str, Claim], mutants: list[Mutant]) -> str:
    """docs/bugs.md: the whole catalogue, grouped by the chapter whose claim catches each bug."""
    chapters, _ = load_catalogue()
    out = [GENERATED_NOTE.format(source="impls/mutants/"), "", "# Common bugs", ""]
    out += [f"The suite's own test of itself: {len(mutants)} implementations, each correct but for **one** bug",
            "of the kind learners (and seed notes) really write. Each names the claim whose tests must",
            "catch it; `spec_tests/meta/test_mutants.py` runs the suite against every one and fails unless",
            "each is caught by that claim. Read them as a list of what goes wrong, and of how you will",
            "recognise it in your own code: the claim that fails points at the bug.", ""]
    out += ["| bug | caught by | mutant |", "| --- | --- | --- |"]
    for m in mutants:
        c = claims.get(m.caught_by)
        link = f"[{m.caught_by}]({chapters[c.chapter].page}#{c.anchor})" if c else m.caught_by
        out.append(f"| {text(m.bug)} | {link} | [`{m.name}`](#{m.name.replace('_', '-')}) |")
    out.append("")
    for ch in chapters.values():
        mine = [m for m in mutants if m.caught_by in claims and claims[m.caught_by].chapter == ch.id]
        if not mine:
            continue
        out += [f"## {ch.title}", ""]
        for m in mine:
            out += [f"### `{m.name}` {{ #{m.name.replace('_', '-')} }}", ""]
            out += _bug_admonition(m, claims, "")
    return "\n".join(out).rstrip() + "\n"


def write_all(docs: Path, fragments: Path) -> list[Path]:
    """Write every fragment and page this module owns; return their paths."""
    chapters, claims = load_catalogue()
    by_claim = tests_by_claim(chapters)
    mutants = read_mutants()
    written = []
    fragments.mkdir(parents=True, exist_ok=True)
    (docs / "source").mkdir(parents=True, exist_ok=True)
    for ch in chapters.values():
        written.append(_write(fragments / f"{ch.id}.claims.md", claims_fragment(ch, claims, by_claim)))
        written.append(_write(fragments / f"{ch.id}.pitfalls.md", pitfalls_fragment(ch, claims, mutants)))
        written.append(_write(docs / ch.source_page, source_page(ch, claims)))
    written.append(_write(docs / "bugs.md", bugs_page(claims, mutants)))
    return written


def _write(path: Path, content: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != content:
        path.write_text(content, encoding="utf-8")
    return path
