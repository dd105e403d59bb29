"""torch.autocast("tpu") and torch.amp.GradScaler("tpu").

The cast policy registered for tpu (csrc/torch/autocast.cpp) is CUDA's: the
AT_FORALL_* lists of ATen/autocast_mode.h. CPU autocast has its own, shorter
lists, so the per-op test states the CUDA policy for each op and compares
with CPU autocast only where CPU's policy is the same (the ops where it
differs are listed, and that list is checked too, so the test notices when
torch changes either policy)."""
import copy
import os
import sys

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
import torch_tpu.debug

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from examples.models.llama import Llama, LlamaConfig  # noqa: E402

LOW, FP32, PROMOTE, SAME = "lower", "fp32", "promote", "same"


def _ops(dev):
    """name -> (CUDA policy, fn(low) -> output). `low` is the autocast dtype;
    fp32 ops get lower-precision inputs (so the cast to float32 shows),
    lower_precision ops get float32 inputs, promote ops get one of each."""
    def r(*shape, dtype=torch.float32):
        return torch.randn(*shape, dtype=dtype).to(dev)

    def lp(*shape, low):
        return r(*shape).to(low)

    a, b, v = r(4, 8), r(8, 5), r(8)
    x3, y3 = r(2, 4, 8), r(2, 8, 5)
    img, w = r(1, 3, 6, 6), r(4, 3, 3, 3)
    q = r(1, 2, 4, 8)
    tgt = torch.tensor([1, 0, 3, 2]).to(dev)
    return {
        "mm": (LOW, lambda low: torch.mm(a, b)),
        "matmul": (LOW, lambda low: a @ b),
        "bmm": (LOW, lambda low: torch.bmm(x3, y3)),
        "baddbmm": (LOW, lambda low: torch.baddbmm(r(2, 4, 5), x3, y3)),
        "addmm": (LOW, lambda low: torch.addmm(r(4, 5), a, b)),
        "addbmm": (LOW, lambda low: torch.addbmm(r(4, 5), x3, y3)),
        "linear": (LOW, lambda low: F.linear(a, b.t(), r(5))),
        "mv": (LOW, lambda low: torch.mv(a, v)),
        "addmv": (LOW, lambda low: torch.addmv(r(4), a, v)),
        "einsum": (LOW, lambda low: torch.einsum("ij,jk->ik", a, b)),
        "conv2d": (LOW, lambda low: F.conv2d(img, w)),
        "conv1d": (LOW, lambda low: F.conv1d(r(1, 3, 9), r(2, 3, 3))),
        "prelu": (LOW, lambda low: F.prelu(a, r(1))),
        "scaled_dot_product_attention": (LOW, lambda low: F.scaled_dot_product_attention(q, q, q)),
        "softmax": (FP32, lambda low: torch.softmax(lp(4, 8, low=low), -1)),
        "log_softmax": (FP32, lambda low: torch.log_softmax(lp(4, 8, low=low), -1)),
        "layer_norm": (FP32, lambda low: F.layer_norm(lp(4, 8, low=low), (8,))),
        "group_norm": (FP32, lambda low: F.group_norm(lp(2, 4, 3, low=low), 2)),
        "rms_norm": (FP32, lambda low: F.rms_norm(lp(4, 8, low=low), (8,))),
        "cross_entropy": (FP32, lambda low: F.cross_entropy(lp(4, 8, low=low), tgt)),
        "nll_loss": (FP32, lambda low: F.nll_loss(lp(4, 8, low=low), tgt)),
        "mse_loss": (FP32, lambda low: F.mse_loss(lp(4, 8, low=low), lp(4, 8, low=low))),
        "l1_loss": (FP32, lambda low: F.l1_loss(lp(4, 8, low=low), lp(4, 8, low=low))),
        "smooth_l1_loss": (FP32, lambda low: F.smooth_l1_loss(lp(4, 8, low=low), lp(4, 8, low=low))),
        "bce_with_logits": (FP32, lambda low: F.binary_cross_entropy_with_logits(
            lp(4, 8, low=low), torch.rand(4, 8).to(dev).to(low))),
        "exp": (FP32, lambda low: torch.exp(lp(4, 8, low=low))),
        "log": (FP32, lambda low: torch.log(lp(4, 8, low=low).abs())),
        "pow": (FP32, lambda low: torch.pow(lp(4, 8, low=low), 2)),
        "rsqrt": (FP32, lambda low: torch.rsqrt(lp(4, 8, low=low).abs())),
        "sum": (FP32, lambda low: lp(4, 8, low=low).sum()),
        "sum_dim": (FP32, lambda low: lp(4, 8, low=low).sum(-1)),
        "cumsum": (FP32, lambda low: torch.cumsum(lp(4, 8, low=low), 0)),
        "prod": (FP32, lambda low: lp(4, 8, low=low).prod()),
        "logsumexp": (FP32, lambda low: torch.logsumexp(lp(4, 8, low=low), -1)),
        "vector_norm": (FP32, lambda low: torch.linalg.vector_norm(lp(4, 8, low=low))),
        "cosine_similarity": (FP32, lambda low: F.cosine_similarity(lp(4, 8, low=low), lp(4, 8, low=low))),
        "softplus": (FP32, lambda low: F.softplus(lp(4, 8, low=low))),
        "addcmul": (PROMOTE, lambda low: torch.addcmul(r(4, 8), lp(4, 8, low=low), r(4, 8))),
        "atan2": (PROMOTE, lambda low: torch.atan2(lp(4, 8, low=low), r(4, 8))),
        "index_put": (PROMOTE, lambda low: torch.index_put(lp(4, 8, low=low), (tgt,), r(8))),
        "relu": (SAME, lambda low: torch.relu(lp(4, 8, low=low))),
        "add": (SAME, lambda low: lp(4, 8, low=low) + lp(4, 8, low=low)),
    }


