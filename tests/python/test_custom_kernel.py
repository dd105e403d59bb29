"""Custom kernels written in StableHLO (torch_tpu.custom_kernel): the fused
RMSNorm of examples/custom_rmsnorm.py against PyTorch's composite RMSNorm on
CPU (forward, gradients, a training step) in Strict and Fused eager and
under torch.compile; registration errors (malformed text with the plugin's
diagnostic, meta/kernel shape mismatches, signature mismatches)."""
import itertools
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import torch_tpu  # noqa: E402
from torch_tpu import CustomKernelError  # noqa: E402
from examples.custom_rmsnorm import (register, rms_norm_kernels, use_kernel_norms)  # noqa: E402
from examples.models.llama import Llama, LlamaConfig  # noqa: E402

_names = itertools.count()

SCALE = """
func.func @main(%x: tensor<${N}xf32>) -> tensor<${N}xf32> {
  %two = stablehlo.constant dense<2.0> : tensor<${N}xf32>
  %y = stablehlo.multiply %x, %two : tensor<${N}xf32>
  return %y : tensor<${N}xf32>
}
"""


def fresh(prefix):
    return f"{prefix}_{next(_names)}"


def composite_rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


@pytest.fixture(scope="module")
def rms():
    return register(1e-5, name="test_ck::rms_norm")


