"""Gather/scatter family (csrc/ops/scatter.c) against CPU: gather, scatter*,
index_select/add/copy/fill/reduce."""
import pytest
import torch
import torch.nn.functional as F

from harness import check


T = torch.tensor


def test_index_select_grad():
    check(lambda x, i: x.index_select(1, i), torch.randn(3, 4), T([3, 0, 3]), grad=True)
    check(lambda x, i: x.index_select(0, i), torch.arange(6).view(3, 2), T([2, 0], dtype=torch.int32))


def test_index_add_alpha_grad():
    check(lambda x, i, s: x.index_add(0, i, s, alpha=2), torch.randn(4, 3), T([0, 2, 0]),
          torch.randn(3, 3), grad=True)
    check(lambda x, i, s: x.index_add_(1, i, s), torch.arange(6).view(2, 3), T([2, 2]),
          torch.arange(4).view(2, 2))


def test_gather_grad():
    check(lambda x, i: x.gather(1, i), torch.randn(3, 4), T([[0, 3], [1, 1], [2, 0]]), grad=True)
    check(lambda x, i: torch.gather(x, 0, i), torch.arange(6).view(3, 2), T([[2, 0]]))


def test_scatter_src_value_grad():
    idx = T([[0, 2], [1, 0]])
    check(lambda x, i, s: x.scatter(1, i, s), torch.randn(2, 4), idx, torch.randn(2, 2), grad=True)
    check(lambda x, i, s: x.scatter(0, i, s), torch.randn(3, 4), idx, torch.randn(3, 3))
    check(lambda x, i: x.scatter(1, i, 5.0), torch.randn(2, 4), idx, grad=True)
    check(lambda x, i: x.clone().scatter_(1, i, -1), torch.arange(8).view(2, 4), idx)


def test_scatter_add_and_reduce():
    idx = T([[0, 0, 1], [2, 2, 2]])
    check(lambda x, i, s: x.scatter_add(1, i, s), torch.randn(2, 3), idx, torch.randn(2, 3), grad=True)
    check(lambda x, i, s: x.clone().scatter_add_(1, i, s), torch.arange(6).view(2, 3), idx,
          torch.arange(6).view(2, 3))
    check(lambda x, i, s: x.scatter(1, i, s, reduce="multiply"), torch.randn(2, 3), idx, torch.randn(2, 3))
    check(lambda x, i: x.scatter(1, i, 2.0, reduce="add"), torch.randn(2, 3), idx)


def test_one_hot():
    check(lambda i: F.one_hot(i, 4), T([0, 3, 1]))


def test_scatter_reduce_two():
    idx = T([0, 2, 0, 2])
    for r in ("sum", "prod", "amax", "amin"):
        check(lambda x, i, s: x.scatter_reduce(0, i, s, r), torch.randn(3), idx, torch.randn(4))


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


def test_index_ops_on_scalar_self():
    s, i, v = torch.tensor(2.5), torch.tensor([0]), torch.tensor(-1.5)
    check(lambda a, j: torch.index_select(a, 0, j), s, i)
    check(lambda a, j, b: torch.index_add(a, 0, j, b, alpha=-2), s, i, v)
    check(lambda a, j, b: torch.index_copy(a, 0, j, b), s, i, v)
    for reduce in ("prod", "mean", "amax", "amin"):
        for inc in (True, False):
            check(lambda a, j, b: torch.index_reduce(a, 0, j, b, reduce, include_self=inc), s, i, v)
    check(lambda a, j, b: torch.index_reduce(a, 0, j, b, "mean"), torch.tensor(7), i, torch.tensor(2))
