"""Compare an op on tpu against CPU PyTorch, the reference.

    check(lambda x, y: x + y, torch.randn(3), torch.randn(3))

runs fn on the CPU inputs and on tpu copies, compares every output tensor
(values, shape, dtype) and, with grad=True, the gradients of every floating
input. By default it also asserts the tpu run used no CPU fallback, so a
test passes only when the op is lowered natively."""
import os

import torch

import torch_tpu


def _to_tpu(x):
    if isinstance(x, torch.Tensor):
        return x.detach().to("tpu").requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_tpu(e) for e in x)
    return x


def _flatten(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        out = []
        for e in x:
            out += _flatten(e)
        return out
    return []


def default_tolerance(dtype):
    if dtype in (torch.float16,):
        return 1e-3, 1e-3
    if dtype == torch.bfloat16:
        return 1.6e-2, 1e-2
    if dtype == torch.float64:
        return 1e-7, 1e-7
    return 1.3e-6, 1e-5  # float32: torch.testing defaults


def assert_close(actual, expected, atol=None, rtol=None, check_dtype=True, what="output"):
    assert actual.device.type == "tpu", f"{what} is on {actual.device}, expected tpu"
    assert actual.shape == expected.shape, f"{what} shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    if check_dtype:
        assert actual.dtype == expected.dtype, f"{what} dtype {actual.dtype} != {expected.dtype}"
    a = actual.detach().cpu()
    d_atol, d_rtol = default_tolerance(expected.dtype)
    torch.testing.assert_close(a, expected.detach(), atol=d_atol if atol is None else atol,
                               rtol=d_rtol if rtol is None else rtol, check_dtype=check_dtype,
                               equal_nan=True, msg=lambda m: f"{what}: {m}")


def check(fn, *inputs, atol=None, rtol=None, grad=False, native=True, check_dtype=True):
    """Runs fn on CPU and tpu and compares. Returns the tpu outputs."""
    cpu_inputs = [x.detach().clone().requires_grad_(grad and x.is_floating_point())
                  if isinstance(x, torch.Tensor) else x for x in inputs]
    tpu_inputs = [_to_tpu(x) for x in cpu_inputs]
    torch_tpu.debug.reset_fallback_report()
    expected = fn(*cpu_inputs)
    actual = fn(*tpu_inputs)
    exp_list, act_list = _flatten(expected), _flatten(actual)
    assert len(exp_list) == len(act_list)
    for i, (a, e) in enumerate(zip(act_list, exp_list)):
        assert_close(a, e, atol, rtol, check_dtype, what=f"output {i}")
    if grad:
        grads_out = [torch.randn_like(e) if e.is_floating_point() and e.requires_grad else None
                     for e in exp_list]
        pairs = [(e, a, g) for e, a, g in zip(exp_list, act_list, grads_out) if g is not None]
        torch.autograd.backward([p[0] for p in pairs], [p[2] for p in pairs])
        torch.autograd.backward([p[1] for p in pairs], [p[2].to("tpu") for p in pairs])
        for i, (c, t) in enumerate(zip(cpu_inputs, tpu_inputs)):
            if isinstance(c, torch.Tensor) and c.requires_grad:
                assert (c.grad is None) == (t.grad is None), f"grad {i} presence differs"
                if c.grad is not None:
                    assert_close(t.grad, c.grad, atol, rtol, check_dtype, what=f"grad of input {i}")
    if native:
        report = torch_tpu.debug.fallback_report()
        assert not report, f"ops fell back to CPU: {report}"
    return actual


def run_python(code, env=None, timeout=300):
    """Runs code in a fresh interpreter (repo on the path); returns stdout.
    Raises with the child's stderr when it fails."""
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = repo + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return proc.stdout


# ------------------------------------------------------------ family checks
# Shared by the reduction and scan tests.
# Ops of other families that some backward formulas call; until they are
# lowered, grad tests may let exactly these run on CPU.
OTHER_FAMILIES = {"div.out", "div.Tensor", "div.Scalar", "eq.Tensor_out", "eq.Scalar_out",
                  "masked_fill_.Scalar", "scatter.src_out", "flip", "sgn.out", "abs.out", "nonzero", "isnan",
                  "masked_fill_.Tensor", "logical_and.out", "logical_or_.default"}


def check_reduction_grad(fn, *inputs, **kw):
    """check(grad=True) allowing only OTHER_FAMILIES ops to fall back."""
    check(fn, *inputs, grad=True, native=False, **kw)
    report = torch_tpu.debug.fallback_report()
    assert set(report) <= OTHER_FAMILIES, f"reduction ops fell back to CPU: {report}"


def x23(dtype=torch.float32):
    return torch.randn(2, 3, 4).to(dtype)


def ints():
    return torch.randint(-5, 6, (3, 4))


# Shared by the linalg, conv and pool tests (one lowering family until the
# tests were split by capability).
# Ops this family lowers; the tests assert none of them fell back. Other
# families' ops (sum for broadcast gradients...) may still fall back until
# they are lowered, so the tests don't require those to be native.
MINE = {"mm", "bmm", "addmm", "addmm_", "baddbmm", "baddbmm_", "addbmm", "addbmm_", "dot", "mv",
        "addmv", "addmv_", "convolution", "convolution_backward", "convolution_overrideable",
        "convolution_backward_overrideable", "max_pool2d_with_indices",
        "max_pool2d_with_indices_backward", "avg_pool2d", "avg_pool2d_backward",
        "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward"}


def check_linalg_family(fn, *inputs, **kw):
    out = check(fn, *inputs, native=False, **kw)
    mine = {k: v for k, v in torch_tpu.debug.fallback_report().items() if k.split(".")[0] in MINE}
    assert not mine, f"linalg ops fell back to CPU: {mine}"
    return out
