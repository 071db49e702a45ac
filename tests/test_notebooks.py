"""A Jupyter notebook as an implementation: checked (`python -m spec_tests check hw.ipynb`), graded
(`python -m spec_tests.grade hw.ipynb`), and checking itself from inside (`check(globals(), ...)`).

The notebooks are written with nbformat as a learner's would be: a Markdown cell, a cell with an
IPython magic and a shell line, the functions, a demo cell, the in-notebook check cell.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from spec_tests.harness import notebook
from tests.grading_helpers import EPS_OUTSIDE, correct_source, grade, results

V4 = nbformat.v4
DEMO = "q = np.ones((1, 2, 4))\nprint('demo:', scaled_dot_product_attention(q, q, q).shape)"
CHECK_CELL = 'from spec_tests import check\ncheck(globals(), chapter="layer_norm")'


def write_notebook(path: Path, *code: str) -> Path:
    nb = V4.new_notebook()
    nb.cells = [V4.new_markdown_cell("# Homework: attention"),
                V4.new_code_cell("%matplotlib inline\n!pip install numpy\nimport numpy as np"),
                *[V4.new_code_cell(c) for c in code]]
    nbformat.write(nb, str(path))
    return path


def learner_notebook(path: Path, *patches: str) -> Path:
    """Cells: Markdown (1), magics (2), the correct functions (3), the demo (4), patches (5...), check."""
    return write_notebook(path, correct_source(), DEMO, *patches, CHECK_CELL)


def env(**extra) -> dict:
    out = {k: v for k, v in os.environ.items() if k not in ("MHA_SPEC_IMPL",)}
    out.update(extra)
    return out


def spec_check(tmp_path: Path, target: str, *args: str, **extra_env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spec_tests", "check", target, "-p", "no:cacheprovider", *args],
                          cwd=tmp_path, env=env(**extra_env), capture_output=True, text=True, timeout=600)


def test_correct_notebook_is_checked_green(tmp_path):
    learner_notebook(tmp_path / "hw.ipynb")
    proc = spec_check(tmp_path, "hw.ipynb", "--chapter", "sdpa,masks,layer_norm")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "cell 2 (`%matplotlib inline`): skipped 2 IPython line(s)" in out, out[:3000]
    assert "check(): skipped while this notebook is itself being checked" in out  # no run inside the run
    assert "demo: (1, 2, 4)" in out


def test_known_bug_in_a_cell_fails_its_claim_naming_the_cell(tmp_path):
    learner_notebook(tmp_path / "hw.ipynb", EPS_OUTSIDE)
    proc = spec_check(tmp_path, "hw.ipynb", "--chapter", "layer_norm")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "LN-1 does not hold" in out, out[-3000:]
    assert "layer_norm is defined in cell 5 (`def layer_norm(x, gamma, beta, eps=1e-5):`)" in out, out[-3000:]


def test_a_cell_past_its_time_limit_is_stopped_and_the_next_cells_run(tmp_path):
    write_notebook(tmp_path / "hw.ipynb", correct_source(), "step = 0\nwhile True:\n    step += 1",
                   "LATE = 1\n1 / 0", "AFTER = 2")
    proc = spec_check(tmp_path, "hw.ipynb", "--claim", "LN-1", MHA_SPEC_CELL_SECONDS="0.5")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "cell 4 (`step = 0`) was stopped after 0.5 s of CPU time, the limit per cell" in out, out[:3000]
    assert "cell 5 (`LATE = 1`) raised ZeroDivisionError at line 2" in out, out[:3000]


def test_check_from_inside_the_notebook(tmp_path):
    """The check cell, run as a kernel runs it: every cell in one namespace, in a fresh interpreter."""
    path = learner_notebook(tmp_path / "hw.ipynb", EPS_OUTSIDE)
    script = ("import sys\nfrom spec_tests.harness import notebook\nns = {'__name__': '__main__'}\n"
              "for cell in notebook.code_cells(sys.argv[1]):\n"
              "    exec(compile(notebook.python_only(cell)[0], f'cell {cell.number}', 'exec'), ns)\n")
    proc = subprocess.run([sys.executable, "-c", script, str(path)], cwd=tmp_path, env=env(),
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert "claims by implementation" in out and "your_notebook" in out, out[-3000:]
    assert "LN-1 does not hold" in out and "LN-2" in out, out[-3000:]


def test_check_needs_a_namespace_with_a_backend():
    with pytest.raises(ValueError, match="BACKEND"):
        notebook.check({"layer_norm": None}, chapter="layer_norm")
    with pytest.raises(ValueError, match="globals"):
        notebook.check("layer_norm")


def test_ipython_lines_are_skipped_keeping_line_numbers():
    code, skipped = notebook.python_only(notebook.Cell(1, "x = 1\n%time y = 2\n  !ls\nfiles = !ls\nz = 3"))
    assert code.splitlines() == ["x = 1", "pass", "  pass", "pass", "z = 3"]
    assert skipped == ["%time y = 2", "!ls", "files = !ls"]
    assert notebook.python_only(notebook.Cell(2, "%%bash\necho hi")) == ("", ["%%bash"])


def test_not_a_notebook_is_a_clear_error(tmp_path):
    (tmp_path / "hw.ipynb").write_text("{not json")
    with pytest.raises(ValueError, match="not a Jupyter notebook"):
        notebook.code_cells(tmp_path / "hw.ipynb")


def test_correct_notebook_grades_to_full_marks(tmp_path):
    path = learner_notebook(tmp_path / "hw.ipynb")
    code, log = grade(str(path), "--out", str(tmp_path / "out"))
    assert code == 0, log[-3000:]
    doc = results(tmp_path / "out")
    full = sum(t["max_score"] for t in doc["tests"])
    assert doc["score"] == pytest.approx(full), log[-3000:]
    assert "Graded `hw.ipynb`" in doc["output"]


def test_the_rubric_sets_the_time_of_a_cell_in_the_grader(tmp_path):
    """[limits] cell_seconds reaches the grading worker: a demo cell that loops stops there, the rest is graded."""
    write_notebook(tmp_path / "hw.ipynb", correct_source(), "step = 0\nwhile True:\n    step += 1")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[grading]\ntotal = 10\n[claims."LN-1"]\npoints = 10\n[limits]\ncell_seconds = 0.5\n')
    code, log = grade(str(tmp_path / "hw.ipynb"), "--out", str(tmp_path / "out"), "--rubric", str(rubric))
    assert code == 0, log[-3000:]
    doc = results(tmp_path / "out")
    assert doc["score"] == pytest.approx(10), log[-3000:]
    assert "was stopped after 0.5 s of CPU time, the limit per cell" in doc["output"], doc["output"][:3000]



# -- every chapter as a notebook (docs_gen/notebooks.py, docs/notebooks/<chapter>.ipynb) ----------------------

# A kernel's "Run all", in a fresh interpreter: every code cell in one namespace, IPython-only lines
# skipped, the value of a cell's last expression kept in `_` (IPython's displayhook); exits with it.
RUN_ALL = """
import ast, sys
from spec_tests.harness import notebook
ns = {"__name__": "__main__"}
for cell in notebook.code_cells(sys.argv[1]):
    tree = ast.parse(notebook.python_only(cell)[0])
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tree.body[-1] = ast.Assign([ast.Name("_", ast.Store())], tree.body[-1].value, lineno=0)
    exec(compile(ast.fix_missing_locations(tree), f"cell {cell.number}", "exec"), ns)
