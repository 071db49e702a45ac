"""Scores: the rubric applied to a run's outcomes. Only genuine passes earn points.

For a claim with points P whose tests (over every dtype the submission declares) end as
n_pass passed, n_na not applicable and n_other anything else (failed, not implemented,
skipped, expected failure, an error of the worker):

    earned = P * n_pass / (n_pass + n_other)         (rubric partial = true)
    earned = P if n_other == 0 else 0                 (partial = false)

A claim with no test run at all earns 0 of P. A claim whose every test is "not applicable"
(a float16 claim for a float64-only submission) is shown as "not applicable" and earns P.

Declared scope (spec_tests/harness/scope.py, `OutOfScope`): an example out of scope is never a lost
point. A test that passed with some examples out of scope is a pass; a test whose every example was out
of scope is left out of n_pass + n_other, as "not applicable" is. But a declaration earns nothing: a claim
with no test judged besides (every one out of scope or not applicable) is shown as "out of scope" and
earns 0 of P, so declaring a claim out of scope never scores it.
Points are never rescaled: each claim is out of the P the rubric gives it, each chapter out of
the points the rubric states, and the total is the rubric's total.

Required dtypes (rubric `required_dtypes`): for each one the submission's DTYPES leaves out, every
claim gains as many failed tests as it has in the declared dtype where it has the most, each
saying which dtype is missing. Declaring fewer dtypes therefore never raises a grade.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from grader.rubric import Item, Rubric
from grader.run import Run
from spec_tests.harness import claims as catalogue
from spec_tests.harness import report

PASSED, NOT_APPL, OUT_OF_SCOPE = report.PASSED, report.NOT_APPL, report.OUT_OF_SCOPE
UNJUDGED = (NOT_APPL, OUT_OF_SCOPE)  # outcomes that are neither a pass nor a lost point


@dataclass
class ClaimGrade:
    item: Item
    records: list[dict]
    status: str  # passed, partly passed, failed, not implemented, not applicable, out of scope, not run
    earned: float  # in the rubric's points, before scaling
    score: float = 0.0
    max_score: float = 0.0
    counts: Counter = field(default_factory=Counter)

    @property
    def claim(self) -> catalogue.Claim:
        return catalogue.get(self.item.claim)

    @property
    def failures(self) -> list[dict]:
        return [r for r in self.records if r["outcome"] not in (PASSED, *UNJUDGED)]


@dataclass
class Grade:
    run: Run
    rubric: Rubric
    claims: list[ClaimGrade]
    score: float
    max_score: float
    missing_dtypes: list[str] = field(default_factory=list)  # required by the rubric, not declared
    leaderboard: object | None = None  # grader/leaderboard.py's Board, when the rubric has a [leaderboard]

    @property
    def hidden(self) -> bool:
        """Some graded claim is not visible to the student now (hidden, after_due_date, after_published)."""
        return any(c.item.visibility != "visible" for c in self.claims)

    @property
    def status(self) -> str:
        """For the gradebook: graded, partial, could not import, timed out, autograder fault."""
        if getattr(self.run, "fault", None):  # the grader failed (set by run.py when it knows)
            return "autograder fault"
        if self.run.load_error:
            return "could not import"
        if getattr(self.run, "review", None):  # it tampered with the grader: a person looks before the grade stands
            return "review: tampering"
        if self.run.timed_out:
            return "timed out"
        if any(c.status == "not implemented" or c.counts.get(report.NOT_IMPL) for c in self.claims):
            return "partial"
        return "graded"

    def chapters(self) -> dict[str, tuple[float, float]]:
        """chapter -> (score, max score), in the catalogue's chapter order."""
        out: dict[str, list[float]] = {c: [0.0, 0.0] for c in catalogue.chapters()}
        for c in self.claims:
            out[c.item.chapter][0] += c.score
            out[c.item.chapter][1] += c.max_score
        return {k: (v[0], v[1]) for k, v in out.items() if any(c.item.chapter == k for c in self.claims)}


def _status(counts: Counter) -> str:
    applicable = sum(n for o, n in counts.items() if o not in UNJUDGED)
    if not counts:
        return "not run"
    if not applicable:
        return OUT_OF_SCOPE if counts[OUT_OF_SCOPE] else "not applicable"
    if counts[PASSED] == applicable:
        return "passed"
    if counts[report.NOT_IMPL] == applicable:
        return "not implemented"
    return "partly passed" if counts[PASSED] else "failed"


MISSING_DTYPE = "required dtype not declared"


def missing_dtypes(rubric: Rubric, run: Run) -> list[str]:
    """The rubric's required dtypes that the submission does not declare (none when it did not load)."""
    if run.implementation is None or run.load_error:
        return []
    declared = set(run.implementation.get("dtypes") or ())
    return [d for d in rubric.required_dtypes if d not in declared]


def _undeclared(claim_id: str, records: list[dict], missing: list[str], declared: list[str]) -> list[dict]:
    """The failed tests a claim gets for each required dtype the submission leaves out."""
    per_dtype = Counter(r.get("dtype") for r in records)
    n = max(per_dtype.values(), default=0)
    out = []
    for dtype in missing:
        message = (f"the rubric requires {dtype}, and your file's DTYPES = {tuple(declared)!r} leaves it out: "
                   f"add \"{dtype}\" to DTYPES (and make your functions work in it)")
        out += [{"nodeid": f"{claim_id}[{dtype}-{i}]", "test": f"every test of {claim_id} in {dtype}",
                 "impl": "", "dtype": dtype, "claims": [claim_id], "outcome": report.FAILED,
                 "message": message, "kind": MISSING_DTYPE} for i in range(n)]
    return out


def grade(rubric: Rubric, run: Run) -> Grade:
    by_claim: dict[str, list[dict]] = {i.claim: [] for i in rubric.items}
    for r in run.records:
        for cid in r["claims"]:
            if cid in by_claim:
                by_claim[cid].append(r)
    missing = missing_dtypes(rubric, run)
    if missing:
        declared = list(run.implementation.get("dtypes") or ())
        for cid in by_claim:
            by_claim[cid] = by_claim[cid] + _undeclared(cid, by_claim[cid], missing, declared)
    claims = []
    for item in rubric.items:
        records = by_claim[item.claim]
        counts = Counter(r["outcome"] for r in records)
        applicable = sum(n for o, n in counts.items() if o not in UNJUDGED)
        if rubric.partial:
            fraction = counts[PASSED] / applicable if applicable else 0.0
        else:
            fraction = 1.0 if applicable and counts[PASSED] == applicable else 0.0
        status = _status(counts)
        earned = item.points if status == "not applicable" else item.points * fraction
        claims.append(ClaimGrade(item, records, status, earned, counts=counts))
    for c in claims:
        c.max_score = round(c.item.points, 6)
        c.score = round(c.earned, 6)
    score = round(sum(c.score for c in claims), 4)
    return Grade(run, rubric, claims, score, rubric.total, missing)
