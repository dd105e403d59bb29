"""Lowerings added for the OpInfo conformance report (docs/op_coverage.md):
norm with dims, vdot, round with decimals, channel_shuffle, max_unpool,
logspace/empty linspace, index ops on a 0-dim self, and the ops made exact
against CPU in float16/bfloat16 (logit, batch_norm in eval mode) or in their
gradients (erfinv, logcumsumexp). Each compares with CPU and asserts no
fallback; the cases a lowering declines are checked to still match CPU."""
import pytest
import torch
import torch.nn.functional as F

from harness import check

A = torch.ops.aten


# ------------------------------------------------------------------ reductions / dot

@pytest.mark.parametrize("p", [None, 1, 2, 3.5, float("inf")])
def test_norm_with_dims(p):
    x = torch.randn(4, 5, 3)
    check(lambda t: torch.norm(t, p=p, dim=(0, 2), keepdim=True), x, grad=True)
    check(lambda t: A.norm.ScalarOpt_dim(t, p, [1]), x)


def test_norm_through_pairwise_distance_and_triplet_loss():
    a, b, c = torch.randn(5, 10), torch.randn(5, 10), torch.randn(5, 10)
    check(lambda x, y: F.pairwise_distance(x, y), a, b, grad=True)
    check(lambda x, y, z: F.triplet_margin_loss(x, y, z, margin=1.0), a, b, c, grad=True)


def test_vdot():
    check(torch.vdot, torch.randn(7), torch.randn(7), grad=True)
    check(torch.vdot, torch.arange(5), torch.arange(5) * 3)
    check(lambda x, y: torch.linalg.vecdot(x, y), torch.randn(3, 4), torch.randn(3, 4))


def test_dot_error_messages():
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, "
                                           "but found Float and Half"):
        torch.dot(torch.randn(3).to("tpu"), torch.randn(3).half().to("tpu"))


# ------------------------------------------------------------------ elementwise

@pytest.mark.parametrize("decimals", [3, -3, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_round_decimals(decimals, dtype):
    x = (torch.randn(50) * 1000).to(dtype)
    check(lambda t: torch.round(t, decimals=decimals), x)


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


def test_logcumsumexp_gradient():
    check(lambda t: torch.logcumsumexp(t, 0), torch.randn(5, 5, 5), grad=True)
    check(lambda t: torch.logcumsumexp(t, 1), torch.randn(3, 40), grad=True)


# ------------------------------------------------------------------ shape / creation

def test_channel_shuffle():
    check(lambda t: F.channel_shuffle(t, 3), torch.randn(2, 6, 4, 4))
    check(lambda t: F.channel_shuffle(t, 2), torch.arange(48).reshape(1, 4, 3, 4))


@pytest.mark.parametrize("steps", [0, 1, 5, 50])
def test_logspace_and_linspace(steps):
    # the dummy tensor only carries the device (cpu, then tpu)
    check(lambda d: torch.logspace(-2, 3, steps, device=d.device), torch.zeros(1))
    check(lambda d: torch.logspace(0.5, -1.5, steps, base=2.0, device=d.device), torch.zeros(1))
    check(lambda d: torch.linspace(-2.0, 3.0, steps, device=d.device), torch.zeros(1))


# ------------------------------------------------------------------ pooling

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


# ------------------------------------------------------------------ normalization

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_batch_norm_eval_halves(dtype):
    x, w, b = torch.randn(4, 5, 6).to(dtype), torch.randn(5).to(dtype), torch.randn(5).to(dtype)
    rm, rv = torch.randn(5).to(dtype), torch.rand(5).to(dtype)
    check(lambda *a: F.batch_norm(*a, training=False, eps=0.6), x, rm, rv, w, b)


def test_batch_norm_training_halves_falls_back():
    x, w, b = torch.randn(5, 5, 5).bfloat16(), torch.randn(5).bfloat16(), torch.randn(5).bfloat16()
    rm, rv = torch.randn(5).bfloat16(), torch.rand(5).bfloat16()
    check(lambda *a: F.batch_norm(*a, training=True, momentum=0.5, eps=0.6), x, rm, rv, w, b,
          native=False, atol=0, rtol=0)


def test_layer_norm_weight_shape_message():
    x = torch.randn(1, 2, 3).to("tpu")
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        A.native_layer_norm(x, [1, 2, 3], torch.randn(1, 2).to("tpu"), None, 1e-5)


def test_roll_without_shifts():
    with pytest.raises(RuntimeError, match="`shifts` required"):
        torch.roll(torch.randn(5).to("tpu"), [])


# ------------------------------------------------------------------ indexing on a 0-dim self

def test_index_ops_on_scalar_self():
    s, i, v = torch.tensor(2.5), torch.tensor([0]), torch.tensor(-1.5)
    check(lambda a, j: torch.index_select(a, 0, j), s, i)
    check(lambda a, j, b: torch.index_add(a, 0, j, b, alpha=-2), s, i, v)
    check(lambda a, j, b: torch.index_copy(a, 0, j, b), s, i, v)
    for reduce in ("prod", "mean", "amax", "amin"):
        for inc in (True, False):
            check(lambda a, j, b: torch.index_reduce(a, 0, j, b, reduce, include_self=inc), s, i, v)
    check(lambda a, j, b: torch.index_reduce(a, 0, j, b, "mean"), torch.tensor(7), i, torch.tensor(2))


# ------------------------------------------------------------------ linalg / search / reductions

@pytest.mark.parametrize("upper,transpose,unit", [(True, False, False), (False, True, False),
                                                  (True, True, True)])
def test_triangular_solve(upper, transpose, unit):
    a = torch.randn(2, 4, 4) + 4 * torch.eye(4)
    bm = torch.randn(2, 4, 3)
    check(lambda x, y: torch.triangular_solve(x, y, upper=upper, transpose=transpose,
                                              unitriangular=unit), bm, a, grad=True)


def test_logsumexp_scalar_over_no_dims():
    for v in (2.0, float("inf"), float("-inf"), -3.3):
        check(lambda t: torch.logsumexp(t, dim=[]), torch.tensor(v))


def test_searchsorted_empty():
    check(lambda s, v: torch.searchsorted(s, v), torch.zeros(0), torch.zeros(0))
    check(lambda s, v: torch.searchsorted(s, v, right=True), torch.zeros(0), torch.randn(4))
    check(lambda v, s: torch.bucketize(v, s), torch.tensor(1.5), torch.zeros(0))


# ------------------------------------------------------------------ modified Bessel functions

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


# ------------------------------------------------------------------ distances

@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
def test_cdist(p):
    check(lambda a, b: torch.cdist(a, b, p=p), torch.randn(3, 5, 4), torch.randn(3, 6, 4))
    check(lambda a, b: torch.cdist(a, b, p=p, compute_mode="donot_use_mm_for_euclid_dist"),
          torch.randn(7, 3), torch.randn(4, 3))


def test_cdist_matrix_product_form():
    # p = 2 with more than 25 rows: CPU's [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T form
    a, b = torch.randn(30, 8), torch.randn(27, 8)
    check(lambda x, y: torch.cdist(x, y), a, b)
    check(lambda x, y: torch.cdist(x, y, compute_mode="use_mm_for_euclid_dist"), a[:5], b[:4])


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 1.5, float("inf")])
def test_pdist(p):
    check(lambda a: F.pdist(a, p=p), torch.randn(6, 5))
    check(lambda a: F.pdist(a, p=p), torch.randn(1, 5))


