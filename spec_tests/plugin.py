"""The suite's pytest plugin: --impl, parametrisation over implementations and dtypes,
expected-failure files, "not implemented" reporting, and the summary by claim.

Registered as a `pytest11` entry point (pyproject.toml) so that `--impl` is known
before pytest parses the command line, and from the root conftest.py otherwise.

Thin hooks only; each job is a module of its own under spec_tests/harness/: profiles.py (Hypothesis
profiles, examples per claim), rootdir.py (the rootdir of a run with --impl), under_test.py (the
implementations and their subjects), items.py (a test's subject and claims, --claim and --chapter),
outcomes.py (what a result means: a failure's text, the outcome recorded), report.py (the summary).
"""

from __future__ import annotations

import pytest

from spec_tests.harness import boundaries, context, diagnosis, loader, xfail  # noqa: F401 (diagnosis:
# registers the known-bug diagnoser in feedback.DIAGNOSERS)
from spec_tests.harness import items as items_mod
from spec_tests.harness import outcomes, profiles, rootdir, under_test  # profiles: registers and loads the
# Hypothesis profiles, before Hypothesis's plugin applies --hypothesis-profile
from spec_tests.harness import report as report_mod
from spec_tests.harness.items import claims_of, subject_of
from spec_tests.harness.subject import NOT_APPLICABLE
from spec_tests.sandbox import isolation

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
    boundaries.attach(keep)  # the boundary inputs each claim declares, tried before the drawn examples
    for item in keep:
        subject = subject_of(item)
        if subject is None:
            continue
        item.repr_failure = outcomes.brief_repr(item.repr_failure, config)
        func = getattr(item, "originalname", item.name)
        entry = xfail.match(xfails.get(subject.name, []), xfail.key(str(item.path), func, subject.dtype))
        if entry is not None:
            item.add_marker(pytest.mark.xfail(reason=f"{entry.reason} ({entry.source})", strict=True))
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    items.sort(key=items_mod.chapter_rank)  # stable: within a chapter, the module's own order


# Claims that apply only to implementations declaring what they are (a module attribute).
FLASH_CLAIMS = ("EFF-3",)


def pytest_runtest_setup(item):
    subject = subject_of(item)
    if subject is not None and subject.impl.unavailable:
        pytest.skip(f"{outcomes.UNAVAILABLE}: {subject.name}: {subject.impl.unavailable}")
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    outcomes.shape(item, rep, call)  # a failure told by its feedback; a later chapter's function: a skip
    if outcomes.is_final(rep):
        rep.user_properties.append(("spec_outcome", dict(outcomes.outcome_of(item, rep, call).__dict__)))
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
