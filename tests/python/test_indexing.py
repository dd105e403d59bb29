"""Advanced indexing (csrc/ops/indexing.c) against CPU: index, index_put, take, put."""
import pytest
import torch

from harness import check


T = torch.tensor


# ----------------------------------------------------------------- advanced indexing

def index(x, *idx):
    return torch.ops.aten.index.Tensor(x, list(idx))


def test_index_adjacent_and_separated_grad():
    # aten.index.Tensor directly: Python `x[:, i]` passes undefined tensors for
    # the `:` entries, which the shared fallback cannot convert yet (see
    # test_index_python_slice_syntax).
    x = torch.randn(3, 4, 5)
    check(lambda x, i: x[i], x, T([2, -1, 0]), grad=True)
    check(lambda x, i, j: index(x, None, i, j), x, T([[0], [3]]), T([1, -2, 4]), grad=True)  # adjacent
    check(lambda x, i, j: index(x, i, None, j), x, T([0, 2]), T([[4], [0]]), grad=True)      # separated
    check(lambda x, i: index(x, None, i), torch.arange(12).view(3, 4), T([3, 1], dtype=torch.int32))
    check(lambda x, i, j: x[i, j], x, T(1), T([[0, 1]]))


def test_index_python_slice_syntax():
    check(lambda x, i: x[:, i], torch.randn(3, 4), T([3, 1]), grad=True)


def test_index_put_and_accumulate():
    check(lambda x, i, v: x.index_put((i,), v), torch.randn(4, 3), T([3, -4]), torch.randn(3))
    check(lambda x, i, j, v: x.index_put((i, j), v, accumulate=True), torch.randn(4, 3),
          T([0, 0, 2]), T([1, 1, 2]), torch.randn(3), grad=True)
    check(lambda x, i, v: torch.ops.aten.index_put(x, [None, i], v), torch.randn(2, 4), T([3, 0]), torch.randn(2, 1))

    def setitem(x, i):
        y = x.clone()
        y[i] = 7
        return y
    check(setitem, torch.arange(12).view(4, 3), T([1, 3]))


# ----------------------------------------------------------------- dtypes and errors

def test_low_precision_and_integer_dtypes():
    idx = T([0, 2, 0])
    check(lambda x, i, s: x.index_add(0, i, s), torch.randn(3, 2).bfloat16(), idx, torch.randn(3, 2).bfloat16())
    check(lambda x, i: x[i], torch.randn(4).half(), idx)
    check(lambda x, i, s: x.scatter_add(0, i, s), torch.arange(3, dtype=torch.int16), idx,
          torch.arange(3, dtype=torch.int16))
    check(lambda a, b: torch.cat([a, b]), torch.randn(2).half(), torch.arange(2, dtype=torch.uint8))
    check(lambda x: x.flip(0).roll(1).triu(), (torch.rand(3, 3) > 0.5))


def test_user_errors_match_torch():
    x = torch.randn(2, 3).to("tpu")
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        torch.cat([x, torch.randn(2, 2).to("tpu")])
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        torch.ops.aten.index.Tensor(x, [T([0]).to("tpu")] * 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.flip(2)
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        torch.randn(3).to("tpu").triu()


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
