"""The unboxed kernels of the hottest ops (csrc/npu_typed.cpp): served unboxed on the native path,
and giving what the boxed kernels, the Python path and the CPU give, for every shape of op they
take (views, fresh results, in-place updates, several results, optional tensors, gradients)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from test_native_dispatch import path

from runtime_shim.backend import dispatch, native
from runtime_shim.runtime.state import STATE

needs_native = pytest.mark.skipif(
    not dispatch.available(), reason=f"Python path: {native.python_path_reason}"
)


def _kernel_kinds() -> dict[str, str]:
    return STATE.native.kernel_kinds()


@needs_native
def test_the_hottest_ops_are_served_unboxed_on_the_native_path():
    hottest = ["add.Tensor", "mul_.Tensor", "view", "as_strided", "mm", "addmm", "native_layer_norm",
               "nll_loss_forward", "addcdiv_", "sigmoid_backward", "copy_", "_foreach_add_.List",
               "_foreach_mul.Scalar", "_foreach_sqrt"]  # fmt: skip
    with path("native"):
        kinds = _kernel_kinds()
        assert {name: kinds[name] for name in hottest} == dict.fromkeys(hottest, "typed")
        # the other tensor lists and devices keep the boxed kernel
        assert kinds["cat"] == kinds["_foreach_maximum_.List"] == kinds["empty.memory_format"] == "boxed"
        line = next(
            line
            for line in torch._C._dispatch_dump("aten::add.Tensor").splitlines()
            if line.startswith("PrivateUse1:")
        )
        assert "npu_dispatch.cpp" in line and line.endswith("[ boxed unboxed ]"), line
    with path("python"):
        assert _kernel_kinds() == {}


class _Net(torch.nn.Module):
    """One module that reaches every kind of op the typed kernels take."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(11, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.bare_norm = torch.nn.LayerNorm(8, elementwise_affine=False)  # optional weight: None
        self.linear = torch.nn.Linear(8, 8)
        self.batch_norm = torch.nn.BatchNorm1d(8)
        self.head = torch.nn.Linear(8, 5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.bare_norm(self.norm(self.embed(tokens)))  # (batch, seq, 8)
        x = x.transpose(0, 1).contiguous().view(-1, 8)  # as_strided, clone, view
        x = F.gelu(self.linear(x)) + torch.sigmoid(x) * torch.tanh(x) - F.silu(x)
        x = torch.relu(self.batch_norm(x)) / (x.exp().mean(dim=1, keepdim=True) + 1)
        x = F.dropout(x, p=0.25, training=True)
        scores = torch.bmm(x.view(4, -1, 8), x.view(4, -1, 8).transpose(1, 2)).softmax(-1)
        x = x + scores.sum(dim=(1, 2)).repeat_interleave(x.shape[0] // 4).unsqueeze(1)
        return self.head(torch.where(x > 0, x, x.pow(2).rsqrt().neg()))


def _step(device: str) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = _Net().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 11, (4, 3), generator=g).to(device)
    target = torch.randint(0, 5, (12,), generator=g).to(device)
    out = []
    for _ in range(2):
        opt.zero_grad()
        loss = F.cross_entropy(model(tokens), target)  # _log_softmax, nll_loss_forward
        loss.backward()
        opt.step()  # the optimizer's in-place updates
        out.append(loss.detach())
    out.extend(p.detach() for p in model.parameters())
    out.extend(p.grad for p in model.parameters() if p.grad is not None)
    out.append(model.batch_norm.running_mean)
    return [t.cpu() for t in out]


@needs_native
def test_a_training_step_through_the_typed_kernels_is_bit_identical():
    expected = _step("cpu")
    for name in ("native", "python"):
        with path(name):
            got = _step("npu")
        assert len(got) == len(expected)
        for a, b in zip(got, expected, strict=True):
            assert a.dtype == b.dtype and torch.equal(a, b), name


@needs_native
def test_in_place_ops_give_back_their_npu_argument_and_leave_nothing_counted():
    with path("native"):
        x = torch.ones(4, device="npu")
        b = torch.full((4,), 2.0, device="npu")
        before = torch.npu.memory_allocated()
        updates = (
            lambda: x.add_(b),
            lambda: x.mul_(b),
            lambda: x.mul_(0.5),
            lambda: x.addcmul_(b, b, value=0.5),
            lambda: x.addcdiv_(b, b),
            lambda: x.lerp_(b, 0.25),
            lambda: x.masked_fill_(b > 1, 3.0),  # the mask is a new tensor, freed at once
            lambda: x.copy_(torch.arange(4.0)),  # from the CPU: copies may cross devices
            lambda: x.fill_(7.0),
            lambda: x.zero_(),
        )
        for update in updates:
            assert update() is x
        assert x.device.type == "npu" and x.cpu().tolist() == [0.0] * 4
        assert torch.npu.memory_allocated() == before


@needs_native
def test_results_of_several_tensors_are_npu_tensors_counted_as_device_memory():
    with path("native"):
        x = torch.randn(5, 8, device="npu")
        before = torch.npu.memory_allocated()
        out, mean, rstd = torch.native_layer_norm(x, [8], None, None, 1e-5)
        assert {t.device.type for t in (out, mean, rstd)} == {"npu"}
        nbytes = sum(t.untyped_storage().nbytes() for t in (out, mean, rstd))
        assert torch.npu.memory_allocated() == before + nbytes
        del out, mean, rstd
        assert torch.npu.memory_allocated() == before


@needs_native
def test_typed_kernels_fail_on_mixed_devices_as_the_boxed_ones():
    with path("native"):
        for call in (
            lambda: torch.mm(torch.ones(2, 2, device="npu"), torch.ones(2, 2)),
            lambda: torch.ones(2, device="npu").add_(torch.ones(2)),
            lambda: torch.where(torch.ones(2, device="npu") > 0, torch.ones(2), torch.ones(2, device="npu")),
            lambda: F.conv2d(torch.ones(1, 3, 5, 5, device="npu"), torch.ones(2, 3, 3, 3)),
        ):
            with pytest.raises(RuntimeError, match="found at least two devices, npu:0 and cpu!"):
                call()


def _r(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _rl(d, seed=0, positive=False):
    """A tensor list as the optimizers pass one: a contiguous tensor, a view at an offset and a
    transposed one (the same shapes for every seed, as a _foreach op's lists must be)."""
    made = [_r(3, 4, seed=seed), _r(6, seed=seed + 10), _r(4, 3, seed=seed + 20)]
    a, b, c = (t.abs() + 0.1 if positive else t for t in made)
    return [a.to(d), b.to(d)[1:], c.to(d).t()]


# One call of each op with an unboxed kernel: (arguments on a device) for torch.ops.aten.<op>.
# Tensors are made on the CPU, then moved, so each device gets the same values.
SAMPLES = {
    "view": lambda d: (_r(4, 6).to(d), [6, 4]),
    "as_strided": lambda d: (_r(4, 6).to(d), [3, 3], [6, 2], 1),
    "_reshape_alias": lambda d: (_r(4, 6).to(d), [2, 12], [12, 1]),
    "clone": lambda d: (_r(3, 4).t().to(d),),
    "copy_": lambda d: (torch.zeros(3, 4, device=d), _r(3, 4)),
    "zero_": lambda d: (_r(5).to(d),),
    "fill_.Scalar": lambda d: (_r(5).to(d), 2.5),
    "add.Tensor": lambda d: (_r(3, 4).to(d), _r(4, seed=1).to(d), {"alpha": 0.5}),
    "add_.Tensor": lambda d: (_r(3, 4).to(d), torch.tensor(2.0)),
    "sub.Tensor": lambda d: (_r(3, 4).to(d), _r(3, 4, seed=1).to(d), {"alpha": 2}),
    "sub_.Tensor": lambda d: (_r(3, 4).to(d), _r(3, 4, seed=1).to(d)),
    "mul.Tensor": lambda d: (_r(3, 4).to(d), _r(3, 1, seed=1).to(d)),
    "mul_.Tensor": lambda d: (_r(3, 4).to(d)[:, 1:], _r(3, 3, seed=1).to(d)),
    "div.Tensor": lambda d: (_r(3, 4).to(d), _r(3, 4, seed=1).to(d)),
    "div_.Tensor": lambda d: (_r(3, 4).to(d), _r(3, 4, seed=1).to(d)),
    "neg": lambda d: (_r(6).to(d),),
    "sqrt": lambda d: (_r(6).abs().to(d),),
    "rsqrt": lambda d: (_r(6).abs().to(d),),
    "exp": lambda d: (_r(6).to(d),),
    "log": lambda d: (_r(6).abs().to(d),),
    "reciprocal": lambda d: (_r(6).to(d),),
    "pow.Tensor_Scalar": lambda d: (_r(6).to(d), 3),
    "addcmul_": lambda d: (_r(4).to(d), _r(4, seed=1).to(d), _r(4, seed=2).to(d), {"value": 0.5}),
    "addcdiv_": lambda d: (_r(4).to(d), _r(4, seed=1).to(d), _r(4, seed=2).to(d), {"value": 0.5}),
    "lerp_.Scalar": lambda d: (_r(4).to(d), _r(4, seed=1).to(d), 0.3),
    "clamp_min": lambda d: (_r(8).to(d), 0.1),
    "maximum": lambda d: (_r(8).to(d), _r(8, seed=1).to(d)),
    "where.self": lambda d: (_r(8).gt(0).to(d), _r(8).to(d), _r(8, seed=1).to(d)),
    "masked_fill_.Scalar": lambda d: (_r(8).to(d), _r(8, seed=1).gt(0).to(d), -1.0),
    "eq.Tensor": lambda d: (_r(8).round().to(d), _r(8, seed=1).round().to(d)),
    "_foreach_add_.List": lambda d: (_rl(d), _rl(d, 1), {"alpha": 0.5}),
    "_foreach_add_.Scalar": lambda d: (_rl(d), 2.0),
    "_foreach_add.List": lambda d: (_rl(d), _rl(d, 1), {"alpha": 2}),
    "_foreach_mul_.Scalar": lambda d: (_rl(d), 0.9),
    "_foreach_mul_.List": lambda d: (_rl(d), _rl(d, 1)),
    "_foreach_mul.Scalar": lambda d: (_rl(d), 0.5),
    "_foreach_lerp_.Scalar": lambda d: (_rl(d), _rl(d, 1), 0.1),
    "_foreach_addcmul_.Scalar": lambda d: (_rl(d), _rl(d, 1), _rl(d, 2), 0.001),
    "_foreach_addcdiv_.Scalar": lambda d: (_rl(d), _rl(d, 1), _rl(d, 2, positive=True), 0.01),
    "_foreach_addcdiv_.ScalarList": lambda d: (_rl(d), _rl(d, 1), _rl(d, 2, positive=True), [0.1, 0.2, 0.3]),
    "_foreach_div_.Scalar": lambda d: (_rl(d), 3.0),
    "_foreach_div_.ScalarList": lambda d: (_rl(d), [2.0, 4.0, 0.5]),
    "_foreach_sqrt": lambda d: (_rl(d, positive=True),),
    "_foreach_zero_": lambda d: (_rl(d),),
    "sum.dim_IntList": lambda d: (_r(3, 4, 5).to(d), [0, 2], True),
    "mean.dim": lambda d: (_r(3, 4, 5).to(d), [1]),
    "mm": lambda d: (_r(3, 4).to(d), _r(4, 5, seed=1).to(d)),
    "addmm": lambda d: (_r(5).to(d), _r(3, 4).to(d), _r(4, 5, seed=1).to(d), {"beta": 0.5, "alpha": 2}),
    "bmm": lambda d: (_r(2, 3, 4).to(d), _r(2, 4, 5, seed=1).to(d)),
    "relu": lambda d: (_r(8).to(d),),
    "threshold_backward": lambda d: (_r(8).to(d), _r(8, seed=1).to(d), 0.0),
    "sigmoid": lambda d: (_r(8).to(d),),
    "sigmoid_": lambda d: (_r(8).to(d),),
    "sigmoid_backward": lambda d: (_r(8).to(d), _r(8, seed=1).sigmoid().to(d)),
    "tanh": lambda d: (_r(8).to(d),),
    "tanh_": lambda d: (_r(8).to(d),),
    "tanh_backward": lambda d: (_r(8).to(d), _r(8, seed=1).tanh().to(d)),
    "silu": lambda d: (_r(8).to(d),),
    "silu_backward": lambda d: (_r(8).to(d), _r(8, seed=1).to(d)),
    "gelu": lambda d: (_r(8).to(d), {"approximate": "tanh"}),
    "gelu_backward": lambda d: (_r(8).to(d), _r(8, seed=1).to(d)),
    "_softmax": lambda d: (_r(3, 5).to(d), 1, False),
    "_softmax_backward_data": lambda d: (_r(3, 5).to(d), _r(3, 5, seed=1).softmax(1).to(d), 1, torch.float32),
    "_log_softmax": lambda d: (_r(3, 5).to(d), 1, False),
    "_log_softmax_backward_data": lambda d: (
        _r(3, 5).to(d), _r(3, 5, seed=1).log_softmax(1).to(d), 1, torch.float32
    ),
    "nll_loss_forward": lambda d: (_r(4, 5).log_softmax(1).to(d), torch.tensor([0, 4, 2, 1]).to(d), None, 1, -100),
    "nll_loss_backward": lambda d: (
        torch.tensor(1.0).to(d), _r(4, 5).to(d), torch.tensor([0, 4, 2, 1]).to(d), _r(5).abs().to(d), 1, -100,
        torch.tensor(4.0).to(d),
    ),
    "native_layer_norm": lambda d: (_r(3, 6).to(d), [6], _r(6, seed=1).to(d), None, 1e-5),
    "native_layer_norm_backward": lambda d: (
        _r(3, 6, seed=2).to(d), _r(3, 6).to(d), [6], _r(3, 1).to(d), _r(3, 1, seed=1).abs().to(d),
        _r(6, seed=1).to(d), None, [True, True, False],
    ),
    "native_batch_norm": lambda d: (
        _r(4, 3).to(d), _r(3, seed=1).to(d), None, torch.zeros(3, device=d), torch.ones(3, device=d), True, 0.1, 1e-5
    ),
    "native_batch_norm_backward": lambda d: (
        _r(4, 3, seed=2).to(d), _r(4, 3).to(d), _r(3, seed=1).to(d), None, None, _r(3).to(d),
        _r(3, seed=3).abs().to(d), True, 1e-5, [True, True, True],
    ),
    "native_dropout": lambda d: (_r(16).to(d), 0.25, True),
    "native_dropout_backward": lambda d: (_r(16).to(d), _r(16, seed=1).gt(0).to(d), 2.0),
    "bernoulli_.float": lambda d: (torch.zeros(16, device=d), 0.4),
    "embedding_dense_backward": lambda d: (_r(5, 3).to(d), torch.tensor([1, 0, 3, 1, 6]).to(d), 7, -1, False),
    # (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    "convolution_overrideable": lambda d: (
        _r(2, 4, 7, 7).to(d), _r(6, 2, 3, 3, seed=1).to(d), _r(6, seed=2).to(d), [2, 1], [1, 1], [1, 1], False,
        [0, 0], 2,
    ),
    # a transposed one, the weight's gradient not asked for: (grad_output, input, weight, stride,
    # padding, dilation, transposed, output_padding, groups, output_mask)
    "convolution_backward_overrideable": lambda d: (
        _r(2, 6, 9, 9).to(d), _r(2, 4, 5, 5, seed=1).to(d), _r(4, 3, 3, 3, seed=2).to(d), [2, 2], [1, 1], [1, 1],
        True, [0, 0], 2, [True, False, True],
    ),
}  # fmt: skip

# The CPU computes the convolutions a device other than CPU and CUDA receives as
# convolution_overrideable (and its backward) with convolution and convolution_backward.
CPU_CALLS = {
    "convolution_overrideable": torch.ops.aten.convolution.default,
    "convolution_backward_overrideable": lambda grad, input, weight, stride, padding, dilation, transposed,
    output_padding, groups, mask: torch.ops.aten.convolution_backward.default(
        grad, input, weight, [weight.shape[1] * groups if transposed else weight.shape[0]], stride, padding,
        dilation, transposed, output_padding, groups, mask
    ),
}  # fmt: skip


def _op(name: str):
    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _sample_run(name: str, device: str) -> list[tuple]:
    """The op's results and every tensor argument after the call (in-place ops): dtype, shape,
    strides, offset and values."""
    args = SAMPLES[name](device)
    kwargs = args[-1] if isinstance(args[-1], dict) else {}
    args = args[:-1] if kwargs else args
    torch.manual_seed(0)  # dropout and bernoulli draw from the host generator on both devices
    call = CPU_CALLS.get(name, _op(name)) if device == "cpu" else _op(name)
    out = call(*args, **kwargs)
    outs = list(out) if isinstance(out, tuple | list) else [out]
    flat = [x for item in [*outs, *args] for x in (item if isinstance(item, list) else [item])]  # lists too
    tensors = [t for t in flat if isinstance(t, torch.Tensor)]
    return [(t.dtype, t.shape, t.stride(), t.storage_offset(), t.cpu()) for t in tensors]


@needs_native
def test_every_op_with_an_unboxed_kernel_is_registered_and_has_a_sample():
    with path("native"):
        typed = {name for name, kind in _kernel_kinds().items() if kind == "typed"}
    assert typed == set(STATE.native.typed_op_names()), "an unboxed kernel no registered op uses"
    assert sorted(typed - SAMPLES.keys()) == [], "add a sample call for each new unboxed kernel"


@needs_native
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_unboxed_kernel_gives_the_cpu_result_on_both_paths(name):
    expected = _sample_run(name, "cpu")
    for which in ("native", "python"):
        with path(which):
            got = _sample_run(name, "npu")
        assert len(got) == len(expected), which
        for (*layout, a), (*cpu_layout, b) in zip(got, expected, strict=True):
            assert layout == cpu_layout, (which, layout, cpu_layout)
            assert torch.equal(a.nan_to_num(), b.nan_to_num()) and torch.equal(a.isnan(), b.isnan()), (
                which,
                a,
                b,
            )


def _host_alive(t: torch.Tensor):
    """A check whether the host bytes under npu tensor t (made by a native kernel) still exist."""
    host, _, _ = STATE.native.host_of(t.untyped_storage())
    ref = host.untyped_storage()._weak_ref()
    del host
    return lambda: not torch.UntypedStorage._expired(ref)


@needs_native
def test_the_pooled_cpu_arguments_do_not_keep_an_npu_tensors_bytes():
    # The unboxed kernels hand their npu arguments to the CPU as CPU tensors from a per-thread pool;
    # after the call a pooled tensor must let go of the bytes it showed, or a freed npu tensor's
    # host memory would live on until the pool reused the slot.
    with path("native"):
        a = torch.randn(64, 64, device="npu") * 1
        b = torch.randn(64, 64, device="npu") * 1
        alive = _host_alive(a)
        for _ in range(3):
            c = a + b  # add.Tensor: both arguments through the pool
            b.mul_(a)  # in place
            d = torch.mm(a, b.t())
        del a
        assert not alive()  # nothing but a held the bytes
        assert c.shape == d.shape == (64, 64)
        made, out = STATE.native.pool_state()  # the slots' storages are held uncounted: parked
        assert made >= 2 and out == 0


@needs_native
def test_threads_each_with_their_own_pool_compute_what_the_cpu_computes():
    # Four threads at once, each taking pooled CPU tensors for its arguments: no thread sees
    # another's bytes, and the results are the CPU's, bit for bit.
    import threading

    def chain(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        for _ in range(40):
            x = torch.tanh(x @ w + x).mul_(0.5).add_(x.sigmoid())
        return x

    inputs = [(torch.randn(16, 16), torch.randn(16, 16) / 4) for _ in range(4)]
    expected = [chain(x, w) for x, w in inputs]
    results: list[torch.Tensor | None] = [None] * 4

    def run(i: int) -> None:
        x, w = inputs[i]
        results[i] = chain(x.to("npu"), w.to("npu")).cpu()

    with path("native"):
        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for got, want in zip(results, expected, strict=True):
        assert got is not None and torch.equal(got, want)


@needs_native
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda x, w: x + w[0], id="fresh result"),
        pytest.param(lambda x, w: torch.mm(x, w), id="matmul"),
        pytest.param(lambda x, w: torch.native_layer_norm(x, [8], None, None, 1e-5)[1], id="one of several"),
        pytest.param(lambda x, w: x.t(), id="view of the argument"),
        pytest.param(lambda x, w: x.mul_(1.0), id="in-place: the argument itself"),
    ],
)
def test_a_result_is_an_npu_tensor_like_one_made_on_the_npu(make):
    # A fresh result's own CPU TensorImpl becomes the npu tensor (csrc/npu_dispatch.cpp wrap): it
    # must be one in every way an npu tensor made on the npu is, whichever way wrap took.
    with path("native"):
        x = torch.randn(8, 8, device="npu", requires_grad=False)
        w = torch.randn(8, 8, device="npu")
        made = torch.empty(8, 8, device="npu")
        before = torch.npu.memory_allocated()
        out = make(x, w)
        fresh = out.untyped_storage().data_ptr() not in (x.untyped_storage().data_ptr(),)
        assert out.device == made.device and out.untyped_storage().device == made.device
        assert torch._C._dispatch_keys(out) == torch._C._dispatch_keys(made)
        assert out.is_contiguous() == out.cpu().is_contiguous()
        grown = torch.npu.memory_allocated() - before
        assert grown == (out.untyped_storage().nbytes() if fresh else 0)
        assert torch.equal(out.cpu(), make(x.cpu(), w.cpu()))
        # autograd takes it as an npu tensor, and freeing it gives its memory back
        leaf = out.detach().requires_grad_()
        (leaf * 2).sum().backward()
        assert leaf.grad.device == made.device and torch.equal(leaf.grad.cpu(), torch.full(out.shape, 2.0))
        del out, leaf
        assert torch.npu.memory_allocated() == before


