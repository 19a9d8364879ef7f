"""transfer_to_npu on the simulated NPU: each patched entry point, each with a must-not-change twin.

The patches are applied in this process for the module and undone afterwards (``PatchLog``),
so the other runtime tests see stock torch. A CUDA device goes to the npu; names that merely
contain "cuda" (file names, backends, user keys) are never touched.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from runtime_shim.patches.transfer_to_npu import device_args, transfer
from runtime_shim.torch_npu_stub import profiler  # = import torch_npu: the simulated npu is active

NPU0 = torch.device("npu", 0)


@pytest.fixture(scope="module", autouse=True)
def transferred():
    """Apply transfer_to_npu for this module's tests, then put torch back."""
    originals = (torch.cuda.is_available, torch.Tensor.to, torch.load, torch.Generator, torch.jit.script)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        log = transfer.install(profiler)
    yield
    log.restore()
    assert (
        torch.cuda.is_available,
        torch.Tensor.to,
        torch.load,
        torch.Generator,
        torch.jit.script,
    ) == originals
    assert not torch.cuda.is_available()
    assert "cuda" in torch.Tensor.cuda.__qualname__ or torch.Tensor.cuda is not torch.Tensor.npu


# -- device arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("cuda", "npu"),
        ("cuda:1", "npu:1"),
        (torch.device("cuda", 2), torch.device("npu", 2)),
        (torch.device("cuda"), torch.device("npu")),
        ({"cuda:0": "cuda:1"}, {"npu:0": "npu:1"}),
    ],
)
def test_cuda_devices_are_mapped(value, expected):
    assert device_args.map_device(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "cpu",
        "npu:0",
        "cuda_ckpt.pt",
        "/data/cuda/model.pt",
        "my-cuda",
        "cudas",
        torch.device("cpu"),
        0,
        True,
        None,
    ],
)
def test_other_values_are_not_mapped(value):
    assert device_args.map_device(value) is value


def test_ints_only_where_an_index_is_a_device():
    assert device_args.map_device(1, ints=True) == "npu:1"
    assert device_args.map_device(True, ints=True) is True
    assert device_args.map_kwargs({"device": 1, "map_location": "cuda:1", "dtype": 1}) == {
        "device": "npu:1",
        "map_location": "npu:1",
        "dtype": 1,
    }
    assert device_args.map_kwargs({"device_ids": [0, 1]}) == {"device_ids": [0, 1]}
    assert device_args.map_kwargs({"device_ids": ("cuda:0",)}) == {"device_ids": ("npu:0",)}


@pytest.mark.parametrize(
    ("backend", "expected"),
    [("nccl", "hccl"), ("NCCL", "hccl"), ("cuda:nccl,cpu:gloo", "npu:hccl,cpu:gloo")],
)
def test_backends(backend, expected):
    assert device_args.map_backend(backend) == expected


@pytest.mark.parametrize("backend", ["gloo", "hccl", "cpu:gloo", "my_nccl_plugin", "nccl2", None])
def test_other_backends_are_not_mapped(backend):
    assert device_args.map_backend(backend) is backend


# -- torch.* ------------------------------------------------------------------------------------


def test_factories():
    assert torch.zeros(2, device="cuda").device == NPU0
    assert torch.randn(2, device=torch.device("cuda", 1)).device == torch.device("npu", 1)
    assert torch.full((2,), 1.0, device=0).device == NPU0
    assert torch.arange(3, device="cuda:0").device == NPU0
    assert torch.tensor([1.0], device="cuda").device == NPU0
    assert torch.zeros_like(torch.ones(2), device="cuda").device == NPU0
    assert torch.fft.fftfreq(4, device="cuda").device == NPU0
    assert torch.UntypedStorage(4, device="cuda").device == NPU0
    assert torch.get_device_module("cuda") is torch.npu


def test_factories_twin():
    assert torch.zeros(2).device.type == "cpu"
    assert torch.zeros(2, device="cpu").device.type == "cpu"
    assert torch.tensor([1.0], device="npu").device == NPU0
    assert torch.device("cuda").type == "cuda"  # torch.device itself is not patched, as in torch_npu
    assert torch.fft.fftfreq(4).device.type == "cpu"
    assert torch.UntypedStorage(4).device.type == "cpu"
    assert torch.get_device_module("cpu") is torch.cpu


def test_default_device_and_device_context():
    with torch.device("cuda"):
        assert torch.zeros(1).device == NPU0
    torch.set_default_device("cuda")
    try:
        assert torch.zeros(1).device == NPU0
    finally:
        torch.set_default_device(None)
    assert torch.zeros(1).device.type == "cpu"


