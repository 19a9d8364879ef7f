"""torch.npu / torch_npu.npu API surface of the simulated device."""

from __future__ import annotations

import json

import pytest
import torch

import runtime_shim.npu as npu_api
from runtime_shim.torch_version import data_file


def test_device_management():
    assert torch.npu.is_available() and torch.npu.device_count() == 8
    torch.npu.set_device("npu:1")
    try:
        assert torch.npu.current_device() == 1
        assert torch.zeros(1, device="npu").device == torch.device("npu", 1)
        with torch.npu.device(2):
            assert torch.npu.current_device() == 2
        assert torch.npu.current_device() == 1
    finally:
        torch.npu.set_device(0)
    with pytest.raises(RuntimeError, match="Invalid device id 8"):
        torch.npu.set_device(8)
    torch.npu.synchronize()
    assert "simulated" in torch.npu.get_device_name(0)
    assert torch.npu.get_device_properties(0).total_memory == 64 * 1024**3


def test_cross_device_tensors_are_rejected():
    a = torch.ones(2, device="npu:0")
    b = torch.ones(2, device="npu:1")
    assert b.device == torch.device("npu", 1)
    with pytest.raises(RuntimeError, match="npu:0 and npu:1"):
        a + b
    assert (a + b.to("npu:0")).device.index == 0


def test_streams_and_events():
    s = torch.npu.Stream()
    assert torch.npu.current_stream() == torch.npu.default_stream()
    with torch.npu.stream(s):
        assert torch.npu.current_stream() == s
    assert torch.npu.current_stream() == torch.npu.default_stream()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    torch.ones(100, device="npu").sum()
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0
    with pytest.raises(RuntimeError, match="enable_timing"):
        torch.npu.Event().elapsed_time(torch.npu.Event())


def test_seeding_uses_the_host_generator():
    torch.npu.manual_seed(123)
    a = torch.randn(3, device="npu")
    torch.manual_seed(123)
    b = torch.randn(3)
    assert torch.equal(a.cpu(), b)
    state = torch.npu.get_rng_state()
    x = torch.rand(2, device="npu")
    torch.npu.set_rng_state(state)
    assert torch.equal(torch.rand(2, device="npu").cpu(), x.cpu())


def test_typed_tensors_and_options():
    t = torch.npu.FloatTensor(2, 3)
    assert t.is_npu and t.dtype == torch.float32 and t.shape == (2, 3)
    assert isinstance(t, torch.npu.FloatTensor) and not isinstance(t, torch.npu.HalfTensor)
    assert torch.npu.LongTensor([1, 2]).cpu().tolist() == [1, 2]
    assert torch.npu.LongTensor(2, device=0).device == torch.device("npu", 0)
    if torch.npu.device_count() > 1:
        assert torch.npu.HalfTensor([1.0], device="npu:1").device == torch.device("npu", 1)
    torch.npu.set_option({"ACL_OP_COMPILER_CACHE_MODE": "enable"})
    torch.npu.set_compile_mode(jit_compile=False)
    assert torch.npu.is_jit_compile_false()
    torch.npu.matmul.allow_hf32 = True
    assert torch.npu.matmul.allow_hf32 is True
    torch.npu.matmul.allow_hf32 = False


def test_every_all_name_is_simulated_or_raises_naming_itself():
    data = json.loads(data_file("npu_api_names.json").read_text())
    names = set().union(*data["releases"].values())
    assert set(npu_api.__all__) == names
    for name in names:
        assert hasattr(torch.npu, name), name
    assert "set_dump" in npu_api._NOT_SIMULATED
    with pytest.raises(NotImplementedError, match=r"^torch.npu.set_dump is not simulated by runtime_shim$"):
        torch.npu.set_dump("x.json")
    with pytest.raises(NotImplementedError, match=r"torch\.npu\.NPUGraph is not simulated"):
        torch.npu.NPUGraph()
    for required in (
        "is_available",
        "device_count",
        "current_device",
        "set_device",
        "device",
        "synchronize",
        "Stream",
        "stream",
        "current_stream",
        "default_stream",
        "Event",
        "manual_seed",
        "manual_seed_all",
        "get_device_name",
        "get_device_properties",
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "reset_peak_memory_stats",
        "empty_cache",
        "mem_get_info",
        "set_option",
        "set_compile_mode",
        "FloatTensor",
    ):
        assert required not in npu_api._NOT_SIMULATED, required


def test_set_default_tensor_type_accepts_npu_types() -> None:
    """As with torch_npu: the npu type (or its name) makes float npu tensors the default; a CPU type undoes it."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch deprecates set_default_tensor_type
        try:
            torch.set_default_tensor_type("torch.npu.DoubleTensor")
            made = torch.zeros(1)
            assert made.type() == "torch.npu.DoubleTensor"
            torch.set_default_tensor_type(torch.npu.FloatTensor)
            assert torch.ones(1).type() == "torch.npu.FloatTensor"
            with pytest.raises(TypeError, match="floating-point"):
                torch.set_default_tensor_type("torch.npu.LongTensor")
        finally:
            torch.set_default_tensor_type(torch.FloatTensor)
    assert torch.zeros(1).type() == "torch.FloatTensor"


def test_torch_npu_shows_only_torch_npus_public_names():
    """Every public name of the simulated torch.npu is one of torch_npu's (its `__all__` in a release
    the project ships, or one of its submodules): the runtime's own state, feature modules and the
    typing, json and time it imports would let a script pass here and fail on Ascend."""
    listed = set()
    for names in json.loads(data_file("npu_api_names.json").read_text(encoding="utf-8"))["releases"].values():
        listed.update(names)
    public = {name for name in dir(torch.npu) if not name.startswith("_")}
    assert public - listed == {"amp", "memory", "random", "streams", "utils"}
    for internal in ("STATE", "devices", "rng", "json", "time", "dataclass", "Any", "options", "os"):
        assert not hasattr(torch.npu, internal), internal
    # the twin: what torch_npu lists stays, simulated or saying it is not
    assert callable(torch.npu.synchronize) and torch.npu.memory.memory_allocated() >= 0
    assert listed <= public | set(dir(torch.npu))
