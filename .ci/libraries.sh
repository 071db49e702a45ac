#!/usr/bin/env bash
# The libraries page (docs/libraries.md): install the adapters' libraries, run the spec against every
# adapter (adapters/) with fewer examples per test, probe the questions, render the page into
# .artifacts/libraries/, and fail when the committed page is stale (not the render of the committed
# run, or answering a question otherwise than the installed libraries at the committed versions do).
set -euo pipefail
# CI installs the extra with everything else in its first stage (a pip install while other stages run
# in the same venv could change what they import): MHA_SPEC_INSTALLED=1 says it is there.
[ "${MHA_SPEC_INSTALLED:-}" = 1 ] || python -m pip install -q -e ".[libraries]" -c constraints.txt
# Every adapter (adapters/, `all`), 5 examples per test; MHA_SPEC_LIBRARY_ADAPTERS picks a subset. Before the
# adapters' speed-ups this took 1071 s on the 2-core machine (FlexAttention 432 s: its TorchDynamo trace was
# redone per call); each adapter's FULL run now takes 11-39 s of CPU (measured 2026-12-02 under a load of 7-15:
# JAX with an empty compilation cache 39 s, FlexAttention 36 s since its block masks are built once and it
# traces 19 times, was 62-77 s), so CI can run them all; on the shared machine the wall time is a few times the
# CPU time under load, so time it on CI.
python -m docs_gen.libraries run --out .artifacts/libraries --examples "${MHA_SPEC_LIBRARY_EXAMPLES:-5}" \
    --adapters "${MHA_SPEC_LIBRARY_ADAPTERS:-all}"
python -m docs_gen.libraries --check
