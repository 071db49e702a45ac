#!/usr/bin/env bash
# The package as a learner installs it: build the wheel, install it alone in a clean NumPy-only venv
# (no torch, no repository on the path), and check a learner's files from a temporary folder:
# a correct file exits 0, a buggy one non-zero, with `mha-spec check`, `pytest --pyargs` and a notebook.
set -euo pipefail
repo=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python -c "import nbformat" 2>/dev/null || pip install -q -c constraints.txt nbformat  # writes the test notebook
rm -rf build  # a stale build/lib would put old copies of the packages in the wheel
pip wheel . --no-deps --no-build-isolation -q -w "$work/wheel"
python -m venv "$work/venv"
"$work/venv/bin/pip" install -q -c constraints.txt "$work"/wheel/mha_spec-*.whl 2>&1 | grep -v "^WARNING: Location" || true
"$work/venv/bin/python" -c "import spec_tests" >/dev/null  # the install worked
if "$work/venv/bin/python" -c "import torch" 2>/dev/null; then echo "torch is installed in the NumPy-only venv" >&2; exit 1; fi

mkdir "$work/learner"
# A correct, self-contained NumPy file (the known bugs' base without its rewiring helper), and the same
# file with LayerNorm's eps outside the square root.
python - "$work/learner" <<'PY'
import sys
from pathlib import Path
import nbformat
text = Path("impls/mutants/_base.py").read_text()
good = text[:text.index("def rewire(")]
bug = '''

def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mean) / (np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True)) + eps) + beta
'''
out = Path(sys.argv[1])
(out / "mine.py").write_text(good)
(out / "buggy.py").write_text(good + bug)
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell("%matplotlib inline"), nbformat.v4.new_code_cell(good)]
nbformat.write(nb, str(out / "hw.ipynb"))
PY

cd "$work/learner"
export PATH="$work/venv/bin:$PATH"
unset PYTHONPATH
expect() {  # expect WANT COMMAND...: WANT is 0 or "fail"
  local want=$1; shift
  set +e; "$@" -q -p no:cacheprovider > run.log 2>&1; local rc=$?; set -e
  tail -n 2 run.log
  if [ "$want" = 0 ] && [ "$rc" != 0 ]; then echo "expected exit 0 from: $*" >&2; tail -n 40 run.log >&2; exit 1; fi
  if [ "$want" = fail ] && { [ "$rc" != 1 ] || ! grep -q "LN-1 does not hold" run.log; }; then
    echo "expected LN-1 to fail (exit 1) from: $* (exit $rc)" >&2; tail -n 40 run.log >&2; exit 1; fi
}
expect 0 mha-spec check mine.py
expect fail mha-spec check buggy.py --chapter layer_norm
expect 0 pytest --pyargs spec_tests --impl mine.py --chapter sdpa,layer_norm
expect fail pytest --pyargs spec_tests --impl buggy.py --chapter layer_norm
expect 0 python -m spec_tests check hw.ipynb --chapter layer_norm
grep -q "selected" run.log
# pytest's cache (--lf) goes to the learner's folder, never into site-packages
site=$(python -c "import spec_tests, pathlib; print(pathlib.Path(spec_tests.__file__).parents[1])")
pytest --pyargs spec_tests --impl mine.py --claim LN-1 -q > run.log 2>&1 || { tail -n 40 run.log >&2; exit 1; }
mha-spec check mine.py --claim LN-1 -q > run.log 2>&1 || { tail -n 40 run.log >&2; exit 1; }
if [ -e "$site/.pytest_cache" ] || [ ! -d .pytest_cache ]; then echo "pytest's cache is not in the learner's folder" >&2; exit 1; fi
# One top-level name in site-packages (reference/, impls/, grader/, adapters/ are inside spec_tests/bundled/), and
# a plain Python of the venv does not see them; grading works from the installed package.
tops=$(python - <<'PY'
import importlib.metadata as m
files = m.distribution("mha-spec").files
print(" ".join(sorted({f.parts[0] for f in files if not f.parts[0].endswith(".dist-info") and f.parts[0] != ".." and len(f.parts) > 1})))
PY
)
if [ "$tops" != "spec_tests" ]; then echo "the wheel installs top-level names: $tops (want spec_tests only)" >&2; exit 1; fi
if python -c "import reference" 2>/dev/null; then echo "the wheel's reference is importable without spec_tests" >&2; exit 1; fi
python -m spec_tests.grade mine.py --out graded > grade.log 2>&1 || { tail -n 40 grade.log >&2; exit 1; }
grep -q '"score": 100' graded/results.json || { echo "the installed grader did not give full marks" >&2; tail -n 20 grade.log >&2; exit 1; }
echo "installed package: correct file, buggy file and notebook checked as expected; one top-level name; graded"
