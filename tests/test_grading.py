"""The grader (`python -m spec_tests.grade`): full marks for a correct submission, a lower grade with
the bug named for each known bug, deterministic grades, a gradebook for a batch, banned functions,
rubric errors, the Gradescope autograder script; hidden claims that leave no trace in what a
student sees, required dtypes, points as the rubric states them, uploads as students make them,
feedback grouped by cause, the copy check, students in the gradebook.

Every mutant is graded once per session, on the claims it is recorded to fail, and both this module and
test_mutants.py read that grade (conftest.py's `mutant_grades`).
"""

import csv
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

from grader import similarity, uploads
from tests.grading_helpers import (EPS_OUTSIDE, FLOAT32_SCORES, INDEPENDENT, grade, results,
                                             write_submission)
from tests.helpers import (ROOT, missing_packages, mutant_attributes, mutant_claims, mutant_names,
                                     mutant_needs, run_suite)

MUTANTS_DIR = ROOT / "impls" / "mutants"
MUTANTS = mutant_names()
# Known bugs the diagnosis cannot name yet, each with the reason (an expected failure, reported as such).
NOT_NAMED_YET: dict[str, str] = {}


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
    assert "Score: 100.00 / 100.00" in (out / "feedback.md").read_text()
    # points as the rubric states them: masks is worth 20, MASK-6 (float16 only) does not apply and says so
    assert doc["extra_data"]["chapters"]["masks"] == [20, 20], doc["extra_data"]["chapters"]
    mask6 = next(t for t in doc["tests"] if t["tags"][1] == "MASK-6")
    assert mask6["extra_data"]["claim_status"] == "not applicable" and mask6["score"] == mask6["max_score"] > 0
    assert doc["extra_data"]["status"] == "graded" and doc["extra_data"]["graded_file"] == "attention.py"


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=NOT_NAMED_YET[n]))
                                  if n in NOT_NAMED_YET else n for n in MUTANTS])
def test_each_mutant_scores_less_with_its_bug_named(name, mutant_grades):
    """Each known bug, graded on the claims it is recorded to fail (once per session, shared with
    test_mutants.py): every one of them loses points, and the feedback names the bug."""
    attrs = mutant_attributes(name)
    if missing_packages(mutant_needs(name)):
        pytest.skip(f"unavailable: {name} needs {', '.join(missing_packages(mutant_needs(name)))}")
    code, log, out = mutant_grades(name)
    assert code == 0, log[-3000:]
    doc = results(out)
    kept = {t["tags"][1]: t["score"] for t in doc["tests"] if t["score"] >= t["max_score"]}
    assert not kept, f"{name} ({attrs['BUG']}) should lose points on each of {mutant_claims(name)}: full marks on {kept}"
    feedback = (out / "feedback.md").read_text()
    named = f"this matches a known bug: {attrs['BUG']}" in feedback
    # on an input that several known bugs explain alike, the diagnosis lists the candidates instead of guessing
    among = "more than one known bug" in feedback and attrs["BUG"] in feedback.replace("\n", " ")
    assert named or among, f"{name}'s bug is not named:\n{feedback}"
    assert feedback.count(f"this matches a known bug: {attrs['BUG']}") == int(named), "one cause is reported once"


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
    (subs / "gina.py").write_text(INDEPENDENT)
    dave = INDEPENDENT.replace(  # gina's file, half-finished: merge_heads not written yet
        "def merge_heads(heads):", "def merge_heads(heads):\n    raise NotImplementedError\n\n\ndef _unused(heads):")
    (subs / "dave.py").write_text(dave)
    pasted = "\n".join(p.read_text() for p in sorted((ROOT / "reference").glob("*.py")))
    (subs / "eve.py").write_text(pasted + (ROOT / "impls" / "numpy_fast.py").read_text())
    roster = tmp_path / "roster.csv"
    roster.write_text("file,name,email\nalice.py,Alice A,alice@example.org\nbob,Bob B,bob@example.org\n"
                      "dave.py,Dave D,dave@example.org\ngina.py,Gina G,gina@example.org\n")
    out = tmp_path / "out"
    code, log = grade("--batch", str(subs), "--out", str(out), "--jobs", "2", "--roster", str(roster),
                      "--rubric", _rubric(tmp_path, "SDPA-1", "SDPA-4", "MHA-3"))
    assert code == 0, log[-3000:]
    assert "6/6" in log, f"the progress bar should reach 6/6:\n{log[-2000:]}"
    rows = {r["submission"]: r for r in csv.DictReader(open(out / "gradebook.csv"))}
    assert set(rows) == {"alice", "bob", "carol", "dave", "eve", "gina"}
    assert list(rows["alice"]) == ["submission", "name", "email", "sdpa", "multi_head", "total", "max", "status",
                                   "graded_file", "copy_check"]
    assert rows["alice"]["email"] == "alice@example.org" and rows["carol"]["name"] == ""
    assert rows["alice"]["total"] == "3.00" and rows["alice"]["sdpa"] == "2.00" and rows["alice"]["status"] == "graded"
    assert 0 < float(rows["bob"]["total"]) < 3 and rows["bob"]["status"] == "graded"
    assert rows["bob"]["graded_file"] == "attention.py"
    assert float(rows["carol"]["total"]) == 0 and rows["carol"]["status"] == "could not import"
    assert rows["dave"]["status"] == "partial" and float(rows["dave"]["total"]) < 3
    assert all(re.fullmatch(r"\d+\.\d\d", rows[n][c]) for n in rows for c in ("sdpa", "multi_head", "total"))
    # gina and dave hand in the same file: flagged to the instructor, not to either student;
    # alice's is the suite's own correct base, eve's a paste of reference/ and impls/numpy_fast.py
    assert "dave" in rows["gina"]["copy_check"] and "gina" in rows["dave"]["copy_check"], rows["gina"]
    assert "copy check: gina" in log
    assert "impls/mutants/_base.py" in rows["alice"]["copy_check"], rows["alice"]
    assert "near-copy of reference/" in rows["eve"]["copy_check"], rows["eve"]
    assert json.loads((out / "eve" / "results.json").read_text())["extra_data"]["similarity"]["flagged"]
    assert not json.loads((out / "bob" / "results.json").read_text())["extra_data"]["similarity"]["flagged"]
    for name in rows:
        doc = results(out / name)
        assert "similar" not in doc["output"].lower() and "copy" not in doc["output"].lower()
    assert json.loads((out / "alice" / "results.json").read_text())["extra_data"]["students"][0]["name"] == "Alice A"
    assert "FLAGGED" in (out / "gina" / "grading.log").read_text()
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
    ('[grading]\ntotal = 100\n[chapters.sdpa]\npoints = 20\n', "points are never rescaled"),
    ('[grading]\nrequired_dtypes = ["float65"]\n[chapters.sdpa]\npoints = 1\n', "required_dtypes must be"),
], ids=["unknown-claim", "bad-visibility", "misspelt-limit", "stale-exclusion", "total-not-the-sum", "bad-dtype"])
def test_a_bad_rubric_is_refused_with_a_reason(rubric, error, tmp_path):
    path = tmp_path / "rubric.toml"
    path.write_text(rubric)
    code, log = grade(str(_correct(tmp_path)), "--out", str(tmp_path / "out"), "--rubric", str(path))
    assert code == 2 and error in log, log[-2000:]
    assert not (tmp_path / "out" / "results.json").exists()


