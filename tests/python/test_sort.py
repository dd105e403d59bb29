"""Sorting and order statistics (csrc/ops/reduction_index.c) against CPU: sort,
topk, kthvalue, median, mode."""
import pytest
import torch

from harness import check


NAN = float("nan")


def _ties():
    # rows with repeated values, -0.0/0.0 and NaN
    return torch.tensor([[3.0, 1.0, 2.0, 1.0, NAN, 0.0, -0.0, 2.0],
                         [NAN, 5.0, -1.0, 5.0, NAN, 7.0, -1.0, 4.0]])


@pytest.mark.parametrize("desc", [False, True])
def test_sort_stable_ties_nan(desc):
    check(lambda x: torch.sort(x, dim=1, descending=desc, stable=True), _ties())
    check(lambda x: torch.sort(x, dim=0, descending=desc), torch.randn(5, 3), grad=True)


def test_sort_int_bool_argsort_msort():
    check(lambda x: torch.sort(x, descending=True, stable=True), torch.randint(-3, 3, (3, 9)))
    check(lambda x: torch.sort(x, stable=True), torch.tensor([True, False, True, False]))
    check(lambda x: torch.argsort(x, dim=0, stable=True), torch.randint(0, 3, (7, 2)))
    check(lambda x: torch.msort(x), torch.randn(4, 3).to(torch.bfloat16))


@pytest.mark.parametrize("largest", [True, False])
def test_topk(largest):
    check(lambda x: torch.topk(x, 3, dim=1, largest=largest), torch.randn(3, 6), grad=True)
    check(lambda x: torch.topk(x, 2, largest=largest), torch.tensor([1.0, NAN, 3.0, -2.0]))
    check(lambda x: torch.topk(x, 2, dim=0, largest=largest), torch.randperm(12).reshape(4, 3))


def test_kthvalue():
    check(lambda x: torch.kthvalue(x, 2, dim=1), torch.randn(3, 5), grad=True)
    check(lambda x: torch.kthvalue(x, 3, dim=0, keepdim=True), torch.randperm(15).reshape(5, 3))


def test_median():
    check(lambda x: torch.median(x), torch.randn(4, 5), grad=True)
    check(lambda x: torch.median(x, dim=1), torch.randn(3, 6), grad=True)
    check(lambda x: torch.median(x, dim=0, keepdim=True), torch.randperm(12).reshape(4, 3))
    check(lambda x: torch.median(x, 1), torch.tensor([[1.0, NAN, 2.0, NAN], [4.0, 3.0, 2.0, 1.0]]))
    check(lambda x: torch.median(x), torch.tensor([1.0, NAN, 2.0]))


def test_nanmedian():
    x = torch.tensor([[1.0, NAN, 2.0, 5.0], [NAN, NAN, 3.0, NAN], [4.0, NAN, 2.0, 1.0]])
    # all-NaN rows: CPU picks an nth_element-dependent index (position 0 for rows of <= 3)
    check(lambda x: torch.nanmedian(x, 1), torch.full((2, 3), NAN))
    check(lambda x: torch.nanmedian(x, 1), x)
    check(lambda x: torch.nanmedian(x), x)
    check(lambda x: torch.nanmedian(x, 0), torch.randn(5, 2), grad=True)


def test_mode():
    x = torch.tensor([[1, 2, 2, 3, 3, 0], [5, 5, 5, 1, 1, 1], [4, 3, 2, 1, 0, 9]])
    check(lambda x: torch.mode(x, 1), x)
    check(lambda x: torch.mode(x, 0, keepdim=True), x.float())


@pytest.mark.parametrize("dev", ["cpu", "tpu"])
def test_mode_out_dtypes_checked(dev):
    """mode's values out must have self's dtype and indices int64, as on CPU (issue 20)."""
    x = torch.ones(3, device=dev)
    cases = [((torch.int32, torch.int64), "'Float' but got 'Int' for values"),
             ((torch.float64, torch.int64), "'Float' but got 'Double' for values"),
             ((torch.float32, torch.int32), "'Long' but got 'Int' for indices")]
    for (vd, idt), msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            torch.mode(x, out=(torch.empty((), dtype=vd, device=dev), torch.empty((), dtype=idt, device=dev)))
    check(lambda a: torch.mode(a, out=(torch.empty((), device=a.device),
                                        torch.empty((), dtype=torch.int64, device=a.device))), x.cpu())


# median / nanmedian / mode along a dim of a tensor with another empty dim:
# an empty result (the pick was a gather over an empty batch, which the
# compiler rejects); found by PyTorch's test_reductions
# (test_tensor_compare_ops_empty).
@pytest.mark.parametrize("name", ["median", "nanmedian", "mode"])
@pytest.mark.parametrize("dim, keepdim", [(2, False), (-1, True), (0, False)])
def test_value_pick_along_dim_with_another_empty_dim(name, dim, keepdim):
    x = torch.randn(2, 0, 4)
    want = getattr(torch, name)(x, dim, keepdim)
    got = getattr(torch, name)(x.to("tpu"), dim, keepdim)
    assert got.values.shape == want.values.shape and got.indices.shape == want.indices.shape
    assert got.values.dtype == want.values.dtype and got.indices.dtype == torch.int64
    # and the next op reading a result still runs (the program is valid)
    assert torch.equal((got.values.sum() + 1).cpu(), (want.values.sum() + 1))
