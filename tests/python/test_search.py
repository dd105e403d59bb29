"""Searching (csrc/ops/search.c) against CPU: searchsorted, bucketize, isin."""
import pytest
import torch

from harness import check


NAN = float("nan")


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


def test_searchsorted_empty():
    check(lambda s, v: torch.searchsorted(s, v), torch.zeros(0), torch.zeros(0))
    check(lambda s, v: torch.searchsorted(s, v, right=True), torch.zeros(0), torch.randn(4))
    check(lambda v, s: torch.bucketize(v, s), torch.tensor(1.5), torch.zeros(0))


def test_isin():
    e, t = torch.randint(0, 10, (4, 5)), torch.randint(0, 10, (7,))
    check(lambda a, b: torch.isin(a, b), e, t)
    check(lambda a, b: torch.isin(a, b, invert=True), e, t)
    check(lambda a: torch.isin(a, 3), e)
    x = torch.tensor([1.0, float("nan"), 2.5, -0.0])
    check(lambda a, b: torch.isin(a, b), x, torch.tensor([0.0, float("nan"), 2.5]))


@pytest.mark.parametrize("dev", ["cpu", "tpu"])
def test_bucketize_searchsorted_out_dtype_checked(dev):
    """out= must be int64, or int32 with out_int32=True, as on CPU (issue 20)."""
    b, x = torch.tensor([1.0, 2.0, 3.0], device=dev), torch.tensor([0.5, 2.5], device=dev)
    bad = [(torch.int32, False), (torch.float32, True), (torch.int64, True)]
    for dt, i32 in bad:
        for f in (lambda o: torch.bucketize(x, b, out_int32=i32, out=o),
                  lambda o: torch.searchsorted(b, x, out_int32=i32, out=o)):
            with pytest.raises(RuntimeError, match="output tensor's dtype is wrong"):
                f(torch.empty(2, dtype=dt, device=dev))
    check(lambda s, v: (torch.bucketize(v, s, out_int32=True, out=torch.empty(2, dtype=torch.int32, device=v.device)),
                        torch.searchsorted(s, v, out=torch.empty(2, dtype=torch.int64, device=v.device))),
          b.cpu(), x.cpu())
