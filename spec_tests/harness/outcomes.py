"""What a test's result means: the text a failure shows, and the outcome the summary and the JSON
report record for it (passed, failed, not implemented, not applicable, unavailable, ...).

A failure's exceptions (the leaves of the group Hypothesis raises for several distinct failures) say
what it is: a function not written yet ("not implemented"), a keyword argument the implementation does
not take, or a claim that does not hold (its feedback, harness/feedback.py, is the whole story: the
suite's own frames are noise). Anything else shows pytest's own traceback.
"""

from __future__ import annotations

from spec_tests.harness import carried, scope
from spec_tests.harness import report as report_mod
from spec_tests.harness.feedback import SpecFailure
from spec_tests.harness.items import claims_of, subject_of
from spec_tests.harness.subject import NOT_APPLICABLE, NOT_IMPLEMENTED, MissingKeyword, NotImplementedYet
from spec_tests.sandbox.isolation import IsolationFailure

NOT_IMPLEMENTED_ERRORS = (NotImplementedError, NotImplementedYet)

UNAVAILABLE = "unavailable"  # the start of the skip reason of an implementation that cannot run here

# what the grader groups failures by and shows a student (grader/feedback.py): kept when a long message is cut
SUMMARY_LINES = ("largest error", "likely cause:", "looks like:")


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside an exception group (Hypothesis raises one for several distinct failures)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in leaves(e)]
    return [exc]


def not_implemented(found: list[BaseException]) -> bool:
    """Every exception says a function is not written yet."""
    return bool(found) and all(isinstance(e, NOT_IMPLEMENTED_ERRORS) for e in found)


def not_implemented_text(found: list[BaseException]) -> str:
    return f"{NOT_IMPLEMENTED}: {str(found[0]) or 'raises NotImplementedError'}"


def _with_notes(exc: BaseException) -> str:
    notes = [n for n in getattr(exc, "__notes__", []) if not n.startswith("Explanation")]
    return "\n".join([str(exc), *notes])


def failure_text(found: list[BaseException], spec_traceback: bool, notes: bool = True) -> str | None:
    """The text that tells a failure whose exceptions are `found`; None: pytest's own traceback tells it.

    `spec_traceback` (--spec-traceback): a claim's failure shows the suite's traceback too. `notes`: a
    claim's feedback is followed by the notes Hypothesis added to it (its falsifying example), not by
    its "Explanation" notes."""
    if not found:
        return None
    if not_implemented(found):
        return not_implemented_text(found)
    if all(isinstance(e, MissingKeyword) for e in found):
        return str(found[0])
    if all(isinstance(e, (SpecFailure, IsolationFailure)) for e in found) and not spec_traceback:
        return "\n\n".join(_with_notes(e) if notes else str(e) for e in found)
    return None


def brief_repr(repr_failure, config):
    """An item's repr_failure that describes a claim's failure by its feedback alone: pytest's traceback
    of the suite's frames, which Hypothesis also asks for once per failing test, reads every frame's
    source (~0.1 s each)."""
    def brief(excinfo, *args, **kwargs):
        text = failure_text(leaves(excinfo.value), config.getoption("--spec-traceback"), notes=False)
        return text if text is not None else repr_failure(excinfo, *args, **kwargs)

    return brief


def optional_not_implemented(item, found: list[BaseException]) -> bool:
    """Every exception is a later chapter's function (or one outside v1) that is not implemented, or a function
    that raised NotImplementedError for a later chapter's keyword (sinks=, return_lse=, ...): not red."""
    subject = subject_of(item)
    return (subject is not None and bool(found)
            and all(isinstance(e, NotImplementedYet) and e.fname and (e.later or not subject.impl.requires(e.fname))
                    for e in found))


