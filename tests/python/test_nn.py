"""Other nn ops (csrc/ops/nn.c) against CPU: embedding, embedding_bag, dropout."""
import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from harness import check


A = torch.ops.aten


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


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag_grad(mode, last):
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offs = torch.tensor([0, 4, 4, 8] if last else [0, 4, 4])
    check(lambda w: F.embedding_bag(idx.to(w.device), w, offs.to(w.device), mode=mode,
                                    include_last_offset=last), torch.randn(10, 3), grad=True)


def test_embedding_bag_padding_idx_grad():
    idx, offs = torch.tensor([1, 2, 4, 4, 3, 4]), torch.tensor([0, 3, 4])
    for mode in ("sum", "mean"):
        check(lambda w: F.embedding_bag(idx.to(w.device), w, offs.to(w.device), mode=mode,
                                        padding_idx=4), torch.randn(6, 3), grad=True)


def test_embedding_bag_per_sample_weights_grad():
    idx, offs = torch.tensor([1, 2, 0, 3, 3]), torch.tensor([0, 2])
    check(lambda w, p: F.embedding_bag(idx.to(w.device), w, offs.to(w.device),
                                       per_sample_weights=p, mode="sum"),
          torch.randn(4, 3), torch.rand(5), grad=True)


def test_embedding_bag_2d_and_weights():
    idx = torch.tensor([[0, 2, 3], [3, 1, 1]])
    check(lambda w: F.embedding_bag(idx.to(w.device), w, mode="mean"), torch.randn(5, 4), grad=True)
    flat, offs, psw = torch.tensor([1, 2, 0, 3]), torch.tensor([0, 1]), torch.rand(4)
    check(lambda w, p: F.embedding_bag(flat.to(w.device), w, offs.to(w.device),
                                       per_sample_weights=p, mode="sum"), torch.randn(4, 3), psw)