def test_isin():
    e, t = torch.randint(0, 10, (4, 5)), torch.randint(0, 10, (7,))
    check(lambda a, b: torch.isin(a, b), e, t)
    check(lambda a, b: torch.isin(a, b, invert=True), e, t)
    check(lambda a: torch.isin(a, 3), e)
    x = torch.tensor([1.0, float("nan"), 2.5, -0.0])
    check(lambda a, b: torch.isin(a, b), x, torch.tensor([0.0, float("nan"), 2.5]))


# ------------------------------------------------------------------ orthogonal polynomials

POLYS = [torch.special.chebyshev_polynomial_t, torch.special.chebyshev_polynomial_u,
         torch.special.chebyshev_polynomial_v, torch.special.chebyshev_polynomial_w,
         torch.special.shifted_chebyshev_polynomial_t, torch.special.shifted_chebyshev_polynomial_u,
         torch.special.shifted_chebyshev_polynomial_v, torch.special.shifted_chebyshev_polynomial_w,
         torch.special.hermite_polynomial_h, torch.special.hermite_polynomial_he,
         torch.special.laguerre_polynomial_l, torch.special.legendre_polynomial_p]


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


# ------------------------------------------------------------------ random distributions

def _draw(fn, n=200000):
    torch.manual_seed(0)
    t = torch.empty(n, device="tpu")
    import torch_tpu
    torch_tpu.debug.reset_fallback_report()
    v = fn(t).cpu()
    assert not torch_tpu.debug.fallback_report()
    return v


def test_cauchy_log_normal_geometric_distributions():
    c = _draw(lambda t: t.cauchy_(1.5, 2.0))
    assert abs(c.median().item() - 1.5) < 0.05  # median of Cauchy(1.5, 2)
    q = torch.quantile(c[:100000], torch.tensor([0.25, 0.75]))
    assert abs(q[0].item() - (1.5 - 2.0)) < 0.1 and abs(q[1].item() - (1.5 + 2.0)) < 0.1
    ln = _draw(lambda t: t.log_normal_(0.5, 0.25))
    assert (ln > 0).all()
    assert abs(ln.log().mean().item() - 0.5) < 0.01 and abs(ln.log().std().item() - 0.25) < 0.01
    g = _draw(lambda t: t.geometric_(0.3))
    assert (g >= 1).all() and (g == g.round()).all()
    assert abs(g.mean().item() - 1 / 0.3) < 0.05  # mean of Geometric(0.3) on {1, 2, ...}
    assert abs((g == 1).float().mean().item() - 0.3) < 0.01


# ------------------------------------------------------------------ unfold, rrelu training

@pytest.mark.parametrize("shape,kw", [((2, 3, 7, 6), dict(kernel_size=3)),
                                      ((1, 2, 8, 9), dict(kernel_size=(2, 3), dilation=(2, 1),
                                                          padding=(1, 2), stride=(2, 3))),
                                      ((0, 1, 5, 5), dict(kernel_size=2))])
def test_unfold(shape, kw):
    check(lambda x: F.unfold(x, **kw), torch.randn(*shape))
    if shape[0]:
        check(lambda x: F.unfold(x, **kw), torch.randn(*shape[1:]))  # unbatched


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
