"""The operator check observes and never changes a result: every op it wraps, CPU vs npu bit for bit."""

from __future__ import annotations

import functools

import pytest
import torch
from conftest import run_python

from runtime_shim.diagnostics import opcheck

aten = torch.ops.aten


def _x(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def _spd(n=4):
    a = _x(n, n, seed=3)
    return a @ a.T + n * torch.eye(n)


# One call per op the check wraps (all shipped releases): (op, args builder, kwargs). Tensor
# arguments are built on the CPU and moved to the device under test (a trailing dict holds
# keyword arguments; "DEVICE" stands for the device); `keep_cpu` names positions that stay on
# the host on a real NPU too (lengths, index lists).
SAMPLES: dict[str, tuple] = {
    "_pad_packed_sequence": (
        aten._pad_packed_sequence.default,
        lambda: (_x(6, 3), torch.tensor([3, 2, 1]), False, 0.0, 3),
        {1},
    ),
    "_weight_norm": (aten._weight_norm.default, lambda: (_x(3, 4), _x(3, 1, seed=1), 0), set()),
    "adaptive_avg_pool2d": (aten.adaptive_avg_pool2d.default, lambda: (_x(1, 2, 5, 5), [2, 2]), set()),
    "affine_grid_generator_backward": (
        aten.affine_grid_generator_backward.default,
        lambda: (_x(1, 4, 4, 2), [1, 1, 4, 4], False),
        set(),
    ),
    "argsort": (aten.argsort.default, lambda: (_x(4, 5), -1, False), set()),
    "argsort.stable": (aten.argsort.stable, lambda: (_x(4, 5), {"stable": True}), set()),
    "cdist": (aten.cdist.default, lambda: (_x(3, 4), _x(5, 4, seed=1), 2.0), set()),
    "conv_tbc_backward": (
        aten.conv_tbc_backward.default,
        lambda: (_x(5, 2, 4), _x(5, 2, 3, seed=1), _x(3, 3, 4, seed=2), _x(4, seed=3), 1),
        set(),
    ),
    "fft_fftshift": (aten.fft_fftshift.default, lambda: (_x(4, 6),), set()),
    "fft_ifftshift": (aten.fft_ifftshift.default, lambda: (_x(4, 6),), set()),
    "fill_diagonal_": (aten.fill_diagonal_.default, lambda: (_x(4, 4), 2.0, False), set()),
    "flatten_dense_tensors": (
        aten.flatten_dense_tensors.default,
        lambda: ([_x(2, 3), _x(4, seed=1)],),
        set(),
    ),
    "inverse": (aten.inverse.default, lambda: (_spd(),), set()),
    "inverse.out": (aten.inverse.out, lambda: (_spd(), {"out": torch.empty(4, 4)}), set()),
    "isclose": (aten.isclose.default, lambda: (_x(8), _x(8) + 1e-9, 1e-5, 1e-8, False), set()),
    "isfinite": (aten.isfinite.default, lambda: (torch.tensor([1.0, float("inf"), float("nan")]),), set()),
    "kl_div": (
        aten.kl_div.default,
        lambda: (torch.log_softmax(_x(3, 5), -1), torch.softmax(_x(3, 5, seed=1), -1), 1),
        set(),
    ),
    "l1_loss": (aten.l1_loss.default, lambda: (_x(3, 5), _x(3, 5, seed=1), 1), set()),
    "linalg_cholesky": (aten.linalg_cholesky.default, lambda: (_spd(),), set()),
    "linalg_cholesky.out": (aten.linalg_cholesky.out, lambda: (_spd(), {"out": torch.empty(4, 4)}), set()),
    "log_sigmoid": (aten.log_sigmoid.default, lambda: (_x(3, 5),), set()),
    "log_sigmoid.out": (aten.log_sigmoid.out, lambda: (_x(3, 5), {"out": torch.empty(3, 5)}), set()),
    "matmul": (aten.matmul.default, lambda: (_x(2, 3, 4), _x(4, 5, seed=1)), set()),
    "matmul.out": (aten.matmul.out, lambda: (_x(3, 4), _x(4, 5, seed=1), {"out": torch.empty(3, 5)}), set()),
    "max.out": (aten.max.out, lambda: (_x(3, 5), _x(3, 5, seed=1), {"out": torch.empty(3, 5)}), set()),
    "min.out": (aten.min.out, lambda: (_x(3, 5), _x(3, 5, seed=1), {"out": torch.empty(3, 5)}), set()),
    "multilabel_margin_loss": (
        aten.multilabel_margin_loss.default,
        lambda: (_x(2, 4), torch.tensor([[3, 0, -1, 1], [0, 1, 2, 3]]), 1),
        set(),
    ),
    "multilabel_margin_loss.out": (
        aten.multilabel_margin_loss.out,
        lambda: (_x(2, 4), torch.tensor([[3, 0, -1, 1], [0, 1, 2, 3]]), 1, {"out": torch.empty(())}),
        set(),
    ),
    "nanmean.out": (
        aten.nanmean.out,
        lambda: (torch.tensor([1.0, float("nan"), 3.0, 4.5]), None, False, {"out": torch.empty(())}),
        set(),
    ),
    "one_hot": (aten.one_hot.default, lambda: (torch.tensor([0, 2, 1, 3]), 4), set()),
    "pdist": (aten.pdist.default, lambda: (_x(5, 3), 2.0), set()),
    "repeat_interleave.self_Tensor": (
        aten.repeat_interleave.self_Tensor,
        lambda: (_x(3, 2), torch.tensor([1, 2, 3]), 0, {"output_size": 6}),
        set(),
    ),
    "repeat_interleave.self_int": (aten.repeat_interleave.self_int, lambda: (_x(3, 2), 2, 1), set()),
    "slogdet": (aten.slogdet.default, lambda: (_spd(),), set()),
    "softmax.int": (aten.softmax.int, lambda: (_x(3, 5), -1), set()),
    "stft": (
        aten.stft.default,
        lambda: (_x(64), 16, 4, 16, torch.hann_window(16), False, True, True),
        set(),
    ),
    "where": (aten.where.default, lambda: (_x(4, 4) > 0,), set()),
    "__xor__.Scalar": (aten.__xor__.Scalar, lambda: (torch.tensor([1, 2, 3]), 6), set()),
    "__xor__.Tensor": (
        aten.__xor__.Tensor,
        lambda: (torch.tensor([1, 2, 3]), torch.tensor([3, 3, 1])),
        set(),
    ),
    "_batch_norm_impl_index": (
        aten._batch_norm_impl_index.default,
        lambda: (
            _x(4, 3, 2),
            _x(3, seed=1),
            _x(3, seed=2),
            torch.zeros(3),
            torch.ones(3),
            True,
            0.1,
            1e-5,
            False,
        ),
        set(),
    ),
    "_batch_norm_impl_index_backward": (
        aten._batch_norm_impl_index_backward.default,
        lambda: (
            0,
            _x(4, 3, 2),
            _x(4, 3, 2, seed=1),
            _x(3, seed=2),
            torch.zeros(3),
            torch.ones(3),
            _x(3, seed=3),
            torch.rand(3, generator=torch.Generator().manual_seed(4)) + 0.5,
            True,
            1e-5,
            [True, True, True],
            torch.empty(0),
        ),
        set(),
    ),
    "_dim_arange": (aten._dim_arange.default, lambda: (_x(3, 5), 1), set()),
    "adaptive_avg_pool1d": (aten.adaptive_avg_pool1d.default, lambda: (_x(2, 3, 7), [3]), set()),
    "batch_norm": (
        aten.batch_norm.default,
        lambda: (
            _x(4, 3, 2),
            _x(3, seed=1),
            _x(3, seed=2),
            torch.zeros(3),
            torch.ones(3),
            True,
            0.1,
            1e-5,
            False,
        ),
        set(),
    ),
    "conv_transpose2d.input": (
        aten.conv_transpose2d.input,
        lambda: (_x(1, 2, 5, 5), _x(2, 3, 3, 3, seed=1), _x(3, seed=2), [2, 2], [1, 1]),
        set(),
    ),
    "conv_transpose3d.input": (
        aten.conv_transpose3d.input,
        lambda: (_x(1, 2, 3, 4, 4), _x(2, 2, 2, 2, 2, seed=1), None, [1, 2, 2]),
        set(),
    ),
    "ctc_loss.IntList": (
        aten.ctc_loss.IntList,
        lambda: (torch.log_softmax(_x(6, 2, 4), -1), torch.tensor([[1, 2, 1], [3, 1, 0]]), [6, 5], [3, 2]),
        set(),
    ),
    "ctc_loss.Tensor": (
        aten.ctc_loss.Tensor,
        lambda: (
            torch.log_softmax(_x(6, 2, 4), -1),
            torch.tensor([[1, 2, 1], [3, 1, 0]]),
            torch.tensor([6, 5]),
            torch.tensor([3, 2]),
        ),
        {2, 3},
    ),
    "dropout_": (aten.dropout_.default, lambda: (_x(4, 5), 0.5, False), set()),
    "embedding_backward": (
        aten.embedding_backward.default,
        lambda: (_x(5, 3), torch.tensor([0, 2, 2, 4, 1]), 6, -1, False, False),
        set(),
    ),
    "linalg_matrix_norm": (aten.linalg_matrix_norm.default, lambda: (_x(3, 4), 2), set()),
    "linalg_matrix_norm.out": (
        aten.linalg_matrix_norm.out,
        lambda: (_x(3, 4), 1, {"out": torch.empty(())}),
        set(),
    ),
    "linalg_matrix_norm.str_ord": (aten.linalg_matrix_norm.str_ord, lambda: (_x(3, 4), "nuc"), set()),
    "linalg_matrix_norm.str_ord_out": (
        aten.linalg_matrix_norm.str_ord_out,
        lambda: (_x(3, 4), "fro", {"out": torch.empty(())}),
        set(),
    ),
    "linalg_norm": (aten.linalg_norm.default, lambda: (_x(3, 4), 3, [1]), set()),
    "linalg_norm.ord_str": (aten.linalg_norm.ord_str, lambda: (_x(3, 4), "fro"), set()),
    "linalg_norm.ord_str_out": (
        aten.linalg_norm.ord_str_out,
        lambda: (_x(3, 4), "nuc", {"out": torch.empty(())}),
        set(),
    ),
    "linalg_norm.out": (aten.linalg_norm.out, lambda: (_x(3, 4), None, {"out": torch.empty(())}), set()),
    "linalg_svdvals": (aten.linalg_svdvals.default, lambda: (_x(3, 4),), set()),
    "linalg_svdvals.out": (aten.linalg_svdvals.out, lambda: (_x(3, 4), {"out": torch.empty(3)}), set()),
    "log_softmax.int": (aten.log_softmax.int, lambda: (_x(3, 5), -1), set()),
    "nll_loss": (
        aten.nll_loss.default,
        lambda: (torch.log_softmax(_x(4, 5), -1), torch.tensor([0, 4, 2, 1])),
        set(),
    ),
    "nll_loss.out": (
        aten.nll_loss.out,
        lambda: (torch.log_softmax(_x(4, 5), -1), torch.tensor([0, 4, 2, 1]), {"out": torch.empty(())}),
        set(),
    ),
    "nll_loss2d": (
        aten.nll_loss2d.default,
        lambda: (torch.log_softmax(_x(2, 3, 2, 2), 1), torch.tensor([[[0, 2], [1, 1]], [[2, 0], [0, 1]]])),
        set(),
    ),
    "nll_loss2d.out": (
        aten.nll_loss2d.out,
        lambda: (
            torch.log_softmax(_x(2, 3, 2, 2), 1),
            torch.tensor([[[0, 2], [1, 1]], [[2, 0], [0, 1]]]),
            {"out": torch.empty(())},
        ),
        set(),
    ),
    "slow_conv3d": (
        aten.slow_conv3d.default,
        lambda: (_x(1, 2, 4, 4, 4), _x(3, 2, 2, 2, 2, seed=1), [2, 2, 2]),
        set(),
    ),
    "slow_conv3d.out": (
        aten.slow_conv3d.out,
        lambda: (
            _x(1, 2, 4, 4, 4),
            _x(3, 2, 2, 2, 2, seed=1),
            [2, 2, 2],
            {"out": torch.empty(1, 3, 3, 3, 3)},
        ),
        set(),
    ),
    "to.device": (aten.to.device, lambda: (_x(3, 4), "DEVICE", torch.float16), set()),
    "to.dtype": (aten.to.dtype, lambda: (_x(3, 4), torch.bfloat16), set()),
    "to.dtype_layout": (aten.to.dtype_layout, lambda: (_x(3, 4), {"dtype": torch.float16}), set()),
    "to.other": (aten.to.other, lambda: (_x(3, 4), torch.empty(2, dtype=torch.float16)), set()),
}


def _to(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, list):
        return [_to(v, device) for v in value]
    return value


def _flat(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat(v)]
    return []


def _run(name: str, device: str) -> list:
    op, build, keep_cpu = SAMPLES[name]
    built = list(build())
    kwargs = built.pop() if built and isinstance(built[-1], dict) else {}
    kwargs = {k: _to(v, device) for k, v in kwargs.items()}
    args = [device if a == "DEVICE" else a if i in keep_cpu else _to(a, device) for i, a in enumerate(built)]
    names = [a.name for a in op._schema.arguments]
    leaves = [
        a
        for name, a in zip(names, args)
        if isinstance(a, torch.Tensor) and a.is_floating_point() and not name.startswith(("running", "save"))
    ]
    differentiable = not op._schema.is_mutable
    if differentiable:
        for leaf in leaves:
            leaf.requires_grad_(True)
    try:
        outputs = _flat(op(*args, **kwargs))
    except RuntimeError as exc:  # an op that refuses the call must refuse it alike on both
        return [type(exc).__name__, str(exc).replace(device, "<device>")]
    results = [o.detach() for o in outputs]
    if differentiable:
        grads_of = [o for o in outputs if o.requires_grad]
        if grads_of:
            total = sum((o.abs() if o.is_complex() else o).sum() for o in grads_of)
            grads = torch.autograd.grad(total, leaves, allow_unused=True)  # type: ignore[arg-type]
            results += [g for g in grads if g is not None]
    return [r.cpu() for r in results]


@pytest.fixture(autouse=True, scope="module")
def _checker_release_after():
    """Leave the process with the NPU-level ops of its checker's release, as configure() left it."""
    yield
    checker = opcheck.CHECKER
    opcheck.install_npu_level_ops(checker.release if checker else opcheck.load_release(None))


@functools.cache
def _releases_wrapping() -> dict[str, str]:
    """Each op some release wraps -> the first such release."""
    releases: dict[str, str] = {}
    for release in opcheck.available_releases():
        opcheck.install_npu_level_ops(opcheck.load_release(release))
        for name in opcheck._NPU_LEVEL_OPS:
            releases.setdefault(name, release)
    return releases


def _wrapped_ops() -> set[str]:
    return set(_releases_wrapping())


def _wrap(name: str) -> None:
    """Install the NPU-level ops of a release that wraps ``name``."""
    opcheck.install_npu_level_ops(opcheck.load_release(_releases_wrapping()[name]))
    assert name in opcheck._NPU_LEVEL_OPS


def test_every_wrapped_op_has_a_sample():
    wrapped = _wrapped_ops()
    assert wrapped, "the check wraps no op: nothing to prove"
    assert sorted(wrapped - SAMPLES.keys()) == [], "add a sample call for each newly wrapped op"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_wrapped_op_gives_the_cpu_result_and_gradients(name):
    if name not in _wrapped_ops():
        pytest.skip(f"{name} is not wrapped by the check with this torch")
    _wrap(name)
    cpu = _run(name, "cpu")
    npu = _run(name, "npu")
    assert len(cpu) == len(npu)
    for c, n in zip(cpu, npu):
        if isinstance(c, str):
            assert n == c
        else:
            torch.testing.assert_close(n, c, rtol=0, atol=0, equal_nan=True)


def test_silu_and_mish_gradients_under_the_check_equal_the_cpu():
    _wrapped_ops()
    for fn in (torch.nn.functional.silu, torch.nn.functional.mish):
        for dtype in (torch.float32, torch.bfloat16):
            x = _x(1000).to(dtype)
            host = x.clone().requires_grad_()
            fn(host).sum().backward()
            dev = x.to("npu").requires_grad_()
            fn(dev).sum().backward()
            assert torch.equal(host.grad, dev.grad.cpu()), (fn.__name__, dtype)


@pytest.mark.slow
def test_only_ops_that_already_decompose_on_the_npu_are_wrapped():
    # In a fresh process: which ops decompose at the npu's autograd key before the check
    # registers anything, then what the check wraps. Wrapped must be a subset of the former
    # (the wrapper runs that same decomposition), and silu_backward / mish_backward (which
    # have a derivative formula over the CPU kernel) must be in neither.
    script = (
        "import runtime_shim; runtime_shim.activate()\n"
        "from runtime_shim.diagnostics import opcheck\n"
        "names = set()\n"
        "for r in opcheck.available_releases(): names |= opcheck.load_release(r).ops\n"
        "def q(n):\n"
        "    b, _, o = n.partition('.')\n"
        "    return 'aten::' + b + ('.' + o if o and o != 'default' else '')\n"
        "before = {n for n in names if opcheck.runs_decomposition(q(n))}\n"
        "wrapped = set()\n"
        "for r in opcheck.available_releases():\n"
        "    opcheck.install_npu_level_ops(opcheck.load_release(r))\n"
        "    wrapped |= opcheck._NPU_LEVEL_OPS\n"
        "assert wrapped and wrapped <= before, sorted(wrapped - before)\n"
        "assert not {'silu_backward', 'mish_backward', 'silu', 'mish'} & (before | wrapped)\n"
        "print('ok', len(wrapped))\n"
    )
    proc = run_python(["-c", script])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok ")
