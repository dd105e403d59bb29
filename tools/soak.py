"""Long-run soak of Fused eager: trains the minGPT of examples/mingpt.py for
--steps steps (default 10,000) on tpu and samples, every --every steps:
torch.tpu.memory_allocated (tensor storages), torch.tpu.device_memory_stats
(device buffers), host RSS, programs compiled (compiles in every mode plus
persistent-cache loads), the step time (averaged over the block, with one
synchronize per block) and the loss.

Asserts, after --warmup steps: device memory allocated stays within
--mem-bound bytes of its first post-warm-up sample, host RSS grows by at
most --rss-bound bytes, the compile count does not change, every loss is
finite. Writes the samples and the verdict as JSON (--out) and a PNG plot
(--png, matplotlib). Exit status 1 when an assertion fails.

`make soak` runs it (SOAK_STEPS=N for another length)."""
import argparse
import json
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

os.environ.setdefault("TORCH_TPU_EAGER_MODE", "fused")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

import torch_tpu  # noqa: E402
from mingpt import load_text  # noqa: E402  (examples/mingpt.py)
from models.mingpt import GPT, GPTConfig  # noqa: E402


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def compile_count() -> int:
    s = torch_tpu.cache_stats()
    return sum(s["compiles_by_mode"].values()) + s["persistent"]["loads"]


def device_bytes() -> int:
    return int(torch.tpu.device_memory_stats()["buffer_bytes"])


# ---------------------------------------------------------------- plotting

def plot(path, samples):
    xs = [s["step"] for s in samples]
    panels = [("tpu memory_allocated (MiB)", xs, [s["memory_allocated"] / 2**20 for s in samples]),
              ("host RSS (MiB)", xs, [s["rss"] / 2**20 for s in samples]),
              ("programs compiled or loaded", xs, [s["compiles"] for s in samples]),
              ("step time (ms)", xs, [s["step_ms"] for s in samples]),
              ("loss", xs, [s["loss"] for s in samples])]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.2 * len(panels)), sharex=True)
    for ax, (title, x, y) in zip(axes, panels):
        ax.plot(x, y)
        ax.set_ylabel(title, fontsize=8)
    axes[-1].set_xlabel("step")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    return "matplotlib"


# ---------------------------------------------------------------- soak

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--every", type=int, default=50, help="sample period in steps")
    ap.add_argument("--warmup", type=int, default=200, help="steps before the flatness checks start")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--embd", type=int, default=128)
    ap.add_argument("--mem-bound", type=int, default=1 << 20,
                    help="allowed drift of memory_allocated after warm-up, bytes (default 1 MiB)")
    ap.add_argument("--rss-bound", type=int, default=64 << 20,
                    help="allowed host RSS growth after warm-up, bytes (default 64 MiB: malloc arenas"
                         " and the plugin's thread pools settle over the first thousands of steps)")
    ap.add_argument("--out", default="soak.json")
    ap.add_argument("--png", default="soak.png")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    args.warmup = min(args.warmup, max(args.steps // 2, 1))

    text = load_text(400_000)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    torch.manual_seed(1337)
    cfg = GPTConfig(vocab_size=len(chars), block_size=args.block, n_layer=args.layers, n_head=4,
                    n_embd=args.embd)
    dev = torch.device("tpu")
    model = GPT(cfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

    samples = []
    t_block = time.time()
    print(f"soak: {args.steps} steps of minGPT ({sum(p.numel() for p in model.parameters()):,} params), "
          f"mode {torch_tpu.get_eager_mode()}, sample every {args.every}", flush=True)
    for step in range(1, args.steps + 1):
        g = torch.Generator().manual_seed(args.seed * 100_003 + step)
        ix = torch.randint(len(data) - args.block - 1, (args.batch,), generator=g)
        x = torch.stack([data[i:i + args.block] for i in ix]).to(dev)
        y = torch.stack([data[i + 1:i + 1 + args.block] for i in ix]).to(dev)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % args.every == 0 or step == args.steps or step == 1:
            lv = loss.item()
            torch.tpu.synchronize()
            now = time.time()
            n = 1 if step == 1 else (step - samples[-1]["step"])
            s = dict(step=step, loss=lv, memory_allocated=torch.tpu.memory_allocated(),
                     device_bytes=device_bytes(), rss=rss_bytes(), compiles=compile_count(),
                     step_ms=(now - t_block) / n * 1e3, t=now)
            samples.append(s)
            t_block = now
            if step % (args.every * 10) == 0 or step == args.steps:
                print(f"step {step:6d} loss {lv:.4f} mem {s['memory_allocated'] / 2**20:.2f} MiB "
                      f"rss {s['rss'] / 2**20:.1f} MiB compiles {s['compiles']} "
                      f"step {s['step_ms']:.1f} ms", flush=True)
            if args.out and (step % (args.every * 20) == 0):
                _write(args, samples, None)

    verdict = check(args, samples)
    _write(args, samples, verdict)
    print(json.dumps(verdict, indent=1))
    return 0 if verdict["ok"] else 1


def check(args, samples):
    after = [s for s in samples if s["step"] >= args.warmup]
    if not after:
        after = samples[-1:]
    base = after[0]
    mem_drift = max(abs(s["memory_allocated"] - base["memory_allocated"]) for s in after)
    rss_growth = max(s["rss"] for s in after) - base["rss"]
    compiles_after = after[-1]["compiles"] - base["compiles"]
    nonfinite = [s["step"] for s in samples if not math.isfinite(s["loss"])]
    ms = sorted(s["step_ms"] for s in after[1:]) or [float("nan")]
    v = dict(steps=samples[-1]["step"], warmup=args.warmup,
             memory_allocated_at_warmup=base["memory_allocated"],
             memory_allocated_last=samples[-1]["memory_allocated"], memory_drift_bytes=mem_drift,
             memory_bound_bytes=args.mem_bound,
             rss_at_warmup=base["rss"], rss_last=samples[-1]["rss"], rss_growth_bytes=rss_growth,
             rss_bound_bytes=args.rss_bound,
             compiles_at_warmup=base["compiles"], compiles_last=samples[-1]["compiles"],
             compiles_after_warmup=compiles_after,
             first_loss=samples[0]["loss"], last_loss=samples[-1]["loss"], nonfinite_loss_steps=nonfinite,
             step_ms_median=ms[len(ms) // 2], step_ms_max=ms[-1])
    v["failures"] = []
    if mem_drift > args.mem_bound:
        v["failures"].append(f"memory_allocated drifted {mem_drift} bytes > {args.mem_bound}")
    if rss_growth > args.rss_bound:
        v["failures"].append(f"host RSS grew {rss_growth} bytes > {args.rss_bound}")
    if compiles_after:
        v["failures"].append(f"{compiles_after} programs compiled after warm-up")
    if nonfinite:
        v["failures"].append(f"non-finite loss at steps {nonfinite[:5]}")
    v["ok"] = not v["failures"]
    return v


def _write(args, samples, verdict):
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(dict(args=vars(args), verdict=verdict, samples=samples), f)
        os.replace(tmp, args.out)
    if args.png:
        args.plotter = plot(args.png, samples)


if __name__ == "__main__":
    sys.exit(main())
