"""Lowerings and accuracy fixes from the third conformance pass
(docs/op_coverage.md): float sums add in blocks (kron's gradient), and the
long-tail ops lowered since. Each compares with CPU PyTorch and asserts no
CPU fallback."""
import pytest
import torch
import torch.nn.functional as F

import torch_tpu

from harness import check


# ------------------------------------------------------------------ block sums

def _fp64_errors(fn, *xs):
    """Max |float32 result - float64 result| on CPU and on tpu."""
    ref = fn(*[x.double() for x in xs])
    cpu = fn(*xs)
    tpu = fn(*[x.to("tpu") for x in xs]).cpu()
    return (cpu.double() - ref).abs().max().item(), (tpu.double() - ref).abs().max().item()


def test_sum_error_does_not_grow_with_count():
    # one accumulator over 100000 terms loses ~3 digits; blocks keep ~eps
    torch.manual_seed(0)
    x = torch.rand(100000) + 1
    cpu_err, tpu_err = _fp64_errors(lambda t: t.sum(), x)
    assert tpu_err <= 2 * cpu_err + 1e-3, (cpu_err, tpu_err)
    y = torch.randn(5, 10, 5, 20) * 3
    cpu_err, tpu_err = _fp64_errors(lambda t: t.sum((1, 3)), y)
    assert tpu_err <= 2 * cpu_err, (cpu_err, tpu_err)
    check(lambda t: t.sum((1, 3), keepdim=True), y)
    check(lambda t: t.mean((0, 2)), y)
    check(lambda t: t.sum(), torch.randn(37, 3))  # padded blocks


def test_kron_gradient_accuracy():
    # kron's backward sums 200 products per element of a (the mismatch the
    # report showed): within twice CPU's distance to the float64 gradient
    torch.manual_seed(0)
    a, b = torch.randn(5, 5), torch.randn(10, 20)
    g = torch.randn(50, 100)

    def grad_a(x, y, gg):
        x = x.clone().requires_grad_()
        return torch.autograd.grad(torch.kron(x, y), x, gg)[0]

    cpu_err, tpu_err = _fp64_errors(grad_a, a, b, g)
    assert tpu_err <= 2 * cpu_err, (cpu_err, tpu_err)
    check(torch.kron, a, b, grad=True)


# ------------------------------------------------------------------ Hurwitz zeta

_SPECIAL_Q = [0.0, -0.0, -1.0, -2.5, 1e-3, -0.999, 30.0, 1e4, -20.5,
              float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_polygamma_high_order(n):
    torch.manual_seed(n)
    x = torch.cat([torch.empty(500).uniform_(-9, 9), torch.tensor(_SPECIAL_Q)])
    check(lambda t: torch.polygamma(n, t), x)
    check(lambda t: torch.special.polygamma(n, t), torch.rand(4, 5) * 3 + 0.1, grad=True)
    check(lambda t: torch.polygamma(n, t), torch.arange(-3, 9))  # integers -> float32
    check(lambda t: torch.polygamma(n, t), (torch.rand(30) * 5 + 0.5).to(torch.bfloat16))


def test_special_zeta():
    torch.manual_seed(0)
    x = torch.empty(20, 20).uniform_(-9, 9)
    q = torch.empty(20, 20).uniform_(-9, 9)
    check(torch.special.zeta, x, q)
    # x at 1, below 1, integer / non-integer with q <= 0
    xs = torch.tensor([1.0, 1.5, 2.0, 3.0, 4.5, 0.5, -1.0, 7.0, 2.0, 2.0, 5.0, 2.0])
    qs = torch.tensor([1.0, 2.0, 0.5, -2.5, 3.0, 1.0, 1.0, -3.0, -0.0, -7.25, 1e-3, 1e5])
    check(torch.special.zeta, xs, qs)
    check(lambda t: torch.special.zeta(t, 3.0), x.abs() + 1)
    check(lambda t: torch.special.zeta(2.0, t), q)
    check(torch.special.zeta, x[:1].abs() + 1, q)  # broadcast
    check(torch.special.zeta, torch.arange(2, 6), torch.arange(1, 5))  # int64 -> float32


# ------------------------------------------------------------------ erfcx / log_ndtr

_ERF_EDGES = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e30, -1e30, 1e-30,
              9.99, 10.01, -9.38, -26.5, -26.7, -27.0]


