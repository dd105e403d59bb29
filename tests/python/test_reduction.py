"""Reductions (csrc/ops/reduction.c) against CPU: sum/mean/prod, min/max,
var/std, norms, logsumexp, softmax."""
import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from harness import check, check_reduction_grad as check_grad, ints, x23


# ---------------------------------------------------------------- sum / mean / prod

def test_sum_dims_keepdim_dtype():
    check(lambda x: (x.sum((0, 2), keepdim=True), x.sum(-1), x.sum(), x.sum(1, dtype=torch.float64)),
          x23(), grad=True)


def test_sum_int_bool_half():
    check(lambda x: (x.sum(), x.sum(0), x.sum(dtype=torch.int32)), ints())
    check(lambda x: (x.sum(), x.sum(1)), ints() > 0)
    check(lambda x: x.sum(1), x23(torch.bfloat16))
    check(lambda x: torch.sum(x, dtype=torch.int64), torch.tensor([1.7, 1.7, -2.5]))


def test_sum_empty_and_out():
    check(lambda x: (x.sum(), x.sum(0)), torch.empty(0, 3))
    check(lambda x: torch.sum(x, 0, out=torch.empty(0, dtype=torch.float64, device=x.device)), ints())


def test_mean():
    check_grad(lambda x: (x.mean(), x.mean((0, 1), keepdim=True), x.mean(-1)), x23())
    check(lambda x: (x.mean(), x.mean(1)), x23(torch.float16))
    check(lambda x: x.mean(dtype=torch.float64), ints())
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        ints().to("tpu").mean()


def test_prod():
    check_grad(lambda x: (x.prod(), x.prod(1)), x23())
    check(lambda x: (x.prod(), x.prod(1, keepdim=True)), x23())
    check(lambda x: (x.prod(), x.prod(0)), ints())
    check(lambda x: x.prod(0), torch.empty(0, 3))


# ---------------------------------------------------------------- max / min

def test_amax_amin():
    x = x23()
    x[0, 1, 2] = float("nan")
    check(lambda x: (x.amax(), x.amax((0, 2)), x.amin(1, keepdim=True)), x)
    check(lambda x: (x.amax(0), x.amin()), ints())
    check_grad(lambda x: (x.amax(1), x.amin()), x23())
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.empty(0, 3).to("tpu").amax(0)


def test_max_min_full_and_dim_first_index():
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, -1.0], [float("nan"), 1.0, float("nan"), 5.0]])
    check(lambda x: (x.max(), x.min()), x[:2])
    check(lambda x: tuple(x.max(1)) + tuple(x.min(1, keepdim=True)) + tuple(x.max(0)), x)
    xi = torch.tensor([[4, 1, 4], [0, 0, -3]])
    check(lambda x: tuple(x.max(1)) + tuple(x.min(0)) + (x.max(),), xi)
    check(lambda x: tuple(x.max(0)), torch.tensor([True, False, True]))
    check_grad(lambda x: (x.max(1)[0], x.min(0)[0], x.max()), x23())
    with pytest.raises(RuntimeError, match="Specify the reduction dim"):
        torch.empty(0).to("tpu").max()


def test_argmax_argmin():
    x = torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, -1.0]])
    check(lambda x: (x.argmax(), x.argmax(1), x.argmin(0, keepdim=True), x.argmin(),
                     x.argmax(keepdim=True)), x)
    check(lambda x: (x.argmax(0), x.argmin(1)), ints())
    check(lambda x: x.argmax(), torch.tensor(3.0))


@pytest.mark.parametrize("dev", ["cpu", "tpu"])
def test_argmax_argmin_empty_raise_index_error(dev):
    """No dim over an empty input raises IndexError like CPU (issue 20)."""
    for f in (torch.argmax, torch.argmin):
        with pytest.raises(IndexError, match="Expected reduction dim to be specified"):
            f(torch.ones(0, 3, device=dev))
        with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
            f(torch.ones(0, 3, device=dev), 0)


# ---------------------------------------------------------------- var / std

