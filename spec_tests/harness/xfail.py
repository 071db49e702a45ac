"""Per-implementation expected failures: spec_tests/xfail/<implementation>.txt.

One line per expected failure, keyed by test id without the implementation:

    test_masks.py::test_fully_masked_rows_are_zero[float16]   # reason, required
    test_precision.py::*[bfloat16]                             # `*` and `?` are wildcards

The implementation is the file's name, so tests never branch on it. A line
that matches no collected test is reported as a warning (it has gone stale);
an expected failure that passes fails the run (strict), so stale lines surface.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

XFAIL_DIR = Path(os.environ.get("MHA_SPEC_XFAIL_DIR") or Path(__file__).resolve().parents[1] / "xfail")


@dataclass
class Entry:
    pattern: str
    reason: str
    source: str
    used: bool = False


def parse(path: Path) -> list[Entry]:
    entries = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern, _, reason = line.partition("#")
        pattern, reason = pattern.strip(), reason.strip()
        if not reason:
            raise ValueError(f"{path}:{n}: an expected failure needs a reason after '#': {raw!r}")
        entries.append(Entry(pattern, reason, f"{path.name}:{n}"))
    return entries


def load(impl_name: str, directory: Path | None = None) -> list[Entry]:
    path = Path(directory or XFAIL_DIR) / f"{impl_name}.txt"
    return parse(path) if path.is_file() else []


def key(module_file: str, function: str, dtype: str) -> str:
    return f"{Path(module_file).name}::{function}[{dtype}]"


def _matches(pattern: str, text: str) -> bool:
    """`*` and `?` are wildcards; brackets are literal (they delimit the dtype in test ids)."""
    regex = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.fullmatch(regex, text) is not None


def match(entries: list[Entry], test_key: str) -> Entry | None:
    for e in entries:
        if _matches(e.pattern, test_key) or _matches(e.pattern, test_key.split("[")[0]):
            e.used = True
            return e
    return None
