#!/usr/bin/env bash
# Generated mutants, reduced form (tests/mutation/, docs/validation.md): a fixed, deterministic sample of
# cosmic-ray's mutants of numpy_fast and torch_naive (every 96th in cosmic-ray's order, plus every mutant a new
# test closed) runs through the chapters that concern it in the `ci` profile; a sampled mutant that survives and
# is neither listed in tests/mutation/equivalent.toml nor an open survivor of docs/validation.md fails the stage
# (a ratchet). Then the report's meta test.
set -euo pipefail
cd "$(dirname "$0")/.."
export CI=1
python -m pip install -q -c constraints.txt "cosmic-ray==8.7.0"
python -m tests.mutation.run --check --targets numpy_fast,torch_naive --sample "${MHA_SPEC_MUTATION_EVERY:-96}" --jobs 2
set +e
python -m pytest -p no:cacheprovider -q tests/test_mutation.py
status=$?
set -e
if [ "$status" -eq 5 ]; then echo "pytest collected no tests: that is a failure" >&2; exit 1; fi
exit "$status"
