"""The in-memory compilation cache: one compile per distinct op signature."""
import torch

import pytest

import torch_tpu


@pytest.fixture(autouse=True)
def _strict_mode():
    # these tests count per-op cache lookups, which is what Strict eager does
    with torch_tpu.eager_mode("strict"):
        yield


def test_cache_hits_for_repeated_ops_and_new_scalar_values():
    x = torch.randn(7, 3).to("tpu")
    x + 1.0  # warm
    s0 = torch_tpu.cache_stats()
    for v in (2.0, 3.0, 4.5):
        x + v
    s1 = torch_tpu.cache_stats()
    assert s1["misses"] == s0["misses"], "a new scalar value must not recompile"
    assert s1["hits"] >= s0["hits"] + 3
    assert s1["requests"] == s1["hits"] + s1["misses"]


def test_new_shape_compiles_once():
    s0 = torch_tpu.cache_stats()
    y = torch.randn(11, 13).to("tpu")
    y * y
    y * y
    s1 = torch_tpu.cache_stats()
    assert s1["misses"] - s0["misses"] >= 1
    assert s1["entries"] > s0["entries"] - 1
    assert s1["compile_seconds"] >= s0["compile_seconds"]
    assert set(s1) >= {"requests", "hits", "misses", "compile_seconds"}