def test_the_gradescope_autograder_script_grades_a_submission(tmp_path):
    """run_autograder, with Gradescope's folders under a temporary root, writes results/results.json."""
    template = ROOT / "grader" / "gradescope"
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


def test_setup_installs_with_the_constraints():
    setup = (ROOT / "grader" / "gradescope" / "setup.sh").read_text()
    installs = [ln for ln in setup.splitlines() if "pip install" in ln and "--upgrade pip" not in ln]
    assert installs and all("-c constraints.txt" in ln for ln in installs), installs


# -- hidden means hidden -------------------------------------------------------------------------

def test_hidden_claims_leave_no_trace_in_what_a_student_sees(tmp_path):
    """LayerNorm and MASK-4 hidden, PREC-3 after the due date: before the due date a student sees the top-level
    output (feedback.md) and the visible tests, and none of them shows a hidden claim's ID, name,
    score or message, the total, or a subtotal or count that includes a hidden claim."""
    sub = write_submission(tmp_path / "attention.py", FLOAT32_SCORES, EPS_OUTSIDE)
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[grading]\ntotal_timeout = 600\n'
                      '[claims."SDPA-1"]\npoints = 1\n[claims."SDPA-3"]\npoints = 1\n'
                      '[claims."LN-1"]\npoints = 1\nvisibility = "hidden"\n'
                      '[claims."LN-6"]\npoints = 1\nvisibility = "hidden"\n'
                      '[claims."PREC-3"]\npoints = 1\nvisibility = "after_due_date"\n'
                      '[claims."MASK-4"]\npoints = 1\nvisibility = "hidden"\n')
    out = tmp_path / "out"
    code, log = grade(str(sub), "--out", str(out), "--rubric", str(rubric))
    assert code == 0, log[-3000:]
    doc = results(out)
    hidden = [t for t in doc["tests"] if t["visibility"] != "visible"]
    assert {t["tags"][1]: t["visibility"] for t in hidden} == {"LN-1": "hidden", "LN-6": "hidden",
                                                               "PREC-3": "after_due_date", "MASK-4": "hidden"}
    assert all(t["score"] < t["max_score"] for t in hidden if t["tags"][1] != "MASK-4"), \
        "the leak check needs hidden claims that fail"
    # a hidden claim that passes (float32 scores are charged to PREC-3 only), so the total is not what is visible
    assert [t["score"] for t in hidden if t["tags"][1] == "MASK-4"] == [1.0]
    assert doc["visibility"] == "hidden", "with hidden tests the results as a whole are hidden by default"
    seen = [doc["output"], (out / "feedback.md").read_text()]
    for t in doc["tests"]:
        if t["visibility"] == "visible":
            seen += [t["name"], t["output"], str(t["score"])]
    text = "\n".join(seen)
    from spec_tests.harness import claims as catalogue
    for t in hidden:
        claim = catalogue.get(t["tags"][1])
        for trace in (claim.id, claim.summary, claim.statement[:40], claim.doc):
            assert trace not in text, f"{trace!r} of hidden {claim.id} is visible:\n{text}"
    assert "layer_norm" not in text and "LayerNorm" not in text, text  # the hidden chapter, its function
    assert "Score" not in doc["output"] and "/ 5.00" not in text and f"{doc['score']:.2f}" not in doc["output"]
    visible_counts = re.findall(r"(\d+) (?:passed|failed|partly passed)", doc["output"])
    assert sum(map(int, visible_counts)) <= 2, doc["output"]  # counts of the two visible claims only
    assert "SDPA-1" in doc["output"], "the visible claims are still described"


