"""Eager modes: the mode API and Debug eager's checks."""
import os
import subprocess
import sys

import pytest
import torch

import torch_tpu

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_default_is_strict_and_context_manager_restores():
    # the suite may run in another mode (TORCH_TPU_EAGER_MODE, see make test-modes)
    assert torch_tpu.get_eager_mode() == (os.environ.get("TORCH_TPU_EAGER_MODE") or "strict")
    with torch_tpu.eager_mode("debug"):
        assert torch_tpu.get_eager_mode() == "debug"
        x = torch.ones(3).to("tpu") + 1
        assert x.cpu().tolist() == [2.0, 2.0, 2.0]
    # the suite may run in another mode (TORCH_TPU_EAGER_MODE, see make test-modes)
    assert torch_tpu.get_eager_mode() == (os.environ.get("TORCH_TPU_EAGER_MODE") or "strict")


def test_unknown_mode_rejected():
    with pytest.raises(ValueError, match="unknown eager mode"):
        torch_tpu.set_eager_mode("turbo")


def test_nan_check_names_op_and_line():
    x = torch.tensor([1.0, -1.0]).to("tpu")
    with torch_tpu.eager_mode("debug", check_nan=True):
        with pytest.raises(FloatingPointError) as info:
            torch.log(x)  # the line the error must name
    msg = str(info.value)
    assert "log" in msg and "test_modes.py" in msg and "torch.log(x)" in msg


def test_nan_check_quiet_on_finite_results():
    with torch_tpu.eager_mode("debug", check_nan=True):
        y = torch.exp(torch.randn(5).to("tpu"))
        assert torch.isfinite(y).all()


def test_cpu_check_passes_for_correct_ops():
    x, w = torch.randn(4, 8).to("tpu"), torch.randn(8, 3).to("tpu")
    with torch_tpu.eager_mode("debug", check_cpu=True):
        y = torch.relu(x @ w).sum(0)
    assert y.shape == (3,)


def test_cpu_check_reports_divergence_with_shapes():
    # XLA's tanh differs from CPU's by an ulp on about half of these inputs;
    # with zero tolerance the check must report it.
    x = torch.randn(4096).to("tpu")
    with torch_tpu.eager_mode("debug", check_cpu=True, atol=0.0, rtol=0.0):
        with pytest.raises(RuntimeError, match=r"diverges from CPU[\s\S]*\(4096,\) float32"):
            torch.tanh(x)


def test_mode_from_environment_and_compile_log():
    code = ("import torch, torch_tpu\n"
            "print('MODE', torch_tpu.get_eager_mode())\n"
            "x = torch.ones(2, 3).to('tpu') * 7\n"
            "print(x.sum().item())\n")
    env = dict(os.environ, TORCH_TPU_EAGER_MODE="debug", PYTHONPATH=REPO)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "MODE debug" in r.stdout and "42.0" in r.stdout
    assert "torch_tpu: compiled mul" in r.stderr


def test_debug_mode_training_step_with_checks():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GELU(), torch.nn.Linear(8, 2)).to("tpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(5, 6).to("tpu"), torch.randint(0, 2, (5,)).to("tpu")
    with torch_tpu.eager_mode("debug", check_nan=True, check_cpu=True):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    assert all(p.grad is not None for p in model.parameters())
