"""Complex math at extremal values and on branch cuts, against CPU PyTorch.

The lowerings of csrc/ops/complex_math.c (exp, sinh, cosh, tanh, the six
inverse functions, reciprocal, division, log/log2/log10, sqrt/rsqrt,
sin/cos, expm1, sgn, abs), the complex forms of isnan/isinf,
vdot, cumprod, prod, logsumexp and abs(out=real): each compared with CPU's
result over a grid of real and imaginary parts (0, -0, tiny, ordinary,
near the overflow thresholds 44/88/354/709, huge, +-inf, nan), which
includes every branch cut's signed-zero sides, and run with no CPU
fallback.

Comparison: NaN where CPU has NaN, the same infinities, and finite results
within a normwise relative error of 1e-5 (complex64) or 1e-12 (complex128)
of CPU's. Signs of zero results are not compared (XLA folds x + 0 to x);
signs of nonzero results are, which is what picks a branch cut's side.
Subnormal results compare equal to 0: XLA flushes subnormals to zero
(exp(-100) in complex64 is 0 on tpu, 3.8e-44 on CPU), hence an absolute
floor of the least normal number.
"""
import math

import pytest
import torch

import torch_tpu

DEV = "tpu"
INF, NAN = float("inf"), float("nan")
PARTS = [0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 1.0, -1.0, 1.5707964, -2.0, 3.0, -20.0, 45.0, 89.0,
         -100.0, 200.0, 400.0, 720.0, -800.0, 1e20, -3e38, INF, -INF, NAN]
GRID = [complex(a, b) for a in PARTS for b in PARTS]
TOL = {torch.complex64: 1e-5, torch.complex128: 1e-12}
# complex128 acos/acosh near z = 1: glibc's cacos loses bits to cancellation
# there (acos(1+1e-30j) is 8.9e-16-1e-15j on CPU, 1e-15-1e-15j exactly), so
# an absolute 1e-15 is allowed besides the relative tolerance
ATOL = {torch.complex64: 0.0, torch.complex128: 1e-15}


@pytest.fixture
def no_fallbacks():
    before = dict(torch_tpu.debug.fallback_report())
    yield
    after = dict(torch_tpu.debug.fallback_report())
    grown = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    assert not grown, f"ops ran on CPU: {grown}"


def assert_matches(got, want, points=None, tol=None, atol=0.0):
    """Classes exact (nan/inf), finite values within a normwise tolerance."""
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape)
    tol = tol if tol is not None else TOL[want.dtype if want.is_complex() else want.dtype.to_complex()]
    floor = torch.finfo(want.dtype.to_real()).tiny  # subnormals flushed to zero (module docstring)
    if not want.is_complex():  # abs: compare as complex values
        got, want = got.to(torch.complex128), want.to(torch.complex128)
    g, w = torch.view_as_real(got).double(), torch.view_as_real(want).double()
    nan_ok = g.isnan() == w.isnan()
    inf_ok = torch.where(w.isinf() | g.isinf(), g == w, True)
    finite = (g.isfinite() & w.isfinite()).all(-1)
    err = (g - w).norm(dim=-1)
    scale = w.norm(dim=-1)
    val_ok = torch.where(finite, err <= tol * scale + max(atol, floor), True)
    ok = nan_ok.all(-1) & inf_ok.all(-1) & val_ok
    if not bool(ok.all()):
        bad = (~ok).nonzero().flatten()[:6].tolist()
        where = [(points[i] if points else i, got.flatten()[i].item(), want.flatten()[i].item()) for i in bad]
        raise AssertionError(f"{int((~ok).sum())} mismatches, e.g. (input, tpu, cpu): {where}")


