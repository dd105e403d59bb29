"""Special functions (csrc/ops/special*.c) against CPU: gamma family, Bessel,
error functions, zeta, orthogonal polynomials."""
import pytest
import torch

from harness import check


def _x(*shape, lo=-3.0, hi=3.0, dtype=torch.float32):
    return (torch.rand(*shape) * (hi - lo) + lo).to(dtype)


POLYS = [torch.special.chebyshev_polynomial_t, torch.special.chebyshev_polynomial_u,
         torch.special.chebyshev_polynomial_v, torch.special.chebyshev_polynomial_w,
         torch.special.shifted_chebyshev_polynomial_t, torch.special.shifted_chebyshev_polynomial_u,
         torch.special.shifted_chebyshev_polynomial_v, torch.special.shifted_chebyshev_polynomial_w,
         torch.special.hermite_polynomial_h, torch.special.hermite_polynomial_he,
         torch.special.laguerre_polynomial_l, torch.special.legendre_polynomial_p]
_SPECIAL_Q = [0.0, -0.0, -1.0, -2.5, 1e-3, -0.999, 30.0, 1e4, -20.5,
              float("inf"), float("-inf"), float("nan")]
_ERF_EDGES = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e30, -1e30, 1e-30,
              9.99, 10.01, -9.38, -26.5, -26.7, -27.0]


def test_logit_grad():
    x = torch.tensor([0.0, 0.001, 0.3, 0.5, 0.999, 1.0, 1.5, -0.5])
    check(lambda x: torch.logit(x), x, grad=True)
    check(lambda x: torch.logit(x, 0.01), x, grad=True)


def test_gamma_family():
    x = torch.tensor([-8.48, -3.7, -2.5, -1.0, -0.5, 0.0, 0.3, 1.0, 2.5, 9.0, 30.0])
    check(lambda x: (torch.lgamma(x), torch.digamma(x), torch.polygamma(1, x)), x)
    check(torch.digamma, _x(6, lo=0.2, hi=5.0), grad=True, atol=1e-5, rtol=1e-5)
    check(lambda x: torch.polygamma(0, x), _x(6, lo=0.2, hi=5.0))


@pytest.mark.parametrize("fn", [torch.i0, torch.special.i0e, torch.special.i1, torch.special.i1e])
def test_bessel_grad(fn):
    check(fn, torch.tensor([-12.0, -8.0, -3.5, -0.2, 0.0, 0.7, 5.0, 8.5, 20.0]), grad=True)
    check(fn, torch.tensor([-12.0, -3.5, 0.0, 0.7, 8.5, 20.0], dtype=torch.float64))


def test_frexp():
    x = torch.tensor([0.0, -0.0, 1.0, -3.5, 1e-40, 1e30, float("inf"), float("nan"), 0.75])
    check(torch.frexp, x)
    check(torch.frexp, x.double())
    check(torch.frexp, torch.tensor([0.0, 1.0, -3.5, 1e-6, 6e4]).half())


def test_ndtri_grad():
    p = torch.tensor([0.0, 1e-20, 1e-6, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1 - 1e-6, 1.0, -0.1, 1.1])
    check(torch.special.ndtri, p, atol=1e-5, rtol=1e-5)
    check(torch.special.ndtri, p.double())
    check(torch.special.ndtri, torch.tensor([0.02, 0.3, 0.6, 0.95]), grad=True)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_logit_halves_round_like_cpu(dtype):
    x = torch.rand(200).to(dtype)
    check(torch.logit, x, atol=0, rtol=0)
    check(lambda t: torch.logit(t, 0.2), x, atol=0, rtol=0)


def test_erfinv_gradient():
    # exp(erfinv(x)^2) magnifies last-bit differences: the lowering follows
    # CPU's algorithm so the gradient matches at float32 tolerance.
    x = torch.rand(400) * 1.98 - 0.99
    check(torch.erfinv, x, grad=True)


@pytest.mark.parametrize("fn", [torch.special.modified_bessel_i0, torch.special.modified_bessel_i1,
                                torch.special.modified_bessel_k0, torch.special.modified_bessel_k1,
                                torch.special.scaled_modified_bessel_k0,
                                torch.special.scaled_modified_bessel_k1])
def test_modified_bessel(fn):
    # both branches (|x| <= 2 or 8, and beyond), zero and negative inputs
    x = torch.cat([torch.linspace(-12, 30, 400), torch.tensor([0.0, 1e-3, 2.0, 8.0])])
    check(fn, x)
    check(fn, torch.linspace(0.1, 9, 50).to(torch.float64))


@pytest.mark.parametrize("fn", [torch.special.bessel_j0, torch.special.bessel_j1,
                                torch.special.bessel_y0, torch.special.bessel_y1,
                                torch.special.spherical_bessel_j0])
def test_bessel_first_second_kind(fn):
    # both sides of |x| = 5 (and of 0.5 for the spherical j0), 0, negatives, inf
    x = torch.cat([torch.linspace(-15, 40, 551), torch.tensor([0.0, 1e-6, 0.3, 5.0,
                                                              float("inf"), -float("inf")])])
    check(fn, x)
    check(fn, torch.linspace(0.1, 12, 60).to(torch.float64))


@pytest.mark.parametrize("fn", POLYS, ids=lambda f: f.__name__)
def test_orthogonal_polynomials(fn):
    # x over and beyond [-1, 1] (and the shifted [0, 1]) with its ends; n from -2 to 12
    # (the closed forms start above n = 4, 6 or 8); a loop runs to the largest n
    x = torch.cat([torch.linspace(-1.3, 1.3, 27), torch.tensor([-1.0, 0.0, 0.5, 1.0])])
    n = torch.arange(-2, 13)
    # atol 1e-5 (torch.testing's float32 default, the conformance run's): the closed
    # forms' cos/sin of n*acos(x) near their zeros differ from libm's by a few ulp of
    # the argument, ~1e-6 absolute where the polynomial is ~0
    check(lambda a, m: fn(a[:, None], m[None, :]), x, n, atol=1e-5)
    check(lambda a, m: fn(a, m), torch.randn(4, 5), torch.tensor(3.7))  # n truncates to 3
    check(lambda a: fn(a, 5), torch.linspace(-2, 2, 9).to(torch.float64))


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