@pytest.mark.parametrize("fn", [torch.special.erfcx, torch.special.log_ndtr])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_erfcx_log_ndtr(fn, dtype):
    x = torch.cat([torch.linspace(-30, 30, 6001), torch.tensor(_ERF_EDGES)]).to(dtype)
    check(fn, x)
    check(fn, torch.randn(4, 5, dtype=dtype) * 3, grad=True)


def test_erfcx_log_ndtr_ints_and_halves():
    check(torch.special.erfcx, torch.arange(-5, 6))  # int64 -> float32
    check(torch.special.log_ndtr, torch.arange(-5, 6))
    # CPU has no float16/bfloat16 kernel: the same error on tpu
    for fn in (torch.special.erfcx, torch.special.log_ndtr):
        with pytest.raises(NotImplementedError):
            fn(torch.randn(3).to(torch.bfloat16).to("tpu"))


# ------------------------------------------------------------------ adaptive max pool 3d

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


# ------------------------------------------------------------------ multi margin loss

@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multi_margin_loss(p, reduction):
    torch.manual_seed(p)
    x, t, w = torch.randn(6, 5), torch.randint(0, 5, (6,)), torch.rand(5)
    check(lambda a, b: F.multi_margin_loss(a, b, p=p, margin=0.7, reduction=reduction), x, t, grad=True)
    check(lambda a, b: F.multi_margin_loss(a, b, p=p, weight=w.to(a.device), reduction=reduction), x, t,
          grad=True)  # weight is not differentiable
    check(lambda a, b: F.multi_margin_loss(a, b, p=p, reduction=reduction), torch.randn(5), torch.tensor(3),
          grad=True)
    check(lambda a, b: F.multi_margin_loss(a, b, p=p, reduction=reduction), torch.randn(()), torch.tensor(0))
    check(lambda a, b: F.multi_margin_loss(a, b, p=p, reduction=reduction),
          torch.randn(4, 3, dtype=torch.float64), torch.randint(0, 3, (4,)), grad=True)


def test_multi_margin_loss_errors():
    x, t = torch.randn(3, 4).to("tpu"), torch.tensor([0, 1, 2]).to("tpu")
    with pytest.raises(RuntimeError, match="only p == 1 and p == 2 supported"):
        torch.ops.aten.multi_margin_loss(x, t, 3)
    with pytest.raises(RuntimeError, match="target tensor should be 1-D"):
        F.multi_margin_loss(x, t[:2])


# ------------------------------------------------------------------ multilabel margin loss

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss(reduction):
    torch.manual_seed(0)
    x = torch.randn(4, 5)
    t = torch.tensor([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 1, 1, 1], [2, 2, -1, 0, 0]])
    check(lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction), x, t)
    check(lambda a, b: torch.ops.aten.multilabel_margin_loss_forward(a, b, 1), x, t)  # with is_target
    check(lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction), x[0], t[0])
    check(lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction), torch.randn(()), torch.tensor(0))
    check(lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction), x.double(), t)


@pytest.mark.parametrize("a, b", [
    (torch.tensor([1.0, 2.0, float("nan")]), torch.tensor([1.0, 2.0, float("nan")])),
    (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])),
    (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])),
    (torch.tensor([1.0, 2.0]), torch.tensor([1.0])),
    (torch.ones(0), torch.ones(0)),
    (torch.ones(2), torch.ones(2, dtype=torch.int64)),
    (torch.tensor([1.5]), torch.tensor([1])),
    (torch.arange(6).reshape(2, 3).t(), torch.arange(6).reshape(2, 3).t().contiguous()),
])
def test_equal_matches_cpu_natively(a, b):
    torch_tpu.debug.reset_fallback_report()
    assert torch.equal(a.tpu(), b.tpu()) == torch.equal(a, b)
    assert torch_tpu.debug.fallback_report() == {}


def test_equal_across_devices_raises():
    with pytest.raises(RuntimeError, match="same device"):
        torch.equal(torch.ones(2).tpu(), torch.ones(2))
