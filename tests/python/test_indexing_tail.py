"""Long-tail indexing and creation ops, compared with CPU PyTorch."""
import pytest
import torch

import torch_tpu
from harness import check


def test_take_and_grad():
    idx = torch.tensor([[0, -1], [5, 3]])
    check(lambda x: torch.take(x, idx.to(x.device)), torch.randn(2, 3), grad=True)


def test_put_accumulate_and_grad():
    idx = torch.tensor([1, -2, 1, 0])
    check(lambda x, s: x.put(idx.to(x.device), s, accumulate=True), torch.randn(2, 3),
          torch.randn(4), grad=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_put_replace(dtype):
    idx = torch.tensor([4, 0, -1])
    x = torch.randn(2, 3).to(dtype)
    s = torch.randn(3).to(dtype)
    check(lambda a, b: a.clone().put_(idx.to(a.device), b), x, s)


def test_index_fill_scalar_and_grad():
    idx = torch.tensor([0, -1])
    check(lambda x: x.index_fill(1, idx.to(x.device), -2.5), torch.randn(3, 4), grad=True)


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.float16])
def test_index_fill_dtypes(dtype):
    idx = torch.tensor([1])
    check(lambda x: x.index_fill(0, idx.to(x.device), 1), torch.randn(3, 2).to(dtype))


def test_index_fill_tensor_value():
    # (the value's own gradient goes through aten::_unique: data-dependent, CPU)
    idx = torch.tensor([2, 0])
    v = torch.tensor(1.5)
    check(lambda x: x.index_fill(0, idx.to(x.device), v.to(x.device)), torch.randn(3, 2), grad=True)


def test_index_copy_and_grad():
    idx = torch.tensor([2, 0])
    check(lambda x, s: x.index_copy(1, idx.to(x.device), s), torch.randn(2, 3),
          torch.randn(2, 2), grad=True)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    idx = torch.tensor([0, 2, 0, 3])
    check(lambda x, s: x.index_reduce(0, idx.to(x.device), s, reduce, include_self=include_self),
          torch.randn(5, 2), torch.randn(4, 2))


@pytest.mark.parametrize("reduce", ["mean", "amax"])
def test_index_reduce_int(reduce):
    idx = torch.tensor([0, 1, 0])
    check(lambda x, s: x.index_reduce(0, idx.to(x.device), s, reduce, include_self=False),
          torch.tensor([[3, -7], [4, 5]]), torch.tensor([[-3, 2], [9, 9], [-4, 1]]))


def test_index_reduce_grad():
    idx = torch.tensor([0, 2, 0])
    check(lambda x, s: x.index_reduce(0, idx.to(x.device), s, "mean"), torch.randn(3, 2),
          torch.randn(3, 2), grad=True)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_exclude_self(reduce):
    idx = torch.tensor([[0, 1, 0], [2, 2, 1]])
    check(lambda x, s: x.scatter_reduce(1, idx.to(x.device), s, reduce, include_self=False),
          torch.randn(2, 4), torch.randn(2, 3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_scatter_reduce_mean(dtype):
    idx = torch.tensor([0, 1, 0, 0, 3])
    x = (torch.randn(4) * 10).to(dtype)
    s = (torch.randn(5) * 10).to(dtype)
    check(lambda a, b: a.scatter_reduce(0, idx.to(a.device), b, "mean"), x, s)


def test_scatter_reduce_mean_grad():
    idx = torch.tensor([0, 1, 0, 0])
    check(lambda a, b: a.scatter_reduce(0, idx.to(a.device), b, "mean", include_self=False),
          torch.randn(3), torch.randn(4), grad=True)


def test_gather_int32_index():
    idx = torch.tensor([[0, 2], [1, 1]], dtype=torch.int32)
    check(lambda x: torch.gather(x, 1, idx.to(x.device)), torch.randn(2, 3))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted(right):
    seq = torch.tensor([1.0, 2.0, 2.0, 4.0])
    vals = torch.tensor([[0.5, 2.0], [4.0, 9.0]])
    check(lambda s, v: torch.searchsorted(s, v, right=right), seq, vals)


def test_searchsorted_nd_sorter_side_int32():
    seq = torch.tensor([[3, 1, 2], [5, 9, 7]])
    sorter = torch.argsort(seq, dim=-1)
    vals = torch.tensor([[2, 0], [7, 10]])
    check(lambda s, v, o: torch.searchsorted(s, v, side="right", sorter=o, out_int32=True),
          seq, vals, sorter)


def test_searchsorted_scalar():
    check(lambda s: torch.searchsorted(s, 3), torch.tensor([1, 2, 3, 4]))
    # A float value against an int sequence compares in the promoted dtype;
    # the lowering declines that mix, so it runs on CPU (values still checked).
    check(lambda s: torch.searchsorted(s, 2.5), torch.tensor([1, 2, 3, 4]), native=False)


def test_bucketize():
    bd = torch.tensor([-1.0, 0.0, 1.0])
    check(lambda x, b: torch.bucketize(x, b, right=True), torch.tensor([[-2.0, 0.0], [0.5, 3.0]]), bd)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_histc(dtype):
    x = torch.tensor([-1.0, 0.0, 0.25, 0.5, 0.99, 1.0, 2.0, 0.3]).to(dtype)
    check(lambda a: torch.histc(a, bins=4, min=0, max=1), x)


def test_histc_data_range():
    check(lambda a: torch.histc(a, bins=5), torch.randn(20))
    check(lambda a: torch.histc(a, bins=3), torch.full((4,), 2.0))


def test_unfold_backward():
    check(lambda x: x.unfold(1, 3, 2), torch.randn(2, 9, 2), grad=True)
    check(lambda x: x.unfold(0, 2, 3), torch.randn(8), grad=True)


@pytest.mark.parametrize("fn", [torch.tril_indices, torch.triu_indices])
def test_tri_indices(fn):
    torch_tpu.debug.reset_fallback_report()
    for row, col, off in [(4, 3, 0), (3, 5, -1), (5, 5, 2), (30, 20, -3)]:
        expected = fn(row, col, off)
        actual = fn(row, col, off, device="tpu")
        assert actual.device.type == "tpu"
        assert torch.equal(actual.cpu(), expected)
    assert not torch_tpu.debug.fallback_report()
