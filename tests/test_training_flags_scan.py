"""Launch scripts and configs that ask Hugging Face for CUDA-only training flags (TP804, TP805):
reported by line, with twins that stay silent (bf16, tf32 off, torch's optimizers)."""

from __future__ import annotations

import pytest

from ms_fmk_transplt.engine.conversion import scan_text


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "run.sh",
            "torchrun train.py --bf16 True --tf32 True \\\n  --optim paged_adamw_8bit\n",
            ["1 TP804", "2 TP805"],
        ),
        ("run.sh", "python train.py --tf32=true --optim=adamw_bnb_8bit\n", ["1 TP804", "1 TP805"]),
        ("args.yaml", "bf16: true\ntf32: true\noptim: adamw_apex_fused\n", ["2 TP804", "3 TP805"]),
        ("args.json", '{\n  "tf32": true,\n  "optim": "paged_lion_8bit"\n}\n', ["2 TP804", "3 TP805"]),
        # twins: nothing CUDA-only asked
        ("run.sh", "torchrun train.py --bf16 True --tf32 False --optim adamw_torch\n", []),
        ("args.yaml", "tf32: false\noptim: adamw_torch_fused\nbf16: true\n", []),
        ("notes.md", "--tf32 True\n", []),
    ],
)
def test_cuda_only_training_flags_in_scripts(
    builtin_tables, name: str, text: str, expected: list[str]
) -> None:
    found = [
        f"{f.start_line} {f.rule_id}"
        for f in scan_text(name, text.encode(), builtin_tables)
        if f.rule_id in ("TP804", "TP805")
    ]
    assert found == expected