def test_var_std():
    check(lambda x: (x.var(1), x.std((0, 2), keepdim=True), x.var(correction=0), x.std(unbiased=False),
                     torch.var(x, 1, correction=2)), x23())
    check(lambda x: (torch.var_mean(x, 1), torch.std_mean(x, (0, 1), correction=0)), x23())
    check(lambda x: x.var(1), x23(torch.bfloat16))
    check(lambda x: x.var(1), x23(), grad=True)
    check_grad(lambda x: (x.std(1), torch.var_mean(x, (0, 2)), torch.std_mean(x, 1)), x23())


def test_var_std_no_degrees_of_freedom_warns():
    """correction >= N warns like CPU (issue 20) and gives CPU's inf/nan;
    a valid correction after it stays native."""
    x = torch.arange(6.0).reshape(3, 2)
    cases = [lambda a: torch.var(a, 0, correction=3), lambda a: torch.std(a, correction=6.5),
             lambda a: torch.var_mean(a, 1, correction=2), lambda a: torch.std_mean(a[:1], 0),
             lambda a: torch.var(a[:, :0], 1)]
    for f in cases:
        expected = f(x)
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
            actual = f(x.to("tpu"))
        for a, e in zip(actual if isinstance(actual, tuple) else (actual,),
                        expected if isinstance(expected, tuple) else (expected,)):
            torch.testing.assert_close(a.cpu(), e, equal_nan=True)
    check(lambda a: (torch.var(a, 0, correction=1), torch.std(a, correction=5)), x)


# ---------------------------------------------------------------- logsumexp / all / any

def test_logsumexp():
    x = x23()
    x[1, 2] = float("-inf")
    # logsumexp and logsumexp.out have Composite kernels that decompose before
    # reaching the tpu fallback (into abs/eq/exp/log/masked_fill, other
    # families), so the lowering is not reached in eager mode yet: values only.
    check(lambda x: (x.logsumexp(2), x.logsumexp((0, 1), keepdim=True)), x, native=False)
    check(lambda x: x.logsumexp(1), ints(), native=False)


def test_all_any():
    x = torch.tensor([[0, 1, 2], [3, 4, 5]])
    check(lambda x: (x.all(), x.any(), x.all(1), x.any(0, keepdim=True), x.all((0, 1)),
                     torch.any(x, dim=())), x)
    check(lambda x: (x.all(), x.any(1)), torch.tensor([[0, 1], [1, 1]], dtype=torch.uint8))
    check(lambda x: (x.all(0), x.any()), torch.randn(2, 3) > 0)


@pytest.mark.parametrize("dev", ["cpu", "tpu"])
def test_all_any_out_dtype(dev):
    """out= must be bool or uint8, as on CPU (issue 20)."""
    x = torch.ones(3, 2, device=dev)
    for f, name in ((torch.all, "all"), (torch.any, "any")):
        for args in ((), (0,), ((0, 1),)):
            out = torch.empty(() if len(args) != 1 or isinstance(args[0], tuple) else 2, device=dev)
            with pytest.raises(RuntimeError, match=f"{name} only supports bool tensor for result, got: Float"):
                f(x, *args, out=out)
    check(lambda a: (torch.all(a, out=torch.empty((), dtype=torch.uint8, device=a.device)),
                     torch.any(a, 1, out=torch.empty(3, dtype=torch.bool, device=a.device))), torch.ones(3, 2))


# ---------------------------------------------------------------- softmax

def test_softmax_log_softmax_grad():
    check(lambda x: (torch.softmax(x, 1), torch.log_softmax(x, -1)), x23(), grad=True)
    check(lambda x: torch.softmax(x, 0), torch.tensor([1.0, float("-inf"), 2.0]), grad=True)


def test_softmax_half_and_dtype():
    check(lambda x: (torch.softmax(x, -1), torch.log_softmax(x, 0)), x23(torch.bfloat16), grad=True)
    check(lambda x: torch.softmax(x, 1, dtype=torch.float64), x23(), native=False)


# ---------------------------------------------------------------- norm

@pytest.mark.parametrize("ord", [2, 1, float("inf"), float("-inf"), 0, 3, 0.5])
def test_vector_norm(ord):
    x = x23()
    x[0, 0, :2] = 0
    check(lambda x: (torch.linalg.vector_norm(x, ord), torch.linalg.vector_norm(x, ord, dim=(0, 2), keepdim=True)),
          x)


def test_vector_norm_grad():
    check_grad(lambda x: (torch.linalg.vector_norm(x), torch.linalg.vector_norm(x, 1, dim=1)), x23())


