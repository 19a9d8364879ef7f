"""Autocast for the simulated npu, following PyTorch's CPU autocast policy.

PyTorch registers autocast kernels for CPU, CUDA, XPU, MPS... but not for
PrivateUse1, so without this ``torch.autocast("npu")`` fails on the first op.
Python kernels on the AutocastPrivateUse1 key apply the CPU policy (the op
categories below are those of PyTorch's ``AutocastCPU`` registrations), every
other op falls through:
this is what makes an autocast script give on the simulated npu exactly what it
gives under ``torch.autocast("cpu")``, which is the parity the shim promises.
It is deliberately not the CUDA/NPU policy (which also lowers e.g. softmax
inputs differently); the simulated device computes what the host would.

* lower precision: floating (non-double) npu inputs are cast to the autocast
  dtype, then the op runs with autocast off;
* fp32: such inputs are cast to float32, then the op runs with autocast off;
* promote: inputs are cast to the widest floating type among them;
* anything else falls through in C++ (its decomposition may hit autocast again).

Unlike the C++ kernels, casts of parameters are not cached per autocast
region; values are identical, the cast is only repeated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._C import DispatchKey

from runtime_shim.backend import libraries

_KEY = DispatchKey.AutocastPrivateUse1  # type: ignore[attr-defined]  # in the C enum, not in its stubs

LOWER_PRECISION = frozenset(
    [
        "conv1d",
        "conv1d.padding",
        "conv2d",
        "conv2d.padding",
        "conv3d",
        "conv3d.padding",
        "bmm",
        "mm",
        "linalg_vecdot",
        "baddbmm",
        "addmm",
        "addbmm",
        "linear",
        "_convolution.deprecated",
        "matmul",
        "conv_tbc",
        "mkldnn_rnn_layer",
        "conv_transpose1d",
        "conv_transpose2d.input",
        "conv_transpose3d.input",
        "prelu",
        "scaled_dot_product_attention",
        "_native_multi_head_attention",
    ]
)

FP32 = frozenset(
    [
        "avg_pool3d",
        "binary_cross_entropy",
        "grid_sampler",
        "polar",
        "prod",
        "prod.dim_int",
        "prod.dim_Dimname",
        "quantile",
        "quantile.scalar",
        "nanquantile",
        "nanquantile.scalar",
        "stft",
        "stft.center",
        "cdist",
        "grid_sampler_2d",
        "_grid_sampler_2d_cpu_fallback",
        "grid_sampler_3d",
        "trace",
        "view_as_complex",
        "cholesky",
        "cholesky_inverse",
        "cholesky_solve",
        "inverse",
        "lu_solve",
        "orgqr",
        "ormqr",
        "pinverse",
        "max_pool3d",
        "max_unpool2d",
        "max_unpool3d",
        "adaptive_avg_pool3d",
        "reflection_pad1d",
        "reflection_pad2d",
        "replication_pad1d",
        "replication_pad2d",
        "replication_pad3d",
        "mse_loss",
        "cosine_embedding_loss",
        "nll_loss",
        "nll_loss2d",
        "hinge_embedding_loss",
        "poisson_nll_loss",
        "smooth_l1_loss",
        "cross_entropy_loss",
        "l1_loss",
        "huber_loss",
        "margin_ranking_loss",
        "soft_margin_loss",
        "triplet_margin_loss",
        "multi_margin_loss",
        "ctc_loss.IntList",
        "ctc_loss.Tensor",
        "kl_div",
        "multilabel_margin_loss",
        "binary_cross_entropy_with_logits",
        "fft_fft",
        "fft_ifft",
        "fft_fft2",
        "fft_ifft2",
        "fft_fftn",
        "fft_ifftn",
        "fft_rfft",
        "fft_irfft",
        "fft_rfft2",
        "fft_irfft2",
        "fft_rfftn",
        "fft_irfftn",
        "fft_hfft",
        "fft_ihfft",
        "linalg_cond",
        "linalg_cond.p_str",
        "linalg_matrix_rank",
        "linalg_matrix_rank.tol_tensor",
        "linalg_matrix_rank.atol_rtol_tensor",
        "linalg_matrix_rank.atol_rtol_float",
        "linalg_solve",
        "linalg_cholesky",
        "linalg_svdvals",
        "linalg_eigvals",
        "linalg_eigvalsh",
        "linalg_inv",
        "linalg_householder_product",
        "linalg_tensorinv",
        "linalg_tensorsolve",
        "fake_quantize_per_tensor_affine",
        "geqrf",
        "_lu_with_info",
        "qr",
        "svd",
        "triangular_solve",
        "fractional_max_pool2d",
        "fractional_max_pool3d",
        "adaptive_max_pool3d",
        "multilabel_margin_loss_forward",
        "linalg_qr",
        "linalg_cholesky_ex",
        "linalg_svd",
        "linalg_eig",
        "linalg_eigh",
        "linalg_lstsq",
        "linalg_inv_ex",
    ]
)

PROMOTE = frozenset(["stack", "cat", "index_copy"])


def _name(op: torch._ops.OpOverload) -> str:
    schema = op._schema
    base = schema.name.split("::", 1)[-1]
    return f"{base}.{schema.overload_name}" if schema.overload_name else base


def _eligible(t: object) -> bool:
    return (
        isinstance(t, torch.Tensor)
        and t.is_floating_point()
        and t.dtype != torch.float64
        and t.device.type == "npu"
    )


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if _eligible(value):
        return value if value.dtype == dtype else value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _widest(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.dtype | None:
    widest = None
    for value in list(args) + list(kwargs.values()):
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if _eligible(item):
                widest = item.dtype if widest is None else torch.promote_types(widest, item.dtype)
    return widest


def policy(name: str) -> str | None:
    """The CPU autocast category of the aten op ``name`` (``base.overload``), or None if it has none.

    ``lower``, ``fp32`` or ``promote``; a bare name in the lists covers every overload.
    """
    base = name.split(".", 1)[0]
    if name in LOWER_PRECISION or base in LOWER_PRECISION:
        return "lower"
    if name in FP32 or base in FP32:
        return "fp32"
    if base in PROMOTE:
        return "promote"
    return None


def _kernel(op: torch._ops.OpOverload, category: str) -> Callable[..., Any]:
    def autocast_kernel(*args: Any, **kwargs: Any) -> Any:
        target: torch.dtype | None
        if category == "lower":
            target = torch.get_autocast_dtype("npu")
        elif category == "fp32":
            target = torch.float32
        else:
            target = _widest(args, kwargs)
        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(_KEY)):
            if target is not None:
                args = tuple(_cast(a, target) for a in args)
                kwargs = {k: _cast(v, target) for k, v in kwargs.items()}
            return op(*args, **kwargs)

    return autocast_kernel


def install() -> None:
    """Give each op of the policy an AutocastPrivateUse1 kernel; every other op falls through (once).

    As PyTorch's C++ autocast: ops outside the policy never see the autocast key, so they keep
    running in C++ (a Python fallback there handed fresh tensors a Python object, which broke
    ``nn.Parameter(...)`` and ``copy.deepcopy`` of a model while apex O1 kept autocast on).
    """
    if libraries.get("autocast") is not None:
        return
    libraries.make("autocast_fallthrough", "_").fallback(
        torch.library.fallthrough_kernel, "AutocastPrivateUse1"
    )
    kernels = libraries.make("autocast")
    for qualified in torch._C._dispatch_get_all_op_names():
        if not qualified.startswith("aten::"):
            continue
        name = qualified[len("aten::") :]
        category = policy(name)
        if category is None:
            continue
        base, _, overload = name.partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, base), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        if op._schema.is_mutable:
            continue  # out= and in-place forms: C++ autocast has no kernel for them either
        kernels.impl(name, _kernel(op, category), "AutocastPrivateUse1")
