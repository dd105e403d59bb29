"""Buffers are freed when the last tensor dies; stats track peaks."""
import gc

import torch


def test_memory_returns_to_baseline():
    gc.collect()
    base = torch.tpu.memory_allocated()
    x = torch.ones(1000).to("tpu")
    y = x * 3
    assert torch.tpu.memory_allocated() == base + 8000
    del x, y
    gc.collect()
    assert torch.tpu.memory_allocated() == base


def test_views_keep_storage_alive():
    base = torch.tpu.memory_allocated()
    x = torch.ones(256).to("tpu")
    v = x[10:20]
    del x
    assert torch.tpu.memory_allocated() == base + 1024
    assert torch.equal(v.cpu(), torch.ones(10))
    del v
    assert torch.tpu.memory_allocated() == base


def test_peak_memory():
    torch.tpu.reset_peak_memory_stats()
    base = torch.tpu.memory_allocated()
    x = torch.ones(2048).to("tpu")
    del x
    assert torch.tpu.max_memory_allocated() >= base + 8192
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == torch.tpu.memory_allocated()
