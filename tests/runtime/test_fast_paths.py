"""The kernel fast paths: cached CPU views, direct CPU calls, scalars in tensor slots."""

from __future__ import annotations

import gc

import pytest
import torch


def test_cached_views_follow_metadata_changes():
    host = torch.arange(12.0).reshape(3, 4)
    t = host.clone().npu()
    assert (t + 1).cpu().equal(host + 1)  # caches the view of t's geometry
    t.t_()
    assert (t + 1).cpu().equal(host.t() + 1)
    t.unsqueeze_(0)
    assert (t * 2).cpu().equal(host.t().unsqueeze(0) * 2)
    t.squeeze_(0).t_()
    t.resize_(2, 6)
    assert t.cpu().equal(host.reshape(2, 6))
    t.resize_(4, 6)  # grows: new storage, old contents kept
    assert t[:2].cpu().equal(host.reshape(2, 6))
    t.as_strided_((2, 2), (1, 2), 1)
    assert (t + 0).cpu().equal(host.reshape(-1)[:24].as_strided((2, 2), (1, 2), 1))


def test_data_assignment_sharing_the_storage_changes_the_view():
    t = torch.arange(6.0).npu()
    assert (t + 0).cpu().tolist() == [0, 1, 2, 3, 4, 5]
    t.data = t.data[2:].view(2, 2)
    assert (t + 0).cpu().tolist() == [[2, 3], [4, 5]]
    u = torch.arange(4, dtype=torch.int32).npu()
    u.data = torch.zeros(4).npu()
    assert (u + 1).cpu().tolist() == [1.0, 1.0, 1.0, 1.0]


def test_many_views_of_one_storage():
    host = torch.arange(100.0)
    base = host.npu()
    for i in range(60):  # more distinct geometries than the cache keeps
        assert (base[i : i + 3] * 1).cpu().equal(host[i : i + 3])
        assert (base[i::7] + 0).cpu().equal(host[i::7])


def test_python_scalars_in_tensor_positions():
    x = torch.arange(4, dtype=torch.int64).npu()
    assert (x * 3).cpu().tolist() == [0, 3, 6, 9]
    assert (x * 3).dtype == torch.int64
    assert (x * 0.5).dtype == torch.float32
    assert (x.float() + True).cpu().tolist() == [1.0, 2.0, 3.0, 4.0]
    y = torch.ones(3, dtype=torch.float16).npu()
    assert (y * 2.5).dtype == torch.float16
    assert torch.where(x > 1, x, 7).cpu().tolist() == [7, 7, 2, 3]


def test_memory_is_released_with_cached_views():
    gc.collect()
    before = torch.npu.memory_allocated()
    a = torch.randn(64, 64).npu()
    b = a @ a  # output view is cached on its storage
    c = b.t() + 1  # a view's CPU alias is derived from the cached one
    assert torch.npu.memory_allocated() == before + 3 * 64 * 64 * 4
    del b
    assert torch.npu.memory_allocated() == before + 2 * 64 * 64 * 4
    del a, c
    assert torch.npu.memory_allocated() == before


def test_mixed_devices_still_raise():
    a = torch.ones(3).npu()
    with pytest.raises(RuntimeError, match="same device"):
        a + torch.ones(3)
    with pytest.raises(RuntimeError, match="same device"):
        a.add_(torch.ones(3))
    assert (a + torch.tensor(2.0)).cpu().tolist() == [3.0, 3.0, 3.0]
