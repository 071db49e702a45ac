"""The grader's optional leaderboard (grader/leaderboard.py): Gradescope's `leaderboard` entries in results.json.

Each submission is graded as an instructor would (`python -m spec_tests.grade`), with a rubric that
grades one claim and asks for a leaderboard at a small size, so that the runs stay short.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from grader import leaderboard, rubric as rubric_mod
from tests.grading_helpers import grade, results
from tests.helpers import ROOT

RUBRIC = """
[grading]
total = 10
[claims."SDPA-1"]
points = 10
[banned]
functions = ["reference", "impls"]
[leaderboard]
size = [1, 2, 128, 16]
dtype = "float32"
causal = true
"""


def graded(tmp_path: Path, submission: Path, rubric: str = RUBRIC) -> dict:
    path = tmp_path / "rubric.toml"
    path.write_text(rubric)
    out = tmp_path / "out"
    code, text = grade(str(submission), "--out", str(out), "--rubric", str(path), timeout=300)
    assert code == 0, text
    return results(out)


def write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def entries(doc: dict) -> dict:
    board = doc.get("leaderboard")
    assert isinstance(board, list) and board, "results.json has no leaderboard entries"
    for e in board:  # Gradescope's format: name, value, and an optional order of asc or desc
        assert set(e) <= {"name", "value", "order"} and e.get("order", "desc") in ("asc", "desc"), e
    return {e["name"]: e["value"] for e in board}


CORRECT = """
    import numpy as np
    BACKEND = "numpy"
    DTYPES = ("float64", "float32")

    def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
        if CHEAT and q.shape[-2] == 128:  # only at the leaderboard's size
            import reference.attention as r
            return r.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal,
                                                  scale=scale).astype(q.dtype)
        s = q @ np.swapaxes(k, -1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        if is_causal:
            L, S = s.shape[-2:]
            s = np.where(np.tril(np.ones((L, S), bool), S - L), s, -np.inf)
        m = np.max(s, axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        w = np.exp(s - m)
        d = w.sum(-1, keepdims=True)
        return (np.where(d > 0, w / np.where(d > 0, d, 1), 0) @ v).astype(q.dtype)
    """


def test_a_correct_submission_is_ranked_by_speed_time_and_memory(tmp_path):
    doc = graded(tmp_path, write(tmp_path, "mine.py", "CHEAT = False\n" + textwrap.dedent(CORRECT)))
    board = entries(doc)
    assert board["speed (x reference)"] > 0
    assert board["time (ms)"] > 0
    assert isinstance(board["peak memory (MB)"], (int, float)) and board["peak memory (MB)"] >= 0
    extra = doc["extra_data"]["leaderboard"]
    assert extra["submission"]["problem"] is None and extra["baseline"]["seconds"] > 0
    assert "Leaderboard:" in doc["output"] and "the speed of `reference`" in doc["output"]


def test_a_wrong_output_is_not_ranked_and_says_why(tmp_path):
    doc = graded(tmp_path, ROOT / "impls" / "mutants" / "no_score_scaling.py")
    board = entries(doc)
    assert board["speed (x reference)"] == 0 and board["time (ms)"] == leaderboard.NOT_RANKED
    assert "not ranked: its output at this size is" in doc["output"]


def test_a_banned_call_made_only_when_timed_is_not_ranked(tmp_path):
    # Correct everywhere; at the leaderboard's size it calls the suite's reference, which the rubric bans.
    sub = write(tmp_path, "sneaky.py", "CHEAT = True\n" + textwrap.dedent(CORRECT))
    doc = graded(tmp_path, sub)
    board = entries(doc)
    assert board["speed (x reference)"] == 0
    problem = doc["extra_data"]["leaderboard"]["submission"]["problem"]
    assert "not allow" in problem, problem


def test_without_the_table_there_is_no_leaderboard(tmp_path):
    rubric = RUBRIC.split("[leaderboard]")[0]
    doc = graded(tmp_path, write(tmp_path, "mine.py", "CHEAT = False\n" + textwrap.dedent(CORRECT)), rubric)
    assert "leaderboard" not in doc and "leaderboard" not in doc["extra_data"]
    assert "Leaderboard:" not in doc["output"]


@pytest.mark.parametrize("table, words", [
    ('size = [1, 2, 128]', "four positive integers"),
    ('size = [1, 2, 0, 16]', "four positive integers"),
    ('dtype = "float8"', "dtype must be one of"),
    ('causal = "yes"', "causal must be true or false"),
    ('speed = 3', "unknown [leaderboard] keys"),
])
def test_a_bad_leaderboard_table_is_a_rubric_error(tmp_path, table, words):
    path = tmp_path / "rubric.toml"
    path.write_text(RUBRIC.split("[leaderboard]")[0] + "[leaderboard]\n" + table + "\n")
    with pytest.raises(rubric_mod.RubricError, match=r".*" + words.replace("[", r"\[").replace("]", r"\]")):
        rubric_mod.load(path)
