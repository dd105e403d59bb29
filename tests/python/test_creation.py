import pytest
import torch

import torch_tpu
from harness import check


D = "tpu"


def native(fn):
    """Runs fn on tpu and asserts nothing fell back to CPU."""
    torch_tpu.debug.reset_fallback_report()
    out = fn()
    report = torch_tpu.debug.fallback_report()
    assert not report, f"ops fell back to CPU: {report}"
    return out


# ------------------------------------------------------------ factories


def test_arange_values():
    for args, kw in [((5,), {}), ((0, 1, 0.1), {}), ((10, 2, -3), {}), ((0, 7), {"dtype": torch.int32}),
                     ((0, 5, 0.5), {"dtype": torch.bfloat16}),
                     ((1.5, -2.0, -0.25), {}), ((2, 9, 3), {}), ((3, 11, 2), {"dtype": torch.float16})]:
        got = native(lambda: torch.arange(*args, **kw, device=D))
        exp = torch.arange(*args, **kw)
        assert got.dtype == exp.dtype and got.shape == exp.shape
        torch.testing.assert_close(got.cpu(), exp)


def test_arange_out_resized_and_reused_shapes():
    a = native(lambda: torch.arange(4, device=D))
    b = native(lambda: torch.arange(1, 5, device=D))  # same length, other start: cached program
    torch.testing.assert_close(a.cpu(), torch.arange(4))
    torch.testing.assert_close(b.cpu(), torch.arange(1, 5))


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 5, 0, device=D)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        torch.arange(5, 0, 1, device=D)


def test_linspace():
    for args, kw in [((0, 1, 5), {}), ((-2.5, 7, 10), {}), ((3, 3, 1), {}),
                     ((0, 10, 4), {"dtype": torch.int64}), ((0, 1, 6), {"dtype": torch.bfloat16})]:
        got = native(lambda: torch.linspace(*args, **kw, device=D))
        exp = torch.linspace(*args, **kw)
        assert got.dtype == exp.dtype and got.shape == exp.shape
        torch.testing.assert_close(got.cpu(), exp)


def test_full_zeros_ones_eye():
    for fn in [lambda d: torch.full((2, 3), 2.5, device=d),
               lambda d: torch.full((4,), 7, device=d),
               lambda d: torch.zeros(3, 2, device=d, dtype=torch.bfloat16),
               lambda d: torch.ones(5, device=d, dtype=torch.int32),
               lambda d: torch.ones(2, 2, device=d, dtype=torch.bool),
               lambda d: torch.eye(3, device=d),
               lambda d: torch.eye(2, 4, device=d, dtype=torch.int64),
               lambda d: torch.zeros_like(torch.empty(3, device=d)),
               lambda d: torch.full_like(torch.empty(2, 2, device=d), 3.0)]:
        got = native(lambda: fn(D))
        exp = fn("cpu")
        assert got.dtype == exp.dtype and got.shape == exp.shape
        torch.testing.assert_close(got.cpu(), exp)


@pytest.mark.parametrize("src,dst", [
    (torch.float32, torch.bfloat16), (torch.float32, torch.float16), (torch.float32, torch.int64),
    (torch.float32, torch.int32), (torch.float32, torch.bool), (torch.bfloat16, torch.float32),
    (torch.float16, torch.float32), (torch.int64, torch.float32), (torch.int32, torch.bool),
    (torch.bool, torch.float32),
])
def test_dtype_casts(src, dst):
    x = torch.tensor([0.0, 0.4, -0.4, 1.7, -1.7, 2.5, -2.5, 100.75, -3.0])
    if src == torch.bool:
        x = x > 0
    else:
        x = x.to(src)
    check(lambda t: t.to(dst), x)


def test_cast_grad():
    check(lambda t: t.to(torch.float64).to(torch.float32) * 2, torch.randn(4), grad=True)


# ------------------------------------------------------------ random

FLOATS = [torch.float32, torch.bfloat16, torch.float16]


def _seeded(fn, seed):
    torch.manual_seed(seed)
    return native(fn).cpu()


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand(dtype):
    f = lambda: torch.rand(100, 100, device=D, dtype=dtype)
    a, b, c = _seeded(f, 1), _seeded(f, 1), _seeded(f, 2)
    assert a.dtype == dtype and a.shape == (100, 100)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert a.min() >= 0 and a.max() < 1
    assert abs(a.float().mean() - 0.5) < 0.02 and abs(a.float().std() - 12 ** -0.5) < 0.02


