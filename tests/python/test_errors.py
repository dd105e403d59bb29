"""Bad input raises PyTorch-style exceptions; the process survives and the
next op works."""
import os
import subprocess
import sys

import pytest
import torch

import torch_tpu

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _next_op_works():
    a = torch.randn(3)
    assert torch.equal((a.to("tpu") + 1).cpu(), a + 1)


def test_shape_mismatch():
    with pytest.raises(RuntimeError, match="must match the size"):
        torch.ones(3).to("tpu") + torch.ones(4).to("tpu")
    _next_op_works()


def test_mixing_cpu_and_tpu():
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(3).to("tpu") + torch.ones(3)
    _next_op_works()


def test_cpu_scalar_tensor_is_allowed():
    x = torch.ones(3).to("tpu")
    assert torch.equal((x * torch.tensor(2.0)).cpu(), torch.full((3,), 2.0))


def test_invalid_device_index():
    with pytest.raises(RuntimeError, match="Invalid device tpu:7"):
        torch.zeros(3, device="tpu:7")
    with pytest.raises(RuntimeError, match="Invalid device"):
        torch.ones(2).to("tpu:7")
    _next_op_works()


def test_unsupported_dtype():
    with pytest.raises(TypeError, match="does not support dtype"):
        torch.zeros(3, dtype=torch.float8_e4m3fn, device="tpu")
    with pytest.raises(TypeError, match="does not support dtype"):
        torch.ones(3, dtype=torch.float8_e4m3fn).to("tpu")
    _next_op_works()


def test_failed_compile_is_an_exception():
    with pytest.raises(RuntimeError, match="rejected the program|error"):
        torch_tpu.debug.compile_stablehlo("module { this is not stablehlo }")
    _next_op_works()


def _run_with_plugin(path):
    code = ("import torch, torch_tpu\n"
            "assert torch.tpu.device_count() == 0 and not torch.tpu.is_available()\n"
            "try:\n"
            "    torch.zeros(2, device='tpu')\n"
            "except RuntimeError as e:\n"
            "    print('ERR', e)\n"
            "print('alive', torch.ones(2).sum().item())\n")
    env = dict(os.environ, TORCH_TPU_PJRT_PLUGIN=str(path), PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)


def test_missing_plugin(tmp_path):
    r = _run_with_plugin(tmp_path / "nope.so")
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and "nope.so" in r.stdout
    assert "alive 2.0" in r.stdout


def test_unloadable_plugin(tmp_path):
    bad = tmp_path / "bad.so"
    bad.write_text("not a shared library")
    r = _run_with_plugin(bad)
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and "bad.so" in r.stdout
    assert "alive 2.0" in r.stdout


# -- out= arguments: the overlap checks of ATen's out= kernels ---------------

def _raises_like_cpu(fn, make_args, match):
    """fn raises on CPU and on tpu with the same type and message pattern."""
    for dev in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match=match):
            fn(*make_args(dev))


def test_out_overlapping_its_input_raises_like_cpu():
    def args(dev):
        x = torch.arange(6.0, device=dev)
        return x, torch.tensor([0, 1, 2], device=dev)
    _raises_like_cpu(lambda x, i: torch.take(x, i, out=x), args, "unsupported operation")
    _raises_like_cpu(lambda x, i: torch.index_select(x, 0, i, out=x), args, "unsupported operation")


def test_out_with_internal_overlap_raises_like_cpu():
    def args(dev):
        return torch.ones(2, 3, device=dev), torch.zeros(1, 3, device=dev).expand(2, 3)
    _raises_like_cpu(lambda a, o: torch.add(a, a, out=o), args, "more than one element")


def test_out_partially_overlapping_an_input_raises_like_cpu():
    def args(dev):
        return (torch.arange(6.0, device=dev),)
    _raises_like_cpu(lambda x: torch.neg(x[:4], out=x[2:]), args, "unsupported operation")


def test_out_equal_to_an_elementwise_input_is_allowed():
    for dev in ("cpu", "tpu"):
        a, b = torch.arange(4.0, device=dev), torch.ones(4, device=dev)
        torch.add(a, b, out=a)
        assert a.cpu().tolist() == [1.0, 2.0, 3.0, 4.0]


def test_gather_out_of_another_dtype_raises_like_cpu():
    def args(dev):
        return (torch.ones(2, 2, device=dev), torch.zeros(2, 2, dtype=torch.long, device=dev),
                torch.empty(2, 2, dtype=torch.float64, device=dev))
    _raises_like_cpu(lambda x, i, o: torch.gather(x, 1, i, out=o), args,
                     "Expected out tensor to have dtype float, but got double instead")
