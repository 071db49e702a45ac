"""The grader's cache on disk (grader/cache.py): a value is computed once per version of its files, read back
unchanged, computed afresh when a file changes, and never taken from an entry another user could have written."""

from __future__ import annotations

import os

import pytest

from grader import cache, rubric, similarity


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_SPEC_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "src" / "a.py"
    source.parent.mkdir()
    source.write_text("x = 1\n")
    return tmp_path / "src", source


def counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value

    return compute, calls


def test_a_value_is_computed_once_and_read_back_unchanged(inputs):
    root, source = inputs
    compute, calls = counting({"b": [3, 1, 2], "a": [0]})
    first = cache.cached("thing", [source], root, compute)
    second = cache.cached("thing", [source], root, compute)
    assert first == second == {"b": [3, 1, 2], "a": [0]} and list(second) == ["b", "a"]
    assert len(calls) == 1


def test_a_changed_file_computes_the_value_afresh(inputs):
    root, source = inputs
    compute, calls = counting([1])
    cache.cached("thing", [source], root, compute)
    source.write_text("x = 2\n")
    cache.cached("thing", [source], root, compute)
    assert len(calls) == 2


AS_ROOT = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="giving a file away needs root")


@pytest.mark.parametrize("tamper", [
    pytest.param(lambda entry: os.chmod(entry, 0o666), id="others may write it"),
    # what a submission's worker, another user, could have written
    pytest.param(lambda entry: os.chown(entry, 54321, 54321), id="another user's", marks=AS_ROOT),
])
def test_an_entry_the_grader_cannot_vouch_for_is_not_trusted(inputs, tamper):
    root, source = inputs
    compute, calls = counting([1])
    cache.cached("thing", [source], root, compute)
    (entry,) = cache.folder().glob("thing-*.json")
    entry.write_text("[666]")
    tamper(entry)
    assert cache.cached("thing", [source], root, compute) == [1]
    assert len(calls) == 2


def test_a_damaged_or_unwritable_cache_only_costs_time(inputs, tmp_path, monkeypatch):
    root, source = inputs
    compute, calls = counting([1])
    cache.cached("thing", [source], root, compute)
    (entry,) = cache.folder().glob("thing-*.json")
    entry.write_text("{not json")
    assert cache.cached("thing", [source], root, compute) == [1]
    assert cache.cached("thing", [source], root, compute) == [1]  # written again, then read back
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("MHA_SPEC_CACHE_DIR", str(blocked / "cache"))  # below a file: cannot be made
    assert cache.cached("thing", [source], root, compute) == [1]
    assert len(calls) == 3


def test_the_graders_cached_values_equal_their_computation(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_SPEC_CACHE_DIR", str(tmp_path / "cache"))
    for function in (similarity.public_sources, rubric.tested_claims):
        function.cache_clear()  # the in-process cache: read from disk below
    try:
        expected = {k: frozenset(v) for k, v in similarity._public_sources(*similarity._public_files()).items()}
        assert similarity.public_sources() == expected  # computed and written
        similarity.public_sources.cache_clear()
        assert similarity.public_sources() == expected  # read back
        modules = sorted(rubric.SPEC_DIR.glob("test_*.py"))
        tested = rubric.tested_claims()
        rubric.tested_claims.cache_clear()
        assert rubric.tested_claims() == tested
        assert sorted((c, t) for c, ts in tested.items() for t in ts) == sorted(rubric._claim_tests(modules))
        assert len(list(cache.folder().glob("*.json"))) == 2
    finally:
        for function in (similarity.public_sources, rubric.tested_claims):
            function.cache_clear()


def test_a_new_version_replaces_the_old_entry(inputs):
    root, source = inputs
    compute, calls = counting([1])
    cache.cached("thing", [source], root, compute)
    cache.cached("other", [source], root, compute)
    source.write_text("x = 2\n")
    cache.cached("thing", [source], root, compute)
    assert len(list(cache.folder().glob("thing-*.json"))) == 1 and len(list(cache.folder().glob("other-*.json"))) == 1
