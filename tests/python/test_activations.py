"""Activations (csrc/ops/activations.c) against CPU: forward, backward, halves, in-place."""
import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from harness import check


torch.manual_seed(0)


ACTS = [
    ("relu", F.relu), ("gelu", F.gelu), ("gelu_tanh", lambda a: F.gelu(a, approximate="tanh")),
    ("silu", F.silu), ("mish", F.mish), ("hardtanh", lambda a: F.hardtanh(a, -0.5, 2.0)),
    ("leaky_relu", lambda a: F.leaky_relu(a, 0.2)), ("elu", F.elu),
    ("elu_scaled", lambda a: torch.ops.aten.elu(a, 0.7, 1.2, 0.9)), ("selu", F.selu), ("celu", F.celu),
    ("softplus", F.softplus), ("softplus_beta", lambda a: F.softplus(a, beta=2.0, threshold=3.0)),
    ("hardsigmoid", F.hardsigmoid), ("hardswish", F.hardswish), ("sigmoid", torch.sigmoid),
    ("tanh", torch.tanh), ("relu6", F.relu6),
]


def randn(*s, dtype=torch.float32):
    return torch.randn(*s).to(dtype)


def ints(*s, lo=-9, hi=10, dtype=torch.int64):
    return torch.randint(lo, hi, s).to(dtype)


def _x(*shape, lo=-3.0, hi=3.0, dtype=torch.float32):
    return (torch.rand(*shape) * (hi - lo) + lo).to(dtype)


@pytest.mark.parametrize("name,fn", ACTS, ids=[n for n, _ in ACTS])
def test_activation(name, fn):
    x = torch.cat([torch.randn(12) * 4, torch.tensor([-3.0, 3.0, 0.0, 25.0])])
    check(fn, x, grad=True)
    check(fn, x.to(torch.bfloat16))


def test_activation_inplace():
    def f(a):
        a = a.clone()
        return F.relu(a.clone(), inplace=True), F.elu(a.clone(), inplace=True), \
            F.leaky_relu(a.clone(), inplace=True), F.hardtanh(a.clone(), inplace=True), \
            F.silu(a.clone(), inplace=True)
    check(f, randn(8))


def test_relu_int_and_bool_error():
    check(F.relu, ints(6))
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        F.relu(torch.tensor([True], device="tpu"))


def test_inplace_activation_grad_uses_result():
    # In-place activations on a non-leaf save the result: elu_backward with
    # is_result=True, leaky_relu_backward with self_is_result=True.
    x = torch.randn(10) * 3
    check(lambda a: F.elu(a * 1, alpha=0.8, inplace=True), x, grad=True)
    check(lambda a: F.leaky_relu(a * 1, 0.2, inplace=True), x, grad=True)
    check(lambda a: torch.sigmoid_(a * 1) + torch.tanh_(a * 2), x, grad=True)


@pytest.mark.parametrize("fn", [F.silu, F.mish, F.logsigmoid, F.softshrink, F.hardshrink,
                                lambda x: F.softshrink(x, 1.2), lambda x: F.hardshrink(x, 1.2),
                                lambda x: F.threshold(x, 0.5, -2.0), F.celu,
                                lambda x: F.celu(x, 0.7), F.selu,
                                lambda x: F.rrelu(x, training=False)])
def test_activation_grad(fn):
    check(fn, _x(4, 5), grad=True)


def test_activation_half():
    check(lambda x: F.silu(x) + F.logsigmoid(x) + F.softshrink(x), _x(6, dtype=torch.bfloat16))


def test_threshold_int_and_inplace():
    check(lambda x: F.threshold(x, 1, 7), torch.arange(-3, 4))
    check(lambda x: F.threshold_(x.clone(), 0.5, 2.0), _x(5))


def test_glu_grad():
    check(lambda x: F.glu(x), _x(3, 4), grad=True)
    check(lambda x: F.glu(x, 0), _x(4, 3), grad=True)


def test_prelu_grad():
    check(lambda x, w: F.prelu(x, w), _x(2, 3, 4), torch.tensor([0.1, 0.2, 0.3]), grad=True)
    check(lambda x, w: F.prelu(x, w), _x(5), torch.tensor([0.25]), grad=True)


def test_hardtanh_int():
    i = torch.tensor([-3, 0, 2, 9])
    check(lambda i: (F.hardtanh(i), F.relu6(i), F.hardtanh(i, -2, 5),
                     torch.ops.aten.hardtanh(i, -1.5, 2.5)), i)
    check(lambda i: F.hardtanh(i, 0, 6), i.to(torch.uint8))


def test_rrelu_training_samples_slopes():
    import torch_tpu
    x = torch.randn(100000, device="tpu")
    torch_tpu.debug.reset_fallback_report()
    y = F.rrelu(x, lower=0.1, upper=0.3, training=True)
    assert not torch_tpu.debug.fallback_report()
    x, y = x.cpu(), y.cpu()
    pos = x > 0
    assert torch.equal(y[pos], x[pos])
    slope = y[~pos] / x[~pos]
    assert slope.min() >= 0.1 - 1e-6 and slope.max() <= 0.3 + 1e-6
    assert abs(slope.mean().item() - 0.2) < 0.002  # uniform on [0.1, 0.3)