@needs_native
@pytest.mark.parametrize(
    "kind, in_place, fresh",
    [
        pytest.param("boxed", torch._foreach_maximum_, torch._foreach_neg, id="boxed"),
        pytest.param("typed", torch._foreach_add_, lambda ts: torch._foreach_mul(ts, 0.5), id="typed"),
    ],
)
def test_list_kernels_take_pooled_arguments_and_let_go_of_them(kind, in_place, fresh):
    # The kernels of tensor-list ops (cat, the optimizers' _foreach ops; some boxed, the
    # optimizers' commonest typed) take pool slots for their npu arguments too, more of them than
    # the pool holds: the results are the CPU's, and no slot keeps a freed npu tensor's bytes.
    with path("native"):
        kinds = _kernel_kinds()
        assert kinds[in_place.__name__ + ".List"] == kind
        assert kinds["cat"] == "boxed"
        slots = STATE.native.pool_size()
        cpu = [torch.randn(3, 5) for _ in range(slots + 4)]  # more arguments than the pool has slots
        npu = [t.to("npu") * 1 for t in cpu]
        alive = _host_alive(npu[0])
        before = torch.npu.memory_allocated()
        in_place(npu, npu[::-1])
        in_place(cpu, cpu[::-1])
        results = fresh(npu)  # a list of fresh results
        joined = torch.cat(npu[:3])
        assert all(torch.equal(n.cpu(), c) for n, c in zip(npu, cpu, strict=True))
        assert all(torch.equal(r.cpu(), c) for r, c in zip(results, fresh(cpu), strict=True))
        assert all(r.device.type == "npu" for r in results)
        assert torch.equal(joined.cpu(), torch.cat(cpu[:3]))
        grown = sum(t.untyped_storage().nbytes() for t in [*results, joined])
        assert torch.npu.memory_allocated() == before + grown
        first = npu.pop(0).untyped_storage().nbytes()
        assert not alive()  # no pool slot kept its bytes (results[0] and joined have their own)
        del results, joined
        assert torch.npu.memory_allocated() == before - first
        # every slot the calls took is back on the parked storage, none still lent
        made, out = STATE.native.pool_state()
        assert made == slots and out == 0