def test_rms_norm_forward_and_gradients_match_composite(rms):
    torch.manual_seed(0)
    x = torch.randn(6, 48, requires_grad=True)
    w = torch.randn(48, requires_grad=True)
    g = torch.randn(6, 48)
    y_ref = composite_rms_norm(x, w, 1e-5)
    y_ref.backward(g)
    xt = x.detach().to("tpu").requires_grad_()
    wt = w.detach().to("tpu").requires_grad_()
    y = rms(xt, wt)  # a new shape (example inputs were 4x64): instantiated again
    y.backward(g.to("tpu"))
    # float32 throughout; the kernel sums in another order than CPU's mean
    torch.testing.assert_close(y.cpu(), y_ref.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(xt.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(wt.grad.cpu(), w.grad, rtol=1e-5, atol=1e-5)
    # the op is an ordinary torch.library op
    y2 = torch.ops.test_ck.rms_norm(xt.detach(), wt.detach())
    torch.testing.assert_close(y2.cpu(), y_ref.detach(), rtol=1e-5, atol=1e-5)
    # the schema's argument names are the meta function's
    y3 = rms(xt.detach(), weight=wt.detach())
    torch.testing.assert_close(y3.cpu(), y_ref.detach(), rtol=1e-5, atol=1e-5)
    assert "Tensor weight" in str(torch.ops.test_ck.rms_norm.default._schema)


def _tiny():
    return LlamaConfig(vocab_size=64, block_size=16, n_layer=1, n_head=4, n_kv_head=2,
                       n_embd=64, ffn_hidden=160)


def _train(model, idx, targets, steps, compiled):
    opt = torch.optim.SGD(model.parameters(), lr=0.5)

    def step():
        opt.zero_grad()
        _, loss = model(idx, targets)
        loss.backward()
        opt.step()
        return loss

    run = torch.compile(step, backend="tpu") if compiled else step
    losses, grads = [], None
    for _ in range(steps):
        losses.append(run().detach().cpu())
        if grads is None:
            grads = [p.grad.detach().cpu().clone() for p in model.parameters()]
    return torch.stack(losses), grads


def _models(cfg, rms):
    torch.manual_seed(0)
    ref = Llama(cfg)
    model = use_kernel_norms(Llama(cfg), rms)
    model.load_state_dict(ref.state_dict())
    assert sum(hasattr(m, "kernel") for m in model.modules()) == 3  # 2 per layer + the final norm
    return ref, model


def _assert_matches(ref, losses, grads, ref_losses, ref_grads):
    # float32 throughout: the kernel sums in another order than CPU's mean
    torch.testing.assert_close(losses, ref_losses, rtol=1e-5, atol=1e-5)
    for (name, _), a, b in zip(ref.named_parameters(), grads, ref_grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")
    norm_grads = [a for (n, _), a in zip(ref.named_parameters(), grads) if "norm" in n]
    assert len(norm_grads) == 3 and all(g.abs().sum() > 0 for g in norm_grads)


@pytest.mark.parametrize("mode", ["strict", "compile"])
def test_llama_training_step_with_kernel_norms_matches_composite(rms, mode):
    cfg = _tiny()
    ref, model = _models(cfg, rms)
    idx = torch.randint(0, cfg.vocab_size, (2, 16))
    targets = torch.randint(0, cfg.vocab_size, (2, 16))
    ref_losses, ref_grads = _train(ref, idx, targets, 2, compiled=False)  # CPU, composite
    model.to("tpu")
    with torch_tpu.eager_mode("fused" if mode == "compile" else mode):
        losses, grads = _train(model, idx.to("tpu"), targets.to("tpu"), 2, compiled=mode == "compile")
    # two steps: the second loss sees the first step's update of every weight
    _assert_matches(ref, losses, grads, ref_losses, ref_grads)


def test_fused_training_step_matches_composite_and_keeps_the_kernel_in_the_region(rms):
    # Fused eager: the kernel is recorded like any op, so a training step
    # with kernel norms runs as many programs, flushed for the same reasons,
    # as with composite norms, and nothing falls back to CPU.
    cfg = _tiny()
    ref, model = _models(cfg, rms)
    composite = Llama(cfg)
    composite.load_state_dict(ref.state_dict())
    idx = torch.randint(0, cfg.vocab_size, (2, 16))
    targets = torch.randint(0, cfg.vocab_size, (2, 16))
    ref_losses, ref_grads = _train(ref, idx, targets, 3, compiled=False)  # CPU, composite
    seen = []
    for m in (composite, model):
        m.to("tpu")
        opt = torch.optim.SGD(m.parameters(), lr=0.5)
        losses, grads, stats = [], None, []
        with torch_tpu.eager_mode("fused"):
            for i in range(3):  # two steps settle the loop's program; the third is measured
                stats.append(torch_tpu.cache_stats())
                opt.zero_grad()
                _, loss = m(idx.to("tpu"), targets.to("tpu"))
                loss.backward()
                opt.step()
                losses.append(loss.detach().cpu())
                grads = grads or [p.grad.detach().cpu().clone() for p in m.parameters()]
            after = torch_tpu.cache_stats()
        before = stats[2]
        seen.append((after["fused"]["programs_run"] - before["fused"]["programs_run"],
                     {k: after["fused"]["flushes"][k] - before["fused"]["flushes"][k]
                      for k in after["fused"]["flushes"]},
                     after["fused"]["compiles"] - before["fused"]["compiles"],
                     after["ops_missing"] - before["ops_missing"]))
    _assert_matches(ref, torch.stack(losses), grads, ref_losses, ref_grads)
    assert seen[0] == seen[1]
    assert seen[1][2] == 0 and seen[1][3] == 0  # steady state: no compile, no CPU fallback


def test_one_text_serves_every_shape_and_dtype_is_checked():
    k = torch_tpu.custom_kernel(fresh("scale"), SCALE, example_inputs=(torch.empty(3),))
    for n in (1, 5, 17):
        x = torch.randn(n)
        torch.testing.assert_close(k(x.to("tpu")).cpu(), x * 2)
    with pytest.raises(CustomKernelError, match=r"does not match the kernel's type tensor<\$\{N\}xf32>"):
        k(torch.ones(3, dtype=torch.float64, device="tpu"))
    # a non-contiguous view is read through its strides like any op's input
    base = torch.randn(4, 6)
    torch.testing.assert_close(k(base.to("tpu")[:, 2]).cpu(), base[:, 2] * 2)


def test_element_type_symbol_serves_every_dtype():
    double = """
    func.func @main(%x: tensor<${N}x${T}>) -> tensor<${N}x${T}> {
      %y = stablehlo.add %x, %x : tensor<${N}x${T}>
      return %y : tensor<${N}x${T}>
    }"""
    k = torch_tpu.custom_kernel(fresh("double"), double, example_inputs=(torch.empty(2),))
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        x = torch.arange(5).to(dtype)
        y = k(x.to("tpu"))
        assert y.dtype == dtype
        torch.testing.assert_close(y.cpu(), x + x)


def test_malformed_kernel_fails_at_registration_with_the_plugin_diagnostic():
    name = fresh("bad")
    bad = SCALE.replace("%x, %two", "%x, %three")
    with pytest.raises(CustomKernelError) as e:
        torch_tpu.custom_kernel(name, bad, example_inputs=(torch.empty(3),))
    msg = str(e.value)
    assert f"torch_tpu_user::{name}" in msg and "forward" in msg
    assert "undeclared SSA value" in msg and "kernel line 4" in msg  # the line in the user's text
    assert not hasattr(torch.ops.torch_tpu_user, name)  # nothing was defined
    with pytest.raises(CustomKernelError, match="defines no function"):
        torch_tpu.custom_kernel(fresh("bad"), "%y = stablehlo.add %x, %x : tensor<f32>")
    with pytest.raises(CustomKernelError, match="pass example_inputs"):
        torch_tpu.custom_kernel(fresh("bad"), SCALE)
    with pytest.raises(CustomKernelError, match=r"dynamic dimensions"):
        torch_tpu.custom_kernel(fresh("bad"), SCALE.replace("${N}", "?"))


def test_backward_kernel_signature_and_result_shapes_are_checked():
    fwd, bwd = rms_norm_kernels(1e-5)
    ex = (torch.empty(4, 8), torch.empty(8))
    with pytest.raises(CustomKernelError, match="must take the 2 arguments then 1 result"):
        torch_tpu.custom_kernel(fresh("rms"), fwd, backward=SCALE, example_inputs=ex)
    swapped = bwd.replace("return %gx, %gwt", "return %gwt, %gx").replace(
        "-> (tensor<${N}x${D}xf32>, tensor<${D}xf32>)", "-> (tensor<${D}xf32>, tensor<${N}x${D}xf32>)")
    swapped = swapped.replace("%gwt, %gx : tensor<${N}x${D}xf32>, tensor<${D}xf32>",
                              "%gwt, %gx : tensor<${D}xf32>, tensor<${N}x${D}xf32>")
    with pytest.raises(CustomKernelError, match="each gradient must match its argument"):
        torch_tpu.custom_kernel(fresh("rms"), fwd, backward=swapped, example_inputs=ex)


def test_meta_that_disagrees_with_the_kernel_is_caught():
    ex = (torch.empty(3),)
    with pytest.raises(CustomKernelError, match=r"meta gives \(float32\[4\]\), the StableHLO returns "
                                                r"\(float32\[3\]\)"):
        torch_tpu.custom_kernel(fresh("scale"), SCALE, example_inputs=ex,
                                meta=lambda x: torch.empty(x.shape[0] + 1, device=x.device))
    # a meta right on the example but wrong elsewhere: caught at the first
    # call with a new shape, before anything runs
    k = torch_tpu.custom_kernel(fresh("scale"), SCALE, example_inputs=ex,
                                meta=lambda x: torch.empty(3, device=x.device))
    with pytest.raises(CustomKernelError, match=r"arguments \(float32\[5\]\): meta gives \(float32\[3\]\)"):
        k(torch.ones(5, device="tpu"))
    with pytest.raises(CustomKernelError, match="meta gives"):
        k.register_fake(lambda x: torch.empty(2, 2, device=x.device))
    # without meta, torch.compile reads the result types from the kernel
    k2 = torch_tpu.custom_kernel(fresh("scale"), SCALE, example_inputs=ex)
    f = torch.compile(lambda x: k2(x) + 1, backend="tpu")
    x = torch.randn(7)
    torch.testing.assert_close(f(x.to("tpu")).cpu(), x * 2 + 1)


def test_kernels_are_immutable_and_reregistration_is_idempotent():
    name = fresh("scale")
    k = torch_tpu.custom_kernel(name, SCALE, example_inputs=(torch.empty(3),))
    assert torch_tpu.custom_kernel(name, SCALE, example_inputs=(torch.empty(3),)) is k
    with pytest.raises(CustomKernelError, match="already registered"):
        torch_tpu.custom_kernel(name, SCALE.replace("2.0", "3.0"), example_inputs=(torch.empty(3),))
    with pytest.raises(CustomKernelError, match="aten namespace"):
        torch_tpu.custom_kernel("aten::mine", SCALE, example_inputs=(torch.empty(3),))


def test_reference_runs_on_cpu_and_debug_mode_checks_the_kernel_against_it():
    wrong = torch_tpu.custom_kernel(fresh("scale"), SCALE, example_inputs=(torch.empty(3),),
                                    reference=lambda x: x * 3)  # disagrees with the kernel's x * 2
    x = torch.randn(4)
    torch.testing.assert_close(wrong(x), x * 3)  # CPU tensors: the reference
    torch.testing.assert_close(wrong(x.to("tpu")).cpu(), x * 2)
    with torch_tpu.eager_mode("debug", check_cpu=True):
        with pytest.raises(RuntimeError, match=r"scale_\d+.default output 0 diverges from CPU"):
            wrong(x.to("tpu"))


_PERSIST = r'''
import sys, torch, torch_tpu
text = """
func.func @main(%x: tensor<${N}xf32>) -> tensor<${N}xf32> {
  %c = stablehlo.constant dense<FACTOR> : tensor<${N}xf32>
  %y = stablehlo.multiply %x, %c : tensor<${N}xf32>
  return %y : tensor<${N}xf32>
}""".replace("FACTOR", sys.argv[1])
k = torch_tpu.custom_kernel("persist::scale", text, example_inputs=(torch.empty(3),))
with torch_tpu.eager_mode("strict"):
    y = k(torch.arange(4.0).to("tpu")).cpu()  # a host copy: the only program is the kernel's
p = torch_tpu.cache_stats()["persistent"]
print(y.tolist(), p["loads"], p["stores"])
'''


def test_persistent_cache_is_keyed_by_the_kernel_text(tmp_path):
    # Same name, another text in a new process: a miss, never the program
    # of the other text (the same text loads, as for every op).
    import subprocess
    env = dict(os.environ, TORCH_TPU_CACHE_DIR=str(tmp_path), TORCH_TPU_CACHE="1",
               PYTHONPATH=os.pathsep.join(sys.path))
    script = tmp_path / "run.py"
    script.write_text(_PERSIST)

    def run(factor):
        out = subprocess.run([sys.executable, str(script), factor], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip().splitlines()[-1]

    assert run("2.0") == "[0.0, 2.0, 4.0, 6.0] 0 1"
    assert run("3.0") == "[0.0, 3.0, 6.0, 9.0] 0 1"  # a key without the text would load 2x


# A fixed-shape kernel in the form JAX prints (`jax.jit(f).lower(x).as_text()`):
# a named module with attributes, argument and result attributes.
JAX_STYLE = """
module @jit_softplus attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x3xf32> {jax.result_info = ""}) {
    %0 = stablehlo.exponential %arg0 : tensor<2x3xf32>
    %1 = stablehlo.log_plus_one %0 : tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
}
"""


def test_fixed_shape_kernel_in_jax_form_compiles_for_its_own_shapes():
    k = torch_tpu.custom_kernel(fresh("softplus"), JAX_STYLE)  # no example_inputs needed
    x = torch.randn(2, 3)
    torch.testing.assert_close(k(x.to("tpu")).cpu(), torch.nn.functional.softplus(x))
    with pytest.raises(CustomKernelError, match=r"argument 0 is tensor<3x2xf32>, which does not match "
                                                r"the kernel's type tensor<2x3xf32>"):
        k(torch.randn(3, 2, device="tpu"))