def test_load_map_location(tmp_path):
    path = tmp_path / "cuda_weights.pt"  # a file name with "cuda" in it is read as written
    torch.save({"w": torch.ones(2, device="npu")}, path)
    assert torch.load(path, map_location="cuda:0")["w"].device == NPU0
    assert torch.load(path, map_location=torch.device("cuda"))["w"].device == NPU0
    assert torch.load(path, map_location=0)["w"].device == NPU0
    assert torch.load(str(path), map_location={"npu:0": "cuda:1"})["w"].device == torch.device("npu", 1)


def test_load_twin(tmp_path):
    path = tmp_path / "cuda_weights.pt"
    torch.save({"w": torch.ones(2)}, path)
    assert torch.load(str(path))["w"].device.type == "cpu"
    assert torch.load(path, map_location="cpu")["w"].device.type == "cpu"
    assert torch.load(path, map_location=lambda storage, loc: storage)["w"].device.type == "cpu"
    with pytest.raises(FileNotFoundError, match="cuda_missing"):
        torch.load(tmp_path / "cuda_missing.pt")


def test_generator():
    cpu = torch.Generator()
    assert isinstance(cpu, torch.Generator) and cpu.device.type == "cpu"
    assert isinstance(torch.default_generator, torch.Generator)
    assert torch.randperm(3, generator=cpu).device.type == "cpu"

    # A CUDA generator is the npu's: a host generator where the native part is built (runtime_shim
    # /backend/native.py), the Python path's error otherwise; either way the same as asking for the npu's.
    def make(device: str) -> str:
        try:
            generator = (torch.Generator.__mro__[1] if device == "npu" else torch.Generator)(device)
        except NotImplementedError as exc:
            return f"error: {exc}"
        return f"ok: {generator.initial_seed() == generator.manual_seed(3).initial_seed() == 3}"

    assert make("cuda") == make("npu")


def test_event():
    assert torch.Event("cuda").device.type == "npu"
    assert torch.Event(device="cuda").device.type == "npu"
    assert torch.Event("cpu").device.type == "cpu"