UNARY = ["exp", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "reciprocal",
         "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "expm1", "sgn", "abs"]


@pytest.mark.parametrize("dt", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("name", UNARY)
def test_unary_grid(name, dt, no_fallbacks):
    z = torch.tensor(GRID, dtype=dt)
    f = getattr(torch, name)
    assert_matches(f(z.to(DEV)), f(z), GRID, atol=ATOL[dt])


@pytest.mark.parametrize("name", UNARY)
def test_unary_ordinary_values_and_inplace(name, no_fallbacks):
    torch.manual_seed(0)
    z = torch.randn(400, dtype=torch.complex64) * torch.logspace(-3, 1.5, 400)
    f = getattr(torch, name)
    assert_matches(f(z.to(DEV)), f(z))
    if name != "abs":  # abs_ of a complex tensor is refused
        t = z.to(DEV)
        getattr(t, name + "_")()
        assert_matches(t, f(z))


@pytest.mark.parametrize("name", ["asin", "acos", "atan", "asinh", "acosh", "atanh"])
def test_branch_cut_sides(name, no_fallbacks):
    # the cuts: real axis beyond +-1 (asin, acos, atanh), imaginary axis
    # beyond +-i (atan, asinh), real axis below 1 (acosh); a signed zero
    # picks the side, exactly as CPU
    mags = [1.0, 1.5, 2.0, 10.0, 1e10]
    pts = []
    for m in mags:
        for s in (1.0, -1.0):
            for zero in (0.0, -0.0):
                pts += [complex(s * m, zero), complex(zero, s * m)]
    pts += [complex(0.5, 0.0), complex(-0.5, -0.0), complex(0.0, 0.5), complex(-0.0, -0.5)]
    f = getattr(torch, name)
    for dt in (torch.complex64, torch.complex128):
        z = torch.tensor(pts, dtype=dt)
        got, want = f(z.to(DEV)).cpu(), f(z)
        assert_matches(got, want, pts, atol=ATOL[dt])
        g, w = torch.view_as_real(got), torch.view_as_real(want)
        nonzero = w != 0
        assert torch.equal(torch.signbit(g[nonzero]), torch.signbit(w[nonzero])), name


def test_exp_overflow_thresholds(no_fallbacks):
    # glibc scales e^x past 88 (709): e^100 cos(y) is finite where cos(y)
    # is tiny, the imaginary part of exp(x + 0j) stays 0 rather than inf*0
    pts = [complex(100, 1.5707964), complex(89, 0), complex(170, 1.5707964), complex(300, 1e-30),
           complex(-1e4, 2), complex(INF, 0), complex(INF, 2), complex(-INF, INF), complex(NAN, 0)]
    z = torch.tensor(pts, dtype=torch.complex64)
    assert_matches(torch.exp(z.to(DEV)), torch.exp(z), pts)
    assert math.isfinite(torch.exp(z.to(DEV))[0].real.item())


DIV_PARTS = [0.0, -0.0, 1e-30, 0.5, -1.0, 2.0, 1e20, -3e38, INF, -INF, NAN]
DIV_PTS = [complex(a, b) for a in DIV_PARTS for b in DIV_PARTS]


@pytest.mark.parametrize("dt", [torch.complex64, torch.complex128])
def test_division_grid(dt, no_fallbacks):
    n = len(DIV_PTS)
    a = torch.tensor(DIV_PTS, dtype=dt).repeat_interleave(n)
    d = torch.tensor(DIV_PTS, dtype=dt).repeat(n)
    pairs = [(x, y) for x in DIV_PTS for y in DIV_PTS]
    assert_matches(a.to(DEV) / d.to(DEV), a / d, pairs)
    t = a.to(DEV)
    t /= d.to(DEV)
    assert_matches(t, a / d, pairs)
    for s in [0.0, -0.0, 2.0, INF, 1 + 1j, 0j, complex(INF, 0)]:
        assert_matches(a.to(DEV) / s, a / s)
    zeros = torch.zeros(len(a), dtype=dt.to_real())
    assert_matches(a.to(DEV) / zeros.to(DEV), a / zeros)


@pytest.mark.parametrize("dt", [torch.complex64, torch.complex128])
def test_nan_inf_predicates(dt, no_fallbacks):
    z = torch.tensor(GRID, dtype=dt)
    for f in (torch.isnan, torch.isinf, torch.isfinite):
        assert torch.equal(f(z.to(DEV)).cpu(), f(z)), f.__name__


def test_abs_out_real():
    z = torch.randn(7, dtype=torch.complex64)
    for dt in (torch.float32, torch.float64, torch.float16, torch.complex64):
        out = torch.empty(7, dtype=dt, device=DEV)
        r = torch.abs(z.to(DEV), out=out)
        assert r is out
        torch.testing.assert_close(out.cpu(), torch.abs(z, out=torch.empty(7, dtype=dt)))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.abs(z.to(DEV), out=torch.empty(7, dtype=torch.int64, device=DEV))
    with pytest.raises(RuntimeError, match="Found dtype ComplexDouble but expected ComplexFloat"):
        torch.abs(z.to(DEV), out=torch.empty(7, dtype=torch.complex128, device=DEV))


@pytest.mark.parametrize("dt", [torch.complex64, torch.complex128])
def test_vdot_cumprod_prod_logsumexp(dt, no_fallbacks):
    torch.manual_seed(0)
    x, y = torch.randn(33, dtype=dt), torch.randn(33, dtype=dt)
    tol = 1e-5 if dt == torch.complex64 else 1e-12
    torch.testing.assert_close(torch.vdot(x.to(DEV), y.to(DEV)).cpu(), torch.vdot(x, y), rtol=tol, atol=tol)
    torch.testing.assert_close(torch.vdot(x.to(DEV), x.to(DEV)).cpu(), torch.vdot(x, x), rtol=tol, atol=tol)
    m = torch.randn(3, 100, dtype=dt) * 0.3 + 1  # products of 100 stay O(1)..O(1e3)
    for f in (lambda t: torch.cumprod(t, 1), lambda t: torch.cumprod(t[:, :20], 1), lambda t: torch.cumprod(t, 0),
              lambda t: torch.prod(t, 1), lambda t: torch.prod(t), lambda t: torch.logsumexp(t, 1),
              lambda t: torch.logsumexp(t, (0, 1), keepdim=True)):
        torch.testing.assert_close(f(m.to(DEV)).cpu(), f(m), rtol=tol, atol=tol)
    # rows whose real parts reach +-inf or nan: CPU's max-shift rules
    s = torch.tensor([[complex(INF, 1), 1 + 1j], [complex(-INF, 0), 2j], [complex(NAN, 0), 1], [1e3 + 1j, 1e3]],
                     dtype=dt)
    assert_matches(torch.logsumexp(s.to(DEV), 1), torch.logsumexp(s, 1))


def test_vdot_real_still_matches():
    x, y = torch.randn(9), torch.randn(9)
    torch.testing.assert_close(torch.vdot(x.to(DEV), y.to(DEV)).cpu(), torch.vdot(x, y))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        torch.vdot(torch.randn(2, 2, dtype=torch.complex64).to(DEV), torch.randn(4, dtype=torch.complex64).to(DEV))


@pytest.mark.parametrize("name", ["sinh", "tanh", "asin", "atanh"])
def test_gradients(name):
    torch.manual_seed(0)
    z = torch.randn(6, dtype=torch.complex64) * 0.7
    f = getattr(torch, name)
    zc = z.clone().requires_grad_()
    zt = z.to(DEV).requires_grad_()
    f(zc).abs().sum().backward()
    f(zt).abs().sum().backward()
    torch.testing.assert_close(zt.grad.cpu(), zc.grad, rtol=1e-4, atol=1e-5)


def test_transposed_conjugate_views_keep_their_bit(no_fallbacks):
    # clone of a non-contiguous conj/neg view (what the math-bit fallback
    # calls before add, and .cpu(), resolve_conj) used to copy the stored
    # values and drop the bit: t.H read back as t.mT
    torch.manual_seed(0)
    z = torch.randn(2, 3, 4, dtype=torch.complex64)
    t = z.to(DEV)
    for got, want in [(t.mH, z.mH), (t[0].H, z[0].H), (t.mT.conj(), z.mT.conj()),
                      (t.transpose(0, 2).conj(), z.transpose(0, 2).conj())]:
        torch.testing.assert_close(got.cpu(), want.resolve_conj())
        torch.testing.assert_close((got + 0).cpu(), want + 0)
        torch.testing.assert_close(got.clone().cpu(), want.clone().resolve_conj())
        torch.testing.assert_close(got.resolve_conj().cpu(), want.resolve_conj())
    n = torch._neg_view(t.mT)
    torch.testing.assert_close(n.clone().cpu(), -z.mT)
    torch.testing.assert_close((n * 1).cpu(), -z.mT)


@pytest.mark.parametrize("da,db", [(torch.float32, torch.int32), (torch.int64, torch.int64),
                                   (torch.bfloat16, torch.bfloat16), (torch.float32, torch.float64)])
@pytest.mark.parametrize("fn", [torch.complex, torch.polar])
def test_complex_polar_refuse_with_cpus_message(fn, da, db):
    # CPU checks the dtype class (Half, Float or Double) before equality
    def message(dev):
        with pytest.raises(RuntimeError) as e:
            fn(torch.ones(2, dtype=da, device=dev), torch.ones(2, dtype=db, device=dev))
        return str(e.value).split("\n")[0]
    assert message("tpu") == message("cpu")
