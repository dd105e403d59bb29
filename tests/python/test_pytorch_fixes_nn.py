"""Regression tests for bugs PyTorch's own test_nn.py found on tpu
(make pytorch-tests, docs/pytorch-tests.md), each compared with CPU PyTorch.
Mode-independent: runs once (RUN_ONCE).
"""
import re

import pytest
import torch
import torch.nn.functional as F

import torch_tpu  # noqa: F401

DEV = "tpu"


def _grad_or_error(dev, fn, x):
    x = x.detach().to(dev).requires_grad_()
    try:
        fn(x.clone()).sum().backward()
    except RuntimeError as e:
        return None, str(e)
    return x.grad.cpu(), None


INPLACE = [
    ("elu_", lambda t: F.elu_(t, alpha=-2.0)),
    ("celu_", lambda t: F.celu_(t, alpha=-2.0)),
    ("leaky_relu_", lambda t: F.leaky_relu_(t, -0.5)),
    # eval-mode rrelu_ is leaky_relu_ with slope (lower + upper) / 2 = -2
    ("rrelu_", lambda t: F.rrelu_(t, -5.0, 1.0)),
]


@pytest.mark.parametrize("name,fn", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_activation_negative_slope_backward_raises_like_cpu(name, fn):
    # After elu_/celu_/leaky_relu_ autograd keeps the result only; its sign
    # tells the branch only for a slope >= 0, so CPU refuses a negative one.
    # tpu computed a wrong gradient (all ones for elu_, leaky_relu_ and
    # eval-mode rrelu_) (test_nn's test_*_inplace_with_neg_slope/alpha).
    x = torch.tensor([-1.0, 0.5, -0.2, 2.0])
    _, cpu_err = _grad_or_error("cpu", fn, x)
    assert cpu_err is not None
    with pytest.raises(RuntimeError, match=re.escape(cpu_err[:60])):
        xt = x.to(DEV).requires_grad_()
        fn(xt.clone()).sum().backward()


POSITIVE = [
    ("elu_", lambda t: F.elu_(t, alpha=2.0)),
    ("celu_", lambda t: F.celu_(t, alpha=0.5)),
    ("leaky_relu_", lambda t: F.leaky_relu_(t, 0.25)),
    ("leaky_relu_0", lambda t: F.leaky_relu_(t, 0.0)),
    ("rrelu_", lambda t: F.rrelu_(t, 0.1, 0.3)),
    ("rrelu_mean_0", lambda t: F.rrelu_(t, -1.0, 1.0)),
    ("elu", lambda t: F.elu(t, alpha=-2.0)),
    ("leaky_relu", lambda t: F.leaky_relu(t, -0.5)),
]


@pytest.mark.parametrize("name,fn", POSITIVE, ids=[n for n, _ in POSITIVE])
def test_activation_backward_still_matches_cpu(name, fn):
    # the cases CPU computes: in place with a slope >= 0, out of place with any
    x = torch.tensor([-1.0, 0.5, -0.2, 2.0, 0.0, -3.0])
    want, err = _grad_or_error("cpu", fn, x)
    assert err is None
    got, err = _grad_or_error(DEV, fn, x)
    assert err is None
    torch.testing.assert_close(got, want)


def test_nll_loss_weight_must_be_1d_like_cpu():
    # nll_loss takes a weight of C elements in one dim only; tpu took a
    # [1, C] weight and computed (test_nn's test_nll_loss_invalid_weights)
    x = torch.randn(4, 3).log_softmax(1)
    t = torch.tensor([0, 2, 1, 2])
    for w in (torch.rand(1, 3), torch.rand(3, 1), torch.rand(2, 3), torch.rand(4)):
        with pytest.raises(RuntimeError) as cpu_err:
            F.nll_loss(x, t, weight=w)
        with pytest.raises(RuntimeError, match=re.escape(str(cpu_err.value))):
            F.nll_loss(x.to(DEV), t.to(DEV), weight=w.to(DEV))
    # a 1-d weight still works, and nll_loss2d (4-d input) takes [1, C]
    w = torch.rand(3)
    torch.testing.assert_close(F.nll_loss(x.to(DEV), t.to(DEV), weight=w.to(DEV)).cpu(),
                               F.nll_loss(x, t, weight=w))
    x4 = torch.randn(2, 3, 4, 4).log_softmax(1)
    t4 = torch.randint(0, 3, (2, 4, 4))
    w = torch.rand(1, 3)
    torch.testing.assert_close(F.nll_loss(x4.to(DEV), t4.to(DEV), weight=w.to(DEV)).cpu(),
                               F.nll_loss(x4, t4, weight=w))


def test_margin_losses_on_empty_batch():
    # an empty batch broadcast a [0, 1] operand against [0, C]: the
    # lowerings' binary helper chose which side to broadcast by element
    # count (0 both) and emitted a mismatched add ("internal: stablehlo.add
    # operands differ") (test_nn's test_MarginLoss_empty)
    for mod, y in ((torch.nn.MultiMarginLoss(), torch.ones(0, dtype=torch.long)),
                   (torch.nn.MultiLabelMarginLoss(), torch.ones(0, 10, dtype=torch.long))):
        for red in ("none", "sum"):
            mod.reduction = red
            x = torch.randn(0, 10, device=DEV, requires_grad=True)
            out = mod(x, y.to(DEV))
            want = mod(torch.randn(0, 10), y)
            assert out.shape == want.shape
            if isinstance(mod, torch.nn.MultiMarginLoss):
                # CPU's kernel sums an empty batch into uninitialized memory
                # (a value like 2e24; multilabel_margin_loss runs CPU's kernel
                # on tpu too); the sum of nothing is 0
                torch.testing.assert_close(out.sum().cpu(), torch.tensor(0.0))
            out.sum().backward()
            assert x.grad.shape == (0, 10)


RNNS = [
    ("LSTM", lambda: torch.nn.LSTM(4, 5), (3, 2, 4)),
    ("LSTM_nobias_2layer_bidir", lambda: torch.nn.LSTM(4, 5, 2, bias=False, bidirectional=True),
     (3, 2, 4)),
    ("GRU", lambda: torch.nn.GRU(4, 5), (3, 2, 4)),
    ("GRU_nobias_2layer_bidir", lambda: torch.nn.GRU(4, 5, 2, bias=False, bidirectional=True),
     (3, 2, 4)),
    ("LSTMCell", lambda: torch.nn.LSTMCell(4, 5), (2, 4)),
    ("GRUCell", lambda: torch.nn.GRUCell(4, 5), (2, 4)),
]


def _flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in _flat(o)]


