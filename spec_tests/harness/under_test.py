"""The implementations a run checks: loaded (in this process, or under --isolate in a confined worker),
one subject per implementation and dtype, and how the run's header and JSON report describe them."""

from __future__ import annotations

import traceback

import pytest

from spec_tests.harness import arrays, loader, notebook
from spec_tests.harness.subject import Subject
from spec_tests.sandbox import isolation


def load_all(specs, isolate: bool, rubric: str | None) -> list:
    """The implementations named by `specs` (loader.selected_specs); one that does not import: a usage error."""
    load = loader.load
    if isolate:
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
    return impls


def subjects(impls) -> list:
    """One subject per implementation and dtype (float64 for one that declares none): a test's `impl`."""
    if any(i.backend == "torch" and not i.unavailable for i in impls):
        arrays.torch_module()  # sets torch's thread count for the small test inputs
    found = []
    for impl in impls:
        for dtype in impl.dtypes or ("float64",):
            found.append((isolation.IsolatedSubject if impl.remote else Subject)(impl, dtype))
    return found


_REFERENCE = []


def reference_subject() -> Subject:
    """The float64 reference implementation, the `impl` of a demonstration (tests/demonstrations/)."""
    if not _REFERENCE:
        _REFERENCE.append(Subject(loader.load("reference"), "float64"))
    return _REFERENCE[0]


def header_lines(impls) -> list[str]:
    lines = ["implementations under test:"]
    for impl in impls:
        state = f"UNAVAILABLE ({impl.unavailable})" if impl.unavailable else f"{impl.backend}/{impl.device}"
        lines.append(f"  {impl.name:<16} {state}  dtypes: {', '.join(impl.dtypes)}")
        lines += [f"    {note}" for note in notebook.header_notes(impl)]  # a notebook's skipped lines and cells
    return lines


def described(impls) -> dict:
    """The implementations as the JSON report (--spec-report) lists them."""
    return {i.name: {"backend": i.backend, "device": i.device, "dtypes": list(i.dtypes),
                     "unavailable": i.unavailable, "path": i.path,
                     "contract": list(i.contract) if i.contract else None, "flash_kernel": i.flash,
                     "notes": list(notebook.header_notes(i))} for i in impls}
