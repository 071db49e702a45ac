#!/usr/bin/env bash
# The libraries page (docs/libraries.md): install the adapters' libraries, run the spec against every
# adapter (adapters/) with fewer examples per test, probe the questions, render the page into
# .artifacts/libraries/, and fail when the committed page is stale (not the render of the committed
# run, or answering a question otherwise than the installed libraries at the committed versions do).
set -euo pipefail
# CI installs the extra with everything else in its first stage (a pip install while other stages run
# in the same venv could change what they import): MHA_SPEC_INSTALLED=1 says it is there.
[ "${MHA_SPEC_INSTALLED:-}" = 1 ] || python -m pip install -q -e ".[libraries]" -c constraints.txt
# Measured on the 2-core development machine (shared, loaded), 5 examples per test: 1071 s in all, of which
# FlexAttention (eager on the CPU, ~0.1 s a call) 432 s; MHA_SPEC_LIBRARY_ADAPTERS picks a subset.
python -m docs_gen.libraries run --out .artifacts/libraries --examples "${MHA_SPEC_LIBRARY_EXAMPLES:-5}" \
    --adapters "${MHA_SPEC_LIBRARY_ADAPTERS:-all}"
python -m docs_gen.libraries --check
