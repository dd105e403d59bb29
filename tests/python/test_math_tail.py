"""Long tail of elementwise math and activations, compared against CPU."""
import pytest
import torch
import torch.nn.functional as F

from harness import check


def _x(*shape, lo=-3.0, hi=3.0, dtype=torch.float32):
    return (torch.rand(*shape) * (hi - lo) + lo).to(dtype)


# ------------------------------------------------------------ activations

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


def test_logit_grad():
    x = torch.tensor([0.0, 0.001, 0.3, 0.5, 0.999, 1.0, 1.5, -0.5])
    check(lambda x: torch.logit(x), x, grad=True)
    check(lambda x: torch.logit(x, 0.01), x, grad=True)


# ------------------------------------------------------------ unary math

@pytest.mark.parametrize("fn", [torch.sinc, torch.deg2rad, torch.rad2deg, torch.lgamma,
                                torch.special.entr, torch.angle])
def test_unary_math_grad(fn):
    check(fn, _x(9, lo=0.1, hi=4.0), grad=True, atol=1e-5, rtol=1e-5)


def test_gamma_family():
    x = torch.tensor([-8.48, -3.7, -2.5, -1.0, -0.5, 0.0, 0.3, 1.0, 2.5, 9.0, 30.0])
    check(lambda x: (torch.lgamma(x), torch.digamma(x), torch.polygamma(1, x)), x)
    check(torch.digamma, _x(6, lo=0.2, hi=5.0), grad=True, atol=1e-5, rtol=1e-5)
    check(lambda x: torch.polygamma(0, x), _x(6, lo=0.2, hi=5.0))


def test_unary_math_edges():
    x = torch.tensor([0.0, -0.0, -1.0, -2.5, 1.0, 2.0, float("nan"), float("inf"), -float("inf")])
    check(lambda x: (torch.sinc(x), torch.special.entr(x), torch.angle(x), torch.digamma(x)), x)


def test_unary_math_int_promotes():
    check(lambda x: (torch.sinc(x), torch.deg2rad(x), torch.lgamma(x), torch.angle(x)),
          torch.arange(-2, 4))


def test_sign_predicates():
    x = torch.tensor([0.0, -0.0, 1.0, -2.0, float("inf"), -float("inf"), float("nan")])
    check(lambda x: (torch.signbit(x), torch.isposinf(x), torch.isneginf(x)), x)
    check(lambda x: (torch.signbit(x), torch.isposinf(x)), torch.tensor([-1, 0, 2]))


# ------------------------------------------------------------ binary math

def test_xlogy_grad():
    x = torch.tensor([0.0, 1.0, 2.0, 0.0, 3.0])
    y = torch.tensor([0.0, 0.5, 2.0, float("nan"), 4.0])
    check(torch.xlogy, x, y)
    check(torch.xlogy, _x(4, lo=0.5), _x(4, lo=0.5), grad=True)
    check(lambda y: torch.xlogy(2.0, y), _x(4, lo=0.5), grad=True)
    check(lambda x: torch.xlogy(x, 3), torch.arange(4))
    check(torch.special.xlog1py, x, y)
    check(torch.special.xlog1py, _x(4, lo=0.5), _x(4, lo=0.5), grad=True)


def test_hypot_copysign_grad():
    check(torch.hypot, _x(3, 4), _x(4), grad=True)
    check(torch.hypot, torch.tensor([3e30, 0.0, float("inf")]), torch.tensor([4e30, 0.0, float("nan")]))
    check(torch.copysign, _x(5), torch.tensor([1.0, -1.0, 0.0, -0.0, 2.0]), grad=True)
    check(lambda x: torch.copysign(x, -1), torch.arange(4))


def test_nextafter_heaviside():
    x = torch.tensor([0.0, 1.0, -1.0, 2.0, 1.0, float("nan")])
    y = torch.tensor([1.0, 2.0, -2.0, 1.0, 1.0, 1.0])
    check(torch.nextafter, x, y)
    check(torch.nextafter, x.double(), y.double())
    check(torch.heaviside, torch.tensor([-1.0, 0.0, 2.0]), torch.tensor([0.5]))
    check(torch.heaviside, torch.tensor([-1, 0, 2]), torch.tensor([7, 7, 7]))


def test_logaddexp_grad():
    check(torch.logaddexp, _x(4), _x(4), grad=True)
    check(torch.logaddexp2, _x(4), _x(4), grad=True)
    inf = float("inf")
    check(torch.logaddexp, torch.tensor([inf, -inf, 1.0]), torch.tensor([inf, -inf, -inf]))


def test_float_power():
    check(lambda x: torch.float_power(x, 2), _x(4), grad=True)
    check(torch.float_power, _x(4, lo=0.5), torch.arange(4))
    check(lambda x: torch.float_power(2, x), torch.arange(4))


