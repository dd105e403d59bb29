"""Example: a fused RMSNorm written in StableHLO, forward and backward, used
as the norm of a small Llama-style decoder (examples/models/llama.py) and
trained on tpu. `python examples/custom_rmsnorm.py` trains a few steps with
the kernel and with PyTorch's composite RMSNorm from the same weights and
prints how far apart their losses and gradients are; `--mode strict|fused`
picks the eager mode, `--compile` runs the step under torch.compile.

The kernel works on (rows, features) float32 tensors of any size: its types
are written with the symbols ${N} and ${D}, bound from the arguments'
shapes at each new shape (docs/custom-kernels.md)."""
import argparse
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch_tpu  # noqa: E402
from examples.models.llama import Llama, LlamaConfig, RMSNorm  # noqa: E402

# y = x * rsqrt(mean(x^2, features) + eps) * w, rows independent.
# `EPS` is filled in by rms_norm_kernels(); ${N}, ${D} by each call's shapes.
FORWARD = """
func.func @main(%x: tensor<${N}x${D}xf32>, %w: tensor<${D}xf32>) -> tensor<${N}x${D}xf32> {
  %r = func.call @inv_rms(%x) : (tensor<${N}x${D}xf32>) -> tensor<${N}xf32>
  %rb = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<${N}xf32>) -> tensor<${N}x${D}xf32>
  %wb = stablehlo.broadcast_in_dim %w, dims = [1] : (tensor<${D}xf32>) -> tensor<${N}x${D}xf32>
  %xn = stablehlo.multiply %x, %rb : tensor<${N}x${D}xf32>
  %y = stablehlo.multiply %xn, %wb : tensor<${N}x${D}xf32>
  return %y : tensor<${N}x${D}xf32>
}
"""

# The helper both kernels call: r = rsqrt(mean(x^2) + eps) per row.
INV_RMS = """
func.func private @inv_rms(%x: tensor<${N}x${D}xf32>) -> tensor<${N}xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %sq = stablehlo.multiply %x, %x : tensor<${N}x${D}xf32>
  %ss = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<${N}x${D}xf32>, tensor<f32>) -> tensor<${N}xf32>
  %d = stablehlo.constant dense<${D}.0> : tensor<${N}xf32>
  %eps = stablehlo.constant dense<EPS> : tensor<${N}xf32>
  %mean = stablehlo.divide %ss, %d : tensor<${N}xf32>
  %ms = stablehlo.add %mean, %eps : tensor<${N}xf32>
  %r = stablehlo.rsqrt %ms : tensor<${N}xf32>
  return %r : tensor<${N}xf32>
}
"""

# Gradients of y for the upstream gradient g:
#   grad_x = r * (g w) - x * r^3 * sum_features(g w x) / D
#   grad_w = sum_rows(g * x * r)
BACKWARD = """
func.func @main(%x: tensor<${N}x${D}xf32>, %w: tensor<${D}xf32>, %g: tensor<${N}x${D}xf32>)
    -> (tensor<${N}x${D}xf32>, tensor<${D}xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %r = func.call @inv_rms(%x) : (tensor<${N}x${D}xf32>) -> tensor<${N}xf32>
  %rb = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<${N}xf32>) -> tensor<${N}x${D}xf32>
  %wb = stablehlo.broadcast_in_dim %w, dims = [1] : (tensor<${D}xf32>) -> tensor<${N}x${D}xf32>
  %gw = stablehlo.multiply %g, %wb : tensor<${N}x${D}xf32>
  %gwx = stablehlo.multiply %gw, %x : tensor<${N}x${D}xf32>
  %dot = stablehlo.reduce(%gwx init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<${N}x${D}xf32>, tensor<f32>) -> tensor<${N}xf32>
  %r2 = stablehlo.multiply %r, %r : tensor<${N}xf32>
  %r3 = stablehlo.multiply %r2, %r : tensor<${N}xf32>
  %d = stablehlo.constant dense<${D}.0> : tensor<${N}xf32>
  %r3dot = stablehlo.multiply %r3, %dot : tensor<${N}xf32>
  %coef = stablehlo.divide %r3dot, %d : tensor<${N}xf32>
  %cb = stablehlo.broadcast_in_dim %coef, dims = [0] : (tensor<${N}xf32>) -> tensor<${N}x${D}xf32>
  %t1 = stablehlo.multiply %gw, %rb : tensor<${N}x${D}xf32>
  %t2 = stablehlo.multiply %x, %cb : tensor<${N}x${D}xf32>
  %gx = stablehlo.subtract %t1, %t2 : tensor<${N}x${D}xf32>
  %xr = stablehlo.multiply %x, %rb : tensor<${N}x${D}xf32>
  %gxr = stablehlo.multiply %g, %xr : tensor<${N}x${D}xf32>
  %gwt = stablehlo.reduce(%gxr init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<${N}x${D}xf32>, tensor<f32>) -> tensor<${D}xf32>
  return %gx, %gwt : tensor<${N}x${D}xf32>, tensor<${D}xf32>
}
"""


