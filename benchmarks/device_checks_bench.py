"""Cost of the device-side checks (docs/reliability.md) on the Fused eager
training steps of eager_modes.py (minGPT, Llama-style stack): checks on vs
off, blocks alternated round by round in one process (the machine is
shared and noisy; compare the ratio, not the absolute times).

    python benchmarks/device_checks_bench.py [--rounds N] [--block STEPS]
"""
import argparse
import os
import statistics
import sys
import time

import torch

import torch_tpu
from torch_tpu import _C

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eager_modes import _trainer  # noqa: E402


def measure(model_name, rounds, warmup=4, block=5):
    step = _trainer(model_name, "fused")
    for on in (1, 0):  # compile and warm both variants
        _C._set_device_checks(on)
        for _ in range(warmup):
            step()
        torch.tpu.synchronize()
    times = {1: [], 0: []}
    for r in range(rounds):
        for on in ((1, 0) if r % 2 == 0 else (0, 1)):
            _C._set_device_checks(on)
            step()  # the switch cut the region: one step to settle
            torch.tpu.synchronize()
            t0 = time.perf_counter()
            for _ in range(block):
                step()
            torch.tpu.synchronize()
            times[on].append((time.perf_counter() - t0) * 1e3 / block)
    _C._set_device_checks(-1)
    on, off = statistics.median(times[1]), statistics.median(times[0])
    paired = statistics.median(a / b for a, b in zip(times[1], times[0]))
    fastest = min(times[1]) / min(times[0])  # least disturbed blocks: load only adds time
    return on, off, paired, fastest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--block", type=int, default=5, help="timed steps per block (small blocks, many rounds: "
                    "paired samples close in time on a loaded machine)")
    args = ap.parse_args()
    for name in ("minGPT", "Llama"):
        on, off, paired, fastest = measure(name, args.rounds, block=args.block)
        print(f"{name:7s} Fused training step: checks on {on:.1f} ms, off {off:.1f} ms: "
              f"overhead {on / off - 1:+.1%} (median of per-round ratios {paired - 1:+.1%}, "
              f"fastest blocks {fastest - 1:+.1%})", flush=True)


if __name__ == "__main__":
    main()