def test_vector_norm_dtype():
    check(lambda x: torch.linalg.vector_norm(x, 2, dim=1, dtype=torch.float32), x23(torch.float16))


NAN = float("nan")
A = torch.ops.aten


def _fp64_errors(fn, *xs):
    """Max |float32 result - float64 result| on CPU and on tpu."""
    ref = fn(*[x.double() for x in xs])
    cpu = fn(*xs)
    tpu = fn(*[x.to("tpu") for x in xs]).cpu()
    return (cpu.double() - ref).abs().max().item(), (tpu.double() - ref).abs().max().item()


def test_nansum_nanmean():
    x = torch.tensor([[1.0, NAN, 2.0], [NAN, NAN, 3.0]])
    check(lambda x: torch.nansum(x), x)
    check(lambda x: torch.nansum(x, dim=1, keepdim=True), x, grad=True)
    check(lambda x: torch.nanmean(x, dim=0), x)
    check(lambda x: torch.nansum(x, 0), torch.arange(6).reshape(2, 3))
    check(lambda x: torch.nansum(x, dtype=torch.float32), torch.randn(4, 5).to(torch.bfloat16))


def test_count_nonzero():
    x = torch.tensor([[0.0, 1.0, NAN], [0.0, 0.0, -2.0]])
    check(lambda x: torch.count_nonzero(x), x)
    check(lambda x: torch.count_nonzero(x, dim=1), x)
    check(lambda x: torch.count_nonzero(x, dim=(0, 1)), torch.tensor([[True, False], [True, True]]))


def test_aminmax():
    check(lambda x: torch.aminmax(x), torch.randn(3, 4))
    check(lambda x: torch.aminmax(x, dim=0, keepdim=True), torch.randint(-5, 5, (3, 4)))
    check(lambda x: torch.aminmax(x, dim=1), torch.tensor([[1.0, NAN], [2.0, 3.0]]))


def test_renorm():
    x = torch.randn(4, 3) * 3
    check(lambda x: torch.renorm(x, 2, 0, 1.5), x, grad=True)
    check(lambda x: torch.renorm(x, 1, 1, 2.0), x)
    check(lambda x: x.clone().renorm_(float("inf"), 0, 1.0), x)


def test_dist():
    check(lambda x, y: torch.dist(x, y), torch.randn(3, 4), torch.randn(4), grad=True)
    check(lambda x, y: torch.dist(x, y, 3), torch.randn(3, 4), torch.randn(3, 4))
    check(lambda x, y: torch.dist(x, y, float("inf")), torch.randn(5), torch.randn(5))


def test_sum_prod_bool_dtype():
    x = torch.tensor([[True, False, True], [True, True, True]])
    check(lambda x: torch.prod(x, 1, dtype=torch.bool), x)
    check(lambda x: torch.sum(x, 0, dtype=torch.bool), x)
    check(lambda x: torch.prod(x, 1), x)


@pytest.mark.parametrize("p", [None, 1, 2, 3.5, float("inf")])
def test_norm_with_dims(p):
    x = torch.randn(4, 5, 3)
    check(lambda t: torch.norm(t, p=p, dim=(0, 2), keepdim=True), x, grad=True)
    check(lambda t: A.norm.ScalarOpt_dim(t, p, [1]), x)


def test_norm_through_pairwise_distance_and_triplet_loss():
    a, b, c = torch.randn(5, 10), torch.randn(5, 10), torch.randn(5, 10)
    check(lambda x, y: F.pairwise_distance(x, y), a, b, grad=True)
    check(lambda x, y, z: F.triplet_margin_loss(x, y, z, margin=1.0), a, b, c, grad=True)


def test_logsumexp_scalar_over_no_dims():
    for v in (2.0, float("inf"), float("-inf"), -3.3):
        check(lambda t: torch.logsumexp(t, dim=[]), torch.tensor(v))


