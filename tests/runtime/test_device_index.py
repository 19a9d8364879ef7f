"""Every torch.npu function that takes a device takes it in each form torch.cuda's take
(torch/cuda/_utils.py ``_get_device_index``): an index, "npu:N", torch.device, a
``torch.npu.device`` context object, and None or an index-less device for the current one;
negative and out-of-range indices fail (or do nothing) as torch_npu's do."""

from __future__ import annotations

import pytest
import torch

#: device forms of index i
FORMS = {
    "int": lambda i: i,
    "str": lambda i: f"npu:{i}",
    "torch.device": lambda i: torch.device("npu", i),
    "context object": lambda i: torch.npu.device(i),
}
#: forms that name the current device
CURRENT_FORMS = {"None": None, "'npu'": "npu", "torch.device('npu')": torch.device("npu")}


def _in_context(device):
    with torch.npu.device(device):
        return torch.npu.current_device()


def _set_device(device):
    torch.npu.set_device(device)
    return torch.npu.current_device()


def _peak_reset(reset):
    def entry(device):
        for index in (1, 2):
            torch.empty(4096, device=torch.device("npu", index))  # raises both peaks above what is held
        reset(device)
        return torch.npu.max_memory_allocated(1), torch.npu.max_memory_allocated(2)

    return entry


#: entry point -> a function of the device whose result tells which device was meant
ENTRY_POINTS = {
    "set_device": _set_device,
    "device": _in_context,
    "synchronize": torch.npu.synchronize,
    "get_device_name": torch.npu.get_device_name,
    "get_device_properties": lambda d: repr(torch.npu.get_device_properties(d)),
    "get_device_capability": torch.npu.get_device_capability,
    "can_device_access_peer": lambda d: torch.npu.can_device_access_peer(d, d),
    "memory_allocated": torch.npu.memory_allocated,
    "max_memory_allocated": torch.npu.max_memory_allocated,
    "memory_reserved": torch.npu.memory_reserved,
    "max_memory_reserved": torch.npu.max_memory_reserved,
    "memory_cached": torch.npu.memory_cached,
    "max_memory_cached": torch.npu.max_memory_cached,
    "memory_stats": torch.npu.memory_stats,
    "memory_stats_as_nested_dict": torch.npu.memory_stats_as_nested_dict,
    "memory_summary": torch.npu.memory_summary,
    "mem_get_info": torch.npu.mem_get_info,
    "get_per_process_memory_fraction": torch.npu.get_per_process_memory_fraction,
    "set_per_process_memory_fraction": lambda d: torch.npu.set_per_process_memory_fraction(1.0, d),
    "reset_peak_memory_stats": _peak_reset(torch.npu.reset_peak_memory_stats),
    "reset_max_memory_allocated": _peak_reset(torch.npu.reset_max_memory_allocated),
    "reset_max_memory_cached": _peak_reset(torch.npu.reset_max_memory_cached),
    "reset_accumulated_memory_stats": torch.npu.reset_accumulated_memory_stats,
    "Stream": lambda d: torch.npu.Stream(device=d).device,
    "current_stream": lambda d: torch.npu.current_stream(d).device,
    "default_stream": lambda d: torch.npu.default_stream(d),
    "get_rng_state": lambda d: torch.npu.get_rng_state(d).shape,
    "set_rng_state": lambda d: torch.npu.set_rng_state(torch.npu.get_rng_state(), d),
    "utils.current_stream": lambda d: torch.npu.utils.current_stream(d).device,
    "storage.npu": lambda d: torch.empty(1).untyped_storage().npu(d).device,
}
#: entry points whose result differs between devices 1 and 2 in the fixture below
DISTINGUISHING = (
    "set_device",
    "device",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "memory_stats",
    "mem_get_info",
    "reset_peak_memory_stats",
    "Stream",
    "current_stream",
    "default_stream",
    "utils.current_stream",
    "storage.npu",
)


