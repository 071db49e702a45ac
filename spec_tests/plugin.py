"""The suite's pytest plugin: --impl, parametrisation over implementations and dtypes,
expected-failure files, "not implemented" reporting, and the summary by claim.

Registered as a `pytest11` entry point (pyproject.toml) so that `--impl` is known
before pytest parses the command line, and from the root conftest.py otherwise.

Thin hooks only; each job is a module of its own under spec_tests/harness/: profiles.py (Hypothesis
profiles, examples per claim), rootdir.py (the rootdir of a run with --impl), under_test.py (the
implementations and their subjects), items.py (a test's subject and claims, --claim and --chapter),
report.py (the summary).
"""

from __future__ import annotations

import pytest

from spec_tests.harness import context, diagnosis, loader, xfail  # noqa: F401 (diagnosis:
# registers the known-bug diagnoser in feedback.DIAGNOSERS)
from spec_tests.harness import items as items_mod
from spec_tests.harness import carried, profiles, rootdir, under_test  # profiles: registers and loads the
# Hypothesis profiles, before Hypothesis's plugin applies --hypothesis-profile
from spec_tests.harness import report as report_mod
from spec_tests.harness.items import claims_of, subject_of
from spec_tests.harness.feedback import SpecFailure
from spec_tests.harness.subject import NOT_APPLICABLE, NOT_IMPLEMENTED, MissingKeyword, NotImplementedYet
from spec_tests.sandbox import isolation

NOT_IMPLEMENTED_ERRORS = (NotImplementedError, NotImplementedYet)

UNAVAILABLE = "unavailable"

_IMPLS = pytest.StashKey[list]()
_SUBJECTS = pytest.StashKey[list]()
_EXPLICIT = pytest.StashKey[bool]()
_XFAILS = pytest.StashKey[dict]()
_RECORDS = pytest.StashKey[list]()


def pytest_addoption(parser):
    group = parser.getgroup("mha-spec", "multi-head attention specification")
    group.addoption(
        "--impl", action="append", default=[], metavar="IMPL",
        help="implementation(s) to check: a stem under impls/ (torch_sdpa), a path to a .py file, "
             f"a module name, 'all', or a comma list. Default: all built-ins (or ${loader.ENV_VAR}).",
    )
    group.addoption("--claim", action="append", default=[], metavar="ID",
                    help="run only the tests of these claims (e.g. --claim MASK-4 or --claim MASK-4,MASK-5)")
    group.addoption("--chapter", action="append", default=[], metavar="NAME",
                    help="run only these chapters (sdpa, multi_head, masks, variable_length, layer_norm, ...)")
    group.addoption("--spec-report", metavar="PATH", default=None,
                    help="write every test's outcome and the status of every claim as JSON to PATH")
    group.addoption("--spec-traceback", action="store_true", default=False,
                    help="show the suite's own traceback under a failed claim (for debugging the suite)")
    group.addoption("--no-claim-summary", action="store_true", default=False,
                    help="do not print the summary by claim at the end of the run")
    group.addoption("--isolate", action="store_true", default=False,
                    help="run each implementation in a separate, confined worker process with time and memory "
                         "limits (as the grader does); slower, but a hang or crash fails only its test")
    group.addoption("--rubric", metavar="PATH", default=None,
                    help="with --isolate: take the limits and banned functions from this rubric file")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """`pytest --impl ~/hw/attention.py`, run from the repository, is the same run as `--impl numpy_fast`
    (pytest chose its rootdir before it knew that --impl takes a value: harness/rootdir.py)."""
    rootdir.redetermine(early_config, parser, args)


# The suite's markers, declared here only (the plugin is loaded wherever the suite runs, installed or not).
MARKERS = (
    "claim(*ids): the claim IDs (spec_tests/claims.toml) a spec test enforces",
    "slow: a long experiment or measurement, left out of the default run (`pytest -m slow` runs them)",
    "demonstration(*ids): a test of the suite's own algorithms showing a claim at work (tests/demonstrations/): "
    "no implementation verdict, no points",
)


def pytest_configure(config):
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    specs, explicit = loader.selected_specs(config.getoption("--impl", default=[]))
    impls = under_test.load_all(specs, config.getoption("--isolate", default=False),
                                config.getoption("--rubric", default=None))
    config.stash[_IMPLS] = impls
    config.stash[_SUBJECTS] = under_test.subjects(impls)
    config.stash[_EXPLICIT] = explicit
    config.stash[_XFAILS] = {impl.name: xfail.load(impl.name) for impl in impls}
    config.stash[_RECORDS] = []
    config.pluginmanager.register(_Collector(config.stash[_RECORDS]), "mha-spec-collector")


def pytest_unconfigure(config):
    isolation.shutdown()  # under --isolate: no worker, and nothing a worker started, outlives the run


