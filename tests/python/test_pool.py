"""Pooling (csrc/ops/pool.c, csrc/ops/nn_pool.c) against CPU: max/avg/adaptive,
1-d to 3-d, unpool."""
import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from harness import check, check_linalg_family as check_mine


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, ceil_mode=True),
                                dict(kernel_size=(2, 3), stride=1, dilation=(2, 1), padding=1)])
def test_max_pool2d_grad(kw):
    check_mine(lambda x: F.max_pool2d(x, return_indices=True, **kw), torch.randn(2, 3, 7, 8),
               grad=True)


def test_max_pool2d_unbatched_ties_int():
    check_mine(lambda x: F.max_pool2d(x, 2, return_indices=True), torch.randn(3, 6, 6))
    check_mine(lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True),
               torch.randint(-3, 3, (1, 2, 5, 5)))
    x = torch.randn(1, 1, 4, 4)
    x[0, 0, 1, 1] = float("nan")
    check_mine(lambda x: F.max_pool2d(x, 2, return_indices=True), x)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=3, stride=2, ceil_mode=True, padding=1),
                                dict(kernel_size=(3, 2), stride=(1, 2), divisor_override=5)])
def test_avg_pool2d_grad(kw):
    check_mine(lambda x: F.avg_pool2d(x, **kw), torch.randn(2, 3, 7, 8), grad=True)


def test_avg_pool2d_bf16_int():
    check_mine(lambda x: F.avg_pool2d(x, 2), torch.randn(1, 2, 6, 6).bfloat16(), grad=True)
    check_mine(lambda x: F.avg_pool2d(x, 3, 2, 1), torch.randint(-9, 9, (1, 2, 6, 6)))


@pytest.mark.parametrize("shape,out", [((2, 3, 8, 6), (4, 3)), ((2, 3, 7, 5), (3, 2)),
                                        ((3, 9, 10), (4, 7)), ((1, 2, 5, 5), 1)])
def test_adaptive_avg_pool2d_grad(shape, out):
    check_mine(lambda x: F.adaptive_avg_pool2d(x, out), torch.randn(*shape), grad=True)


@pytest.mark.parametrize("shape,out", [((2, 3, 7, 5), (3, 2)), ((3, 6, 6), (4, 6)),
                                       ((1, 2, 5, 5), (1, 1))])
def test_adaptive_max_pool2d_grad(shape, out):
    check(lambda x: F.adaptive_max_pool2d(x, out, return_indices=True), torch.randn(*shape),
          grad=True)


def test_adaptive_max_pool1d_nan():
    x = torch.randn(2, 3, 9)
    x[0, 1, 4] = float("nan")
    check(lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), x)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), ceil_mode=True,
                                     count_include_pad=False),
                                dict(kernel_size=2, divisor_override=3)])
def test_avg_pool3d_grad(kw):
    check(lambda x: F.avg_pool3d(x, **kw), torch.randn(2, 2, 4, 5, 6), grad=True)


def test_avg_pool3d_unbatched_f64():
    check(lambda x: F.avg_pool3d(x, 2), torch.randn(2, 4, 4, 4, dtype=torch.float64), grad=True)


def test_max_pool3d_int():
    check(lambda x: F.max_pool3d(x, 2, padding=1), torch.randint(-9, 9, (1, 2, 3, 4, 4)))


def test_avg_pool3d_long():
    check(lambda x: F.avg_pool3d(x, 2, padding=1, count_include_pad=False),
          torch.randint(-9, 9, (1, 2, 3, 4, 4)))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), ceil_mode=True),
                                dict(kernel_size=2, dilation=2, padding=1)])
def test_max_pool3d_grad(kw):
    check(lambda x: F.max_pool3d(x, return_indices=True, **kw), torch.randn(2, 2, 5, 5, 6),
          grad=True)


@pytest.mark.parametrize("shape,out", [((2, 2, 5, 6, 7), (2, 3, 4)), ((3, 4, 4, 4), (1, 1, 1)),
                                       ((1, 2, 3, 5, 4), (3, 5, 4))])
def test_adaptive_avg_pool3d_grad(shape, out):
    check(lambda x: F.adaptive_avg_pool3d(x, out), torch.randn(*shape), grad=True)


def test_adaptive_avg_pool3d_inf_stays_local():
    x = torch.randn(1, 1, 4, 4, 4)
    x[0, 0, 0, 0, 0] = float("inf")
    check(lambda x: F.adaptive_avg_pool3d(x, 2), x)


def test_adaptive_avg_pool2d_inf_stays_local():
    x = torch.randn(1, 2, 4, 5)
    x[0, 0, 0, 0] = float("inf")
    check(lambda x: F.adaptive_avg_pool2d(x, (3, 3)), x)
    check(lambda x: F.adaptive_avg_pool2d(x, (2, 4)), torch.randn(3, 5, 7), grad=True)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool(n):
    pool = [F.max_pool1d, F.max_pool2d, F.max_pool3d][n - 1]
    unpool = [F.max_unpool1d, F.max_unpool2d, F.max_unpool3d][n - 1]
    x = torch.randn(*((2, 3) + (6,) * n))
    y, idx = pool(x, 3, stride=2, padding=1, return_indices=True)
    check(lambda v, i: unpool(v, i, 3, stride=2, padding=1, output_size=x.shape[2:]), y, idx,
          grad=True)
    check(lambda v, i: unpool(v, i, 3, stride=2, padding=1, output_size=x.shape[2:]), y[0], idx[0])  # unbatched


def test_adaptive_avg_pool_empty_batch():
    check(lambda t: F.adaptive_avg_pool1d(t, 5), torch.randn(0, 8, 8))
    check(lambda t: F.adaptive_avg_pool3d(t, (5, 7, 4)), torch.randn(0, 2, 8, 8, 8))


def test_adaptive_avg_pool3d_bf16_falls_back():
    # CPU sums bfloat16 3-d windows in bfloat16: the lowering declines.
    x = torch.randn(2, 8, 8, 8).to(torch.bfloat16)
    check(lambda t: F.adaptive_avg_pool3d(t, (5, 7, 4)), x, native=False, atol=0, rtol=0)


@pytest.mark.parametrize("shape,out", [((2, 3, 5, 7, 6), (2, 3, 4)), ((3, 8, 8, 8), (3, 5, 2)),
                                       ((1, 2, 4, 4, 4), (4, 4, 4)), ((1, 1, 5, 6, 7), (1, 1, 1))])
def test_adaptive_max_pool3d(shape, out):
    torch.manual_seed(0)
    x = torch.randn(shape)
    check(lambda t: F.adaptive_max_pool3d(t, out, return_indices=True), x)
    check(lambda t: F.adaptive_max_pool3d(t, out), x, grad=True)


def test_adaptive_max_pool3d_ties_and_nan():
    x = torch.zeros(1, 2, 4, 4, 4)  # every element ties: the first index wins
    check(lambda t: F.adaptive_max_pool3d(t, (2, 3, 2), return_indices=True), x)
    x = torch.randn(1, 2, 4, 4, 4)
    x[0, 0, 1, 2, 3] = float("nan")
    check(lambda t: F.adaptive_max_pool3d(t, (2, 2, 2), return_indices=True), x)
    check(lambda t: F.adaptive_max_pool3d(t, (2, 2, 2)), torch.randn(1, 2, 4, 4, 4).to(torch.bfloat16))
