#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu). It installs
# Python 3.11+ and this suite, with the CPU build of PyTorch, into /autograder/source/.venv, where
# run_autograder expects them. Nothing is fetched later: grading runs without the network.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq python3.11 python3.11-venv > /dev/null
cd /autograder/source
python3.11 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# Every install is pinned by constraints.txt, so the image grades with the versions the suite was
# tested with. PyTorch's CPU wheels (the grader needs no GPU); leave this line out for NumPy-only
# assignments.
.venv/bin/python -m pip install -q torch --index-url https://download.pytorch.org/whl/cpu -c constraints.txt
.venv/bin/python -m pip install -q -e . -c constraints.txt
