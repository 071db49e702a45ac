"""The suite's pytest plugin: --impl, parametrisation over implementations and dtypes,
expected-failure files, "not implemented" reporting, and the summary by claim.

Registered as a `pytest11` entry point (pyproject.toml) so that `--impl` is known
before pytest parses the command line, and from the root conftest.py otherwise.
"""

from __future__ import annotations

import copy
import inspect
import os
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from spec_tests.harness import arrays, context, diagnosis, loader, xfail  # noqa: F401 (diagnosis:
# registers the known-bug diagnoser in feedback.DIAGNOSERS)
from spec_tests.harness import carried
from spec_tests.sandbox import isolation
from spec_tests.harness import claims as catalogue
from spec_tests.harness import report as report_mod
from spec_tests.harness.feedback import SpecFailure
from spec_tests.harness.subject import NOT_APPLICABLE, NOT_IMPLEMENTED, MissingKeyword, NotImplementedYet, Subject

NOT_IMPLEMENTED_ERRORS = (NotImplementedError, NotImplementedYet)

UNAVAILABLE = "unavailable"

# -- Hypothesis profiles: one place ----------------------------------------------------------
_COMMON = dict(
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],  # no "explain" noise
    report_multiple_bugs=False,  # one failure per test: the smallest input that breaks the claim
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.register_profile("dev", max_examples=25, **_COMMON)  # a learner's run: random, remembers failures
settings.register_profile("ci", max_examples=25, derandomize=True, database=None, **_COMMON)
settings.register_profile("grading", max_examples=10, derandomize=True, database=None, **_COMMON)  # claims no known bug fails
settings.register_profile("thorough", max_examples=500, **_COMMON)
# Random and forgetful: each run a fresh sample (with --hypothesis-seed, a chosen one); docs_gen/kill_rate.py
settings.register_profile("sample", max_examples=25, database=None, **_COMMON)
PROFILE = os.environ.get("MHA_SPEC_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)


# Examples per Hypothesis test, by claim, in the dev, ci and grading profiles: each claim's `examples` in
# claims.toml, chosen by the kill-rate study (docs_gen/kill_rate.py; docs/conventions.md, "How many
# examples"). A test of several claims draws the largest of their counts; a test of claims without one
# draws the profile's own count; `thorough` and a test's own @settings(max_examples=...) keep theirs.


def forced_examples() -> int | None:
    """MHA_SPEC_EXAMPLES=N: every Hypothesis test draws N examples, its own setting and its claims' count aside."""
    value = os.environ.get("MHA_SPEC_EXAMPLES")
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise pytest.UsageError(f"MHA_SPEC_EXAMPLES must be a whole number of examples, at least 1, not {value!r}")
    return int(value)


def examples_for(claims, profile: str | None = None) -> int | None:
    """The example count of a test of these claims in a profile (None: the profile's own count). The
    profile is the one loaded now (`--hypothesis-profile=thorough` loads its own after this module's)."""
    profile = profile or getattr(settings, "_current_profile", None) or PROFILE
    return catalogue.examples(claims) if profile in ("dev", "ci", "grading") else None


def _set_examples(items, forced: int | None) -> None:
    """The example count of each Hypothesis test: MHA_SPEC_EXAMPLES when set; else its claims' count
    (claims.toml), unless the test chose its own with @settings(max_examples=...)."""
    wanted: dict = {}
    for item in items:  # one count per test function: the largest its items' claims ask for
        fn = getattr(item, "obj", None)
        if not getattr(fn, "is_hypothesis_test", False):
            continue
        own = fn.__dict__.setdefault("_mha_spec_own_settings", fn._hypothesis_internal_use_settings)
        count = forced
        if count is None and own.max_examples == settings.default.max_examples:
            count = examples_for(claims_of(item))
        if count is not None:
            wanted[fn] = max(count, wanted.get(fn, 0))
    for fn, count in wanted.items():
        fn._hypothesis_internal_use_settings = settings(fn._mha_spec_own_settings, max_examples=count)


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


ROOT = Path(__file__).resolve().parents[1]  # the repository (or installed project) holding spec_tests/
PROJECT_INI = ROOT / "pyproject.toml"
SPEC_DIR = Path(__file__).resolve().parent


def _determine_setup(config, known):
    """pytest's own rootdir/inifile search, on the arguments as they parse once --impl is known."""
    from _pytest.config import findpaths

    wanted = dict(inifile=known.inifilename, override_ini=getattr(known, "override_ini", None),
                  args=list(getattr(known, "file_or_dir", []) or []), rootdir_cmd_arg=known.rootdir or None,
                  invocation_dir=config.invocation_params.dir)
    accepted = inspect.signature(findpaths.determine_setup).parameters
    found = findpaths.determine_setup(**{k: v for k, v in wanted.items() if k in accepted})
    return found[0], found[1], found[2]


def _adopt(config, parser, args, rootpath, inipath, inicfg) -> None:
    """Make `config` what pytest would have built with this rootdir and configuration file."""
    had_ini = config.inipath is not None
    config._rootpath, config._inipath = rootpath, inipath
    if hasattr(config, "_inicfg"):
        config._inicfg = inicfg
    else:  # pytest 8
        config.inicfg = inicfg
    config._inicache.clear()
    parser.extra_info["rootdir"] = str(rootpath)
    parser.extra_info["inifile"] = str(inipath)
    if not had_ini and inipath is not None:  # pytest applied no configured addopts: apply the project's
        args[:] = [*config._validate_args(config.getini("addopts"), "via addopts config"), *args]
    namespace = parser.parse_known_args(args, namespace=copy.copy(config.option))
    if namespace.confcutdir is None:
        namespace.confcutdir = str(inipath.parent if inipath is not None else rootpath)
    config.known_args_namespace = namespace


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """`pytest --impl ~/hw/attention.py`, run from the repository, is the same run as `--impl numpy_fast`.

    pytest chooses its rootdir and configuration file before it loads this plugin, so it does not yet
    know that --impl takes a value: it reads the implementation's path as a test path, roots the run
    in that file's folder and finds no configuration (no markers, no `-m "not slow"`, the
    whole working directory collected, test ids relative to a foreign folder). Here, with --impl known,
    the search is repeated on the real test paths. Without any, from a folder that is not the project,
    the run uses the project's configuration and collects spec_tests/, so that it is the same from anywhere.
    """
    known = parser.parse_known_args(args, namespace=copy.copy(early_config.option))
    if not getattr(known, "impl", None):
        return
    try:
        rootpath, inipath, inicfg = _determine_setup(early_config, known)
    except pytest.UsageError:
        return  # pytest reports a bad --rootdir or -c itself
    paths = list(getattr(known, "file_or_dir", []) or [])
    if not paths and inipath != PROJECT_INI and PROJECT_INI.is_file():
        known.inifilename, known.rootdir = str(PROJECT_INI), str(ROOT)
        rootpath, inipath, inicfg = _determine_setup(early_config, known)
        args.append(str(SPEC_DIR))
    if (rootpath, inipath) != (early_config.rootpath, early_config.inipath):
        _adopt(early_config, parser, args, rootpath, inipath, inicfg)


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
    load = loader.load
    if config.getoption("--isolate", default=False):
        rubric = config.getoption("--rubric", default=None)
        limits = isolation.Limits.from_toml(rubric) if rubric else isolation.Limits()
        load = lambda spec: isolation.load(spec, limits)  # noqa: E731 - the module is imported in a worker only
    impls = []
    for spec in specs:
        try:
            impls.append(load(spec))
        except Exception as exc:  # the learner's file does not import: say why, plainly
            tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            raise pytest.UsageError(
                f"could not load the implementation {spec!r}:\n  {tb}\n"
                "Fix the error above (run `python " + spec + "` to see it on its own) and try again."
                if spec.endswith(".py") else f"could not load the implementation {spec!r}: {tb}"
            ) from None
    subjects = []
    if any(i.backend == "torch" and not i.unavailable for i in impls):
        arrays.torch_module()  # sets torch's thread count for the small test inputs
    for impl in impls:
        for dtype in impl.dtypes or ("float64",):
            subjects.append((isolation.IsolatedSubject if impl.remote else Subject)(impl, dtype))
    config.stash[_IMPLS] = impls
    config.stash[_SUBJECTS] = subjects
    config.stash[_EXPLICIT] = explicit
    config.stash[_XFAILS] = {impl.name: xfail.load(impl.name) for impl in impls}
    config.stash[_RECORDS] = []
    config.pluginmanager.register(_Collector(config.stash[_RECORDS]), "mha-spec-collector")


def pytest_unconfigure(config):
    isolation.shutdown()  # under --isolate: no worker, and nothing a worker started, outlives the run


def pytest_report_header(config):
    impls = config.stash.get(_IMPLS, [])
    lines = ["implementations under test:"]
    for impl in impls:
        state = f"UNAVAILABLE ({impl.unavailable})" if impl.unavailable else f"{impl.backend}/{impl.device}"
        lines.append(f"  {impl.name:<16} {state}  dtypes: {', '.join(impl.dtypes)}")
    return lines


_DEMO_SUBJECT = []


def _reference_subject() -> Subject:
    """The float64 reference implementation, the `impl` of a demonstration (tests/demonstrations/)."""
    if not _DEMO_SUBJECT:
        _DEMO_SUBJECT.append(Subject(loader.load("reference"), "float64"))
    return _DEMO_SUBJECT[0]


def pytest_generate_tests(metafunc):
    if "impl" in metafunc.fixturenames and metafunc.definition.get_closest_marker("demonstration"):
        # a demonstration's verdict cannot depend on an implementation: it runs once, on the reference
        metafunc.parametrize("impl", [_reference_subject()], ids=["reference-float64"], scope="session")
        return
    if "impl" in metafunc.fixturenames:
        subjects = metafunc.config.stash[_SUBJECTS]
        metafunc.parametrize("impl", subjects, ids=[s.id for s in subjects], scope="session")


def _subject(item) -> Subject | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("impl") if callspec else None


def claims_of(item) -> tuple[str, ...]:
    ids = []
    for mark in item.iter_markers("claim"):
        ids.extend(mark.args)
    return tuple(dict.fromkeys(ids))


def _wanted(config, name: str) -> set[str]:
    return {v.strip() for opt in config.getoption(name) for v in opt.split(",") if v.strip()}


def pytest_collection_modifyitems(config, items):
    explicit = config.stash[_EXPLICIT]
    xfails = config.stash[_XFAILS]
    want_claims, want_chapters = _wanted(config, "--claim"), _wanted(config, "--chapter")
    unknown = sorted(c for c in want_claims if c not in catalogue.catalogue())
    if unknown:  # a usage error, not an empty run (`python -m spec_tests claims` lists them)
        raise pytest.UsageError(f"--claim: unknown claim ID(s) {', '.join(unknown)}; "
                                "`python -m spec_tests claims` lists every claim")
    keep, drop = [], []
    _set_examples(items, forced_examples())
    for item in items:
        ids = claims_of(item)
        if want_claims and not want_claims.intersection(ids):
            drop.append(item)
            continue
        if want_chapters and not {catalogue.get(i).chapter for i in ids} & want_chapters:
            drop.append(item)
            continue
        keep.append(item)
        subject = _subject(item)
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
    items.sort(key=_chapter_rank)  # stable: within a chapter, the module's own order


def _chapter_rank(item) -> int:
    """`pytest -x` shows the first failure soon: chapters run in claims.toml's `order`."""
    return catalogue.chapter_rank(Path(str(item.path)).stem)


def _not_implemented_text(leaves) -> str:
    return f"{NOT_IMPLEMENTED}: {str(leaves[0]) or 'raises NotImplementedError'}"


def _optional_not_implemented(item, leaves) -> bool:
    """Every leaf is a later chapter's function (or one outside v1) that is not implemented: not red."""
    subject = _subject(item)
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
    subject = _subject(item)
    if subject is not None and subject.impl.unavailable:
        pytest.skip(f"{UNAVAILABLE}: {subject.name}: {subject.impl.unavailable}")
    if subject is not None and not subject.impl.flash:
        flash = [c for c in claims_of(item) if c in FLASH_CLAIMS]
        if flash and len(flash) == len(claims_of(item)):
            pytest.skip(f"{NOT_APPLICABLE}: {', '.join(flash)} is about flash kernels, and {subject.name} does not "
                        "declare FLASH_KERNEL = True")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    subject = _subject(item)
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
    subject = _subject(item)
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
        for line in report_mod.summary_lines(records, [i.name for i in impls], terminalreporter._tw.fullwidth):
            terminalreporter.write_line(line)
        for line in report_mod.scope_lines(records, impls):
            terminalreporter.write_line(line)
    if config.getoption("--isolate", default=False):
        for line in isolation.summary():
            terminalreporter.write_line(line)
    path = config.getoption("--spec-report")
    if path:
        report_mod.write_json(path, config.stash.get(_RECORDS, []), {
            i.name: {"backend": i.backend, "device": i.device, "dtypes": list(i.dtypes),
                     "unavailable": i.unavailable, "path": i.path,
                     "contract": list(i.contract) if i.contract else None, "flash_kernel": i.flash} for i in impls})
        terminalreporter.write_line(f"spec report written to {path}")