@needs_native
def test_a_pool_slot_shows_each_arguments_own_geometry_and_dtype():
    # A pool slot is found by its argument's geometry and keeps the geometry it last showed:
    # arguments that share sizes but not strides or offset, or share all three but not the dtype,
    # interleaved call after call, must each reach the CPU kernel as themselves.
    base = torch.arange(48.0).reshape(6, 8)

    def views(b: torch.Tensor) -> list[torch.Tensor]:
        return [
            b[:6, :6],  # 6x6, strides (8, 1), offset 0
            b[:, 2:],  # 6x6, the same strides, offset 2
            b[:6, :6].t(),  # 6x6, strides (1, 8)
            b[:6, :6].contiguous(),  # 6x6, strides (6, 1)
            b[:6, :6].double(),  # 6x6, strides (6, 1), float64
            b[:6, :6].to(torch.int64),
            b[::2, ::2],
            b.sum(),  # zero-dim
            b.view(6, 2, 4).permute(2, 0, 1),
        ]

    cpu_args = views(base)
    with path("native"):
        npu_base = base.to("npu")
        npu_args = views(npu_base)
        for _ in range(3):
            for order in (range(len(cpu_args)), reversed(range(len(cpu_args)))):
                for i in order:
                    want = cpu_args[i] * 2 + cpu_args[i].neg()
                    got = npu_args[i] * 2 + npu_args[i].neg()
                    assert (
                        got.shape == want.shape and got.stride() == want.stride() and got.dtype == want.dtype
                    )
                    assert torch.equal(got.cpu(), want), i
        assert STATE.native.pool_state()[1] == 0
