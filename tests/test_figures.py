"""The chapters' figures: drawn from the reference, byte-stable, current, and shown where they belong.

docs_gen/figures.py draws every figure from reference/ into docs/assets/figures/. Drawing them twice
must give identical bytes (no date, fixed ids and random generators), so that the committed SVGs
can be compared with a fresh drawing: a change to the reference that changes a picture fails here
until `python -m docs_gen` is run. Each figure appears on its chapter's page, and each chapter has
at least one.
"""

from __future__ import annotations

import re

import pytest

from spec_tests.harness import claims
from tests.helpers import ROOT

pytest.importorskip("matplotlib", reason="the docs extra (matplotlib) is not installed")
figures = pytest.importorskip("docs_gen.figures", reason="the docs generator (docs_gen/) is not importable")


@pytest.fixture(scope="module")
def drawn_twice(tmp_path_factory):
    first, second = tmp_path_factory.mktemp("first"), tmp_path_factory.mktemp("second")
    figures.write_all(first)
    figures.write_all(second)
    return first, second


def test_figures_are_byte_stable(drawn_twice):
    first, second = drawn_twice
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(f"{n}.svg" for n in figures.FIGURES)
    differ = [n for n in names if (first / n).read_bytes() != (second / n).read_bytes()]
    assert not differ, f"drawing twice gave different files: {differ}"


def test_committed_figures_are_current(drawn_twice):
    """The committed SVGs equal a fresh drawing, when the same library versions draw it (each SVG
    records them); a figure whose numbers depend on the CPU is only required to exist."""
    first, _ = drawn_twice
    missing = [n for n in figures.FIGURES if not (figures.FIGURE_DIR / f"{n}.svg").is_file()]
    assert not missing, f"docs/assets/figures/ lacks {missing}: run `python -m docs_gen`"
    here = figures.drawn_with()
    elsewhere = {figures.recorded_versions((figures.FIGURE_DIR / f"{n}.svg").read_text()) for n in figures.FIGURES}
    if elsewhere != {here}:
        pytest.skip(f"the committed figures were {sorted(map(str, elsewhere))}; this is {here}: "
                    "their bytes can differ without any change in the reference")
    stale = [n for n in figures.FIGURES if n not in figures.MACHINE_DEPENDENT
             and (figures.FIGURE_DIR / f"{n}.svg").read_bytes() != (first / f"{n}.svg").read_bytes()]
    assert not stale, f"docs/assets/figures/ differs from a fresh drawing for {stale}: run `python -m docs_gen`"


def test_figures_have_labels_and_readable_text(drawn_twice):
    """Text is kept as text (svg.fonttype none): labels are at least 9 pt; only mathtext's sub- and
    superscripts, 0.7 of their base, may be smaller."""
    first, _ = drawn_twice
    for name in figures.FIGURES:
        svg = (first / f"{name}.svg").read_text()
        sizes = [float(s) for s in re.findall(r"font(?:-size)?:\s*(?:[\w ]+ )?([\d.]+)px", svg)]
        assert sizes, f"{name}: no text found in the SVG"
        assert min(sizes) >= 0.7 * 9 * 0.99, f"{name}: a font of {min(sizes)} pt; the figures' floor is 9"


@pytest.mark.parametrize("chapter", sorted(claims.chapters()))
def test_each_chapter_shows_its_figures(chapter):
    page = (ROOT / "docs" / claims.chapters()[chapter].page).read_text()
    mine = [n for n, (c, _, _) in figures.FIGURES.items() if c == chapter]
    shown = re.findall(r"\]\((?:generated|assets/(?:figures|benchmarks))/([\w-]+)\.svg\)", page)
    assert shown, f"docs/{chapter}.md shows no figure"
    missing = [n for n in mine if n not in shown]
    assert not missing, f"docs/{chapter}.md does not show its figures {missing}"
