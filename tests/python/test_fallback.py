"""Ops without a lowering run on CPU: transparently, counted, warned once,
or refused with TORCH_TPU_CPU_FALLBACK=0."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

import torch_tpu

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Ops we do not expect to lower soon; the test picks one that is not lowered.
CANDIDATES = [("special_bessel_j0", lambda x: torch.special.bessel_j0(x)),
              ("special_modified_bessel_k1", lambda x: torch.special.modified_bessel_k1(x)),
              ("special_airy_ai", lambda x: torch.special.airy_ai(x))]


def _unlowered():
    lowered = set(torch_tpu.debug.lowered_ops())
    for name, fn in CANDIDATES:
        if not any(n.split(".")[0] == name for n in lowered):
            return name, fn
    pytest.fail("every candidate op is lowered; pick a new one")


def test_fallback_runs_on_cpu_counts_and_warns_once():
    name, fn = _unlowered()
    torch_tpu.debug.reset_fallback_report()
    a = torch.rand(5) + 0.5
    x = a.to("tpu")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y1 = fn(x)
        y2 = fn(x)
    assert y1.device.type == "tpu"
    torch.testing.assert_close(y1.cpu(), fn(a))
    torch.testing.assert_close(y2.cpu(), fn(a))
    report = torch_tpu.debug.fallback_report()
    assert sum(report.values()) == 2 and all(k.startswith(name) for k in report)
    # warned once per op, not per call (the warning is deduplicated by name)
    ours = [x for x in w if "not lowered for tpu" in str(x.message)]
    assert len(ours) >= 1


def test_fallback_inplace_effect_copied_back():
    name, fn = _unlowered()
    a = torch.rand(4) + 0.5
    x = a.to("tpu")
    out = torch.empty(4, device="tpu")
    getattr(torch.special, name.replace("special_", ""))(x, out=out)
    torch.testing.assert_close(out.cpu(), fn(a))


def test_fallback_can_be_forbidden():
    name, _ = _unlowered()
    code = ("import torch, torch_tpu\n"
            f"x = torch.rand(3).to('tpu')\n"
            "try:\n"
            f"    torch.special.{name.replace('special_', '')}(x)\n"
            "except NotImplementedError as e:\n"
            "    print('NIE', e)\n")
    env = dict(os.environ, TORCH_TPU_CPU_FALLBACK="0", PYTHONPATH=REPO)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "NIE" in r.stdout and name in r.stdout


def test_tensors_beyond_the_cores_rank_run_on_cpu():
    # The core expresses up to 8 dimensions; PyTorch allows 64. Higher ranks
    # take the CPU fallback, and CPU's own error beyond 64.
    x = torch.randn([2, 1] * 5)  # 10 dimensions
    torch_tpu.debug.reset_fallback_report()
    got = (x.tpu() * 2).amax(dim=-1)
    assert torch.equal(got.cpu(), (x * 2).amax(dim=-1))
    assert torch_tpu.debug.fallback_report()
    with pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
        torch.ones([1] * 65).tpu().amax(dim=-1)


def test_ops_with_complex_intermediates_run_natively():
    # complex64 is a tpu dtype (tests/python/test_complex.py): the fft
    # family no longer runs whole on CPU
    x = torch.randn(8)
    torch_tpu.debug.reset_fallback_report()
    assert torch.allclose(torch.fft.irfft(x.tpu()).cpu(), torch.fft.irfft(x), atol=1e-5)
    assert torch.allclose(torch.fft.hfft(x.tpu()).cpu(), torch.fft.hfft(x), atol=1e-5)
    assert torch.equal(torch.complex(x.tpu(), x.tpu()).cpu(), torch.complex(x, x))
    assert not torch_tpu.debug.fallback_report()
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float"):
        torch.complex(x.tpu(), x.double().tpu())


def test_complex_ops_without_a_lowering_run_on_cpu():
    z = torch.randn(6, dtype=torch.complex64)
    torch_tpu.debug.reset_fallback_report()
    # complex log1p declines on purpose (csrc/ops/unary.c): CPU, result back on tpu
    got = torch.log1p(z.tpu())
    assert got.device.type == "tpu" and got.dtype == torch.complex64
    assert torch.allclose(got.cpu(), torch.log1p(z))
    assert any(k.startswith("log1p") for k in torch_tpu.debug.fallback_report())


# An out= on the CPU for an op on tpu inputs raises PyTorch's "on the same
# device" RuntimeError, lowered or not (an op run on CPU failed copying its
# result back with NotImplementedError "Could not run
# 'aten::_copy_from_and_resize' ... 'CPU' backend"); found by PyTorch's
# test_shape_ops (test_nonzero).
@pytest.mark.parametrize("name", ["nonzero", "add", "sum"])
def test_cpu_out_for_tpu_inputs_raises_same_device_error(name):
    t = torch.randint(2, (12,), device="tpu")
    ops = {
        "nonzero": lambda out: torch.nonzero(t, out=out),
        "add": lambda out: torch.add(t, t, out=out),
        "sum": lambda out: torch.sum(t, 0, out=out),
    }
    with pytest.raises(RuntimeError, match="on the same device"):
        ops[name](torch.empty(0, dtype=torch.long))
    got = ops[name](torch.empty(0, dtype=torch.long, device="tpu"))
    want = {"nonzero": torch.nonzero(t.cpu()), "add": t.cpu() + t.cpu(), "sum": t.cpu().sum(0)}
    assert torch.equal(got.cpu(), want[name])


# TensorIterator unary ops (neg, floor, ceil, trunc, round, frac, sign, sgn,
# abs, bitwise_not and their aliases) require out= of the input's dtype, with
# CPU's message (tpu cast into any out); found by PyTorch's test_type_promotion
# (test_unary_op_out_casting).
@pytest.mark.parametrize("name", ["neg", "floor", "ceil", "trunc", "round", "frac", "sign", "sgn",
                                  "abs", "bitwise_not", "fix", "absolute", "negative"])
def test_unary_out_of_another_dtype_raises_like_cpu(name):
    f = getattr(torch, name)
    x = torch.tensor([1, 2]) if name == "bitwise_not" else torch.tensor([1.5, -2.0])
    wrong = torch.int32 if name == "bitwise_not" else torch.float64
    with pytest.raises(RuntimeError) as cpu_err:
        f(x, out=torch.empty(0, dtype=wrong))
    with pytest.raises(RuntimeError) as tpu_err:
        f(x.to("tpu"), out=torch.empty(0, dtype=wrong, device="tpu"))
    assert str(tpu_err.value) == str(cpu_err.value)
    out = torch.empty(0, dtype=x.dtype, device="tpu")
    f(x.to("tpu"), out=out)
    assert torch.equal(out.cpu(), f(x))