def test_uniform_range_and_second_call_differs():
    torch.manual_seed(0)
    x = torch.empty(10000, device=D)
    a = native(lambda: x.uniform_(-3, 5)).cpu()
    assert a.min() >= -3 and a.max() < 5 and abs(a.mean() - 1) < 0.1
    b = native(lambda: x.uniform_(-3, 5)).cpu()
    assert not torch.equal(a, b)


@pytest.mark.parametrize("dtype", FLOATS)
def test_randn(dtype):
    f = lambda: torch.randn(10001, device=D, dtype=dtype)
    a, b, c = _seeded(f, 3), _seeded(f, 3), _seeded(f, 4)
    assert a.dtype == dtype and a.shape == (10001,)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert abs(a.float().mean()) < 0.04 and abs(a.float().std() - 1) < 0.04
    assert torch.isfinite(a).all()


def test_normal_variants():
    torch.manual_seed(0)
    x = torch.empty(100, 100, device=D)
    a = native(lambda: x.normal_(2.0, 0.5)).cpu()
    assert abs(a.mean() - 2) < 0.03 and abs(a.std() - 0.5) < 0.03
    mean = torch.full((100, 100), 3.0, device=D)
    std = torch.full((100, 100), 2.0, device=D)
    for out, m, s in [(native(lambda: torch.normal(mean, 2.0)), 3, 2),
                      (native(lambda: torch.normal(-1.0, std)), -1, 2),
                      (native(lambda: torch.normal(mean, std)), 3, 2)]:
        assert out.device.type == "tpu" and out.shape == (100, 100)
        out = out.cpu()
        assert abs(out.mean() - m) < 0.1 and abs(out.std() - s) < 0.1


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
def test_randint(dtype):
    f = lambda: torch.randint(-5, 7, (10000,), device=D, dtype=dtype)
    a, b, c = _seeded(f, 5), _seeded(f, 5), _seeded(f, 6)
    assert a.dtype == dtype
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert a.min() == -5 and a.max() == 6
    assert abs(a.double().mean() - 0.5) < 0.15
    h = torch.bincount((a.long() + 5), minlength=12)
    assert h.min() > 600


def test_random_variants():
    torch.manual_seed(0)
    x = torch.empty(10000, device=D, dtype=torch.int64)
    a = native(lambda: x.random_(10)).cpu()
    assert a.min() == 0 and a.max() == 9
    b = native(lambda: x.random_()).cpu()
    assert b.min() >= 0 and b.double().mean() > 2 ** 60
    big = native(lambda: x.random_(-2 ** 40, 2 ** 40)).cpu()
    assert big.min() >= -2 ** 40 and big.max() < 2 ** 40 and big.min() < -2 ** 38
    y = torch.empty(1000, device=D, dtype=torch.bool)
    c = native(lambda: y.random_()).cpu()
    assert c.any() and not c.all()
    z = torch.empty(1000, device=D, dtype=torch.bfloat16)
    d = native(lambda: z.random_(0, 4)).cpu()
    assert set(d.tolist()) == {0.0, 1.0, 2.0, 3.0}


def test_bernoulli():
    torch.manual_seed(0)
    p = torch.full((10000,), 0.3, device=D)
    a = native(lambda: torch.bernoulli(p)).cpu()
    assert a.dtype == torch.float32 and set(a.unique().tolist()) <= {0.0, 1.0}
    assert abs(a.mean() - 0.3) < 0.03
    x = torch.empty(10000, device=D, dtype=torch.bfloat16)
    b = native(lambda: x.bernoulli_(0.8)).cpu()
    assert b.dtype == torch.bfloat16 and abs(b.float().mean() - 0.8) < 0.03
    c = native(lambda: torch.bernoulli(x, 0.1)).cpu()
    assert abs(c.float().mean() - 0.1) < 0.02
    probs = torch.linspace(0, 1, 10000, device=D)
    d = native(lambda: torch.bernoulli(probs)).cpu()
    assert d[0] == 0 and d[-1] == 1
    assert abs(d[:5000].mean() - 0.25) < 0.04 and abs(d[5000:].mean() - 0.75) < 0.04
    torch.manual_seed(9)
    e1 = torch.bernoulli(p).cpu()
    torch.manual_seed(9)
    e2 = torch.bernoulli(p).cpu()
    assert torch.equal(e1, e2)


