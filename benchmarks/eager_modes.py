"""Eager modes and the persistent cache, ratios measured in one run (the
machine is shared and noisy; absolute times are context only).

(a) Fused vs Strict eager: steady-state training step (forward, backward,
    AdamW) of minGPT and of the Llama-style decoder stack
(b) time to the first training step in a fresh process: warm persistent
    cache vs cold
(c) programs compiled per step after warm-up, and programs launched per step
(d) peak device memory of a training step, Fused vs Strict
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import torch_tpu

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
from models.llama import Llama, LlamaConfig  # noqa: E402
from models.mingpt import GPT, GPTConfig  # noqa: E402


def make(model_name):
    torch.manual_seed(0)
    if model_name == "minGPT":
        model = GPT(GPTConfig(vocab_size=96, block_size=64, n_layer=2, n_head=4, n_embd=128))
        vocab = 96
    else:
        model = Llama(LlamaConfig())
        vocab = LlamaConfig().vocab_size
    x = torch.randint(0, vocab, (16, 64))
    y = torch.randint(0, vocab, (16, 64))
    return model, x, y


def _trainer(model_name, mode):
    with torch_tpu.eager_mode(mode):
        model, x, y = make(model_name)
        model.to("tpu")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x, y = x.to("tpu"), y.to("tpu")

    def step():
        with torch_tpu.eager_mode(mode):
            _, loss = model(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss
    return step


def measure(model_name, steps, warmup=4, block=5):
    """Per mode: median step time (ms), compiles over the timed steps,
    programs and launches in the last step, peak device buffer bytes of a
    step (measured alone). Steps are timed in blocks of `block` with one
    synchronize per block, as a training loop that reads the loss now and
    then runs: the host records or dispatches the next step while the device
    runs the previous one. The modes' blocks alternate round by round so
    load changes on the shared machine hit both alike."""
    modes = ("strict", "fused")
    steppers = {m: _trainer(model_name, m) for m in modes}
    for m in modes:
        for _ in range(warmup):  # warm up exactly as the timed steps run
            steppers[m]()
        torch.tpu.synchronize()
    compiles0 = torch_tpu.cache_stats()["compiles_by_mode"]
    times = {m: [] for m in modes}
    rows = {m: {} for m in modes}
    for _ in range(steps):
        for m in modes:
            t0 = time.perf_counter()
            for _ in range(block):
                steppers[m]()
            torch.tpu.synchronize()
            times[m].append((time.perf_counter() - t0) * 1e3 / block)
    compiles1 = torch_tpu.cache_stats()["compiles_by_mode"]
    for m in modes:  # one mode alone: per-step counts and memory are its own
        for _ in range(2):
            steppers[m]()
            torch.tpu.synchronize()
        torch.tpu.reset_peak_memory_stats()
        steppers[m]()
        torch.tpu.synchronize()
        s = torch_tpu.cache_stats()
        rows[m].update(
            programs_per_step=s["programs_last_step"], launches_per_step=s["launches_last_step"],
            ms=statistics.median(times[m]), new_compiles=compiles1[m] - compiles0[m],
            peak_buffer_mb=torch.tpu.device_memory_stats()["peak_buffer_bytes"] / 2**20,
            loss=steppers[m]().item())
    # paired: each round's Strict block over its Fused block, so a load
    # change that hits one round cancels out of that round's ratio
    rows["fused"]["round_speedups"] = [s / f for s, f in zip(times["strict"], times["fused"])]
    return rows


FIRST_STEP = """
import json, sys, time
t0 = time.perf_counter()
import torch
t_torch = time.perf_counter()
import torch_tpu
t_imported = time.perf_counter()
sys.path.insert(0, {examples!r})
from models.mingpt import GPT, GPTConfig
torch_tpu.set_eager_mode({mode!r})
torch.manual_seed(0)
dev = {device!r}
model = GPT(GPTConfig(vocab_size=96, block_size=64, n_layer=2, n_head=4, n_embd=128)).to(dev)
t_opt0 = time.perf_counter()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # imports torch._dynamo (PyTorch's cost)
t_opt = time.perf_counter() - t_opt0
x = torch.randint(0, 96, (16, 64)).to(dev); y = torch.randint(0, 96, (16, 64)).to(dev)
t_ready = time.perf_counter()
for _ in range(2):  # the first step, and the second (the first fused loop boundary)
    _, loss = model(x, y); opt.zero_grad(); loss.backward(); opt.step()
loss.item()
s = torch_tpu.cache_stats()
print(json.dumps({{"seconds": time.perf_counter() - t0,
                  "after_import": time.perf_counter() - t_imported,
                  "imports": t_imported - t0,
                  "pytorch_startup": t_torch - t0 + t_opt,
                  "steps": time.perf_counter() - t_ready,
                  "compiles": sum(s["compiles_by_mode"].values()),
                  "disk_loads": s["persistent"]["loads"]}}))
