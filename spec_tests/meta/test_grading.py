"""The grader (`python -m spec_tests.grade`): full marks for a correct submission, a lower grade with
the bug named for each known bug, deterministic grades, a gradebook for a batch, banned functions,
rubric errors, and the Gradescope autograder script.

Grading every mutant costs a minute or two on two cores; the default run grades a few of different
kinds, and CI (MHA_SPEC_ALL_MUTANTS=1, in .ci/run) grades them all.
"""

import csv
import importlib
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from spec_tests.meta.grading_helpers import grade, results
from spec_tests.meta.helpers import ROOT, run_suite

MUTANTS_DIR = ROOT / "impls" / "mutants"
MUTANTS = sorted(p.stem for p in MUTANTS_DIR.glob("*.py") if not p.stem.startswith("_"))
# A few bugs of different kinds: a wrong value, a write into an input, nondeterminism, a wrong dtype.
SAMPLE = ["merge_heads_without_transpose", "modifies_input_in_place", "nondeterministic_noise",
          "float32_promoted_to_float64", "fully_masked_rows_nan", "layer_norm_seed_code"]
GRADED = MUTANTS if os.environ.get("MHA_SPEC_ALL_MUTANTS") else [m for m in SAMPLE if m in MUTANTS]


def _rubric(tmp_path, *claims, extra: str = "") -> str:
    """A rubric of a few claims, a point each (no banned functions: mutants import impls.mutants._base)."""
    body = "".join(f'[claims."{c}"]\npoints = 1\n' for c in claims)
    path = tmp_path / "rubric.toml"
    path.write_text(f"[grading]\ntotal_timeout = 600\n{extra}\n{body}")
    return str(path)


def _correct(folder):
    """A correct submission: the mutants' base, as a file of its own (no import from the suite)."""
    path = folder / "attention.py"
    shutil.copyfile(MUTANTS_DIR / "_base.py", path)
    return path


def test_a_correct_submission_scores_full_marks(tmp_path):
    out = tmp_path / "out"
    code, log = grade(str(_correct(tmp_path)), "--out", str(out))
    assert code == 0, log[-3000:]
    doc = results(out)
    assert doc["score"] == 100, [(t["name"], t["score"], t["max_score"]) for t in doc["tests"] if t["score"] < t["max_score"]]
    assert all(t["status"] == "passed" for t in doc["tests"])
    assert "Score: 100 / 100" in (out / "feedback.md").read_text()


@pytest.mark.parametrize("name", GRADED)
def test_each_mutant_scores_less_with_its_bug_named(name, tmp_path):
    module = importlib.import_module(f"impls.mutants.{name}")
    out = tmp_path / "out"
    code, log = grade(str(MUTANTS_DIR / f"{name}.py"), "--out", str(out), "--rubric", _rubric(tmp_path, module.CAUGHT_BY))
    assert code == 0, log[-3000:]
    doc = results(out)
    assert doc["score"] < 1, f"{name} ({module.BUG}) should lose points on {module.CAUGHT_BY}"
    feedback = (out / "feedback.md").read_text()
    assert f"this matches a known bug: {module.BUG}" in feedback, f"{name}'s bug is not named:\n{feedback}"


def test_a_bug_no_mutant_has_gets_only_what_failed(tmp_path):
    mine = tmp_path / "shifted.py"
    mine.write_text(textwrap.dedent('''
        from impls.mutants._base import *  # noqa: F401,F403
        from impls.mutants._base import layer_norm as _layer_norm

        def layer_norm(x, gamma, beta, eps=1e-5):
            return _layer_norm(x, gamma, beta, eps) + 0.5
    '''))
    code, out, report = run_suite("--impl", str(mine), "--claim", "LN-1", report=tmp_path / "r.json")
    failed = [t for t in report["tests"] if t["outcome"] == "failed"]
    assert failed and code == 1, out[-2000:]
    assert not any("likely cause" in t["message"] for t in failed), failed[0]["message"]


def test_grading_twice_gives_the_same_scores_and_messages(tmp_path):
    rubric = _rubric(tmp_path, "MASK-4", "SDPA-1")
    docs = []
    for n in (1, 2):
        out = tmp_path / f"out{n}"
        code, log = grade(str(MUTANTS_DIR / "fully_masked_rows_mean_of_v.py"), "--out", str(out), "--rubric", rubric)
        assert code == 0, log[-3000:]
        doc = results(out)
        doc.pop("execution_time")
        docs.append((doc, (out / "feedback.md").read_text()))
    assert docs[0] == docs[1]