# Ops whose CPU autocast policy differs from CUDA's (torch 2.13), as the
# output dtype shows; checked below for both autocast dtypes. (Not visible in
# the output dtype: CPU has a float32 entry for cross_entropy_loss, CUDA has
# none; see the Llama test.)
CPU_DIFFERS = {
    # CPU: float32 (no lower-precision entry); CUDA/tpu: lower precision
    "mv", "addmv",
    # CPU: keep the lower-precision input; CUDA/tpu: float32
    "softmax", "log_softmax", "layer_norm", "group_norm", "rms_norm", "exp", "log", "pow", "rsqrt",
    "sum", "sum_dim", "cumsum", "logsumexp", "vector_norm", "cosine_similarity", "softplus",
    # CPU: no promote entry, so index_put refuses the mixed dtypes; CUDA/tpu: float32
    "index_put",
}


def _autocast_kernels(key):
    ops = set()
    for op in torch._C._dispatch_get_all_op_names():
        for line in torch._C._dispatch_dump_table(op).splitlines():
            if line.startswith(key + ": registered") and "[kernel]" in line:
                ops.add(op)
    return ops


def test_registered_ops_are_cudas():
    """Every op with an AutocastCUDA kernel has an AutocastPrivateUse1 one
    and no other, except CUDA's two cuDNN-only convolutions."""
    cuda, tpu = _autocast_kernels("AutocastCUDA"), _autocast_kernels("AutocastPrivateUse1")
    assert cuda - tpu == {"aten::cudnn_convolution", "aten::cudnn_convolution_transpose"}
    assert tpu - cuda == set()
    assert len(tpu) > 100