def pytest_report_header(config):
    return under_test.header_lines(config.stash.get(_IMPLS, []))


def pytest_generate_tests(metafunc):
    if "impl" in metafunc.fixturenames and metafunc.definition.get_closest_marker("demonstration"):
        # a demonstration's verdict cannot depend on an implementation: it runs once, on the reference
        metafunc.parametrize("impl", [under_test.reference_subject()], ids=["reference-float64"], scope="session")
        return
    if "impl" in metafunc.fixturenames:
        subjects = metafunc.config.stash[_SUBJECTS]
        metafunc.parametrize("impl", subjects, ids=[s.id for s in subjects], scope="session")


def pytest_collection_modifyitems(config, items):
    xfails = config.stash[_XFAILS]
    keep, drop = items_mod.select(config, items)  # --claim, --chapter
    profiles.set_examples(items, profiles.forced_examples())
    for item in keep:
        subject = subject_of(item)
        if subject is None:
            continue
        item.repr_failure = _feedback_repr(item.repr_failure, config)
        func = getattr(item, "originalname", item.name)
        entry = xfail.match(xfails.get(subject.name, []), xfail.key(str(item.path), func, subject.dtype))
        if entry is not None:
            item.add_marker(pytest.mark.xfail(reason=f"{entry.reason} ({entry.source})", strict=True))
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    items.sort(key=items_mod.chapter_rank)  # stable: within a chapter, the module's own order


def _not_implemented_text(leaves) -> str:
    return f"{NOT_IMPLEMENTED}: {str(leaves[0]) or 'raises NotImplementedError'}"


def _optional_not_implemented(item, leaves) -> bool:
    """Every leaf is a later chapter's function (or one outside v1) that is not implemented: not red."""
    subject = subject_of(item)
    return (subject is not None and bool(leaves)
            and all(isinstance(e, NotImplementedYet) and e.fname and not subject.impl.requires(e.fname)
                    for e in leaves))


def _feedback_repr(repr_failure, config):
    """A claim's failure is described by its feedback alone: pytest's traceback of the suite's frames,
    which Hypothesis also asks for once per failing test, reads every frame's source (~0.1 s each)."""
    def brief(excinfo, *args, **kwargs):
        leaves = _leaves(excinfo.value)
        if leaves and all(isinstance(e, NOT_IMPLEMENTED_ERRORS) for e in leaves):
            return _not_implemented_text(leaves)
        if leaves and all(isinstance(e, MissingKeyword) for e in leaves):
            return str(leaves[0])
        if (leaves and all(isinstance(e, (SpecFailure, isolation.IsolationFailure)) for e in leaves)
                and not config.getoption("--spec-traceback")):
            return "\n\n".join(str(e) for e in leaves)
        return repr_failure(excinfo, *args, **kwargs)

    return brief


# Claims that apply only to implementations declaring what they are (a module attribute).
FLASH_CLAIMS = ("EFF-3",)


def pytest_runtest_setup(item):
    subject = subject_of(item)
    if subject is not None and subject.impl.unavailable:
        pytest.skip(f"{UNAVAILABLE}: {subject.name}: {subject.impl.unavailable}")
    if subject is not None and not subject.impl.flash:
        flash = [c for c in claims_of(item) if c in FLASH_CLAIMS]
        if flash and len(flash) == len(claims_of(item)):
            pytest.skip(f"{NOT_APPLICABLE}: {', '.join(flash)} is about flash kernels, and {subject.name} does not "
                        "declare FLASH_KERNEL = True")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    subject = subject_of(item)
    spec = ""
    if subject is not None:
        spec = subject.impl.path if subject.impl.spec.endswith(".py") else subject.impl.spec
    token = context.CURRENT.set(context.TestInfo(item.nodeid, item.name, claims_of(item), spec or ""))
    try:
        return (yield)
    finally:
        context.CURRENT.reset(token)


def _skip_reason(rep) -> str:
    lr = rep.longrepr
    text = str(lr[2]) if isinstance(lr, tuple) and len(lr) == 3 else str(lr or "")
    return text.removeprefix("Skipped: ").split("\n")[0]  # not Hypothesis's notes about the example


def _classify(rep, call) -> tuple[str, str]:
    if hasattr(rep, "wasxfail"):
        return (report_mod.XFAILED, rep.wasxfail) if rep.skipped else (report_mod.FAILED, "passed unexpectedly")
    if rep.passed:
        return report_mod.PASSED, ""
    if rep.skipped:
        reason = _skip_reason(rep)
        for prefix, status in ((NOT_IMPLEMENTED, report_mod.NOT_IMPL), (NOT_APPLICABLE, report_mod.NOT_APPL),
                               (UNAVAILABLE, report_mod.UNAVAILABLE),
                               ("could not import", report_mod.UNAVAILABLE)):  # pytest.importorskip: a package missing
            if reason.startswith(prefix):
                return status, reason
        return report_mod.SKIPPED, reason
    if call.excinfo is not None and all(isinstance(e, NOT_IMPLEMENTED_ERRORS) for e in _leaves(call.excinfo.value)):
        # a required function: "not implemented", and the run is red (rep.failed)
        return report_mod.NOT_IMPL, str(_leaves(call.excinfo.value)[0])
    return report_mod.FAILED, shorten(str(rep.longrepr or ""))