def rms_norm_kernels(eps):
    """(forward, backward) StableHLO texts for this eps."""
    lit = f"{eps:.9e}"  # MLIR float literals need the decimal point
    return (FORWARD + INV_RMS).replace("EPS", lit), (BACKWARD + INV_RMS).replace("EPS", lit)


def register(eps=1e-5, name=None):
    """Registers the kernel (once per name) and returns the CustomKernel."""
    forward, backward = rms_norm_kernels(eps)
    name = name or f"examples::rms_norm_eps{eps:.0e}".replace("-", "m").replace("+", "p")
    return torch_tpu.custom_kernel(
        name, forward, backward=backward,
        meta=lambda x, weight: torch.empty_like(x),
        example_inputs=(torch.empty(4, 64), torch.empty(64)))


class KernelRMSNorm(nn.Module):
    """RMSNorm whose math is the StableHLO kernel (rows = every leading dim)."""

    def __init__(self, dim, eps, kernel=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.kernel = kernel or register(eps)

    def forward(self, x):
        shape = x.shape
        return self.kernel(x.reshape(-1, shape[-1]), self.weight).reshape(shape)


def use_kernel_norms(model, kernel=None):
    """Replaces every RMSNorm of `model` by a KernelRMSNorm sharing its weight."""
    for name, child in list(model.named_children()):
        if isinstance(child, RMSNorm):
            k = KernelRMSNorm(child.weight.shape[0], child.eps, kernel)
            k.weight = child.weight
            setattr(model, name, k)
        else:
            use_kernel_norms(child, kernel)
    return model


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--mode", choices=["strict", "fused", "debug"], default="fused")
    p.add_argument("--compile", action="store_true")
    args = p.parse_args(argv)
    torch.manual_seed(0)
    cfg = LlamaConfig()
    ref = Llama(cfg)
    model = use_kernel_norms(Llama(cfg))
    model.load_state_dict(ref.state_dict())
    ref.to("tpu")
    model.to("tpu")
    idx = torch.randint(0, cfg.vocab_size, (4, 32))
    targets = torch.randint(0, cfg.vocab_size, (4, 32))
    idx, targets = idx.to("tpu"), targets.to("tpu")
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(m, o):
        o.zero_grad()
        _, loss = m(idx, targets)
        loss.backward()
        o.step()
        return loss

    run_ref = torch.compile(step, backend="tpu") if args.compile else step
    run = torch.compile(step, backend="tpu") if args.compile else step
    with torch_tpu.eager_mode(args.mode):
        for i in range(args.steps):
            l_ref, l = run_ref(ref, opt_ref).item(), run(model, opt).item()
            grad_err = max((a.grad - b.grad).abs().max().item()
                           for a, b in zip(ref.parameters(), model.parameters()))
            print(f"step {i}: loss composite {l_ref:.6f} kernel {l:.6f}  "
                  f"max |grad difference| {grad_err:.2e}")


if __name__ == "__main__":
    main()
