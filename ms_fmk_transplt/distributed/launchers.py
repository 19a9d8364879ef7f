"""The launcher the distributed mode writes beside the converted project."""

from __future__ import annotations

import shlex

SCRIPT = """\
#!/usr/bin/env bash
# Written by ms_fmk_transplt distributed: trains {main} on the NPUs of this machine, one process
# per NPU, started by torchrun (which sets RANK, LOCAL_RANK and WORLD_SIZE for each process).
#   bash run_distributed_npu.sh [script arguments]
#   NPUS=2 bash run_distributed_npu.sh --epochs 1                 # two NPUs
#   NNODES=2 NODE_RANK=0 MASTER_ADDR=10.0.0.1 bash run_distributed_npu.sh   # first of two machines
#   SIMULATED=1 NPUS=2 bash run_distributed_npu.sh                # no NPU: the simulated one (runtime_shim)
set -euo pipefail
cd "$(dirname "$0")"
NPUS=${{NPUS:-8}}
NNODES=${{NNODES:-1}}
NODE_RANK=${{NODE_RANK:-0}}
MASTER_ADDR=${{MASTER_ADDR:-127.0.0.1}}
MASTER_PORT=${{MASTER_PORT:-29500}}
SHIM=()
if [ "${{SIMULATED:-0}}" = 1 ]; then SHIM=(-m runtime_shim); fi
exec torchrun --nnodes "$NNODES" --node-rank "$NODE_RANK" --nproc-per-node "$NPUS" \\
    --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" "${{SHIM[@]}}" {main_quoted} "$@"
"""


def launcher(main: str) -> bytes:
    """run_distributed_npu.sh for the main script `main` (relative to the project root)."""
    return SCRIPT.format(main=main, main_quoted=shlex.quote(main)).encode()
