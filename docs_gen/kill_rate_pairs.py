"""A pytest plugin for the kill-rate runs (docs_gen/kill_rate.py): each known bug runs only the tests of
the claims it records, not every claim of the chapter.

A bug's verdict on one of its claims does not depend on the other claims' tests, so this changes no
verdict the study reads; it only leaves out the tests whose results it never reads (most of a chapter:
a bug records one or two of its claims). Loaded with `-p docs_gen.kill_rate_pairs`; the pairs come
from $MHA_SPEC_KILL_RATE_PAIRS, a JSON object {implementation name: [claim IDs]}.
"""

from __future__ import annotations

import json
import os

import pytest

from spec_tests.harness.items import claims_of, subject_of

ENV = "MHA_SPEC_KILL_RATE_PAIRS"


@pytest.hookimpl(trylast=True)  # after the suite's own selection (--claim) and example counts
def pytest_collection_modifyitems(config, items):
    pairs = {name: set(claims) for name, claims in json.loads(os.environ.get(ENV) or "{}").items()}
    if not pairs:
        return
    keep, drop = [], []
    for item in items:
        own = pairs.get(getattr(subject_of(item), "name", None))
        (drop if own is not None and not own.intersection(claims_of(item)) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