# -- the rubric decides what is graded ----------------------------------------------------------

def test_declaring_fewer_dtypes_never_raises_the_grade(tmp_path):
    """A float32-internal submission: declaring DTYPES = ("float32",) must not lift it past the
    grade it gets declaring both, when the rubric requires float64 and float32."""
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[grading]\ntotal_timeout = 600\nrequired_dtypes = ["float64", "float32"]\n'
                      '[claims."SDPA-1"]\npoints = 1\n[claims."MHA-5"]\npoints = 1\n[claims."PREC-3"]\npoints = 1\n')
    scores = {}
    for dtypes in (("float64", "float32"), ("float32",)):
        out = tmp_path / "-".join(dtypes)
        sub = write_submission(tmp_path / f"{'_'.join(dtypes)}.py", FLOAT32_SCORES, dtypes=dtypes)
        code, log = grade(str(sub), "--out", str(out), "--rubric", str(rubric))
        assert code == 0, log[-3000:]
        doc = results(out)
        scores[dtypes] = doc["score"]
        if dtypes == ("float32",):
            assert doc["extra_data"]["missing_dtypes"] == ["float64"]
            assert "leaves out float64, which the rubric requires" in doc["output"]
            assert "add \"float64\" to DTYPES" in doc["output"]
    assert scores[("float32",)] <= scores[("float64", "float32")] < 3, scores


# -- uploads as students make them ---------------------------------------------------------------

def _layout(root, files: dict[str, str]):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


HELPER_SPLIT = {  # the implementation in two files, neither named attention.py, one importing the other
    "hw3/my_attention.py": "from .softmax_utils import stable_softmax  # noqa: F401\n" + INDEPENDENT,
    "hw3/softmax_utils.py": "import numpy\n\n\ndef stable_softmax(x):\n"
                            "    e = numpy.exp(x - x.max(axis=-1, keepdims=True))\n    return e / e.sum(axis=-1, keepdims=True)\n",
    "hw3/test_mine.py": "from my_attention import *\n\n\ndef test_sdpa():\n    scaled_dot_product_attention\n"
                        "\n\ndef scaled_dot_product_attention(q, k, v):\n    pass\n",
    "__MACOSX/hw3/._my_attention.py": "binary junk",
}


@pytest.mark.parametrize("layout, graded", [
    ({"lab3_final_v2.py": INDEPENDENT}, "lab3_final_v2.py"),
    ({"attention.py": INDEPENDENT, "notes.py": "# notes\n"}, "attention.py"),
    ({"model.py": INDEPENDENT, "helpers.py": "import numpy\n"}, "model.py"),
    (HELPER_SPLIT, "hw3/my_attention.py"),
    ({"a/b/deep.py": INDEPENDENT, "a/test_deep.py": INDEPENDENT}, "a/b/deep.py"),
], ids=["any-name", "folder", "two-files", "helpers-tests-and-junk", "nested-and-a-test-file"])
def test_the_grader_finds_the_module_that_defines_the_contract(layout, graded, tmp_path):
    folder = _layout(tmp_path / "upload", layout)
    for work in ("work", "work2"):
        (tmp_path / work).mkdir()
    staged = uploads.stage(folder if len(layout) > 1 else folder / graded, tmp_path / "work")
    assert staged.shown == graded
    # the same upload as a zip holding a folder
    archive = tmp_path / "upload.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for rel, text in layout.items():
            zf.writestr(f"submission/{rel}", text)
        zf.writestr("../escape.py", "print('never written')")
    staged = uploads.stage(archive, tmp_path / "work2")
    assert staged.shown == f"submission/{graded}"
    assert not (tmp_path / "escape.py").exists()