def shorten(text: str, limit: int = 4000, head: int = 1500, tail: int = 2500) -> str:
    """A long failure message cut to its start and its end (the end says why), at line boundaries; the
    summary lines the grader reads ("largest error ...", "likely cause: ...") are kept from the part left
    out, whole."""
    if len(text) <= limit:
        return text
    start = text[:head].rsplit("\n", 1)[0]
    end_at = len(text) - tail
    end_at = text.find("\n", end_at) + 1 or end_at
    middle = text[len(start):end_at]
    kept = [line.strip() for line in middle.splitlines() if line.strip().startswith(SUMMARY_LINES)]
    return "\n".join([start, "...", *kept[:2], text[end_at:]])


SUMMARY_LINES = ("largest error", "likely cause:")  # what the grader groups failures by (grading/feedback.py)


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside an exception group (Hypothesis raises one for several distinct failures)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in _leaves(e)]
    return [exc]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    subject = subject_of(item)
    leaves = _leaves(call.excinfo.value) if call.excinfo is not None and rep.failed else []
    if _optional_not_implemented(item, leaves):  # a later chapter's function: optional, so a skip
        rep.outcome = "skipped"
        rep.longrepr = (str(item.path), item.location[1] or 0, "Skipped: " + _not_implemented_text(leaves))
        leaves = []
    if leaves and all(isinstance(e, NOT_IMPLEMENTED_ERRORS) for e in leaves):
        rep.longrepr = _not_implemented_text(leaves)
    elif leaves and all(isinstance(e, MissingKeyword) for e in leaves):
        rep.longrepr = str(leaves[0])
    elif (leaves and all(isinstance(e, (SpecFailure, isolation.IsolationFailure)) for e in leaves)
          and not item.config.getoption("--spec-traceback")):
        # the feedback is the whole story; the suite's own frames are noise
        parts = []
        for exc in leaves:
            notes = [n for n in getattr(exc, "__notes__", []) if not n.startswith("Explanation")]
            parts.append("\n".join([str(exc), *notes]))
        rep.longrepr = "\n\n".join(parts)
    demo = item.get_closest_marker("demonstration") is not None  # no implementation verdict: no matrix cell
    final = rep.when == "call" or (rep.when == "setup" and not rep.passed) or (rep.when == "teardown" and rep.failed)
    if final:
        outcome, message = _classify(rep, call)
        if rep.when == "call":  # a claim met with error carried forward says so (harness/carried.py)
            message = message or carried.note_for(item.nodeid)
        rec = report_mod.Outcome(
            nodeid=item.nodeid, test=getattr(item, "originalname", item.name),
            impl=subject.name if subject and not demo else "", dtype=subject.dtype if subject and not demo else "",
            claims=list(claims_of(item)), outcome=outcome, message=message, duration=rep.duration,
            failed_run=bool(rep.failed),
        )
        rep.user_properties.append(("spec_outcome", dict(rec.__dict__)))
    return rep


class _Collector:
    """Collects outcomes from reports: with pytest-xdist, logreport runs in the controller."""

    def __init__(self, records: list):
        self.records = records

    def pytest_runtest_logreport(self, report):
        for key, value in report.user_properties:
            if key == "spec_outcome":
                self.records.append(report_mod.Outcome(**value))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    records = [r for r in config.stash.get(_RECORDS, []) if r.impl]
    impls = config.stash.get(_IMPLS, [])
    for name, entries in config.stash.get(_XFAILS, {}).items():
        for e in entries:
            if not e.used:
                terminalreporter.write_line(
                    f"warning: expected-failure line {e.source} ({e.pattern!r}) matched no test", yellow=True)
    if records and not config.getoption("--no-claim-summary"):
        terminalreporter.section("claims by implementation")
        width = config.get_terminal_writer().fullwidth
        for line in report_mod.summary_lines(records, [i.name for i in impls], width):
            terminalreporter.write_line(line)
        for line in report_mod.scope_lines(records, impls):
            terminalreporter.write_line(line)
    if config.getoption("--isolate", default=False):
        for line in isolation.summary():
            terminalreporter.write_line(line)
    path = config.getoption("--spec-report")
    if path:
        report_mod.write_json(path, config.stash.get(_RECORDS, []), under_test.described(impls))
        terminalreporter.write_line(f"spec report written to {path}")
