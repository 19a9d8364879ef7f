"""Operator support check against the shipped torch_npu operator lists."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, run_python

from runtime_shim import opcheck
from runtime_shim.device import STATE


def test_shipped_lists_and_provenance_headers():
    assert opcheck.available_releases() == ["2.12.0", "2.7.1", "2.1.0"]
    release = opcheck.load_release()
    assert release.torch == "2.12.0" and release.torch_npu == "26.1.0"
    assert "addmm" in release.ops and "mm" in release.ops
    header = (
        (ROOT / "runtime_shim" / "data" / "npu_ops_torch2.12.0_torchnpu26.1.0.txt")
        .read_text()
        .splitlines()[:5]
    )
    assert any("Ascend/pytorch@fa0f83fe49d3(v26.1.0-pytorch2.12.0)" in line for line in header)
    assert any("aten_ops/npu_aten_ops_torch2.12.0_torchnpu26.1.0.txt" in line for line in header)
    with pytest.raises(ValueError, match=r"RUNTIME_SHIM_RELEASE=9\.9 is not a shipped release"):
        opcheck.load_release("9.9")


def test_derive_script_reproduces_shipped_data(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "derive_runtime_data.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    for path in tmp_path.iterdir():
        assert path.read_text() == (ROOT / "runtime_shim" / "data" / path.name).read_text(), path.name


def test_support_rules():
    release = opcheck.load_release("2.12.0")
    assert opcheck.is_supported("addmm", release)
    assert opcheck.is_supported("_foreach_add_.List", release)  # generic per-tensor kernels
    assert not opcheck.is_supported("no_such_op", release)


def _find_unsupported_op():
    # An op with a CPU kernel that reaches the device but has no NPU kernel listed.
    release = opcheck.load_release()
    for name, fn in (("special_i1", lambda t: torch.special.i1(t)), ("logit", lambda t: torch.logit(t))):
        if not opcheck.is_supported(name, release):
            return name, fn
    pytest.skip("every candidate op is supported by the shipped list")


def test_warn_once_error_mode_and_report(tmp_path):
    name, fn = _find_unsupported_op()
    saved = opcheck.CHECKER
    report = tmp_path / "ops.json"
    try:
        opcheck.configure(mode="warn", report=str(report))
        opcheck.reset_counts()
        x = torch.rand(4, device="npu")
        with pytest.warns(
            UserWarning,
            match=rf"The operator 'aten::{name}' is not currently supported on the NPU backend and will fall back to run on the CPU",
        ):
            fn(x)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fn(x)  # warned once only
        opcheck.CHECKER.write_report()
        rows = {r["op"]: r for r in json.loads(report.read_text())["ops"]}
        assert rows[name]["count"] == 2 and rows[name]["supported"] is False
        assert rows[name]["first_call_site"].startswith(__file__)
        opcheck.configure(mode="error")
        opcheck.reset_counts()
        for _ in range(2):  # refused every time, not only the first
            with pytest.raises(opcheck.NpuOperatorNotSupported, match=rf"aten::{name}"):
                fn(x)
        (x * 2).sum()
        opcheck.CHECKER.report = str(tmp_path / "ops.csv")
        opcheck.CHECKER.write_report()
        rows = list(csv.DictReader(open(tmp_path / "ops.csv")))
        assert rows and rows[0].keys() == {"op", "count", "supported", "first_call_site"}
        assert {"mul.Tensor", "sum.dim_IntList"} <= {r["op"] for r in rows}
    finally:
        opcheck.CHECKER = saved
        STATE.on_first_call = saved.first_call if saved else None


@pytest.mark.slow
def test_env_configuration_and_exit_report(tmp_path):
    report = tmp_path / "report.csv"
    code = "import torch, torch_npu\nx = torch.rand(4, device='npu')\n(x * 2).sum().item()\n"
    script = tmp_path / "s.py"
    script.write_text(code)
    proc = run_python(
        ["-m", "runtime_shim", str(script)],
        env_extra={
            "RUNTIME_SHIM_OPCHECK": "warn",
            "RUNTIME_SHIM_OPCHECK_REPORT": str(report),
            "RUNTIME_SHIM_RELEASE": "2.7.1",
        },
    )
    assert proc.returncode == 0, proc.stderr
    rows = {r["op"]: r for r in csv.DictReader(report.open())}
    assert rows["mul.Tensor"]["supported"] == "True"
    assert rows["mul.Tensor"]["first_call_site"] == f"{script}:3"
    proc = run_python(
        [
            "-c",
            "import runtime_shim, os; runtime_shim.activate(); from runtime_shim import opcheck; print(opcheck.CHECKER.mode)",
        ],
        env_extra={"TORCH_NPU_FALLBACK_CPU_DISABLE": "1"},
    )
    assert proc.stdout.strip() == "error", proc.stderr


def test_structured_ops_follow_their_out_kernel() -> None:
    """torch_npu lists gelu.out and isneginf.out only; their functional/in-place forms run too."""
    from runtime_shim import opcheck

    release = opcheck.load_release("2.12.0")
    for op in ("gelu", "gelu_", "gelu.default", "isneginf", "silu_", "add.Tensor", "add_.Tensor"):
        assert opcheck.is_supported(op, release), op
    for op in ("cholesky_inverse", "cholesky_inverse.default", "linalg_lstsq"):
        assert not opcheck.is_supported(op, release), op