def test_an_upload_with_nothing_to_grade_says_what_it_holds(tmp_path):
    folder = _layout(tmp_path / "upload", {"readme.txt": "hi", "a.py": "x = 1\n", "b.py": "y = 2\n"})
    (tmp_path / "work").mkdir()
    with pytest.raises(uploads.SubmissionError, match="no file of the upload defines a function of the contract"):
        uploads.stage(folder, tmp_path / "work")


def test_a_zip_of_a_folder_with_relative_imports_is_graded_with_gradescope_metadata(tmp_path):
    """A zip as Gradescope unpacks it (/autograder/submission/hw3/...): the grader finds
    hw3/my_attention.py, imports it with its helper, says which file it graded, and reads
    submission_metadata.json into results.json and grading.log."""
    root = tmp_path / "autograder"
    _layout(root / "submission", HELPER_SPLIT)
    (root / "submission_metadata.json").write_text(json.dumps({
        "id": 123456, "created_at": "2026-03-01T12:00:00-08:00", "assignment": {"title": "Attention"},
        "users": [{"email": "ada@example.org", "id": 42, "name": "Ada L"}]}))
    out = tmp_path / "out"
    code, log = grade(str(root / "submission"), "--out", str(out), "--rubric", _rubric(tmp_path, "SDPA-1", "MASK-2"))
    assert code == 0, log[-3000:]
    doc = results(out)
    assert doc["score"] == 2, doc["output"]
    assert "Graded `hw3/my_attention.py`" in doc["output"]
    assert doc["extra_data"]["students"] == [{"name": "Ada L", "email": "ada@example.org", "id": 42}]
    assert doc["extra_data"]["submission_id"] == 123456
    assert "ada@example.org" in (out / "grading.log").read_text()
    assert "ada@example.org" not in doc["output"]


# -- feedback a student reads to the end ----------------------------------------------------------

def test_one_bug_is_one_cause_with_its_claims_and_values(tmp_path):
    sub = write_submission(tmp_path / "attention.py", FLOAT32_SCORES)
    out = tmp_path / "out"
    code, log = grade(str(sub), "--out", str(out),
                      "--rubric", _rubric(tmp_path, "SDPA-1", "SDPA-2", "MHA-5", "MASK-3", "PREC-3"))
    assert code == 0, log[-3000:]
    feedback = (out / "feedback.md").read_text()
    causes = re.findall(r"^### \d+\. (.+)$", feedback, re.M)
    assert causes == ["Float64 results are right to about 8 digits only"], causes
    section = feedback.split("### 1.")[1].split("## By chapter")[0]
    # a float32 step inside float64 is charged once, to PREC-3; the other claims judge it at float32 and hold
    assert "PREC-3" in section, section
    assert not any(c in section for c in ("SDPA-1", "SDPA-2", "MASK-3", "MHA-5")), section
    assert "cast to float32" in section  # the hint for this kind of failure, not a claim's generic one
    assert "expected: [[" in section and "seen:     [[" in section, "the values expected and seen are shown"
    for word in ("seed", "mutant", "oracle"):
        assert not re.search(rf"\b{word}s?\b", feedback, re.I), f"internal word {word!r} in:\n{feedback}"
    assert len(feedback) < 6000, len(feedback)


# -- copies flagged --------------------------------------------------------------------------------

def test_a_paste_of_the_public_code_is_flagged_and_an_independent_file_is_not():
    pasted = "\n".join(p.read_text() for p in sorted((ROOT / "reference").glob("*.py")))
    pasted += (ROOT / "impls" / "numpy_fast.py").read_text()
    copy, own = similarity.report("copy", pasted), similarity.report("own", INDEPENDENT)
    assert copy["flagged"] and copy["public"][0]["share"] >= 0.9, copy
    assert not own["flagged"] and own["public"][0]["share"] < similarity.THRESHOLD / 2, own
    # renaming every identifier and rewriting comments does not hide a copy
    renamed = re.sub(r"\b(q|k|v|mask|scores|weights)\b", lambda m: m.group(1).upper() + "_x", pasted)
    renamed = re.sub(r"#.*", "# mine", renamed)
    assert similarity.report("renamed", renamed)["flagged"]
    # the template students start from matches nothing
    template = (ROOT / "impls" / "template.py").read_text()
    assert similarity.report("template", template)["public"][0]["share"] == 0
