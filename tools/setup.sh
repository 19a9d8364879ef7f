#!/usr/bin/env bash
# One-time set-up on a fresh machine (safe to re-run): a virtualenv in .venv with the pinned
# CPU build of torch, the package in editable mode, and the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# torch first and pinned: an unpinned torch would pull a multi-GB CUDA build
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[runtime,dev]"
