"""`make bench`: ratios measured in one run (the machine is shared and
noisy; absolute times are context only).

(a) host overhead per small op, warm cache: tpu vs CPU eager
(b) minGPT training step (forward, backward, AdamW): tpu vs CPU eager
"""
import argparse
import os
import statistics
import sys
import time

import torch

import torch_tpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from models.mingpt import GPT, GPTConfig  # noqa: E402


def per_op_us(device, n=2000, repeats=5):
    x = torch.randn(16, device=device)
    y = torch.randn(16, device=device)
    for _ in range(50):  # warm the cache
        z = x + y
    if device == "tpu":
        torch.tpu.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            z = x + y
        if device == "tpu":
            torch.tpu.synchronize()
        times.append((time.perf_counter() - t0) / n * 1e6)
    del z
    return statistics.median(times)


def train_step_ms(device, steps=8, warmup=3):
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=96, block_size=64, n_layer=2, n_head=4, n_embd=128)
    model = GPT(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 96, (16, 64)).to(device)
    y = torch.randint(0, 96, (16, 64)).to(device)

    def step():
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(warmup):
        step().item()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step().item()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    n = 500 if a.quick else 2000
    cpu_op = per_op_us("cpu", n)
    tpu_op = per_op_us("tpu", n)
    print(f"(a) small op (16-element add), warm cache: tpu {tpu_op:.1f} us/op, "
          f"cpu eager {cpu_op:.1f} us/op, ratio tpu/cpu {tpu_op / cpu_op:.1f}x")
    cpu_step = train_step_ms("cpu")
    tpu_step = train_step_ms("tpu")
    print(f"(b) minGPT train step (2 layers, d=128, batch 16x64, AdamW): tpu {tpu_step:.1f} ms, "
          f"cpu eager {cpu_step:.1f} ms, speedup tpu vs cpu {cpu_step / tpu_step:.2f}x")
    print("cache:", torch_tpu.cache_stats())
    print("fallbacks:", torch_tpu.debug.fallback_report())


if __name__ == "__main__":
    main()