@pytest.fixture
def two_devices_in_use():
    """Devices 1 and 2 hold different amounts; device 0 is current before and after each test."""
    torch.npu.set_device(0)
    held = [torch.empty(256, device="npu:1"), torch.empty(1024, device="npu:2")]
    yield held
    del held
    torch.npu.set_device(0)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_each_device_form_names_the_same_device_as_its_index(two_devices_in_use, entry, form):
    call = ENTRY_POINTS[entry]
    for index in (1, 2):
        expected = call(index)
        torch.npu.set_device(0)
        assert call(FORMS[form](index)) == expected, (entry, form, index)
        torch.npu.set_device(0)


@pytest.mark.parametrize("entry", DISTINGUISHING)
def test_the_distinguishing_entry_points_do_tell_devices_apart(two_devices_in_use, entry):
    call = ENTRY_POINTS[entry]
    first = call(1)
    torch.npu.set_device(0)
    assert first != call(2)


@pytest.mark.parametrize("form", CURRENT_FORMS)
@pytest.mark.parametrize(
    "entry", [e for e in ENTRY_POINTS if e not in ("set_device", "can_device_access_peer")]
)
def test_the_current_device_forms_name_the_current_device(two_devices_in_use, entry, form):
    call = ENTRY_POINTS[entry]
    expected = call(2)
    torch.npu.set_device(2)
    assert call(CURRENT_FORMS[form]) == expected


def test_set_device_to_a_context_object_is_what_the_report_ran():
    torch.npu.set_device(torch.npu.device(1))
    try:
        assert torch.npu.current_device() == 1
        with torch.npu.device(torch.npu.device(3)):
            assert torch.npu.current_device() == 3
        torch.npu.set_device(torch.npu.device_of(torch.empty(1, device="npu:2")))
        assert torch.npu.current_device() == 2
    finally:
        torch.npu.set_device(0)


_PROPERTY_ENTRIES = (
    "get_device_name",
    "get_device_properties",
    "get_device_capability",
    "can_device_access_peer",
)
_NO_OP_ON_NEGATIVE = ("set_device", "device", "synchronize")
_CURRENT_ON_MINUS_ONE = ("Stream", "current_stream", "default_stream", "utils.current_stream")


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("bad", [99, "npu:99", torch.device("npu", 99)], ids=["int", "str", "torch.device"])
def test_an_out_of_range_device_is_refused(two_devices_in_use, entry, bad):
    if entry in _PROPERTY_ENTRIES:
        with pytest.raises(AssertionError, match=r"^Invalid device id$"):
            ENTRY_POINTS[entry](bad)
    else:
        with pytest.raises(RuntimeError, match=r"^Invalid device id 99: the simulated NPU has 8 devices"):
            ENTRY_POINTS[entry](bad)
    assert torch.npu.current_device() == 0


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_negative_index_does_what_torch_does(two_devices_in_use, entry):
    call = ENTRY_POINTS[entry]
    if entry in _NO_OP_ON_NEGATIVE:
        torch.npu.set_device(1)
        assert call(-1) in (None, 1)
        assert torch.npu.current_device() == 1
    elif entry in _CURRENT_ON_MINUS_ONE:
        torch.npu.set_device(2)
        assert call(-1) == torch.device("npu", 2) or call(-1).device == torch.device("npu", 2)
    elif entry in _PROPERTY_ENTRIES:
        with pytest.raises(AssertionError, match=r"^Invalid device id$"):
            call(-1)
    else:
        with pytest.raises(RuntimeError, match=r"^Invalid device id -1"):
            call(-1)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_device_of_another_type_is_refused(entry):
    for other in ("cpu", torch.device("cpu"), "cuda:0"):
        with pytest.raises(ValueError, match=r"^Expected a npu device, but got: c"):
            ENTRY_POINTS[entry](other)
    with pytest.raises(TypeError, match=r"^Expected an npu device .* but got: 1\.5$"):
        ENTRY_POINTS[entry](1.5)


def test_a_peer_out_of_range_is_named():
    with pytest.raises(AssertionError, match=r"^Invalid peer device id$"):
        torch.npu.can_device_access_peer(0, 8)
    assert torch.npu.can_device_access_peer(torch.npu.device(0), "npu:7")