def shape(item, rep, call) -> None:
    """A failed report's text, from its exceptions; a later chapter's function not written yet: a skip."""
    found = leaves(call.excinfo.value) if call.excinfo is not None and rep.failed else []
    out_of_scope = scope.all_out_of_scope(item.nodeid, found)
    if out_of_scope is not None:  # every example declared out of scope (harness/scope.py): not a failure
        rep.outcome = "skipped"
        rep.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {scope.OUT_OF_SCOPE}: {out_of_scope}")
        return
    if optional_not_implemented(item, found):  # a later chapter's function: optional, so a skip
        rep.outcome = "skipped"
        rep.longrepr = (str(item.path), item.location[1] or 0, "Skipped: " + not_implemented_text(found))
        return
    text = failure_text(found, item.config.getoption("--spec-traceback"))
    if text is not None:
        rep.longrepr = text


def is_final(rep) -> bool:
    """The report that decides a test's outcome: its call, or a setup that did not pass, or a failed teardown."""
    return rep.when == "call" or (rep.when == "setup" and not rep.passed) or (rep.when == "teardown" and rep.failed)


def _skip_reason(rep) -> str:
    lr = rep.longrepr
    text = str(lr[2]) if isinstance(lr, tuple) and len(lr) == 3 else str(lr or "")
    return text.removeprefix("Skipped: ").split("\n")[0]  # not Hypothesis's notes about the example


SKIPS = ((NOT_IMPLEMENTED, report_mod.NOT_IMPL), (NOT_APPLICABLE, report_mod.NOT_APPL),
         (scope.OUT_OF_SCOPE, report_mod.OUT_OF_SCOPE),
         (UNAVAILABLE, report_mod.UNAVAILABLE),
         ("could not import", report_mod.UNAVAILABLE))  # pytest.importorskip: a package missing


def classify(rep, call) -> tuple[str, str]:
    """A test's outcome (harness/report.py) and its message, from its final report."""
    if hasattr(rep, "wasxfail"):
        return (report_mod.XFAILED, rep.wasxfail) if rep.skipped else (report_mod.FAILED, "passed unexpectedly")
    if rep.passed:  # some of its examples may have been out of scope: the message says how many
        return report_mod.PASSED, scope.note(rep.nodeid)
    if rep.skipped:
        reason = _skip_reason(rep)
        for prefix, status in SKIPS:
            if reason.startswith(prefix):
                return status, reason
        return report_mod.SKIPPED, reason
    found = leaves(call.excinfo.value) if call.excinfo is not None else []
    if not_implemented(found):  # a required function: "not implemented", and the run is red (rep.failed)
        return report_mod.NOT_IMPL, str(found[0])
    return report_mod.FAILED, shorten(str(rep.longrepr or ""))


def outcome_of(item, rep, call) -> report_mod.Outcome:
    """The record of a test's final report (a demonstration's has no implementation: no matrix cell)."""
    subject = subject_of(item)
    demo = item.get_closest_marker("demonstration") is not None
    outcome, message = classify(rep, call)
    if rep.when == "call":  # a claim met with error carried forward says so (harness/carried.py)
        message = message or carried.note_for(item.nodeid)
    if is_final(rep):
        scope.forget(item.nodeid)
    return report_mod.Outcome(
        nodeid=item.nodeid, test=getattr(item, "originalname", item.name),
        impl=subject.name if subject and not demo else "", dtype=subject.dtype if subject and not demo else "",
        claims=list(claims_of(item)), outcome=outcome, message=message, duration=rep.duration,
        failed_run=bool(rep.failed),
    )


def shorten(text: str, limit: int = 4000, head: int = 1500, tail: int = 2500) -> str:
    """A long failure message cut to its start and its end (the end says why), at line boundaries; the
    summary lines the grader reads ("largest error ...", "likely cause: ...", "looks like: ...") are kept from
    the part left out, whole (the first of each kind)."""
    if len(text) <= limit:
        return text
    start = text[:head].rsplit("\n", 1)[0]
    end_at = len(text) - tail
    end_at = text.find("\n", end_at) + 1 or end_at
    middle = text[len(start):end_at]
    kept = {}  # the first line of each kind
    for line in middle.splitlines():
        kind = next((p for p in SUMMARY_LINES if line.strip().startswith(p)), None)
        if kind and kind not in kept:
            kept[kind] = line.strip()
    return "\n".join([start, "...", *kept.values(), text[end_at:]])
