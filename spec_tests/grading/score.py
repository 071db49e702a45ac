"""Scores: the rubric applied to a run's outcomes. Only genuine passes earn points.

For a claim with points P whose tests (over every dtype the submission declares) end as
n_pass passed, n_na not applicable and n_other anything else (failed, not implemented,
skipped, expected failure, an error of the worker):

    earned = P * n_pass / (n_pass + n_other)         (rubric partial = true)
    earned = P if n_other == 0 else 0                 (partial = false)

A claim with no test run at all earns 0 of P. A claim whose every test is "not applicable"
(a float16 claim for a float64-only submission) is left out, and every other claim's points
are scaled by total / (sum of P over the claims that apply), so a perfect submission earns
exactly the rubric's total.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from spec_tests.grading.rubric import Item, Rubric
from spec_tests.grading.run import Run
from spec_tests.harness import claims as catalogue
from spec_tests.harness import report

PASSED, NOT_APPL = report.PASSED, report.NOT_APPL


@dataclass
class ClaimGrade:
    item: Item
    records: list[dict]
    status: str  # passed, partly passed, failed, not implemented, not applicable, not run
    earned: float  # in the rubric's points, before scaling
    score: float = 0.0
    max_score: float = 0.0
    counts: Counter = field(default_factory=Counter)

    @property
    def claim(self) -> catalogue.Claim:
        return catalogue.get(self.item.claim)

    @property
    def failures(self) -> list[dict]:
        return [r for r in self.records if r["outcome"] not in (PASSED, NOT_APPL)]


@dataclass
class Grade:
    run: Run
    rubric: Rubric
    claims: list[ClaimGrade]
    score: float
    max_score: float

    def chapters(self) -> dict[str, tuple[float, float]]:
        """chapter -> (score, max score), in the catalogue's chapter order."""
        out: dict[str, list[float]] = {c: [0.0, 0.0] for c in catalogue.chapters()}
        for c in self.claims:
            out[c.item.chapter][0] += c.score
            out[c.item.chapter][1] += c.max_score
        return {k: (v[0], v[1]) for k, v in out.items() if any(c.item.chapter == k for c in self.claims)}


def _status(counts: Counter) -> str:
    applicable = sum(n for o, n in counts.items() if o != NOT_APPL)
    if not counts:
        return "not run"
    if not applicable:
        return "not applicable"
    if counts[PASSED] == applicable:
        return "passed"
    if counts[report.NOT_IMPL] == applicable:
        return "not implemented"
    return "partly passed" if counts[PASSED] else "failed"


def grade(rubric: Rubric, run: Run) -> Grade:
    by_claim: dict[str, list[dict]] = {i.claim: [] for i in rubric.items}
    for r in run.records:
        for cid in r["claims"]:
            if cid in by_claim:
                by_claim[cid].append(r)
    claims = []
    for item in rubric.items:
        records = by_claim[item.claim]
        counts = Counter(r["outcome"] for r in records)
        applicable = sum(n for o, n in counts.items() if o != NOT_APPL)
        if rubric.partial:
            fraction = counts[PASSED] / applicable if applicable else 0.0
        else:
            fraction = 1.0 if applicable and counts[PASSED] == applicable else 0.0
        claims.append(ClaimGrade(item, records, _status(counts), item.points * fraction, counts=counts))
    possible = sum(c.item.points for c in claims if c.status != "not applicable")
    factor = rubric.total / possible if possible else 0.0
    for c in claims:
        if c.status != "not applicable":
            c.max_score = round(c.item.points * factor, 6)
            c.score = round(c.earned * factor, 6)
    score = round(sum(c.score for c in claims), 4)
    return Grade(run, rubric, claims, score, rubric.total if possible else 0.0)
