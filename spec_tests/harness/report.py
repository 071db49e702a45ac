"""Outcomes by claim: the end-of-run summary table and the JSON report.

Each test's outcome for one implementation and dtype is one of:
passed, failed, not implemented, not applicable, out of scope, unavailable, expected failure, skipped.
A claim's status for an implementation combines its tests over all dtypes; a claim whose every test is
out of scope (or not applicable) is "out of scope": not applicable to it, by its own declaration.
"""

from __future__ import annotations

import datetime
import json
import platform
from collections import defaultdict
from dataclasses import asdict, dataclass

from spec_tests.harness import claims as catalogue

PASSED, FAILED, NOT_IMPL, NOT_APPL = "passed", "failed", "not implemented", "not applicable"
UNAVAILABLE, XFAILED, SKIPPED = "unavailable", "expected failure", "skipped"
OUT_OF_SCOPE = "out of scope"  # the implementation declared the test's inputs outside what it can express


@dataclass
class Outcome:
    nodeid: str
    test: str
    impl: str
    dtype: str
    claims: list[str]
    outcome: str
    message: str = ""
    duration: float = 0.0
    failed_run: bool = False  # the test made the run red (a required function not implemented counts)


def claim_status(outcomes: list[str]) -> str:
    """Combine the outcomes of one claim's tests for one implementation."""
    s = set(outcomes)
    if FAILED in s:
        return FAILED
    if s <= {NOT_APPL}:
        return NOT_APPL
    if s <= {NOT_APPL, OUT_OF_SCOPE}:  # not applicable to it, by its own declaration (harness/scope.py)
        return OUT_OF_SCOPE
    if UNAVAILABLE in s and s <= {UNAVAILABLE, NOT_APPL}:
        return UNAVAILABLE
    if NOT_IMPL in s:
        return "partly implemented" if PASSED in s or XFAILED in s else NOT_IMPL
    if XFAILED in s:
        return XFAILED
    if PASSED in s:
        return PASSED
    return SKIPPED


def by_claim(records: list[Outcome]) -> dict[str, dict[str, str]]:
    grouped: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        for c in r.claims:
            grouped[c][r.impl].append(r.outcome)
    order = list(catalogue.catalogue())
    out = {}
    for cid in sorted(grouped, key=lambda c: order.index(c) if c in order else len(order)):
        out[cid] = {impl: claim_status(v) for impl, v in grouped[cid].items()}
    return out


SYMBOL = {PASSED: "pass", FAILED: "FAIL", NOT_IMPL: "not impl", NOT_APPL: "n/a", UNAVAILABLE: "unavail",
          XFAILED: "xfail", SKIPPED: "skip", "partly implemented": "partial", OUT_OF_SCOPE: "scope"}


def summary_lines(records: list[Outcome], impls: list[str], width: int = 120) -> list[str]:
    table = by_claim(records)
    if not table:
        return []
    cols = [i for i in impls if any(i in v for v in table.values())]
    colw = [max(8, len(c)) for c in cols]
    stmt_w = max(44, min(62, width - 10 - sum(w + 2 for w in colw)))
    head = f"{'claim':<8}  {'statement':<{stmt_w}}  " + "  ".join(f"{c:<{w}}" for c, w in zip(cols, colw))
    lines = [head, "-" * len(head)]
    for cid, per in table.items():
        try:
            text = catalogue.get(cid).summary
        except KeyError:
            text = "?"
        if len(text) > stmt_w:
            text = text[: stmt_w - 1] + "…"
        cells = "  ".join(f"{SYMBOL.get(per.get(c, ''), '') or '-':<{w}}" for c, w in zip(cols, colw))
        lines.append(f"{cid:<8}  {text:<{stmt_w}}  {cells}")
    counts = defaultdict(int)
    for per in table.values():
        for status in per.values():
            counts[status] += 1
    lines.append("claims x implementations: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return lines


def scope_lines(records: list[Outcome], impls) -> list[str]:
    """What the table's "not impl" and "n/a" mean for each implementation: a declared CONTRACT leaves
    functions out (not applicable); a required function not implemented keeps the run red; the later
    chapters' functions are optional."""
    lines = []
    for impl in impls:
        mine = [r for r in records if r.impl == impl.name]
        if not mine:
            continue
        if impl.contract is not None:
            lines.append(f"{impl.name} declares CONTRACT = ({', '.join(impl.contract)}): the claims of the other "
                         "contract functions are not applicable to it")
        out = [r for r in mine if r.outcome == OUT_OF_SCOPE]
        partly = [r for r in mine if r.outcome == PASSED and OUT_OF_SCOPE in r.message]
        if out or partly:
            reasons = sorted({r.message.split(": ", 1)[-1].split(" (")[0] for r in out})
            lines.append(f"{impl.name}: {len(out)} test(s) out of scope (every input declared outside what it can "
                         f"express), {len(partly)} passed with some examples out of scope"
                         + (f"; reasons: {'; '.join(reasons[:6])}" if reasons else ""))
        blocking = [r for r in mine if r.outcome == NOT_IMPL and r.failed_run]
        optional = [r for r in mine if r.outcome == NOT_IMPL and not r.failed_run]
        if blocking:
            lines.append(f"{impl.name}: {len(blocking)} test(s) of required functions not implemented: the run stays "
                         "red until they are")
        if optional:
            lines.append(f"{impl.name}: {len(optional)} test(s) of optional later-chapter functions or keywords not "
                         "implemented (they do not make the run red)")
    return lines


def versions() -> dict:
    """The versions of Python and the packages a run used, read from their installed metadata: importing
    PyTorch only for its version would cost seconds in every run that never needed it."""
    import importlib.metadata
    import sys

    out = {"python": platform.python_version()}
    for mod in ("numpy", "torch", "hypothesis", "pytest"):
        loaded = sys.modules.get(mod)
        try:
            out[mod] = loaded.__version__ if loaded is not None else importlib.metadata.version(mod)
        except (AttributeError, importlib.metadata.PackageNotFoundError):
            pass
    return out


def write_json(path: str, records: list[Outcome], impls: dict) -> None:
    doc = {
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "processor": platform.machine(),
                    "cpus": __import__("os").cpu_count()},
        "versions": versions(),
        "implementations": impls,
        "claims": by_claim(records),
        "tests": [asdict(r) for r in records],
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