sys.exit(int(ns.get("_")))
"""


def chapter_ids() -> list[str]:
    from docs_gen import notebooks

    return sorted(p.stem for p in notebooks.outputs() if p.suffix == ".ipynb")


def filled(chapter: str, code: str, target: Path) -> Path:
    """The chapter's notebook with its implementation cell (the template's stubs) replaced by `code`."""
    from docs_gen import notebooks

    nb = nbformat.read(str(notebooks.path_of(chapter)), as_version=4)
    cells = [c for c in nb.cells if notebooks.STUB_TAG in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"{chapter}.ipynb has {len(cells)} implementation cells"
    cells[0].source = code
    nbformat.write(nb, str(target))
    return target


def run_all(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN_ALL, str(path)], cwd=path.parent, env=env(),
                          capture_output=True, text=True, timeout=600)


def known_bug_of(chapter: str):
    """A NumPy known bug filed under one of the chapter's claims (the first by name), or None."""
    from impls.mutants import catalogue
    from spec_tests.harness import claims

    for bug in sorted(catalogue(), key=lambda b: b.name):
        claim = claims.catalogue().get(bug.caught_by)
        dtypes = set(bug.attributes.get("DTYPES", ("float64", "float32")))
        if claim and claim.chapter == chapter and bug.attributes.get("BACKEND", "numpy") == "numpy" \
                and dtypes <= {"float64", "float32"}:
            return bug
    return None


def test_every_chapter_has_a_notebook():
    from spec_tests.harness import claims

    assert chapter_ids() == sorted(c.id for c in claims.chapters().values() if c.path.is_file())


# A correct implementation each chapter's claims apply to: efficient's are about tiled kernels (block_q, block_k).
CORRECT = {"efficient": "from impls.numpy_chunked import *  # noqa"}


@pytest.mark.parametrize("chapter", chapter_ids())
def test_chapter_notebook_passes_with_a_correct_implementation(chapter, tmp_path):
    proc = run_all(filled(chapter, CORRECT.get(chapter) or correct_source(), tmp_path / f"{chapter}.ipynb"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "claims by implementation" in out and "passed" in out, out[-3000:]


@pytest.mark.parametrize("chapter", chapter_ids())
def test_chapter_notebook_fails_a_known_bug_on_its_claim(chapter, tmp_path):
    bug = known_bug_of(chapter)
    if bug is None:
        pytest.skip(f"no NumPy known bug is filed under a claim of {chapter}")
    proc = run_all(filled(chapter, f"from impls.mutants.{bug.name} import *  # noqa", tmp_path / f"{chapter}.ipynb"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert f"{bug.caught_by} does not hold" in out, f"{bug.name}: {out[-3000:]}"


def test_chapter_notebooks_hold_the_template_stubs_and_the_check_cell():
    from docs_gen import notebooks

    for chapter in chapter_ids():
        nb = nbformat.read(str(notebooks.path_of(chapter)), as_version=4)
        tags = [t for c in nb.cells for t in c.metadata.get("tags", [])]
        assert tags == [notebooks.STUB_TAG, notebooks.CHECK_TAG], chapter
        stub = next(c for c in nb.cells if notebooks.STUB_TAG in c.metadata.get("tags", []))
        assert 'BACKEND = "numpy"' in stub.source and "raise NotImplementedError" in stub.source, chapter
        assert nb.cells[-1].source.endswith(f'check(globals(), chapter="{chapter}")'), chapter


def test_each_chapter_page_offers_its_notebook():
    from docs_gen import DOCS
    from spec_tests.harness import claims

    for chapter in claims.chapters().values():
        link = f"(notebooks/{chapter.id}.ipynb)"
        assert link in (DOCS / chapter.page).read_text(), f"docs/{chapter.page} does not link {link}"
