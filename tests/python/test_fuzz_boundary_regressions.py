"""Regressions for op-fuzzer findings at the boundary (docs/reliability.md,
Fuzzing, Findings): each case runs on CPU and tpu and compares the result,
or the exception type (and its CPU wording where tpu mirrors it)."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_tpu  # noqa: F401

DEV = "tpu"


def _both(fn, *tensors):
    """fn on CPU copies and on tpu copies: (cpu outcome, tpu outcome), each
    ("ok", value, args) or ("err", exception, args). Device-side checks
    surface at the next wait, so the tpu run synchronizes inside."""
    out = []
    for dev in ("cpu", DEV):
        args = [t.clone().to(dev) for t in tensors]
        try:
            with warnings.catch_warnings():
                # on tpu an out= resize warning is a failure (CPU's own addmv
                # warns about its internal resize)
                warnings.simplefilter("error" if dev != "cpu" else "ignore")
                r = fn(*args)
                if dev != "cpu":
                    torch.tpu.synchronize()
            out.append(("ok", r, args))
        except Exception as e:  # noqa: BLE001
            out.append(("err", e, args))
    return out


def _same_error(fn, *tensors, match=None):
    (ck, ce, _), (tk, te, targs) = _both(fn, *tensors)
    assert ck == "err", "the case must make CPU raise"
    assert tk == "err", f"tpu did not raise (CPU raised {type(ce).__name__}: {ce})"
    assert type(te) is type(ce), f"tpu raised {type(te).__name__}: {te}; CPU {type(ce).__name__}: {ce}"
    if match:
        assert match in str(te) and match in str(ce)
    return targs


# In-place ops never resize self: addr_ and ldexp_ reach an out= kernel
# with out=self (PyTorch's composites), which used to be resized.
def test_addr_inplace_does_not_resize_self():
    args = _same_error(lambda s, a, b: s.addr_(a, b), torch.ones(1, 10), torch.ones(5), torch.ones(10),
                       match="size mismatch")
    assert tuple(args[0].shape) == (1, 10)


def test_ldexp_inplace_does_not_resize_self():
    args = _same_error(lambda s, o: s.ldexp_(o), torch.ones(5, 1), torch.ones(5),
                       match="doesn't match the broadcast shape")
    assert tuple(args[0].shape) == (5, 1)


def test_inplace_same_shape_still_works():
    for fn, ts in [(lambda s, a, b: s.addr_(a, b), (torch.randn(5, 10), torch.randn(5), torch.randn(10))),
                   (lambda s, o: s.ldexp_(o), (torch.randn(5, 5), torch.randint(-3, 3, (5,)).float()))]:
        (ck, cv, _), (tk, tv, _) = _both(fn, *ts)
        assert ck == tk == "ok"
        torch.testing.assert_close(tv.cpu(), cv)


def test_explicit_out_is_still_resized():
    # a user's out= that is not also an input keeps PyTorch's resize (with its warning)
    a, b = torch.randn(5, 1), torch.randn(5)
    out = torch.empty(1, device=DEV)
    with pytest.warns(UserWarning, match="resized"):
        torch.ldexp(a.to(DEV), b.to(DEV), out=out)
    torch.testing.assert_close(out.cpu(), torch.ldexp(a, b))


@pytest.mark.parametrize("self_shape,mat_shape", [((), (0, 10)), ((), (3, 0)), ((1,), (3, 0)), ((3,), (3, 0))])
@pytest.mark.parametrize("beta", [0.0, 2.0])
def test_addmv_empty_matrix_keeps_self_shape(self_shape, mat_shape, beta):
    s = torch.randn(self_shape)
    mat, vec = torch.randn(mat_shape), torch.randn(mat_shape[1])
    (ck, cv, _), (tk, tv, _) = _both(lambda s, m, v: torch.addmv(s, m, v, beta=beta), s, mat, vec)
    assert ck == tk == "ok"
    assert tuple(tv.shape) == tuple(cv.shape)
    torch.testing.assert_close(tv.cpu(), cv)


def test_masked_scatter_source_too_short_raises():
    mask = torch.tensor([True, False, True, True, True])
    _same_error(lambda x, m, s: x.masked_scatter(m, s), torch.zeros(5), mask, torch.arange(3.0),
                match="Number of elements of source < number of ones in mask")


def test_masked_scatter_source_long_enough():
    mask = torch.tensor([[True, False, True], [False, True, True]])
    (ck, cv, _), (tk, tv, _) = _both(lambda x, m, s: x.masked_scatter(m, s), torch.zeros(2, 3), mask,
                                     torch.arange(6.0))
    assert ck == tk == "ok"
    torch.testing.assert_close(tv.cpu(), cv)


@pytest.mark.parametrize("target", [[0, 5], [-1, 2]])
def test_multi_margin_loss_target_out_of_range_raises(target):
    _same_error(lambda x, t: F.multi_margin_loss(x, t), torch.randn(2, 5), torch.tensor(target),
                match="target out of range")


def test_multi_margin_loss_in_range():
    (ck, cv, _), (tk, tv, _) = _both(lambda x, t: F.multi_margin_loss(x, t, p=2), torch.randn(3, 5),
                                     torch.tensor([0, 4, 2]))
    assert ck == tk == "ok"
    torch.testing.assert_close(tv.cpu(), cv)


# A result dtype tpu tensors cannot hold (uint64, complex32) raises a
# TypeError naming the dtype, as MPS does for float64, instead of quietly
# returning a CPU tensor from a tpu op; CPU computes it from x.cpu().
@pytest.mark.parametrize("fn,dtype", [(lambda x: torch.hash_tensor(x), "UInt64"),
                                      (lambda x: x.chalf(), "ComplexHalf")])
def test_unholdable_result_dtype_raises_type_error(fn, dtype):
    x = torch.randn(4, 3)
    (ck, cv, _), (tk, tv, _) = _both(fn, x)
    assert ck == "ok"
    assert tk == "err" and isinstance(tv, TypeError), tv
    assert f"does not support dtype {dtype}" in str(tv)
    torch.testing.assert_close(fn(x.to(DEV).cpu()), cv)


def test_index_add_into_empty_dim_raises():
    # seed 1099489436345: the empty-self shortcut ran before the device-side check
    _same_error(lambda s, i, src: s.index_add(0, i, src, alpha=0), torch.zeros(0), torch.tensor([0]),
                torch.ones(1), match="index out of range in self")
