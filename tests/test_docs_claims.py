"""Every claim of the suite appears in its chapter of the textbook site, with its tests linked.

The chapter pages (docs/<page>, hand-written) include their claim list from a fragment that
`python -m docs_gen` generates from claims.toml and the test modules; the build (CI's docs stage)
regenerates the fragments first. So this test checks what the build will publish: each chapter
page exists, is in the site's menu and includes its fragments, and the fragment generated from the
suite as it is now holds every claim that has a test, as an anchor (the one failures link to),
with a link to each of its tests, which the chapter's test-source page defines. The tests are
read here independently of docs_gen (test_claim_coverage's own reader), so a reader that misses
a test fails this test.
"""

import re
from functools import cache

import pytest

from spec_tests.harness import claims
from tests.helpers import ROOT
from tests.test_claim_coverage import _spec_tests

docs_gen = pytest.importorskip("docs_gen.claims_pages", reason="the docs generator (docs_gen/) is not importable")
from docs_gen import spec_source  # noqa: E402

DOCS = ROOT / "docs"
CHAPTERS = sorted(claims.chapters())


def _nav_pages() -> set[str]:
    return set(re.findall(r"[\w/]+\.md", (ROOT / "mkdocs.yml").read_text()))


@cache
def _fragment(chapter_id: str) -> str:
    return docs_gen.claims_fragment(claims.chapters()[chapter_id], claims.catalogue(), _tests_by_claim())


@cache
def _tests_by_claim():
    return spec_source.tests_by_claim(claims.chapters())


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_chapter_page_is_in_the_menu_and_includes_its_claims(chapter):
    info = claims.chapters()[chapter]
    page = DOCS / info.page
    assert page.is_file(), f"chapter {chapter!r} has no page docs/{info.page}"
    text = page.read_text()
    for part in ("claims", "pitfalls"):
        include = f'--8<-- "docs_gen/fragments/{chapter}.{part}.md"'
        assert include in text, f"docs/{info.page} does not include its {part}: add the line {include}"
    nav = _nav_pages()
    source_page = f"source/{info.module.removesuffix('.py')}.md"
    assert info.page in nav and source_page in nav, f"mkdocs.yml's nav lacks {info.page} or {source_page}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_claim_with_a_test_is_listed_with_its_tests_linked(chapter):
    module = claims.chapters()[chapter].module
    fragment = _fragment(chapter)
    wanted: dict[str, list[str]] = {}
    for m, test, ids in _spec_tests():
        for cid in ids:
            if claims.get(cid).chapter == chapter:
                wanted.setdefault(cid, []).append(test)
    stem = module.removesuffix(".py")
    source = docs_gen.source_page(claims.chapters()[chapter], claims.catalogue())
    for cid, tests in wanted.items():
        assert f"{{ #{cid.lower()} }}" in fragment, f"{cid} is missing from the docs of chapter {chapter}"
        for test in tests:
            link = f"(source/{stem}.md#{test.lower()})"
            assert link in fragment, f"{cid}'s test {test} is not linked from docs/{claims.chapters()[chapter].page}"
            assert f"{{ #{test.lower()} }}" in source, f"docs/source/{stem}.md has no anchor for {test}"


def test_the_catalogue_claims_without_tests_are_marked_as_such():
    tested = {cid for _, _, ids in _spec_tests() for cid in ids}
    for cid, claim in claims.catalogue().items():
        fragment = _fragment(claim.chapter)
        assert f"{{ #{cid.lower()} }}" in fragment, f"{cid} is missing from its chapter's claim list"
        section = fragment.split(f"{{ #{cid.lower()} }}", 1)[1].split("\n### ", 1)[0]
        assert ("Not yet enforced" in section) == (cid not in tested), (
            f"{cid}: the docs say it is {'not ' if cid not in tested else ''}enforced, the suite disagrees")


def _section(cid: str) -> str:
    fragment = _fragment(claims.get(cid).chapter)
    return fragment.split(f"{{ #{cid.lower()} }}", 1)[1].split("\n### ", 1)[0]


def test_every_known_bug_is_listed_under_each_claim_it_is_recorded_to_fail():
    """A claim's section lists each known bug recorded to fail it (CAUGHT_BY and ALSO_CAUGHT_BY), linked to
    its card on the Common bugs page, and says which one is filed under it; the card's anchor exists."""
    from impls import mutants as known_bugs

    bugs_page = (DOCS / "bugs.md").read_text()
    for bug in known_bugs.catalogue():
        anchor = bug.name.replace("_", "-")
        assert f"{{ #{anchor} }}" in bugs_page, f"docs/bugs.md has no card for {bug.name}"
        for cid in bug.claims:
            lines = [ln for ln in _section(cid).splitlines() if f"(bugs.md#{anchor})" in ln]
            assert lines, f"{bug.name} fails {cid} (impls/mutants/{bug.name}.py) but {cid}'s section does not list it"
            own = "caught by this claim" in lines[0]
            assert own == (cid == bug.caught_by), (bug.name, cid, lines[0])


def test_the_bugs_measured_failing_a_claim_are_listed_under_it_too():
    """Each (known bug, claim) of the committed whole-suite measurement (docs_gen/data/mutant_claims.after.json)
    is listed in the claim's section, marked *(measured)* when the bug's file does not record it: SDPA-1,
    say, is no bug's CAUGHT_BY, yet no_score_scaling records it and softmax_over_query_axis was seen failing it."""
    from docs_gen.mutant_claims import measured_failures
    from impls import mutants as known_bugs

    measured = measured_failures()
    for bug in known_bugs.catalogue():
        anchor = bug.name.replace("_", "-")
        for cid in measured.get(bug.name, []):
            lines = [ln for ln in _section(cid).splitlines() if f"(bugs.md#{anchor})" in ln]
            assert lines, f"{bug.name} failed {cid} in the measured run but {cid}'s section does not list it"
            assert ("(measured)" in lines[0]) == (cid not in bug.claims), (bug.name, cid, lines[0])
