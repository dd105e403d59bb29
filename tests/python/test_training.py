"""Training end to end: an MLP and a minGPT-style transformer train on tpu
with AdamW and with SGD+momentum; losses track the same run on CPU (same
seed, same initial weights) and the training step never falls back to CPU.

Tolerance: float32 everywhere, but XLA's CPU GEMMs and reductions sum in a
different order than MKL/ATen, so per-step losses can differ by rounding
that the optimizer then carries forward. Measured over 50 steps: at most
3.6e-7 on any step (MLP and minGPT, all optimizers). We allow 1e-5: some
headroom for other machines' thread counts, still far below any real
gradient or optimizer bug (the runs drop the loss by more than 0.5).
"""
import copy
import os
import sys

import pytest
import torch
import torch.nn as nn

import torch_tpu

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from models.mingpt import GPT, GPTConfig  # noqa: E402

STEPS = 50
LOSS_ATOL = 1e-5


def make_optimizer(kind, params):
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)
    if kind == "adamw_foreach":
        return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01, foreach=True)
    if kind == "adamw_fused":
        return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01, fused=True)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9)
    raise ValueError(kind)


def run(model, batches, loss_fn, opt_kind, device):
    model = copy.deepcopy(model).to(device)
    opt = make_optimizer(opt_kind, model.parameters())
    losses = []
    torch_tpu.debug.reset_fallback_report()
    for inputs, target in batches:
        inputs, target = inputs.to(device), target.to(device)
        loss = loss_fn(model, inputs, target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, torch_tpu.debug.fallback_report()


def compare(model, batches, loss_fn, opt_kind):
    cpu_losses, _ = run(model, batches, loss_fn, opt_kind, "cpu")
    tpu_losses, fallbacks = run(model, batches, loss_fn, opt_kind, "tpu")
    assert fallbacks == {}, f"training step fell back to CPU: {fallbacks}"
    diffs = [abs(a - b) for a, b in zip(cpu_losses, tpu_losses)]
    assert max(diffs) < LOSS_ATOL, f"max loss difference {max(diffs):.2e}"
    assert tpu_losses[-1] < tpu_losses[0] - 0.5, "the model did not learn"
    return max(diffs)


@pytest.mark.parametrize("opt_kind", ["adamw", "adamw_foreach", "adamw_fused", "sgd"])
def test_mlp_trains_like_cpu(opt_kind):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(),
                          nn.Linear(64, 5))
    w = torch.randn(20, 5)
    batches = []
    for _ in range(STEPS):
        x = torch.randn(32, 20)
        batches.append((x, (x @ w).argmax(dim=1)))

    def loss_fn(m, x, y):
        return nn.functional.cross_entropy(m(x), y)

    compare(model, batches, loss_fn, opt_kind)


@pytest.mark.parametrize("opt_kind", ["adamw", "sgd"])
def test_mingpt_trains_like_cpu(opt_kind):
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=32, block_size=16, n_layer=2, n_head=2, n_embd=32)
    model = GPT(cfg)
    # a learnable sequence task: next token = (token + 1) mod vocab
    batches = []
    for _ in range(STEPS):
        start = torch.randint(0, 32, (8, 1))
        seq = (start + torch.arange(17)) % 32
        batches.append((seq[:, :-1].contiguous(), seq[:, 1:].contiguous()))

    def loss_fn(m, x, y):
        return m(x, y)[1]

    compare(model, batches, loss_fn, opt_kind)
