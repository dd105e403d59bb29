"""Cumulative ops (csrc/ops/scan.c) against CPU: cumsum, cumprod, cummax/cummin,
logcumsumexp."""
import pytest
import torch

import torch_tpu
from harness import check, check_reduction_grad as check_grad, ints, x23


NAN = float("nan")


def test_cumsum():
    check_grad(lambda x: (x.cumsum(1), x.cumsum(-1), x.cumsum(0, dtype=torch.float64)), x23())
    check(lambda x: (x.cumsum(0), x.cumsum(1)), ints())
    check(lambda x: x.cumsum(0), torch.tensor([True, False, True]))
    big = torch.randint(-1000, 1000, (2, 300))
    check(lambda x: x.cumsum(1), big)  # long dims take the log-step scan
    check(lambda x: x.cumsum(0), torch.randn(200))
    check(lambda x: x.cumsum(0), x23(torch.float16))


def test_cumsum_inplace():
    def f(x):
        y = x.clone()
        y.cumsum_(1)
        return y
    check(f, torch.randint(0, 5, (2, 3), dtype=torch.int32))


def test_cumprod():
    check(lambda x: (x.cumprod(1), x.cumprod(0)), x23())
    check(lambda x: x.cumprod(1), torch.randint(-3, 4, (2, 5)))


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


def test_logcumsumexp_gradient():
    check(lambda t: torch.logcumsumexp(t, 0), torch.randn(5, 5, 5), grad=True)
    check(lambda t: torch.logcumsumexp(t, 1), torch.randn(3, 40), grad=True)