def test_shifts():
    x = torch.tensor([1, -8, 5, 3], dtype=torch.int32)
    check(lambda x: (x << 2, x >> 1, x << 40, x >> 40), x)
    check(lambda x, y: (x << y, x >> y), torch.tensor([1, 200, 7], dtype=torch.uint8),
          torch.tensor([1, 3, 9], dtype=torch.uint8))
    check(lambda x, y: (torch.bitwise_left_shift(x, y), torch.bitwise_right_shift(x, y)),
          torch.tensor([5, -5, 9]), torch.tensor([1, 2, -1]))


def test_gcd_lcm():
    a = torch.tensor([12, -18, 0, 7, 0, 1071])
    b = torch.tensor([8, 12, 5, 0, 0, 462])
    check(lambda a, b: (torch.gcd(a, b), torch.lcm(a, b)), a, b)
    check(torch.gcd, a.to(torch.int16), b.to(torch.int16))


@pytest.mark.parametrize("fn", [torch.i0, torch.special.i0e, torch.special.i1, torch.special.i1e])
def test_bessel_grad(fn):
    check(fn, torch.tensor([-12.0, -8.0, -3.5, -0.2, 0.0, 0.7, 5.0, 8.5, 20.0]), grad=True)
    check(fn, torch.tensor([-12.0, -3.5, 0.0, 0.7, 8.5, 20.0], dtype=torch.float64))


def test_frexp():
    x = torch.tensor([0.0, -0.0, 1.0, -3.5, 1e-40, 1e30, float("inf"), float("nan"), 0.75])
    check(torch.frexp, x)
    check(torch.frexp, x.double())
    check(torch.frexp, torch.tensor([0.0, 1.0, -3.5, 1e-6, 6e4]).half())


def test_nextafter_subnormal():
    x = torch.tensor([0.0, -0.0, 1e-45, 1e-40, -1e-40, 1e-38])
    y = torch.tensor([-1.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    check(torch.nextafter, x, y)


def test_clamp_bool_and_lerp_half_scalar_weight():
    a = torch.tensor([True, False, True, False])
    lo = torch.tensor([False, False, True, True])
    hi = torch.tensor([True, False, False, True])
    check(lambda a, lo, hi: (torch.clamp(a, min=lo), torch.clamp_min(a, lo), torch.clamp_max(a, hi)),
          a, lo, hi)
    check(lambda x, y: torch.lerp(x, y, 0.4), torch.tensor([4.1640625]).half(),
          torch.tensor([-6.25390625]).half())


def test_inplace_and_out_variants():
    x, y = _x(5), _x(5, lo=0.5, hi=2.0)
    check(lambda x, y: (x.clone().hypot_(y), x.clone().copysign_(-1.0), y.clone().digamma_(),
                        y.clone().polygamma_(1), (y / 3).logit_(0.1), x.clone().sinc_()), x, y)
    check(lambda x: (F.rrelu(x.clone(), inplace=True), F.celu(x.clone(), inplace=True),
                     F.threshold(x.clone(), 0.1, 5.0, inplace=True)), x)
    check(lambda x, y: torch.xlogy(x, y, out=torch.empty(5, device=x.device)), x, y)
    check(lambda i: (i.clone().__ilshift__(2), i.clone().gcd_(torch.tensor([6], device=i.device))),
          torch.tensor([3, -6, 9, 0, 12]))


def test_div_trunc_bfloat16_rounds_quotient():
    x = torch.tensor([2.99, -5.98, 7.0, 1.0]).bfloat16()
    y = torch.tensor([1.0, 2.0, 3.0, 0.3]).bfloat16()
    check(lambda x, y: torch.div(x, y, rounding_mode="trunc"), x * 100, y)
    check(lambda x, y: torch.div(x, y, rounding_mode="trunc"), x, y)


def test_shift_scalar_self():
    check(lambda y: (torch.bitwise_left_shift(5, y), torch.bitwise_right_shift(-64, y)),
          torch.tensor([0, 1, 3, 70]))


def test_hardtanh_int():
    i = torch.tensor([-3, 0, 2, 9])
    check(lambda i: (F.hardtanh(i), F.relu6(i), F.hardtanh(i, -2, 5),
                     torch.ops.aten.hardtanh(i, -1.5, 2.5)), i)
    check(lambda i: F.hardtanh(i, 0, 6), i.to(torch.uint8))


def test_ndtri_grad():
    p = torch.tensor([0.0, 1e-20, 1e-6, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1 - 1e-6, 1.0, -0.1, 1.1])
    check(torch.special.ndtri, p, atol=1e-5, rtol=1e-5)
    check(torch.special.ndtri, p.double())
    check(torch.special.ndtri, torch.tensor([0.02, 0.3, 0.6, 0.95]), grad=True)


def test_user_errors_match_cpu():
    x = torch.randn(4, 6)
    for fn in [lambda x: F.softshrink(x, -0.5), lambda x: F.glu(x[:, :5]), lambda x: F.glu(x, 3),
               lambda x: torch.polygamma(-1, x), lambda x: torch.heaviside(x, x.double())]:
        with pytest.raises(Exception) as cpu_err:
            fn(x)
        with pytest.raises(type(cpu_err.value)) as tpu_err:
            fn(x.to("tpu"))
        assert str(tpu_err.value).split("\n")[0] == str(cpu_err.value).split("\n")[0]
