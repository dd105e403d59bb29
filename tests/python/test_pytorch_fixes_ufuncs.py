"""Regression tests for bugs PyTorch's own test_binary_ufuncs.py /
test_unary_ufuncs.py / test_reductions.py found on tpu (make pytorch-tests),
each compared with CPU PyTorch. Mode-independent: runs once (RUN_ONCE).
"""
import re

import pytest
import torch

import torch_tpu  # noqa: F401

DEV = "tpu"


@pytest.mark.parametrize("op", [torch.add, torch.sub, torch.rsub])
@pytest.mark.parametrize("alpha", [0.1, complex(0.1, 0.2), complex(0, -3), 2])
def test_add_sub_complex_alpha(op, alpha):
    # A complex alpha reaches the lowering as a wrapped complex tensor, not a
    # Scalar; it was dropped (alpha taken as 1) before (test_binary_ufuncs'
    # test_add).
    a = torch.tensor([2 + 3j, 4 + 5j, -1 - 0.5j], dtype=torch.complex64)
    b = torch.tensor([4 + 5j, 2 + 3j, 0.25 + 1j], dtype=torch.complex64)
    want = op(a, b, alpha=alpha)
    got = op(a.to(DEV), b.to(DEV), alpha=alpha).cpu()
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
def test_add_real_tensor_complex_alpha_raises(dtype):
    # CPU refuses a complex alpha for real tensors (integral ones with the
    # integral message); tpu raises the same RuntimeError instead of
    # dropping alpha.
    a = torch.tensor([1, 0], dtype=dtype)
    with pytest.raises(RuntimeError) as cpu_err:
        torch.add(a, a, alpha=complex(0.1, 0.2))
    with pytest.raises(RuntimeError, match=re.escape(str(cpu_err.value))):
        torch.add(a.to(DEV), a.to(DEV), alpha=complex(0.1, 0.2))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64, torch.uint8])
@pytest.mark.parametrize("exponent", [-1, -3])
def test_int_tensor_negative_int_power_raises(dtype, exponent):
    # CPU refuses an integral tensor to a negative Python-int power; tpu
    # computed a value instead (test_binary_ufuncs' test_int_tensor_pow_neg_ints).
    t = torch.tensor([1, 2, 3], dtype=dtype)
    with pytest.raises(RuntimeError) as cpu_err:
        t.pow(exponent)
    with pytest.raises(RuntimeError, match=re.escape(str(cpu_err.value))):
        t.to(DEV).pow(exponent)
    # a tensor exponent is not checked on CPU either: same values
    e = torch.tensor([0, 1, 2], dtype=dtype)
    torch.testing.assert_close(t.to(DEV).pow(e.to(DEV)).cpu(), t.pow(e))
    torch.testing.assert_close(t.to(DEV).pow(2).cpu(), t.pow(2))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int64])
def test_inplace_cast_error_names_dtypes_like_cpu(dtype):
    # "result type Float can't be cast to the desired output type Long", with
    # PyTorch's ScalarType names (test_binary_ufuncs' test_fmod_remainder).
    x = torch.tensor([5, 7], dtype=dtype)
    with pytest.raises(RuntimeError) as cpu_err:
        x.clone().fmod_(2.3)
    want = re.search(r"result type \w+ can't be cast to the desired output type \w+",
                     str(cpu_err.value)).group(0)
    with pytest.raises(RuntimeError, match=re.escape(want)):
        x.to(DEV).fmod_(2.3)


@pytest.mark.parametrize("mant, expo", [(torch.float64, torch.int32), (torch.float32, torch.int64),
                                        (torch.float16, torch.int32)])
def test_frexp_out_dtypes_raise(mant, expo):
    # frexp's out= wants the input's dtype and int32 exactly; tpu cast the
    # results instead of raising (test_unary_ufuncs' test_frexp_assert_raises).
    x = torch.randn(4, 4)
    with pytest.raises(RuntimeError, match=r"torch\.frexp\(\) expects"):
        torch.frexp(x, out=(torch.empty(4, 4, dtype=mant), torch.empty(4, 4, dtype=expo)))
    with pytest.raises(RuntimeError, match=r"torch\.frexp\(\) expects"):
        torch.frexp(x.to(DEV), out=(torch.empty(4, 4, dtype=mant, device=DEV),
                                    torch.empty(4, 4, dtype=expo, device=DEV)))
    m, e = torch.empty(4, 4, device=DEV), torch.empty(4, 4, dtype=torch.int32, device=DEV)
    torch.frexp(x.to(DEV), out=(m, e))
    wm, we = torch.frexp(x)
    torch.testing.assert_close(m.cpu(), wm)
    torch.testing.assert_close(e.cpu(), we)


