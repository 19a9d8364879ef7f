"""Client frameworks on the simulated npu equal the same run on the CPU, bit for bit.

Each scenario is a script in scripts/ run twice, at the same time: under ``python -m runtime_shim``
(the client finds torch_npu and trains on the npu) and plainly on the CPU. The clients are the
``clients`` extra (pinned in pyproject.toml, installed by tools/setup.sh).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HERE, ROOT, child_environment
from test_distributed import _free_port

SCRIPTS = HERE / "scripts"


def _run_pair(
    script: str, tmp_path: Path, *extra: str, timeout: int = 600, port: bool = False
) -> tuple[Path, Path]:
    """Run ``script`` on the npu and on the CPU in parallel; return their output folders.

    ``port``: each run gets a free port of its own as its last argument (multi-process scripts).
    """
    env = child_environment()
    env.update(
        PYTHONPATH=str(ROOT),
        RUNTIME_SHIM_OPCHECK="off",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HOME=str(tmp_path / "hf"),
        TOKENIZERS_PARALLELISM="false",
    )
    runs = {}
    for mode in ("npu", "cpu"):
        out = tmp_path / mode
        out.mkdir()
        prefix = ["-m", "runtime_shim"] if mode == "npu" else []
        runs[mode] = (
            out,
            subprocess.Popen(
                [
                    sys.executable,
                    *prefix,
                    str(SCRIPTS / script),
                    mode,
                    str(out),
                    *extra,
                    *([str(_free_port())] if port else []),
                ],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
    for mode, (_, proc) in runs.items():
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError(f"{script} on {mode} timed out") from None
        assert proc.returncode == 0, f"{script} on {mode}:\n{stderr[-4000:]}"
    return runs["npu"][0], runs["cpu"][0]


@pytest.mark.slow
def test_transformers_trainer_gpt2_llama_bert(tmp_path):
    pytest.importorskip("transformers")
    npu_dir, cpu_dir = _run_pair("client_transformers.py", tmp_path)
    npu = json.loads((npu_dir / "result.json").read_text())
    cpu = json.loads((cpu_dir / "result.json").read_text())
    assert sorted(npu) == ["bert", "gpt2", "llama"]
    for kind in npu:
        assert npu[kind].pop("device") == "npu:0" and cpu[kind].pop("device") == "cpu"
        assert npu[kind] == cpu[kind], kind
        assert len(npu[kind]["losses"]) == 4
        # resuming from checkpoint-2 ends where the uninterrupted run ended
        assert npu[kind]["resumed"] == npu[kind]["final"], kind
    for kind in ("gpt2", "llama"):
        assert npu[kind]["reloaded"] is True and len(npu[kind]["generate"][0]) == 9


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["no", "bf16", "fp16"])
def test_accelerate_prepare_with_the_optimizer_built_first(tmp_path, precision):
    pytest.importorskip("accelerate")
    npu_dir, cpu_dir = _run_pair("client_accelerate.py", tmp_path, precision)
    npu = json.loads((npu_dir / f"result-{precision}.json").read_text())
    cpu = json.loads((cpu_dir / f"result-{precision}.json").read_text())
    assert npu.pop("device").startswith("npu") and cpu.pop("device") == "cpu"
    assert npu == cpu
    assert npu["first"] != npu["second"]  # the prepared optimizer steps the prepared model
    assert npu["again"] == npu["second"] and npu["resumed_equal"] is True


@pytest.mark.slow
def test_peft_lora_train_save_reload_merge(tmp_path):
    pytest.importorskip("peft")
    npu_dir, cpu_dir = _run_pair("client_peft.py", tmp_path)
    npu = json.loads((npu_dir / "result.json").read_text())
    cpu = json.loads((cpu_dir / "result.json").read_text())
    assert npu.pop("device") == "npu:0" and cpu.pop("device") == "cpu"
    assert npu == cpu
    assert npu["losses"][0] != npu["losses"][-1]


@pytest.mark.slow
def test_lightning_with_a_custom_npu_accelerator(tmp_path):
    pytest.importorskip("lightning")
    npu_dir, cpu_dir = _run_pair("client_lightning.py", tmp_path)
    npu = json.loads((npu_dir / "result.json").read_text())
    cpu = json.loads((cpu_dir / "result.json").read_text())
    assert npu.pop("device") == "npu:0" and cpu.pop("device") == "cpu"
    assert npu == cpu
    assert len(npu["losses"]) == 8


@pytest.mark.slow
def test_accelerate_two_processes_gather_reduce_pad(tmp_path):
    pytest.importorskip("accelerate")
    npu_dir, cpu_dir = _run_pair("client_accelerate_ddp.py", tmp_path, port=True)
    for rank in (0, 1):
        npu = json.loads((npu_dir / f"result.{rank}.json").read_text())
        cpu = json.loads((cpu_dir / f"result.{rank}.json").read_text())
        assert (npu.pop("device"), npu.pop("backend")) == (f"npu:{rank}", "hccl")
        assert cpu.pop("backend") == "gloo" and cpu.pop("device").startswith("cpu")
        assert npu == cpu
        assert npu["gather"] == [0, 10, 1, 11] and npu["reduce_sum"] == [2.0, 1.0]
        assert npu["padded"] == [0.0, 1.0, 2.0][: rank + 2] + [0.0] * (1 - rank)
