"""Each chapter's worked example and exercises, checked against the reference and the claim catalogue.

A worked example (docs_gen/worked_examples/<chapter>.py) is a few lines of the reference on a tiny
input; the chapter page shows its code and the output that `python -m docs_gen` recorded in
docs_gen/fragments/<chapter>.example.md. Here each example runs again: the reference must still
print exactly what the page shows, so a change to the reference that changes a number a learner
reproduces by hand fails this test until the page is regenerated. The examples' "by hand" lines are
checked as well: each equals the reference's value it is printed beside.

The exercises (docs_gen/fragments/<chapter>.exercises.md) each name the claims whose tests check
them and give the command that runs those tests; the command must name exactly the claims the
exercise links, every one of them a claim of the catalogue, and a collapsed hint must follow.
"""

from __future__ import annotations

import re

import pytest

from spec_tests.harness import claims
from tests.helpers import ROOT

examples = pytest.importorskip("docs_gen.examples", reason="the docs generator (docs_gen/) is not importable")

CHAPTERS = sorted(claims.chapters())
FRAGMENTS = ROOT / "docs_gen" / "fragments"
COMMAND = re.compile(r"^pytest --impl ~/hw/attention\.py --claim ((?:[A-Z]+-\d+)(?:,[A-Z]+-\d+)*)$", re.M)
LINKED = re.compile(r"\[([A-Z]+-\d+)\]\((?:(\w+)\.md)?#([a-z]+-\d+)\)")
# Words a learner must not meet in the textbook's own text.
INTERNAL_WORDS = re.compile(r"\b(seeds?|mutants?|oracles?)\b", re.I)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_has_a_worked_example(chapter):
    assert chapter in examples.chapters(), f"no docs_gen/worked_examples/{chapter}.py"
    assert (FRAGMENTS / f"{chapter}.example.md").is_file(), (
        f"no docs_gen/fragments/{chapter}.example.md: run `python -m docs_gen`")


@pytest.mark.parametrize("chapter", examples.chapters())
def test_the_worked_example_still_prints_what_the_page_shows(chapter):
    committed = examples.output_of((FRAGMENTS / f"{chapter}.example.md").read_text())
    fresh = examples.run(chapter)
    assert fresh.rstrip() + "\n" == committed, (
        f"docs_gen/worked_examples/{chapter}.py now prints something else than the chapter shows; "
        f"run `python -m docs_gen` and check the new numbers.\n--- shown ---\n{committed}--- now ---\n{fresh}")


@pytest.mark.parametrize("chapter", examples.chapters())
def test_by_hand_values_agree_with_the_reference(chapter):
    """A line `by hand ... = v` (or `by hand: v`) must equal the reference's value printed just above it."""
    lines = examples.run(chapter).splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"by hand.*?[=:]\s*\[?([-\d. ]+)\]?$", line)
        if not m:
            continue
        hand = [float(x) for x in m.group(1).split()]
        above = " ".join(lines[max(0, i - 6):i])
        printed = [float(x) for x in re.findall(r"-?\d+\.\d+", above)]
        for v in hand:
            assert any(abs(v - p) <= 1e-4 for p in printed), (
                f"{chapter}: the hand computation {v} is not among the reference's values above it: {printed}")


def _exercises(chapter: str) -> list[str]:
    text = (FRAGMENTS / f"{chapter}.exercises.md").read_text()
    parts = re.split(r"^### ", text, flags=re.M)
    return [p for p in parts[1:]]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_exercises_name_their_claims_and_commands(chapter):
    path = FRAGMENTS / f"{chapter}.exercises.md"
    assert path.is_file(), f"no {path.relative_to(ROOT)}"
    found = _exercises(chapter)
    assert 2 <= len(found) <= 4, f"{chapter}: {len(found)} exercises, want 2 to 4"
    catalogue = claims.catalogue()
    pages = {cid: c.page.removesuffix(".md") for cid, c in claims.chapters().items()}
    for ex in found:
        title = ex.splitlines()[0]
        commands = COMMAND.findall(ex)
        assert len(commands) == 1, f"{chapter}, {title!r}: want one `pytest --impl ~/hw/attention.py --claim ...`"
        in_command = commands[0].split(",")
        linked = LINKED.findall(ex)
        assert sorted({cid for cid, _, _ in linked}) == sorted(in_command), (
            f"{chapter}, {title!r}: the command runs {in_command} but the text links {linked}")
        for cid, page, anchor in linked:
            assert cid in catalogue, f"{chapter}, {title!r}: {cid} is not a claim of spec_tests/claims.toml"
            home = pages[catalogue[cid].chapter]
            assert (page or chapter) == home, f"{chapter}, {title!r}: {cid} lives on {home}.md, linked as {page}"
            assert anchor == cid.lower(), f"{chapter}, {title!r}: {cid} links to #{anchor}"
        assert re.search(r'^\?\?\? tip "Hint"\n    \S', ex, re.M), f"{chapter}, {title!r}: no collapsed hint"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_page_includes_its_example_and_exercises(chapter):
    page = (ROOT / "docs" / claims.chapters()[chapter].page).read_text()
    for needed in ("\n## Worked example\n", f'--8<-- "docs_gen/worked_examples/{chapter}.py"',
                   f'--8<-- "docs_gen/fragments/{chapter}.example.md"', "\n## Exercises\n",
                   f'--8<-- "docs_gen/fragments/{chapter}.exercises.md"'):
        assert needed in page, f"docs/{chapter}.md lacks {needed.strip()!r}"


@pytest.mark.parametrize("chapter", examples.chapters())
def test_no_internal_words_in_examples_and_exercises(chapter):
    for path in (ROOT / "docs_gen" / "worked_examples" / f"{chapter}.py", FRAGMENTS / f"{chapter}.exercises.md"):
        hits = INTERNAL_WORDS.findall(path.read_text())
        assert not hits, f"{path.relative_to(ROOT)} says {hits}"