def test_autocast():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("npu")
        assert (
            torch.mm(torch.ones(2, 2, device="npu"), torch.ones(2, 2, device="npu")).dtype == torch.bfloat16
        )
    with torch.amp.autocast(device_type="cuda", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("npu")
    with torch.cuda.amp.autocast(dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("npu")


def test_autocast_twin():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("cpu") and not torch.is_autocast_enabled("npu")


# -- Tensor and Module ---------------------------------------------------------------------------


def test_tensor_methods():
    x = torch.ones(2)
    assert x.cuda().device == NPU0
    assert x.cuda(1).device == torch.device("npu", 1)
    assert x.to("cuda").device == NPU0
    assert x.to(1).device == torch.device("npu", 1)
    assert x.to(device="cuda:1").device == torch.device("npu", 1)
    assert x.to(torch.device("cuda"), torch.float64).dtype == torch.float64
    assert x.cuda().is_cuda and not x.is_cuda
    assert x.new_zeros(2, device="cuda").device == NPU0
    assert x.new_tensor([1.0], device="cuda").device == NPU0


def test_tensor_methods_twin():
    x = torch.ones(2)
    assert x.to(torch.float64).device.type == "cpu"
    assert x.to("cpu").device.type == "cpu"
    assert x.new_zeros(2).device.type == "cpu"
    assert x.cuda().to("cpu").device.type == "cpu"


def test_module_methods():
    assert next(torch.nn.Linear(2, 2).cuda().parameters()).device == NPU0
    assert next(torch.nn.Linear(2, 2).to("cuda:1").parameters()).device == torch.device("npu", 1)
    assert next(torch.nn.Linear(2, 2).to(0).parameters()).device == NPU0
    assert next(torch.nn.Linear(2, 2, device="meta").to_empty(device="cuda").parameters()).device == NPU0
    assert next(torch.nn.Linear(2, 2, device="cuda").parameters()).device == NPU0


def test_module_methods_twin():
    assert next(torch.nn.Linear(2, 2).to(torch.float64).parameters()).device.type == "cpu"
    assert next(torch.nn.Linear(2, 2).to("cpu").parameters()).device.type == "cpu"


# -- torch.cuda ---------------------------------------------------------------------------------


def test_torch_cuda_is_torch_npu():
    assert torch.cuda.is_available() is True
    assert torch.cuda.device_count() == torch.npu.device_count()
    assert torch.cuda.get_device_name("cuda:0") == torch.npu.get_device_name(0)
    assert torch.cuda.memory_allocated("cuda:0") == torch.npu.memory_allocated(0)
    torch.cuda.set_device("cuda:1")
    try:
        assert torch.cuda.current_device() == 1 == torch.npu.current_device()
        with torch.cuda.device("cuda:2"):
            assert torch.npu.current_device() == 2
    finally:
        torch.cuda.set_device(0)
    torch.cuda.manual_seed(5)
    torch.cuda.random.manual_seed_all(5)
    assert torch.cuda.amp.GradScaler is torch.npu.amp.GradScaler
    assert torch.cuda.Stream is torch.npu.Stream
    # torch_npu's own choice, said at the line since the converted copy makes float64 there
    with pytest.warns(RuntimeWarning, match="DoubleTensor makes float32") as record:
        assert torch.cuda.DoubleTensor([1.0]).dtype == torch.float32
    assert record[0].filename == __file__
    assert isinstance(torch.ones(1, device="npu"), torch.cuda.DoubleTensor)
    assert torch.ones(1, device="npu").type(torch.cuda.DoubleTensor).dtype == torch.float32
    assert torch.cuda.current_stream("cuda:0").device == NPU0


def test_torch_cuda_twin():
    # What torch_npu's names do not cover stays torch.cuda's.
    assert torch.cuda.nvtx.__name__ == "torch.cuda.nvtx"
    assert torch.cuda.FloatTensor is torch.npu.FloatTensor
    assert torch.cuda.get_device_name(0) == torch.npu.get_device_name(0)


def test_not_simulated_names_still_say_so():
    with pytest.raises(NotImplementedError, match=r"torch\.npu\.NPUGraph is not simulated"):
        torch.cuda.CUDAGraph()
    with pytest.raises(NotImplementedError, match="not simulated"):
        torch.cuda.memory._record_memory_history()


# -- distributed, jit, profiler -------------------------------------------------------------------


def test_single_process_group_nccl_is_hccl():
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    assert dist.is_nccl_available()
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert dist.get_backend() == "hccl"
        mesh = init_device_mesh("cuda", (1,))
        assert mesh.device_type == "npu"
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda(), device_ids=[0])
        assert model(torch.ones(1, 2).cuda()).device == NPU0
        group = dist.new_group([0], backend="nccl")
        assert dist.get_backend(group) == "hccl"
        assert dist.group.WORLD._get_backend(torch.device("cuda")) is not None
        from torch.distributed.fsdp import FullyShardedDataParallel

        sharded = FullyShardedDataParallel(torch.nn.Linear(2, 2), device_id="cuda:0")
        assert next(sharded.parameters()).device == NPU0
    finally:
        dist.destroy_process_group()


def test_single_process_group_twin():
    import torch.distributed as dist

    dist.init_process_group(
        backend="gloo", store=dist.HashStore(), rank=0, world_size=1, group_name="cuda_group"
    )
    try:
        assert dist.get_backend() == "gloo"
    finally:
        dist.destroy_process_group()


def test_jit_script_returns_its_argument():
    def f(x):
        return x + 1

    with pytest.warns(RuntimeWarning, match=r"torch\.jit\.script\(.*f\) returns it unscripted") as record:
        assert torch.jit.script(f) is f
    assert record[0].filename == __file__
    assert torch.jit.script_method(f) is f
    assert torch.jit.trace(f, torch.ones(1)) is not f  # tracing is not patched


def test_compile_helpers():
    from torch.utils import _triton

    assert _triton.has_triton() is False
    assert torch._utils._get_available_device_type() == "npu"


def test_profiler():
    assert torch.profiler.ProfilerActivity.CUDA.name == "NPU"
    assert torch.profiler.ProfilerActivity.CPU.name == "CPU"  # twin
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    ) as prof:
        torch.ones(2, device="cuda").sum()
    assert prof.key_averages() is not None


def test_extension_include_paths_and_profiler_kernels():
    from torch.autograd.profiler_util import Kernel
    from torch.utils import cpp_extension

    # Stock torch would look for CUDA_HOME; the npu's include paths are the CPU ones.
    assert cpp_extension.include_paths("cuda") == cpp_extension.include_paths("cpu")
    assert Kernel("k", "cuda", 1).device == "npu"
    assert Kernel(name="cuda_kernel", device="cpu", duration=1) == ("cuda_kernel", "cpu", 1)  # twin
