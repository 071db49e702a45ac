#!/usr/bin/env bash
# Correct variants (tests/variants/): every generated semantics-preserving rewrite of correct code runs through
# the whole suite under the `thorough` profile, with a modest example count; none may fail a claim.
set -euo pipefail
cd "$(dirname "$0")/.."
export CI=1 MHA_SPEC_VARIANTS=1 MHA_SPEC_VARIANT_EXAMPLES="${MHA_SPEC_VARIANT_EXAMPLES:-5}"
set +e
python -m pytest -p no:cacheprovider -q tests/test_variants.py
status=$?
set -e
if [ "$status" -eq 5 ]; then echo "pytest collected no tests: that is a failure" >&2; exit 1; fi
exit "$status"