@pytest.mark.parametrize("fn", [torch.abs, torch.angle, torch.sqrt])
def test_real_result_into_complex_out(fn):
    # A real result may be written to a complex out= (PyTorch's canCast:
    # float -> complex is allowed); tpu raised "can't be cast"
    # (test_unary_ufuncs' test_abs_angle_complex_to_float).
    t = torch.tensor([1 + 2j, 3 - 1j, -0.5 + 0j])
    src = t if fn is not torch.sqrt else t.real.abs()
    want = torch.empty(3, dtype=torch.complex64)
    fn(src, out=want)
    got = torch.empty(3, dtype=torch.complex64, device=DEV)
    fn(src.to(DEV), out=got)
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("fn", [torch.isposinf, torch.isneginf])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.int64, torch.bool])
def test_isposinf_isneginf_out_dtype(fn, out_dtype):
    # A non-bool out= raises on CPU; tpu wrote the result cast instead
    # (test_unary_ufuncs' test_isposinf_isneginf_non_boolean_output).
    t = torch.tensor([float("inf"), -float("inf"), 1.2])
    if out_dtype is not torch.bool:
        with pytest.raises(RuntimeError) as cpu_err:
            fn(t, out=torch.empty(3, dtype=out_dtype))
        with pytest.raises(RuntimeError, match=re.escape(str(cpu_err.value))):
            fn(t.to(DEV), out=torch.empty(3, dtype=out_dtype, device=DEV))
    else:
        got = torch.empty(3, dtype=torch.bool, device=DEV)
        fn(t.to(DEV), out=got)
        torch.testing.assert_close(got.cpu(), fn(t))


def test_float_with_zero_dim_complex_promotes_like_cpu():
    # PyTorch's combine_categories: a float tensor with a complex zero-dim
    # tensor keeps the float's precision (float32 [n] + complex128 0-d is
    # complex64); tpu promoted to complex128 (test_type_promotion's
    # test_result_type)
    cases = [(torch.float32, torch.complex128), (torch.bfloat16, torch.complex128),
             (torch.float64, torch.complex64), (torch.int32, torch.complex128),
             (torch.bool, torch.complex64)]
    for dt, zt in cases:
        a = torch.tensor([0, 1], dtype=dt)
        z = torch.tensor(1 + 2j, dtype=zt)
        want = a + z
        got = a.to(DEV) + z.to(DEV)
        assert got.dtype == want.dtype, (dt, zt, got.dtype, want.dtype)
        assert torch.equal(got.cpu(), want)


def test_python_complex_and_zero_dim_tensor_programs_not_shared():
    # a Python complex reaches the lowering as an uploaded wrapped 0-dim
    # complex128 tensor; the program key did not tell it from a real 0-dim
    # complex128 tensor, so the first one's program (and result dtype) was
    # reused for the other: int64 [2] + 1j came out complex128 after
    # int64 [2] + complex128 0-d (CPU: complex64), and some orders failed
    # with "Executable expected parameter ... of size 4 but got ... 8"
    a = torch.tensor([0, 1], device=DEV)
    z = torch.tensor(1 + 0j, dtype=torch.complex128, device=DEV)
    assert (a + z).dtype == torch.complex128
    assert (a + 1j).dtype == torch.complex64 == (a.cpu() + 1j).dtype
    assert ((1j) + a).dtype == torch.complex64
    b = torch.tensor([0, 1], dtype=torch.bfloat16, device=DEV)
    assert (b + z).dtype == torch.complex64
    r = (1 + 0j) + b
    assert r.dtype == torch.complex64 and torch.equal(r.cpu(), (1 + 0j) + b.cpu())
