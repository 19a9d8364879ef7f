#!/usr/bin/env bash
# One-time set-up on a fresh machine (safe to re-run): a virtualenv in .venv with the pinned
# CPU build of torch, the package in editable mode, and the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# torch first and pinned: an unpinned torch would pull a multi-GB CUDA build
TORCH_PIN="2.13.0"
.venv/bin/python -m pip install -q "torch==$TORCH_PIN"
# Every later install takes the torch pin as a constraint: a client (timm 1.0.31 did) may
# otherwise replace the CPU torch with a CUDA build of another version.
CONSTRAINTS=$(mktemp)
trap 'rm -f "$CONSTRAINTS"' EXIT
echo "torch==$TORCH_PIN" >"$CONSTRAINTS"
.venv/bin/python -m pip install -q -c "$CONSTRAINTS" -e ".[runtime,dev,clients]"
installed=$(.venv/bin/python -c "import torch; print(torch.__version__.split('+')[0])")
if [ "$installed" != "$TORCH_PIN" ]; then
    echo "tools/setup.sh: torch is $installed after installing the clients, not $TORCH_PIN" >&2
    exit 1
fi
# The simulated npu's native part (pinned memory, npu generators, the native kernels), built once per torch install;
# without a compiler the runtime takes its Python path and says so.
.venv/bin/python -m runtime_shim.backend.native || echo "tools/setup.sh: runtime_shim's native part not built (see above)" >&2