@pytest.mark.parametrize("name,make,shape", RNNS, ids=[r[0] for r in RNNS])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lstm_gru_match_cpu(name, make, shape, dtype):
    # LSTMCell/GRUCell (and nn.LSTM/nn.GRU step by step) call the fused
    # cells _thnn_fused_lstm_cell/_thnn_fused_gru_cell for a PrivateUse1
    # device, which have no CPU kernel: every LSTM and GRU on tpu raised
    # NotImplementedError (test_nn's test_LSTM/GRU_grad_and_gradgrad...)
    torch.manual_seed(0)
    m = make().to(dtype)
    mt = make().to(dtype)
    mt.load_state_dict(m.state_dict())
    mt = mt.to(DEV)
    x = torch.randn(*shape, dtype=dtype)
    xc, xt = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    outc, outt = _flat(m(xc)), _flat(mt(xt))
    for a, b in zip(outt, outc):
        torch.testing.assert_close(a.cpu(), b.detach())
    # a loss on every output (hy and, for LSTM, cy): both backward inputs
    sum(o.pow(2).sum() for o in outc).backward()
    sum(o.pow(2).sum() for o in outt).backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad)
    for (n, p), pt in zip(m.named_parameters(), mt.parameters()):
        torch.testing.assert_close(pt.grad.cpu(), p.grad, msg=n)


def test_lstm_cell_grad_of_cell_state_only():
    # a loss on cy alone: the fused backward gets no grad_hy
    m = torch.nn.LSTMCell(3, 4).double()
    mt = torch.nn.LSTMCell(3, 4).double()
    mt.load_state_dict(m.state_dict())
    mt = mt.to(DEV)
    x = torch.randn(2, 3, dtype=torch.double)
    xc, xt = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    m(xc)[1].sum().backward()
    mt(xt)[1].sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad)


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU], ids=["LSTM", "GRU"])
def test_lstm_gru_gradgradcheck(cls):
    # double backward goes through the differentiable (composite) cell backward
    torch.manual_seed(0)
    mt = cls(4, 4).double().to(DEV)
    inp = torch.rand(1, 3, 4, device=DEV, dtype=torch.double, requires_grad=True)

    def f(i):
        return tuple(_flat(mt(i)))
    assert torch.autograd.gradcheck(f, inp, check_batched_grad=False)
    assert torch.autograd.gradgradcheck(f, inp, check_batched_grad=False)


def test_lstm_cell_bfloat16_close_to_float32():
    # half types compute in float32 and round once
    m = torch.nn.LSTMCell(4, 5)
    x = torch.randn(2, 4)
    want = m(x)
    mt = torch.nn.LSTMCell(4, 5)
    mt.load_state_dict(m.state_dict())
    got = mt.to(DEV).bfloat16()(x.to(DEV).bfloat16())
    for a, b in zip(got, want):
        torch.testing.assert_close(a.float().cpu(), b.detach(), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_upsample_nearest_integer_dtypes_raise_like_cpu(dtype, mode):
    # CPU's nearest kernels take uint8 and floating types only; tpu computed
    # the other integer types (test_nn's test_upsamplingBiMode2d_nonsupported_dtypes)
    x = torch.ones(1, 3, 8, 8, dtype=dtype)
    with pytest.raises(RuntimeError, match="not implemented for"):
        F.interpolate(x, size=(16, 16), mode=mode)
    with pytest.raises(RuntimeError, match="not implemented for"):
        F.interpolate(x.to(DEV), size=(16, 16), mode=mode)
    for ok in (torch.uint8, torch.float32):
        x = torch.arange(64, dtype=ok).view(1, 1, 8, 8)
        torch.testing.assert_close(F.interpolate(x.to(DEV), size=(16, 16), mode=mode).cpu(),
                                   F.interpolate(x, size=(16, 16), mode=mode))
