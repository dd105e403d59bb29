"""The reference examples' training steps on tpu against CPU eager, ratios
measured in one run (the machine is shared and noisy; absolute times are
context only).

Each example of `examples/` is built at its `--smoke` sizes (its own model,
optimizer, batches and loss: `main()` runs up to its training loop, which is
captured instead of run). Variants, interleaved round by round: CPU eager
(its default threads, and one thread: the ratios use the faster);
tpu eager (Fused, the default mode); the model under
`torch.compile(backend="tpu")` (the optimizer's step eager). A variant's
steps are timed in blocks of BLOCK with one synchronize per block, as a
training loop that reads its loss now and then runs; the median block is
reported per step and as the ratio of CPU eager's time to the variant's.

    python benchmarks/examples_bench.py [--rounds 5] [--only mingpt,llama]
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402

import torch_tpu  # noqa: E402
from torch_tpu.bench import capture_example, example_factory  # noqa: E402


EXAMPLES = ["mingpt", "llama", "qwen3", "resnet", "dlrm", "unet"]
BLOCK = 5


def capture(name):
    """The example's (model, optimizer, batch_fn, loss_fn) at its smoke sizes on CPU."""
    return capture_example(name, ["--smoke"])


def one_thread(call):
    # PyTorch's intra-op threads spin-wait: on a loaded 2-core machine CPU
    # eager ran many times slower on its default threads than on one, so
    # both are measured and the ratios use the faster
    def run():
        n = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            call()
        finally:
            torch.set_num_threads(n)
    return run


def variant(cap, device, compiled):
    step = example_factory(cap)(device, compiled)["step"]  # torch_tpu.bench's training step

    def block():
        for _ in range(BLOCK):
            loss = step()
        loss.item()  # one host read per block: waits for the device
    return block


def bench(name, rounds):
    cap = capture(name)
    variants = {"CPU eager": variant(cap, "cpu", False),
                "CPU eager 1 thread": one_thread(variant(cap, "cpu", False)),
                "tpu Fused eager": variant(cap, "tpu", False),
                "tpu compiled": variant(cap, "tpu", True)}
    for call in variants.values():  # warm-up: compiles
        call()
        call()
    times = {k: [] for k in variants}
    for _ in range(rounds):
        for k, call in variants.items():
            t = time.perf_counter()
            call()
            times[k].append((time.perf_counter() - t) / BLOCK)
    base = min(statistics.median(times["CPU eager"]), statistics.median(times["CPU eager 1 thread"]))
    cells = []
    for k, ts in times.items():
        med = statistics.median(ts)
        cells.append(f"{k} {1000 * med:7.2f} ms ({base / med:4.2f}x)")
    print(f"  {name:7s} " + "  ".join(cells), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=",".join(EXAMPLES))
    args = ap.parse_args()
    print(f"examples' training steps (smoke sizes), median of {args.rounds} interleaved rounds of "
          f"{BLOCK}-step blocks; ratio = the faster CPU eager's time / variant time:")
    for name in args.only.split(","):
        try:
            bench(name, args.rounds)
        except Exception as e:  # one example's failure must not hide the others' figures
            print(f"  {name:7s} FAILED: {type(e).__name__}: {str(e)[:300]}", flush=True)
    print(f"  fallbacks: {torch_tpu.debug.fallback_report() or 'none'}")


if __name__ == "__main__":
    main()
