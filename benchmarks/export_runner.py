"""Figures for docs/export.md: per model (tests/python/test_export.py's
three), PyTorch CPU eager, the artifact run from Python (torch_tpu.load)
and by build/tpurun (first run with the stored executable, first run
compiling the text, steady-state median), and parity with CPU eager.

    HF_HUB_OFFLINE=1 PYTHONPATH=$PWD .venv/bin/python benchmarks/export_runner.py
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import torch_tpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from test_export import MODELS  # noqa: E402

ITERS = 20


def median_ms(fn, iters=ITERS):
    fn()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def tpurun(path, files, out, *extra):
    res = subprocess.run([os.path.join(ROOT, "build", "tpurun"), path, *files, "-o", out,
                          "--iters", str(ITERS), *extra], capture_output=True, text=True, check=True)
    first = float(re.search(r"first run: ([\d.]+) ms", res.stdout).group(1))
    steady = float(re.search(r"steady-state median: ([\d.]+) ms", res.stdout).group(1))
    return first, steady


def main():
    torch.set_num_threads(os.cpu_count())
    rows = []
    for name, make in MODELS.items():
        model, inputs = make()
        with torch.no_grad():
            want = model(*inputs)
            cpu = median_ms(lambda: model(*inputs))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "art")
            torch_tpu.export(model, inputs, path)
            loaded = torch_tpu.load(path)
            dev = [t.to("tpu") for t in inputs]
            got = loaded(*dev).cpu()
            py = median_ms(lambda: loaded(*dev).cpu())
            files = []
            for i, t in enumerate(inputs):
                files.append(os.path.join(d, f"in{i}.npy"))
                np.save(files[-1], t.numpy())
            first, steady = tpurun(path, files, os.path.join(d, "out"))
            first_compile, _ = tpurun(path, files, os.path.join(d, "out2"), "--compile")
            out = torch.from_numpy(np.load(os.path.join(d, "out", "out0.npy")))
        rows.append((name, cpu, py, first, first_compile, steady, (got - want).abs().max().item(),
                     (out - want).abs().max().item()))
    print("| model | CPU eager | torch_tpu.load | tpurun first run (stored executable) | "
          "tpurun first run (compiling) | tpurun steady-state | max abs diff load / tpurun vs CPU |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, cpu, py, first, first_c, steady, d_py, d_run in rows:
        print(f"| {name} | {cpu:.2f} ms | {py:.2f} ms | {first:.1f} ms | {first_c:.1f} ms | "
              f"{steady:.2f} ms | {d_py:.1e} / {d_run:.1e} |")


if __name__ == "__main__":
    main()
