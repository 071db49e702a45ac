"""The suite's Hypothesis profiles, and the number of examples each Hypothesis test draws.

Loading this module registers the profiles and loads the one for this run: $MHA_SPEC_PROFILE, else
`ci` under $CI, else `dev` (`--hypothesis-profile=NAME` loads its own later, in Hypothesis's plugin).

Examples per Hypothesis test, by claim, in the dev, ci and grading profiles: each claim's `examples` in
claims.toml, chosen by the kill-rate study (docs_gen/kill_rate.py; docs/conventions.md, "How many
examples"). A test of several claims draws the largest of their counts; a test of claims without one
draws the profile's own count; `thorough` and a test's own @settings(max_examples=...) keep theirs.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings

from spec_tests.harness import claims as catalogue
from spec_tests.harness.items import claims_of

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

COUNTED = ("dev", "ci", "grading")  # the profiles whose tests draw their claims' counts


def current_profile() -> str:
    """The name of the profile loaded now (`--hypothesis-profile=thorough` loads its own after this module's)."""
    name = getattr(settings, "get_current_profile_name", None)  # public in recent Hypothesis (6.170 has it)
    if name is not None:
        return name()
    # An older Hypothesis (pyproject.toml allows 6.100 on) has no public reader of the loaded profile's name.
    return getattr(settings, "_current_profile", None) or PROFILE


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
    profile = profile or current_profile()
    return catalogue.examples(claims) if profile in COUNTED else None


# Hypothesis has no public way to read a @given test's own settings, nor to replace them: `@settings(...)`
# applied to a test that has its own raises InvalidArgument ("has already been decorated with a settings
# object"). A test's settings are this attribute, which Hypothesis reads each time the test runs.
_SETTINGS = "_hypothesis_internal_use_settings"


def set_examples(items, forced: int | None) -> None:
    """The example count of each Hypothesis test: MHA_SPEC_EXAMPLES when set; else its claims' count
    (claims.toml), unless the test chose its own with @settings(max_examples=...)."""
    wanted: dict = {}
    for item in items:  # one count per test function: the largest its items' claims ask for
        fn = getattr(item, "obj", None)
        if not getattr(fn, "is_hypothesis_test", False):  # what hypothesis.is_hypothesis_test reads
            continue
        own = fn.__dict__.setdefault("_mha_spec_own_settings", getattr(fn, _SETTINGS))  # private: see _SETTINGS
        count = forced
        if count is None and own.max_examples == settings.default.max_examples:
            count = examples_for(claims_of(item))
        if count is not None:
            wanted[fn] = max(count, wanted.get(fn, 0))
    for fn, count in wanted.items():
        setattr(fn, _SETTINGS, settings(fn._mha_spec_own_settings, max_examples=count))  # private: see _SETTINGS
