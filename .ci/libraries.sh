#!/usr/bin/env bash
# The libraries page (docs/libraries.md): install the adapters' libraries, run the spec against every
# adapter (adapters/) with fewer examples per test, probe the questions, render the page into
# .artifacts/libraries/, and fail when the committed page is stale (not the render of the committed
# run, or answering a question otherwise than the installed libraries at the committed versions do).
set -euo pipefail
python -m pip install -q -e ".[libraries]" -c constraints.txt
python -m docs_gen.libraries run --out .artifacts/libraries --examples "${MHA_SPEC_LIBRARY_EXAMPLES:-10}"
python -m docs_gen.libraries --check