def test_exponential():
    torch.manual_seed(0)
    x = torch.empty(10000, device=D)
    a = native(lambda: x.exponential_(2.0)).cpu()
    assert a.min() >= 0 and torch.isfinite(a).all()
    assert abs(a.mean() - 0.5) < 0.03


def test_rand_like_and_empty():
    x = torch.zeros(0, 3, device=D)
    assert native(lambda: torch.rand_like(x)).shape == (0, 3)
    y = torch.zeros(7, device=D, dtype=torch.float16)
    r = native(lambda: torch.rand_like(y))
    assert r.dtype == torch.float16 and r.device.type == "tpu"


def test_random_on_view_writes_only_view():
    base = torch.zeros(4, 6, device=D)
    native(lambda: base[:, 1::2].uniform_(1, 2))
    cpu = base.cpu()
    assert (cpu[:, 0::2] == 0).all() and (cpu[:, 1::2] >= 1).all()


def _draw(fn, n=200000):
    torch.manual_seed(0)
    t = torch.empty(n, device="tpu")
    import torch_tpu
    torch_tpu.debug.reset_fallback_report()
    v = fn(t).cpu()
    assert not torch_tpu.debug.fallback_report()
    return v


def test_random_ops_on_device_are_reproducible():
    outs = []
    for _ in range(2):
        torch.manual_seed(42)
        outs.append([torch.rand(5, device="tpu").cpu(), torch.randn(5, device="tpu").cpu(),
                     torch.randint(0, 10, (5,), device="tpu").cpu(),
                     torch.bernoulli(torch.full((5,), 0.5, device="tpu")).cpu(),
                     torch.empty(5, device="tpu").normal_(2.0, 0.5).cpu(),
                     torch.empty(5, device="tpu").uniform_(-1, 1).cpu()])
    for a, b in zip(*outs):
        assert torch.equal(a, b)


@pytest.mark.parametrize("fn", [torch.tril_indices, torch.triu_indices])
def test_tri_indices(fn):
    torch_tpu.debug.reset_fallback_report()
    for row, col, off in [(4, 3, 0), (3, 5, -1), (5, 5, 2), (30, 20, -3)]:
        expected = fn(row, col, off)
        actual = fn(row, col, off, device="tpu")
        assert actual.device.type == "tpu"
        assert torch.equal(actual.cpu(), expected)
    assert not torch_tpu.debug.fallback_report()


@pytest.mark.parametrize("steps", [0, 1, 5, 50])
def test_logspace_and_linspace(steps):
    # the dummy tensor only carries the device (cpu, then tpu)
    check(lambda d: torch.logspace(-2, 3, steps, device=d.device), torch.zeros(1))
    check(lambda d: torch.logspace(0.5, -1.5, steps, base=2.0, device=d.device), torch.zeros(1))
    check(lambda d: torch.linspace(-2.0, 3.0, steps, device=d.device), torch.zeros(1))


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


def test_resize_memory_format_strides():
    """resize_(memory_format=...) restrides like CPU (issue 20); a same-size
    resize_ keeps the strides; preserve_format raises."""
    cases = [((2, 3, 32, 32), torch.channels_last), ((2, 3, 4, 5, 6), torch.channels_last_3d),
             ((2, 3, 4, 5), torch.contiguous_format), ((2, 3), None)]
    for size, mf in cases:
        kw = {} if mf is None else {"memory_format": mf}
        c = torch.empty(0).resize_(*size, **kw)
        t = torch.empty(0, device="tpu").resize_(*size, **kw)
        assert t.stride() == c.stride(), (size, mf)
        t.copy_(torch.arange(t.numel(), dtype=torch.float32).reshape(size))
        assert torch.equal(t.cpu(), torch.arange(t.numel(), dtype=torch.float32).reshape(size))
    c = torch.empty(0).resize_(2, 3, 4, 4, memory_format=torch.channels_last).resize_(2, 3, 4, 4)
    t = torch.empty(0, device="tpu").resize_(2, 3, 4, 4, memory_format=torch.channels_last)
    assert t.resize_(2, 3, 4, 4).stride() == c.stride()
    with pytest.raises(RuntimeError, match="Unsupported memory format"):
        torch.empty(0, device="tpu").resize_(2, 3, memory_format=torch.preserve_format)


# ------------------------------------------------------------ multinomial

_MN_P = torch.tensor([0.15, 0.3, 0.75, 0.0, 1.8])  # unnormalized; category 3 never drawn


