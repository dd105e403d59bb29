import pytest
import torch
import torch.nn.functional as F

from harness import check

T = torch.tensor


# ----------------------------------------------------------------- cat / stack

def test_cat_dims_promotion_and_legacy_empty():
    check(lambda a, b: torch.cat([a, b], 1), torch.randn(2, 3), torch.randn(2, 2), grad=True)
    check(lambda a, b, e: torch.cat([a, e, b]), torch.arange(4).view(2, 2),
          torch.randn(1, 2, dtype=torch.float64), torch.tensor([]))
    check(lambda a, b: torch.cat([a, b], -1), torch.rand(2, 2) > 0.5, torch.rand(2, 1) > 0.5)


def test_cat_out():
    def f(a, b):
        out = torch.empty(0, device=a.device)
        torch.cat([a, b], dim=0, out=out)
        return out
    check(f, torch.randn(2, 3), torch.randn(1, 3))


def test_stack_grad():
    check(lambda a, b: torch.stack([a, b], 1), torch.randn(2, 3), torch.randn(2, 3), grad=True)


# ----------------------------------------------------------------- index_select / index_add

def test_index_select_grad():
    check(lambda x, i: x.index_select(1, i), torch.randn(3, 4), T([3, 0, 3]), grad=True)
    check(lambda x, i: x.index_select(0, i), torch.arange(6).view(3, 2), T([2, 0], dtype=torch.int32))


def test_index_add_alpha_grad():
    check(lambda x, i, s: x.index_add(0, i, s, alpha=2), torch.randn(4, 3), T([0, 2, 0]),
          torch.randn(3, 3), grad=True)
    check(lambda x, i, s: x.index_add_(1, i, s), torch.arange(6).view(2, 3), T([2, 2]),
          torch.arange(4).view(2, 2))


# ----------------------------------------------------------------- gather / scatter

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


# ----------------------------------------------------------------- masks, triangles

def test_masked_fill_scalar_tensor_broadcast():
    m = T([True, False, True])
    check(lambda x, m: x.masked_fill(m, -1.5), torch.randn(2, 3), m, grad=True)
    check(lambda x, m: x.masked_fill(m, torch.tensor(3)), torch.arange(6).view(2, 3), m)
    check(lambda x, m, v: x.clone().masked_fill_(m, v), torch.randn(2, 3), m, torch.tensor(2.5))


def test_triu_tril():
    check(lambda x: x.triu(1), torch.randn(2, 3, 4), grad=True)
    check(lambda x: x.tril(-1), torch.randn(4, 3), grad=True)
    check(lambda x: torch.tril(x), torch.arange(9).view(3, 3))


# ----------------------------------------------------------------- flip, roll, repeat, pad

def test_flip_roll_grad():
    check(lambda x: x.flip(0, -1), torch.randn(2, 3, 4), grad=True)
    check(lambda x: x.roll((1, -3), (1, 0)), torch.randn(2, 3), grad=True)
    check(lambda x: x.roll(4), torch.arange(6).view(2, 3))


def test_repeat():
    check(lambda x: x.repeat(2, 1, 3), torch.randn(2, 3))
    # backward is sum.dim_IntList (reduction family): compare values only
    check(lambda x: x.repeat(1, 2), torch.randn(2, 3), grad=True, native=False)


def test_constant_pad_grad():
    check(lambda x: F.pad(x, (1, -1, 2, 0), value=0.5), torch.randn(2, 3), grad=True)
    check(lambda x: F.pad(x, (0, 2)), torch.arange(3))


# ----------------------------------------------------------------- slices and their backward

def test_slice_select_diagonal_backward():
    check(lambda x: x[1:4:2], torch.randn(5, 3), grad=True)
    check(lambda x: x[:, 0], torch.randn(5, 3), grad=True)
    check(lambda x: x.diagonal(1), torch.randn(3, 3), grad=True)


def test_narrow_copy_and_scatters():
    check(lambda x: torch.narrow_copy(x, 1, 1, 2), torch.randn(2, 4))
    check(lambda x, s: torch.slice_scatter(x, s, 0, 1, None, 2), torch.randn(5, 3), torch.randn(2, 3),
          grad=True)
    check(lambda x, s: torch.select_scatter(x, s, 0, 2), torch.randn(3, 2), torch.randn(2), grad=True)
    check(lambda x, s: torch.select_scatter(x, s, 1, -1), torch.arange(6).view(3, 2), T([7, 8, 9]))


def test_diagonal_scatter():
    check(lambda x, s: torch.diagonal_scatter(x, s, 1), torch.randn(3, 4), torch.randn(3), grad=True)
    check(lambda x, s: torch.diagonal_scatter(x, s, -1, 0, 2), torch.randn(3, 2, 4), torch.randn(2, 2))


def test_masked_scatter():
    m = T([[True, False, True], [False, True, True]])
    check(lambda x, m, s: x.masked_scatter(m, s), torch.randn(2, 3), m, torch.randn(5))
    check(lambda x, m, s: x.clone().masked_scatter_(m, s), torch.arange(6).view(2, 3), T([False, True, True]),
          torch.arange(10, 20).view(2, 5))


def test_scatter_reduce_two():
    idx = T([0, 2, 0, 2])
    for r in ("sum", "prod", "amax", "amin"):
        check(lambda x, i, s: x.scatter_reduce(0, i, s, r), torch.randn(3), idx, torch.randn(4))


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