def test_a_batch_gives_every_submission_a_report_and_a_gradebook(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    _correct(subs).rename(subs / "alice.py")
    (subs / "bob").mkdir()
    shutil.copyfile(MUTANTS_DIR / "no_score_scaling.py", subs / "bob" / "attention.py")
    (subs / "bob" / "notes.py").write_text("# a helper module next to the submission\n")
    (subs / "carol.py").write_text("raise ImportError('carol forgot a dependency')\n")
    out = tmp_path / "out"
    code, log = grade("--batch", str(subs), "--out", str(out), "--jobs", "2",
                      "--rubric", _rubric(tmp_path, "SDPA-1", "SDPA-4", "MHA-3"))
    assert code == 0, log[-3000:]
    assert "3/3" in log, f"the progress bar should reach 3/3:\n{log[-2000:]}"
    rows = {r["submission"]: r for r in csv.DictReader(open(out / "gradebook.csv"))}
    assert set(rows) == {"alice", "bob", "carol"}
    assert list(rows["alice"]) == ["submission", "sdpa", "multi_head", "total", "max", "status"]
    assert float(rows["alice"]["total"]) == 3 and rows["alice"]["status"] == "graded"
    assert 0 < float(rows["bob"]["total"]) < 3 and rows["bob"]["status"] == "graded"
    assert float(rows["carol"]["total"]) == 0 and rows["carol"]["status"] == "could not be imported"
    for name in rows:
        results(out / name)
    assert "carol forgot a dependency" in (out / "carol" / "feedback.md").read_text()


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_a_banned_function_fails_the_claims_that_call_it(tmp_path):
    mine = tmp_path / "shortcut.py"
    mine.write_text(textwrap.dedent('''
        """SDPA by torch's own kernel (banned); merge_heads by hand (allowed)."""
        import torch

        BACKEND = "torch"
        DTYPES = ("float64",)

        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)

        def merge_heads(heads):
            *lead, H, L, d = heads.shape
            return heads.transpose(-2, -3).reshape(*lead, L, H * d)

        def split_heads(x, num_heads):
            *lead, L, D = x.shape
            return x.reshape(*lead, L, num_heads, D // num_heads).transpose(-2, -3)
    '''))
    out = tmp_path / "out"
    banned = '[banned]\nfunctions = ["torch.nn.functional.scaled_dot_product_attention"]\n'
    code, log = grade(str(mine), "--out", str(out), "--rubric", _rubric(tmp_path, "SDPA-1", "MHA-3", extra=banned))
    assert code == 0, log[-3000:]
    scores = {t["tags"][1]: t["score"] for t in results(out)["tests"]}
    assert scores["SDPA-1"] == 0 and scores["MHA-3"] > 0, scores  # MHA-3 has a test of multi_head_attention too
    assert ("used torch.nn.functional.scaled_dot_product_attention, which the rubric does not allow"
            in (out / "feedback.md").read_text())


@pytest.mark.parametrize("rubric, error", [
    ('[claims."SDPA-99"]\npoints = 1\n', "no such claim"),
    ('[chapters.sdpa]\npoints = 10\nvisibility = "secret"\n', "visibility must be one of"),
    ('[limits]\ncall_timout = 3\n[chapters.sdpa]\npoints = 1\n', "unknown [limits] keys"),
    ('[grading]\nexclude_tests = ["test_sdpa.py::test_nothing"]\n[chapters.sdpa]\npoints = 1\n', "names no test"),
], ids=["unknown-claim", "bad-visibility", "misspelt-limit", "stale-exclusion"])
def test_a_bad_rubric_is_refused_with_a_reason(rubric, error, tmp_path):
    path = tmp_path / "rubric.toml"
    path.write_text(rubric)
    code, log = grade(str(_correct(tmp_path)), "--out", str(tmp_path / "out"), "--rubric", str(path))
    assert code == 2 and error in log, log[-2000:]
    assert not (tmp_path / "out" / "results.json").exists()


def test_the_gradescope_autograder_script_grades_a_submission(tmp_path):
    """run_autograder, with Gradescope's folders under a temporary root, writes results/results.json."""
    template = ROOT / "spec_tests" / "gradescope"
    for name in ("run_autograder", "setup.sh"):
        assert os.access(template / name, os.X_OK), f"{name} must be executable"
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "results").mkdir()
    shutil.copyfile(MUTANTS_DIR / "no_output_projection.py", root / "submission" / "attention.py")
    (root / "source").symlink_to(ROOT)
    env = dict(os.environ, AUTOGRADER=str(root), MHA_SPEC_PYTHON=sys.executable,
               MHA_SPEC_RUBRIC=_rubric(tmp_path, "MHA-5", "SDPA-1"))
    proc = subprocess.run([str(template / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = results(root / "results")
    assert doc["score"] == 1 and "MHA-5" in doc["output"]