def _expected(policy, low):
    return {LOW: low, FP32: torch.float32, PROMOTE: torch.float32, SAME: low}[policy]


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16])
def test_autocast_policy(low):
    assert torch.tpu.get_amp_supported_dtype() == [torch.bfloat16, torch.float16]
    torch_tpu.debug.reset_fallback_report()
    cpu_differs = set()
    wrong = []
    for name, (policy, fn) in _ops("tpu").items():
        with torch.autocast("tpu", dtype=low):
            assert torch.is_autocast_enabled("tpu") and torch.tpu.is_autocast_enabled()
            assert torch.get_autocast_dtype("tpu") == low
            got = fn(low).dtype
        with torch.autocast("cpu", dtype=low):
            try:
                cpu = _ops("cpu")[name][1](low).dtype
            except RuntimeError:  # index_put: CPU autocast does not promote, the op refuses mixed dtypes
                cpu = None
        if got != _expected(policy, low):
            wrong.append(f"{name}: tpu {got}, CUDA policy {_expected(policy, low)}")
        if cpu != got:
            cpu_differs.add(name)
    assert not torch.is_autocast_enabled("tpu")
    assert not wrong, wrong
    assert cpu_differs == CPU_DIFFERS, (sorted(cpu_differs - CPU_DIFFERS), sorted(CPU_DIFFERS - cpu_differs))
    assert torch_tpu.debug.fallback_report() == {}


def test_autocast_disabled_and_nested():
    a = torch.randn(4, 4, device="tpu")
    with torch.autocast("tpu", dtype=torch.bfloat16):
        assert (a @ a).dtype == torch.bfloat16
        with torch.autocast("tpu", enabled=False):
            assert (a @ a).dtype == torch.float32
        with torch.autocast("tpu", dtype=torch.float16):
            assert (a @ a).dtype == torch.float16
    assert (a @ a).dtype == torch.float32


def test_binary_cross_entropy_is_banned_as_on_cuda():
    p = torch.rand(4, device="tpu")
    with torch.autocast("tpu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, p)


def _llama():
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=128, block_size=32, n_layer=2, n_head=4, n_kv_head=2, n_embd=64,
                      ffn_hidden=160)
    return Llama(cfg)


def _train(model, dev, idx, tgt, steps, dtype=torch.bfloat16):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast(dev, dtype=dtype, enabled=dtype != torch.float32):
            _, loss = model(idx.to(dev), tgt.to(dev))
        assert loss.dtype == torch.float32
        loss.backward()
        losses.append(loss.item())
        grads = {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters()}
        opt.step()
    return losses, grads


def test_llama_training_parity_with_cpu_autocast():
    """Two SGD steps of the Llama example under bfloat16 autocast, tpu
    against CPU autocast. Tolerances: bfloat16 has an 8-bit significand
    (relative spacing 2**-8 = 3.9e-3), every linear layer's inputs are
    rounded to it on both sides, and the two policies differ where CPU
    autocast keeps softmax, pow and rsqrt in bfloat16 while tpu (like CUDA)
    runs them in float32; so the loss agrees to 1e-2 relative and each
    gradient to 5e-2 of its largest element (measured: see the report
    printed on failure). A float32 CPU run is the referee: tpu must be at
    least about as close to it as CPU autocast is."""
    model = _llama()
    idx = torch.randint(0, 128, (2, 16))
    tgt = torch.randint(0, 128, (2, 16))
    m_tpu = copy.deepcopy(model).to("tpu")
    m_ref = copy.deepcopy(model)
    torch_tpu.debug.reset_fallback_report()
    l_tpu, g_tpu = _train(m_tpu, "tpu", idx, tgt, 2)
    assert torch_tpu.debug.fallback_report() == {}, "autocast step fell back to CPU"
    l_cpu, g_cpu = _train(model, "cpu", idx, tgt, 2)
    l_f32, g_f32 = _train(m_ref, "cpu", idx, tgt, 2, dtype=torch.float32)  # autocast off
    for a, b in zip(l_tpu, l_cpu):
        assert abs(a - b) <= 5e-3 * abs(b), (l_tpu, l_cpu)
    worst = 0.0
    for n in g_cpu:
        scale = g_cpu[n].abs().max().item()
        d = (g_tpu[n] - g_cpu[n]).abs().max().item() / scale
        worst = max(worst, d)
        d_tpu32 = (g_tpu[n] - g_f32[n]).abs().max().item() / scale
        d_cpu32 = (g_cpu[n] - g_f32[n]).abs().max().item() / scale
        assert d <= 3e-2, (n, d)
        assert d_tpu32 <= 2 * d_cpu32 + 1e-3, (n, d_tpu32, d_cpu32)
    for p, q in zip(m_tpu.parameters(), model.parameters()):
        assert (p.detach().cpu() - q.detach()).abs().max().item() <= 1e-3