"""


def first_steps(mode, cache_dir, device="tpu"):
    code = FIRST_STEP.format(examples=os.path.join(ROOT, "examples"), mode=mode, device=device)
    env = dict(os.environ, TORCH_TPU_CACHE_DIR=cache_dir,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def time_to_first_steps():
    print("(b) fresh process to the end of the 2nd minGPT training step, persistent cache cold vs "
          "warm;\n    'steps' is the part after imports, model and optimizer set-up (what the "
          "cache can change); 'beyond PyTorch's own start-up' is the whole process less import "
          "torch and the first optimizer's import of torch._dynamo, which CPU eager pays alike")
    with tempfile.TemporaryDirectory(prefix="torch_tpu_bench_cache_") as d:
        cpu = first_steps("strict", d, device="cpu")
    print(f"    cpu eager (reference): whole process {cpu['seconds']:.2f} s, steps {cpu['steps']:.2f} s, "
          f"PyTorch's own start-up {cpu['pytorch_startup']:.2f} s")
    for mode in ("strict", "fused"):
        with tempfile.TemporaryDirectory(prefix="torch_tpu_bench_cache_") as d:
            cold = first_steps(mode, d)
            warm = first_steps(mode, d)
        print(f"    {mode:6s} cold {cold['seconds']:.2f} s ({cold['compiles']} compiles), warm "
              f"{warm['seconds']:.2f} s ({warm['compiles']} compiles, {warm['disk_loads']} loaded "
              f"from disk): whole process warm/cold {warm['seconds'] / cold['seconds']:.0%}; "
              f"after imports {warm['after_import'] / cold['after_import']:.0%}; steps cold "
              f"{cold['steps']:.2f} s, warm {warm['steps']:.2f} s, warm/cold "
              f"{warm['steps'] / cold['steps']:.0%}")
        ours_cold = cold["seconds"] - cold["pytorch_startup"]
        ours_warm = warm["seconds"] - warm["pytorch_startup"]
        print(f"    {'':6s} beyond PyTorch's own start-up: cold {ours_cold:.2f} s, warm {ours_warm:.2f} s, "
              f"warm/cold {ours_warm / ours_cold:.0%}")
        print(f"    {'':6s} importing torch and torch_tpu alone takes {warm['imports']:.2f} s, "
              f"{warm['imports'] / cold['seconds']:.0%} of the cold process: no cache can bring "
              f"the whole-process ratio below that; PyTorch's own start-up (import torch, and the "
              f"first optimizer importing torch._dynamo) is {warm['pytorch_startup']:.2f} s of the "
              f"warm process, as in CPU eager")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10, help="timed blocks per mode")
    p.add_argument("--block", type=int, default=5, help="steps per timed block (one sync each)")
    p.add_argument("--first-step-only", action="store_true", help="only (b)")
    a = p.parse_args()
    if a.first_step_only:
        time_to_first_steps()
        return
    rows = {}
    for name in ("minGPT", "Llama"):
        for mode, row in measure(name, a.steps, block=a.block).items():
            rows[name, mode] = row
    print("(a) training step, Fused vs Strict eager (median over %d blocks of %d steps, "
          "one sync per block, after warm-up)" % (a.steps, a.block))
    for name in ("minGPT", "Llama"):
        s, f = rows[name, "strict"], rows[name, "fused"]
        print(f"    {name:7s} strict {s['ms']:7.1f} ms   fused {f['ms']:7.1f} ms   "
              f"speedup {s['ms'] / f['ms']:.2f}x   (loss strict {s['loss']:.6f} fused {f['loss']:.6f})")
        r = sorted(f["round_speedups"])
        print(f"    {'':7s} per-round speedup: median {statistics.median(r):.2f}x, "
              f"range {r[0]:.2f}x-{r[-1]:.2f}x over {len(r)} rounds")
    print("(c) after warm-up: new compiles over the timed steps / programs launched per step")
    for (name, mode), r in rows.items():
        print(f"    {name:7s} {mode:6s} new compiles {r['new_compiles']}, distinct programs per step "
              f"{r['programs_per_step']}, launches per step {r['launches_per_step']}")
    print("(d) peak device buffer memory during the timed steps")
    for name in ("minGPT", "Llama"):
        s, f = rows[name, "strict"], rows[name, "fused"]
        print(f"    {name:7s} strict {s['peak_buffer_mb']:.2f} MiB   fused {f['peak_buffer_mb']:.2f} MiB   "
              f"ratio fused/strict {f['peak_buffer_mb'] / s['peak_buffer_mb']:.2f}")
    time_to_first_steps()


if __name__ == "__main__":
    main()
