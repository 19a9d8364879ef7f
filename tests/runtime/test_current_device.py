"""The current npu device: one per thread, the same for torch.npu, torch.accelerator and the guard.

On CUDA and in torch_npu the current device belongs to the calling thread (a new thread starts on
device 0), and PyTorch's own code reads it through torch.accelerator and the device guard: the
DataLoader's pin-memory thread sets the device the main thread had, the autograd engine's device
threads set theirs. Every way of setting it is checked against every way of reading it.
"""

from __future__ import annotations

import contextlib
import threading

import pytest
import torch

from runtime_shim.runtime.state import STATE


def _setters():
    """(name, function(index) -> context manager or None): every way a script makes a device current."""

    def stream_of(i):
        return torch.npu.stream(torch.npu.Stream(device=i))

    return [
        ("torch.npu.set_device(int)", lambda i: torch.npu.set_device(i)),
        ("torch.npu.set_device(str)", lambda i: torch.npu.set_device(f"npu:{i}")),
        ("torch.npu.set_device(device)", lambda i: torch.npu.set_device(torch.device("npu", i))),
        ("torch.accelerator.set_device_index", lambda i: torch.accelerator.set_device_index(i)),
        ("with torch.npu.device", lambda i: torch.npu.device(i)),
        ("with torch.npu.device_of", lambda i: torch.npu.device_of(torch.zeros(1, device=f"npu:{i}"))),
        ("with torch.accelerator.device_index", lambda i: torch.accelerator.device_index(i)),
        ("with torch.npu.stream", stream_of),
    ]


def _readings():
    """What every reader of the current device answers, in the calling thread."""
    return {
        "torch.npu.current_device()": torch.npu.current_device(),
        "torch.accelerator.current_device_index()": torch.accelerator.current_device_index(),
        'torch.empty(device="npu")': torch.empty(1, device="npu").get_device(),
        'Tensor.to("npu")': torch.zeros(1).to("npu").get_device(),
        "Tensor.npu()": torch.zeros(1).npu().get_device(),
        "torch.accelerator.current_stream()": torch.accelerator.current_stream().device_index,
        "torch.npu.current_stream()": torch.npu.current_stream().device.index,
    }


@pytest.fixture(autouse=True)
def _back_on_device_0():
    torch.npu.set_device(0)
    yield
    torch.npu.set_device(0)


@pytest.mark.parametrize("name, setter", _setters(), ids=[name for name, _ in _setters()])
def test_every_reader_sees_the_device_every_setter_sets(name, setter):
    context = setter(2)
    if context is None:
        assert set(_readings().values()) == {2}, _readings()
        return
    with context:
        assert set(_readings().values()) == {2}, _readings()
    assert set(_readings().values()) == {0}, _readings()  # the context gives the device back


@pytest.mark.parametrize("name, setter", _setters(), ids=[name for name, _ in _setters()])
def test_a_thread_starts_on_device_0_and_its_device_stays_its_own(name, setter):
    torch.npu.set_device(1)
    seen = {}

    def worker():
        seen["start"] = _readings()
        context = setter(3)
        with context or contextlib.nullcontext():
            seen["set"] = _readings()
            inside.set()
            checked.wait(10)  # the main thread reads its device while this thread's is set

    inside, checked = threading.Event(), threading.Event()
    thread = threading.Thread(target=worker)
    thread.start()
    if inside.wait(10):
        seen["main while set"] = _readings()
    checked.set()
    thread.join(30)
    assert set(seen["start"].values()) == {0}, seen["start"]
    assert set(seen["set"].values()) == {3}, seen["set"]
    assert set(seen["main while set"].values()) == {1}, seen["main while set"]
    assert set(_readings().values()) == {1}, _readings()  # the main thread's device did not move


def test_contexts_in_two_threads_at_once_keep_their_own_device():
    inside = threading.Barrier(2, timeout=10)
    seen = {}

    def worker(index):
        with torch.npu.device(index):
            inside.wait()  # both threads inside their contexts
            seen[index] = _readings()
            inside.wait()
        seen[f"{index} after"] = torch.npu.current_device()

    threads = [threading.Thread(target=worker, args=(i,)) for i in (4, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert set(seen[4].values()) == {4} and set(seen[5].values()) == {5}, seen
    assert (seen["4 after"], seen["5 after"], torch.npu.current_device()) == (0, 0, 0)


def test_an_explicit_index_wins_over_the_current_device():
    # the must-not-change twin: a named device is that device whatever is current
    with torch.npu.device(2):
        assert torch.zeros(1, device="npu:1").get_device() == 1
        assert torch.zeros(1).to("npu:0").get_device() == 0
        assert torch.zeros(1).npu(3).get_device() == 3
        assert torch.zeros(1, device="cpu").device.type == "cpu"


@pytest.mark.parametrize("device", ["npu:0", "npu:1", "npu:3"])
def test_backward_in_a_thread_on_any_device_matches_the_cpu(device):
    # The autograd engine runs a thread's npu backward on its device thread for that device
    # (a thread of its own per device, as for CUDA); the guard must report every device.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    twin = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    twin.load_state_dict(model.state_dict())
    twin.to(device)
    x = torch.randn(5, 4)
    model(x).pow(2).sum().backward()
    seen = {}

    def hook(grad):
        seen["hook device"] = torch.npu.current_device()

    def worker():
        hidden = twin[1](twin[0](x.to(device)))
        hidden.register_hook(hook)
        twin[2](hidden).pow(2).sum().backward()
        seen["after"] = torch.npu.current_device()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(60)
    for a, b in zip(model.parameters(), twin.parameters(), strict=True):
        assert b.grad.device == torch.device(device) and torch.equal(a.grad, b.grad.cpu())
    index = torch.device(device).index
    # as on CUDA: a hook runs on the engine's thread for its device, the caller's device is kept
    assert seen == {"hook device": index, "after": 0}


def test_the_dataloader_pin_thread_keeps_the_main_threads_device():
    # DataLoader's pin-memory thread sets the device torch.accelerator reported when the iterator
    # was made; that must neither be device 0 nor move the main thread's device.
    data = torch.utils.data.TensorDataset(torch.arange(8.0).reshape(4, 2))
    torch.npu.set_device(2)
    loader = torch.utils.data.DataLoader(data, batch_size=2, pin_memory=True, num_workers=1)
    batches = []
    for (batch,) in loader:
        assert torch.npu.current_device() == 2
        batches.append((batch.is_pinned(), batch.npu().get_device()))
    assert batches == [(True, 2), (True, 2)]
    assert torch.accelerator.current_device_index() == 2


def test_an_invalid_index_is_refused_by_every_setter():
    for setter in (torch.npu.set_device, torch.accelerator.set_device_index):
        with pytest.raises(
            RuntimeError, match=f"Invalid device id 99: the simulated NPU has {STATE.device_count}"
        ):
            setter(99)
    assert torch.npu.current_device() == torch.accelerator.current_device_index() == 0
