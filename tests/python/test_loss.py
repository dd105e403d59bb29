"""Losses (csrc/ops/nn_loss.c) against CPU."""
import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from harness import check


def _log_softmax_lowered():
    return "_log_softmax" in torch_tpu.debug.lowered_ops()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_loss(reduction):
    x = torch.randn(5, 4)
    t = torch.tensor([0, 3, 1, 3, 2])
    check(lambda x, t: F.nll_loss(x, t, reduction=reduction), x, t, grad=True)


def test_nll_loss_weight_ignore_index():
    x = torch.randn(5, 4)
    t = torch.tensor([0, 3, 1, 3, 2])
    w = torch.rand(4)
    check(lambda x, t, w: F.nll_loss(x, t, weight=w.detach(), ignore_index=3), x, t, w, grad=True)
    check(lambda x, t: F.nll_loss(x, t, ignore_index=1, reduction="sum"), x, t, grad=True)


def test_nll_loss_all_ignored():
    # total_weight 0: mean is nan, ignored targets still get zero gradient
    check(lambda x, t: F.nll_loss(x, t, ignore_index=1), torch.randn(3, 4), torch.tensor([1, 1, 1]),
          grad=True)


def test_nll_loss_single_sample():
    check(lambda x, t: F.nll_loss(x, t), torch.randn(4), torch.tensor(2), grad=True)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_nll_loss2d(reduction):
    x = torch.randn(2, 3, 2, 2)
    t = torch.randint(0, 3, (2, 2, 2))
    w = torch.rand(3)
    check(lambda x, t, w: F.nll_loss(x, t, weight=w.detach(), reduction=reduction), x, t, w, grad=True)


def test_nll_loss_bf16():
    check(lambda x, t: F.nll_loss(x, t), torch.randn(5, 4).bfloat16(), torch.tensor([0, 3, 1, 3, 2]))


@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.1}, {"ignore_index": 1}])
def test_cross_entropy(kw):
    # composite: _log_softmax (reduction family) + nll_loss (here)
    x = torch.randn(5, 4)
    t = torch.tensor([0, 3, 1, 3, 2])
    check(lambda x, t: F.cross_entropy(x, t, **kw), x, t, grad=True,
          native=_log_softmax_lowered() and not kw.get("label_smoothing"))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_mse_loss(reduction):
    check(lambda x, y: F.mse_loss(x, y, reduction=reduction), torch.randn(3, 4), torch.randn(3, 4),
          grad=True)


def test_mse_loss_bf16():
    check(lambda x, y: F.mse_loss(x, y), torch.randn(3, 4).bfloat16(), torch.randn(3, 4).bfloat16())


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy(reduction):
    x = torch.rand(3, 4) * 0.98 + 0.01
    t = torch.rand(3, 4)
    check(lambda x, t: F.binary_cross_entropy(x, t.detach(), reduction=reduction), x, t, grad=True)


def test_binary_cross_entropy_weight_and_clamp():
    x = torch.tensor([0.0, 1.0, 0.5, 0.2])
    t = torch.tensor([1.0, 0.0, 0.5, 1.0])
    w = torch.rand(4)
    check(lambda x, t, w: F.binary_cross_entropy(x, t, weight=w, reduction="sum"), x, t, w)
    check(lambda x, t, w: F.binary_cross_entropy(x, t.detach(), weight=w.detach()), x[2:], t[2:], w[2:], grad=True)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_huber_loss(reduction):
    x, y = torch.randn(3, 4) * 2, torch.randn(3, 4)
    check(lambda x, y: F.huber_loss(x, y, reduction=reduction, delta=0.7), x, y, grad=True)


@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_smooth_l1_loss(reduction):
    x, y = torch.randn(3, 4) * 2, torch.randn(3, 4)
    check(lambda x, y: F.smooth_l1_loss(x, y, reduction=reduction, beta=0.5), x, y, grad=True)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_soft_margin_loss_grad(reduction):
    t = torch.randint(0, 2, (4, 5)).float() * 2 - 1
    check(lambda x: F.soft_margin_loss(x, t.to(x.device), reduction=reduction), torch.randn(4, 5),
          grad=True)


def test_soft_margin_loss_half_rounds_per_op():
    x = torch.tensor([-8.5, -1.75, 4.3, 12.0, -11.0]).half()
    t = torch.tensor([3.6, -8.0, -0.5, -1.0, 1.0]).half()
    check(lambda x: F.soft_margin_loss(x, t.to(x.device)), x, grad=True)
    check(lambda x: F.soft_margin_loss(x, t.to(x.device), reduction="none"), x, grad=True)


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
