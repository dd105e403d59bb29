import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from harness import check, assert_close

A = torch.ops.aten


# ------------------------------------------------------------------ batch norm

@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_grad(training):
    x = torch.randn(4, 3, 2, 2)
    w, b = torch.randn(3), torch.randn(3)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5

    def fn(x, w, b, rm, rv):
        out = A.native_batch_norm(x, w, b, rm.detach(), rv.detach(), training, 0.1, 1e-5)
        return out[0] if not training else out

    check(fn, x, w, b, rm, rv, grad=True)


def test_batch_norm_running_stats_updated():
    x = torch.randn(5, 3)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    trm, trv = rm.to("tpu"), rv.to("tpu")
    torch_tpu.debug.reset_fallback_report()
    out = A.native_batch_norm(x.to("tpu"), None, None, trm, trv, True, 0.3, 1e-5)
    exp = A.native_batch_norm(x, None, None, rm, rv, True, 0.3, 1e-5)
    assert not torch_tpu.debug.fallback_report()
    for a, e in zip(out, exp):
        assert_close(a, e)
    assert_close(trm, rm)
    assert_close(trv, rv)


def test_native_batch_norm_no_stats_bf16():
    check(lambda x: A.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5),
          torch.randn(3, 4, 5).bfloat16())


def test_native_batch_norm_legit():
    check(lambda x, w, b: A._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5),
          torch.randn(4, 3), torch.randn(3), torch.randn(3))


# ------------------------------------------------------------------ layer / group norm

def test_layer_norm_forward():
    # on tpu F.layer_norm decomposes (math_native_layer_norm) into native_batch_norm
    # (lowered here) and addcmul (another family), so only the no-affine case is native
    check(lambda x: F.layer_norm(x, (4,)), torch.randn(2, 3, 4))


def _routed_to_core(op):
    # PyTorch's CompositeExplicitAutograd kernel for these ops outranks the
    # backend fallback unless the boundary registers the op explicitly.
    table = torch._C._dispatch_dump_table("aten::" + op)
    line = next(l for l in table.splitlines() if l.startswith("PrivateUse1:"))
    return "CompositeExplicitAutograd" not in line


@pytest.mark.skipif(not _routed_to_core("native_layer_norm"),
                    reason="native_layer_norm runs PyTorch's composite kernel on tpu")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_native_layer_norm(dtype):
    check(lambda x, w, b: A.native_layer_norm(x, [3, 4], w, b, 1e-5),
          torch.randn(2, 3, 4).to(dtype), torch.randn(3, 4).to(dtype), torch.randn(3, 4).to(dtype),
          grad=True)


@pytest.mark.skipif(not _routed_to_core("native_group_norm"),
                    reason="native_group_norm runs PyTorch's composite kernel on tpu")
def test_native_group_norm():
    check(lambda x, w, b: A.native_group_norm(x, w, b, 2, 4, 6, 2, 1e-5)[0],
          torch.randn(2, 4, 2, 3), torch.randn(4), torch.randn(4), grad=True)
    check(lambda x: A.native_group_norm(x, None, None, 2, 4, 6, 2, 1e-5),
          torch.randn(2, 4, 2, 3).bfloat16())


@pytest.mark.parametrize("affine", [True, False])
def test_native_layer_norm_backward(affine):
    x = torch.randn(2, 3, 4)
    w, b = (torch.randn(4), torch.randn(4)) if affine else (None, None)
    _, mean, rstd = A.native_layer_norm(x, [4], w, b, 1e-5)
    go = torch.randn(2, 3, 4)
    check(lambda go, x, mean, rstd, *wb: A.native_layer_norm_backward(
        go, x, [4], mean, rstd, *(wb if affine else (None, None)), [True, affine, affine])[:1 + 2 * affine],
        go, x, mean, rstd, *((w, b) if affine else ()))


def test_native_group_norm_backward():
    x = torch.randn(2, 4, 3, 3)
    w, b = torch.randn(4), torch.randn(4)
    _, mean, rstd = A.native_group_norm(x, w, b, 2, 4, 9, 2, 1e-5)
    go = torch.randn_like(x)
    check(lambda go, x, mean, rstd, w: A.native_group_norm_backward(
        go, x, mean, rstd, w, 2, 4, 9, 2, [True, True, True]), go, x, mean, rstd, w)


# ------------------------------------------------------------------ embedding

@pytest.mark.parametrize("padding_idx", [-1, 0])
def test_embedding_dense_backward(padding_idx):
    idx = torch.tensor([[0, 2, 4], [4, 0, 1]])
    go = torch.randn(2, 3, 5)
    check(lambda g, i: A.embedding_dense_backward(g, i, 6, padding_idx, False), go, idx)


# ------------------------------------------------------------------ dropout

def test_native_dropout_statistics_and_backward():
    torch.manual_seed(0)
    n, p = 4096, 0.3
    x = (torch.rand(n) + 1).to("tpu").requires_grad_()
    torch_tpu.debug.reset_fallback_report()
    out, mask = A.native_dropout(x, p, True)
    assert mask.dtype == torch.bool and out.dtype == torch.float32
    frac = mask.cpu().float().mean().item()
    sigma = (p * (1 - p) / n) ** 0.5
    assert abs(frac - (1 - p)) < 5 * sigma, frac
    xc, mc, oc = x.detach().cpu(), mask.cpu(), out.detach().cpu()
    torch.testing.assert_close(oc, xc * mc * (1.0 / (1 - p)), rtol=0, atol=0)
    g = torch.randn(n)
    out.backward(g.to("tpu"))
    torch.testing.assert_close(x.grad.cpu(), g * mc * (1.0 / (1 - p)), rtol=0, atol=0)
    assert not torch_tpu.debug.fallback_report()
    # same seed -> same mask
    torch.manual_seed(0)
    _, mask2 = A.native_dropout(x.detach(), p, True)
    assert torch.equal(mask2.cpu(), mc)
    _, mask3 = A.native_dropout(x.detach(), p, True)
    assert not torch.equal(mask3.cpu(), mc)


def test_native_dropout_eval_and_extremes():
    x = torch.randn(3, 5)
    check(lambda x: A.native_dropout(x, 0.5, False), x)
    check(lambda x: A.native_dropout(x, 0.0, True), x)
    check(lambda x: A.native_dropout(x, 1.0, True), x)


def test_f_dropout():
    x = torch.randn(64, 8).to("tpu")
    torch_tpu.debug.reset_fallback_report()
    y = F.dropout(x, 0.5, True)
    assert not torch_tpu.debug.fallback_report()
    yc, xc = y.cpu(), x.cpu()
    kept = yc != 0
    torch.testing.assert_close(yc[kept], xc[kept] * 2, rtol=0, atol=0)


# ------------------------------------------------------------------ nll / cross entropy

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


def _log_softmax_lowered():
    return "_log_softmax" in torch_tpu.debug.lowered_ops()


@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.1}, {"ignore_index": 1}])
def test_cross_entropy(kw):
    # composite: _log_softmax (reduction family) + nll_loss (here)
    x = torch.randn(5, 4)
    t = torch.tensor([0, 3, 1, 3, 2])
    check(lambda x, t: F.cross_entropy(x, t, **kw), x, t, grad=True,
          native=_log_softmax_lowered() and not kw.get("label_smoothing"))


# ------------------------------------------------------------------ pointwise losses

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