def _scaler_run(dev, inject_step, steps=6):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(dev, init_scale=2.0 ** 10, growth_factor=2.0, backoff_factor=0.5,
                                  growth_interval=2)
    x = torch.randn(6, 8).to(dev)
    y = torch.randn(6, 4).to(dev)
    trace = []
    for step in range(steps):
        opt.zero_grad()
        with torch.autocast(dev, dtype=torch.float16):
            out = model(x)
            assert out.dtype == torch.float16
            loss = F.mse_loss(out, y)
        scaler.scale(loss).backward()
        if step == inject_step:
            with torch.no_grad():
                model[0].weight.grad[0, 0] = float("inf")
        before = [p.detach().cpu().clone() for p in model.parameters()]
        scaler.step(opt)
        after = [p.detach().cpu().clone() for p in model.parameters()]
        changed = any(not torch.equal(a, b) for a, b in zip(before, after))
        scale_before = scaler.get_scale()
        scaler.update()
        trace.append((step, changed, scale_before, scaler.get_scale(), int(scaler._growth_tracker.item())))
    return trace, [p.detach().cpu() for p in model.parameters()]


def test_grad_scaler_float16_skips_overflow_step():
    k = 3
    torch_tpu.debug.reset_fallback_report()
    tpu_trace, tpu_params = _scaler_run("tpu", k)
    assert torch_tpu.debug.fallback_report() == {}
    cpu_trace, cpu_params = _scaler_run("cpu", k)
    for step, changed, before, after, _ in tpu_trace:
        if step == k:
            assert not changed, "the overflow step must be skipped"
            assert after == before * 0.5, "the scale must be halved"
        else:
            assert changed
    # growth every 2 clean steps, as growth_interval says
    assert [t[3] for t in tpu_trace] == [1024.0, 2048.0, 2048.0, 1024.0, 1024.0, 2048.0]
    assert tpu_trace == cpu_trace
    for a, b in zip(tpu_params, cpu_params):
        torch.testing.assert_close(a, b, atol=2e-3, rtol=2e-3)


def _amp_ops(dev):
    """GradScaler's two ops on edge cases: mixed grad dtypes, a NaN, an
    inf, found_inf already set, a scale whose growth overflows float32."""
    out = []
    for grads, fi0 in [
        ([torch.tensor([1.0, -3.0]), torch.tensor([[2.0, 4.0]], dtype=torch.float16)], 0.0),
        ([torch.tensor([1.0, float("nan")], dtype=torch.bfloat16), torch.tensor([2.0])], 0.0),
        ([torch.tensor([float("-inf"), 1.0])], 0.0),
        ([torch.tensor([1.0, 2.0])], 1.0),
        ([torch.tensor(5.0)], 0.0),
    ]:
        g = [t.to(dev) for t in grads]
        fi = torch.full((), fi0).to(dev)
        torch._amp_foreach_non_finite_check_and_unscale_(g, fi, torch.full((1,), 0.125).to(dev))
        out.append(([t.cpu() for t in g], fi.cpu()))
    for scale, tracker, found in [(65536.0, 0, 0.0), (65536.0, 2, 0.0), (3e38, 2, 0.0), (1.0, 1, 1.0),
                                  (1.0, 1, float("nan"))]:
        s = torch.full((), scale).to(dev)
        t = torch.full((), tracker, dtype=torch.int32).to(dev)
        r = torch._amp_update_scale_(s, t, torch.full((), found).to(dev), 2.0, 0.5, 3)
        assert r is s
        out.append((s.cpu(), t.cpu()))
    return out


def test_amp_ops_match_cpu_natively():
    torch_tpu.debug.reset_fallback_report()
    tpu = _amp_ops("tpu")
    assert torch_tpu.debug.fallback_report() == {}
    cpu = _amp_ops("cpu")
    torch.testing.assert_close(tpu, cpu, atol=0, rtol=0, equal_nan=True)