def test_sum_error_does_not_grow_with_count():
    # one accumulator over 100000 terms loses ~3 digits; blocks keep ~eps
    torch.manual_seed(0)
    x = torch.rand(100000) + 1
    cpu_err, tpu_err = _fp64_errors(lambda t: t.sum(), x)
    assert tpu_err <= 2 * cpu_err + 1e-3, (cpu_err, tpu_err)
    y = torch.randn(5, 10, 5, 20) * 3
    cpu_err, tpu_err = _fp64_errors(lambda t: t.sum((1, 3)), y)
    assert tpu_err <= 2 * cpu_err, (cpu_err, tpu_err)
    check(lambda t: t.sum((1, 3), keepdim=True), y)
    check(lambda t: t.mean((0, 2)), y)
    check(lambda t: t.sum(), torch.randn(37, 3))  # padded blocks


# (values, indices) out= overloads do not cast into their outputs: values of
# another dtype, or indices other than int64, raise as on CPU (the indices
# were silently written into a float64 out); found by PyTorch's
# test_reductions (test_minmax_illegal_dtype).
_VALUES_INDICES_OPS = {
    "max": lambda x, o: torch.max(x, 0, out=o),
    "min": lambda x, o: torch.min(x, 0, out=o),
    "kthvalue": lambda x, o: torch.kthvalue(x, 2, 0, out=o),
    "median": lambda x, o: torch.median(x, 0, out=o),
    "nanmedian": lambda x, o: torch.nanmedian(x, 0, out=o),
    "sort": lambda x, o: torch.sort(x, 0, out=o),
    "topk": lambda x, o: torch.topk(x, 2, 0, out=o),
    "cummax": lambda x, o: torch.cummax(x, 0, out=o),
    "cummin": lambda x, o: torch.cummin(x, 0, out=o),
}


@pytest.mark.parametrize("name", sorted(_VALUES_INDICES_OPS))
@pytest.mark.parametrize("values, indices", [(torch.int32, torch.int64), (torch.float32, torch.float64)])
def test_values_indices_out_dtypes_are_checked(name, values, indices):
    f = _VALUES_INDICES_OPS[name]
    x = torch.randn(5, 5)
    with pytest.raises(RuntimeError):
        f(x, (torch.empty(0, dtype=values), torch.empty(0, dtype=indices)))
    t = x.to("tpu")
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        f(t, (torch.empty(0, dtype=values, device="tpu"), torch.empty(0, dtype=indices, device="tpu")))
    # the right dtypes still work, and match CPU
    want = f(x, (torch.empty(0), torch.empty(0, dtype=torch.int64)))
    got = f(t, (torch.empty(0, device="tpu"), torch.empty(0, dtype=torch.int64, device="tpu")))
    assert torch.equal(got[0].cpu(), want[0])
    if name not in ("median", "nanmedian", "kthvalue"):  # ties may pick another index
        assert torch.equal(got[1].cpu(), want[1])


# histc over data whose range is all NaN raises CPU's message, "[nan, nan]"
# (the device's min/max lose a NaN's sign: it read "[-nan, -nan]"); found by
# PyTorch's test_reductions (test_histc).
def test_histc_nan_range_message_matches_cpu():
    for t in (torch.tensor([float("nan")]), torch.full((3,), float("nan"))):
        with pytest.raises(RuntimeError, match=r"range of \[nan, nan\] is not finite"):
            torch.histc(t.to("tpu"))
    with pytest.raises(RuntimeError, match=r"range of \[-inf, inf\] is not finite"):
        torch.histc(torch.tensor([float("-inf"), float("inf")], device="tpu"))


# var/std(_mean) with correction >= N run on CPU for CPU's "degrees of freedom
# is <= 0" warning; that warning comes first (the fallback's own "not lowered"
# warning came before it), the run is still in the fallback report; found by
# PyTorch's test_reductions (test_warn_invalid_degrees_of_freedom).
@pytest.mark.parametrize("name", ["std", "var", "var_mean", "std_mean"])
def test_invalid_degrees_of_freedom_warns_like_cpu(name):
    import warnings
    x = torch.randn(10, 20)
    f = getattr(torch, name)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = f(x.to("tpu"), dim=-1, correction=20)
    assert w and "degrees of freedom is <= 0" in str(w[0].message)
    assert not any("is not lowered" in str(m.message) for m in w)
    assert f"{name}.correction" in torch_tpu.debug.fallback_report()
    want = f(x, dim=-1, correction=20)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, e in zip(got, want):
        assert torch.equal(g.cpu().isinf(), e.isinf())