def _chi2(counts, probs):
    """Pearson's statistic over the categories of nonzero probability."""
    n = counts.sum()
    keep = probs > 0
    exp = probs[keep] / probs[keep].sum() * n
    return (((counts[keep].double() - exp) ** 2) / exp).sum().item()


# Critical value of chi-square with 3 degrees of freedom at p = 1e-4: the
# seed is fixed, so each test is deterministic, and a distribution off by a
# few percent in any category (or the wrong law altogether) lands far above.
_CHI2_DF3 = 21.11


@pytest.mark.parametrize("repl,n", [(True, 1), (True, 16), (False, 1)])
def test_multinomial_distribution_matches_probabilities(repl, n):
    torch.manual_seed(0)
    rows = 160000 // n
    p = _MN_P.expand(rows, 5).contiguous().to(D)
    s = native(lambda: torch.multinomial(p, n, replacement=repl)).cpu()
    assert s.shape == (rows, n) and s.dtype == torch.int64
    counts = torch.bincount(s.flatten(), minlength=5)
    assert counts[3] == 0
    stat = _chi2(counts, _MN_P.double())
    assert stat < _CHI2_DF3, (counts, stat)
    # the test can fail: uniform counts are rejected by the same statistic
    assert _chi2(torch.full((5,), counts.sum() // 4), _MN_P.double()) > 1000


def test_multinomial_without_replacement_second_draw_and_distinct():
    torch.manual_seed(1)
    rows = 100000
    p = _MN_P.expand(rows, 5).contiguous().to(D)
    s = native(lambda: torch.multinomial(p, 3)).cpu()
    srt = s.sort(dim=1).values
    assert (srt[:, 1:] != srt[:, :-1]).all()  # no category twice in a row
    q = _MN_P.double() / _MN_P.sum()
    # P(second = j) = sum_i q_i q_j / (1 - q_i), i != j
    second = torch.tensor([sum(q[i] * q[j] / (1 - q[i]) for i in range(5) if i != j) for j in range(5)])
    counts = torch.bincount(s[:, 1], minlength=5)
    assert counts[3] == 0
    assert _chi2(counts, second) < _CHI2_DF3, counts
    # all categories (zero probability last) form a permutation
    full = native(lambda: torch.multinomial(_MN_P.to(D), 5)).cpu()
    assert sorted(full.tolist()) == [0, 1, 2, 3, 4] and full[-1] == 3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_multinomial_reproducible_under_seed(dtype):
    p = torch.rand(4, 50, dtype=dtype).to(D)
    runs = []
    for seed in (7, 7, 8):
        torch.manual_seed(seed)
        runs.append(native(lambda: (torch.multinomial(p, 6, True), torch.multinomial(p, 6),
                                    torch.multinomial(p[0], 1))))
    for a, b in zip(runs[0], runs[1]):
        assert torch.equal(a.cpu(), b.cpu())
    assert not all(torch.equal(a.cpu(), c.cpu()) for a, c in zip(runs[0], runs[2]))
    assert runs[0][2].shape == (1,)
    out = torch.empty(4, 6, dtype=torch.long, device=D)
    native(lambda: torch.multinomial(p, 6, True, out=out))
    assert out.cpu().max() < 50


@pytest.mark.parametrize("p,n,repl", [
    ([0.5, -0.1, 0.6], 1, False),
    ([0.5, -0.1, 0.6], 2, True),
    ([[0.0, 0.0], [1.0, 1.0]], 1, True),
    ([[0.0, 0.0], [1.0, 1.0]], 2, True),
    ([float("nan"), 1.0], 1, False),
    ([float("inf"), 1.0], 3, True),
    ([0.2, 0.8], 3, False),
    ([0.2, 0.8], 0, True),
    ([[[0.2, 0.8]]], 1, True),
])
def test_multinomial_errors_match_cpu(p, n, repl):
    t = torch.tensor(p)
    with pytest.raises(RuntimeError) as want:
        torch.multinomial(t, n, repl)
    with pytest.raises(RuntimeError) as got:
        torch.multinomial(t.to(D), n, repl)
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]
    with pytest.raises(RuntimeError, match="floating-point dtypes"):
        torch.multinomial(torch.ones(3, dtype=torch.long, device=D), 1)
    with pytest.raises(RuntimeError, match="expects Long tensor out, got: Float"):
        torch.multinomial(torch.ones(3, device=D), 1, out=torch.empty(1, device=D))
