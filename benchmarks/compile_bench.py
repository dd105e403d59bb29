"""torch.compile(backend="tpu") benchmark, ratios measured in one run (the
machine is shared and noisy; absolute times are context only).

Workloads: training step (forward, backward, AdamW) of minGPT and of the
Llama-style decoder stack, inference of the ResNet-18-style convnet.
Variants: CPU eager, tpu eager (the default mode, Fused),
torch.compile(backend="tpu") on tpu, torch.compile (Inductor) on CPU; their
steps are interleaved round by round. Also the compile time of each graph
the tpu backend built: cold (first compile in this process) and warm (after
torch._dynamo.reset(), so Dynamo and AOTAutograd trace again while the
program cache is warm).

    python benchmarks/compile_bench.py [--quick] [--no-inductor]
"""
import argparse
import copy
import os
import statistics
import sys
import time

import torch
import torch._dynamo

import torch_tpu
import torch_tpu.compile as tc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from models.llama import Llama, LlamaConfig  # noqa: E402
from models.mingpt import GPT, GPTConfig  # noqa: E402
from models.resnet import ResNet18  # noqa: E402


def _sync(device):
    if device == "tpu":
        torch.tpu.synchronize()


def train_step_fn(model, device, backend, batch, seq, vocab):
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, vocab, (batch, seq), generator=g).to(device)
    y = torch.randint(0, vocab, (batch, seq), generator=g).to(device)
    fwd = torch.compile(model, backend=backend) if backend else model

    def opt_step():
        opt.step()
    opt_step = torch.compile(opt_step, backend=backend) if backend else opt_step

    def step():
        _, loss = fwd(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt_step()
        return loss
    return step


def inference_fn(model, device, backend, x):
    model = model.eval().to(device)
    x = x.to(device)
    fwd = torch.compile(model, backend=backend) if backend else model

    def step():
        with torch.no_grad():
            return fwd(x)
    return step


VARIANTS = [("cpu eager", "cpu", None), ("tpu eager", "tpu", None),
            ("tpu compiled", "tpu", "tpu"), ("cpu inductor", "cpu", "inductor")]


def bench(make_step, variants, steps, warmup):
    """Median step time per variant, the variants interleaved round by round
    so that load changes on the shared machine hit them alike."""
    torch._dynamo.reset()
    fns, compile_times, first = {}, None, None
    for label, device, backend in variants:
        tc.reset_reports()
        fns[label] = (make_step(device, backend), device)
        t0 = time.perf_counter()
        fns[label][0]()
        _sync(device)
        if backend == "tpu":
            first, cold = time.perf_counter() - t0, _graph_times()
        for _ in range(warmup):
            fns[label][0]()
        _sync(device)
    times = {label: [] for label in fns}
    for _ in range(steps):
        for label, (fn, device) in fns.items():
            t0 = time.perf_counter()
            # The result stays alive through the sync: Fused eager never
            # computes a value that dies unread, so a dropped inference
            # output would time no work at all.
            out = fn()
            _sync(device)
            times[label].append((time.perf_counter() - t0) * 1e3)
            del out
    if first is not None:
        torch._dynamo.reset()
        tc.reset_reports()
        make_step("tpu", "tpu")()
        _sync("tpu")
        compile_times = (cold, _graph_times(), first)
    return {label: statistics.median(t) for label, t in times.items()}, compile_times


def _graph_times():
    """[(graph, seconds)]: AOTAutograd tracing plus each graph's first call
    (capture, XLA compile on a cache miss, run)."""
    out = []
    for r in tc.reports():
        for g in r.graphs:
            out.append((f"{g.kind}#{r.index} ({g.ops} ops, {len(g.partitions)} part)", g.first_call_s))
        out.append((f"trace#{r.index}", r.compile_s))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="fewer steps")
    p.add_argument("--no-inductor", action="store_true", help="skip torch.compile on CPU")
    a = p.parse_args()
    steps, warmup = (3, 1) if a.quick else (10, 3)
    variants = [v for v in VARIANTS if not (a.no_inductor and v[2] == "inductor")]
    torch.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=96, block_size=64, n_layer=2, n_head=4, n_embd=128))
    llama = Llama(LlamaConfig())
    resnet = ResNet18(num_classes=10, width=32, small_input=True)
    images = torch.randn(8, 3, 32, 32)
    workloads = [
        ("minGPT train step (2x128, batch 16x64, AdamW)",
         lambda d, b: train_step_fn(copy.deepcopy(gpt), d, b, 16, 64, 96)),
        ("Llama train step (2x128, GQA 4/2, batch 16x64, AdamW)",
         lambda d, b: train_step_fn(copy.deepcopy(llama), d, b, 16, 64, 256)),
        ("ResNet-18 (width 32) inference, batch 8x3x32x32",
         lambda d, b: inference_fn(copy.deepcopy(resnet), d, b, images)),
    ]
    results = []
    for name, make in workloads:
        row, ct = bench(make, variants, steps, warmup)
        results.append((name, row, ct))
        print(f"... {name}: " + ", ".join(f"{k} {v:.1f} ms" for k, v in row.items()), flush=True)

    print("\nStep time (median, ms) and speedup of tpu compiled over each")
    labels = [v[0] for v in variants]
    print(f"{'workload':56s} " + " ".join(f"{lab:>13s}" for lab in labels)
          + "  vs cpu eager  vs inductor  vs tpu eager")
    for name, row, _ in results:
        comp = row["tpu compiled"]
        ratio = lambda k: f"{row[k] / comp:10.2f}x" if k in row else f"{'-':>11s}"  # noqa: E731
        print(f"{name:56s} " + " ".join(f"{row[lab]:13.1f}" for lab in labels)
              + f"  {ratio('cpu eager')}  {ratio('cpu inductor')}  {ratio('tpu eager')}")
    print("\nCompile time per graph, tpu backend (cold = first in process, warm = after "
          "torch._dynamo.reset(); seconds)")
    for name, _, (cold, warm, first) in results:
        print(f"{name}: first step {first:.2f} s")
        for (g, c), (_, w) in zip(cold, warm):
            print(f"    {g:44s} cold {c:6.2f}  warm {w:6.2f}")
    print("\nfallbacks:", torch_tpu.debug.fallback_report())


if __name__ == "__main__":
    main()
