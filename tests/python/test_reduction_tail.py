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


def test_nansum_nanmean():
    x = torch.tensor([[1.0, NAN, 2.0], [NAN, NAN, 3.0]])
    check(lambda x: torch.nansum(x), x)
    check(lambda x: torch.nansum(x, dim=1, keepdim=True), x, grad=True)
    check(lambda x: torch.nanmean(x, dim=0), x)
    check(lambda x: torch.nansum(x, 0), torch.arange(6).reshape(2, 3))
    check(lambda x: torch.nansum(x, dtype=torch.float32), torch.randn(4, 5).to(torch.bfloat16))


def test_count_nonzero():
    x = torch.tensor([[0.0, 1.0, NAN], [0.0, 0.0, -2.0]])
    check(lambda x: torch.count_nonzero(x), x)
    check(lambda x: torch.count_nonzero(x, dim=1), x)
    check(lambda x: torch.count_nonzero(x, dim=(0, 1)), torch.tensor([[True, False], [True, True]]))


def test_aminmax():
    check(lambda x: torch.aminmax(x), torch.randn(3, 4))
    check(lambda x: torch.aminmax(x, dim=0, keepdim=True), torch.randint(-5, 5, (3, 4)))
    check(lambda x: torch.aminmax(x, dim=1), torch.tensor([[1.0, NAN], [2.0, 3.0]]))


@pytest.mark.parametrize("fn", [torch.cummax, torch.cummin])
def test_cummax_cummin(fn):
    check(lambda x: fn(x, 1), torch.tensor([[1.0, 3.0, 3.0, NAN, 5.0, NAN, 0.0], [2.0, 1.0, 2.0, 0.0, 2.0, 1.0, 1.0]]))
    check(lambda x: fn(x, 0), torch.randint(0, 3, (9, 2)))
    check(lambda x: fn(x, 0), torch.randn(6, 3), grad=True)


def test_logcumsumexp():
    check(lambda x: torch.logcumsumexp(x, 1), torch.randn(3, 9), grad=True)
    check(lambda x: torch.logcumsumexp(x, 0),
          torch.tensor([[-float("inf"), 1.0], [-float("inf"), float("inf")], [2.0, NAN]]))
    check(lambda x: torch.logcumsumexp(x, 0), torch.randn(5).to(torch.bfloat16))


def test_renorm():
    x = torch.randn(4, 3) * 3
    check(lambda x: torch.renorm(x, 2, 0, 1.5), x, grad=True)
    check(lambda x: torch.renorm(x, 1, 1, 2.0), x)
    check(lambda x: x.clone().renorm_(float("inf"), 0, 1.0), x)


def test_dist():
    check(lambda x, y: torch.dist(x, y), torch.randn(3, 4), torch.randn(4), grad=True)
    check(lambda x, y: torch.dist(x, y, 3), torch.randn(3, 4), torch.randn(3, 4))
    check(lambda x, y: torch.dist(x, y, float("inf")), torch.randn(5), torch.randn(5))


def test_sum_prod_bool_dtype():
    x = torch.tensor([[True, False, True], [True, True, True]])
    check(lambda x: torch.prod(x, 1, dtype=torch.bool), x)
    check(lambda x: torch.sum(x, 0, dtype=torch.bool), x)
    check(lambda x: torch.prod(x, 1), x)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize(right):
    bd = torch.tensor([1.0, 2.0, 2.0, 3.0, 5.0, NAN])
    v = torch.tensor([[0.0, 2.0, 2.5], [5.0, 9.0, NAN]])
    check(lambda s, x: torch.searchsorted(s, x, right=right), bd, v)
    check(lambda s, x: torch.searchsorted(s, x, side="right" if right else "left", out_int32=True),
          torch.sort(torch.randn(2, 7), dim=1)[0], torch.randn(2, 4))
    check(lambda s: torch.searchsorted(s, 2, right=right), torch.arange(5))
    check(lambda x, s: torch.bucketize(x, s, right=right), v, bd)


def test_searchsorted_sorter():
    seq = torch.tensor([[3.0, 1.0, 2.0, 5.0], [0.0, -1.0, 4.0, 2.0]])
    sorter = torch.argsort(seq, dim=1)
    check(lambda s, x, o: torch.searchsorted(s, x, sorter=o), seq, torch.randn(2, 3) * 3, sorter)
