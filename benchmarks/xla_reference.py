"""What XLA:CPU itself reaches on this machine: the minGPT training step of
compile_bench.py written in JAX (same compiler, JAX's own HLO and runtime)
beside CPU eager, Inductor and torch.compile(backend="tpu"), interleaved
in blocks of steps in one run (a block of one variant right after another
variant runs with cold caches; blocks make that cost alike for all). Then the programs our backend built
for that step, run through JAX's runtime instead of ours: the difference is
our runtime's share, the rest is XLA:CPU's.

JAX runs in its own venv (`make bench-xla-reference` makes .venv-jax) as a
worker process driven over a pipe (benchmarks/_jax_worker.py).

    python benchmarks/xla_reference.py --jax-python .venv-jax/bin/python
"""
import argparse
import copy
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

# A fresh program cache, so that the first tpu step compiles and its
# programs are dumped (a cache hit dumps nothing).
os.environ.setdefault("TORCH_TPU_CACHE_DIR", tempfile.mkdtemp(prefix="tt_xla_ref_cache_"))
import torch  # noqa: E402
import torch._dynamo  # noqa: E402

import torch_tpu  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_bench import train_step_fn  # noqa: E402
from models.mingpt import GPT, GPTConfig  # noqa: E402


class JaxWorker:
    def __init__(self, python):
        worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_jax_worker.py")
        self.proc = subprocess.Popen([python, worker], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the JAX worker did not start (see its stderr above)")

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        if not reply or reply.startswith("error"):
            raise RuntimeError(f"JAX worker: {reply or 'no reply'} to {line!r}")
        return float(reply)

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jax-python", required=True, help="python of a venv with jax installed")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--block", type=int, default=5, help="steps per timed block")
    a = p.parse_args()

    torch.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=96, block_size=64, n_layer=2, n_head=4, n_embd=128))
    variants = {"cpu eager": ("cpu", None), "cpu inductor": ("cpu", "inductor"),
                "tpu compiled": ("tpu", "tpu")}
    dump_dir = tempfile.mkdtemp(prefix="tt_xla_ref_")
    steps = {}
    for label, (device, backend) in variants.items():
        steps[label] = train_step_fn(copy.deepcopy(gpt), device, backend, 16, 64, 96)
        if backend == "tpu":  # dump the programs of the first (compiling) step
            os.environ["TORCH_TPU_DUMP_DIR"] = dump_dir
            torch_tpu._C._reset_settings()  # settings are read once: read them again
        steps[label]()
        os.environ.pop("TORCH_TPU_DUMP_DIR", None)
        torch_tpu._C._reset_settings()
        for _ in range(3):
            steps[label]()
    torch.tpu.synchronize()

    jax_worker = JaxWorker(a.jax_python)
    times = {label: [] for label in list(variants) + ["jax (XLA:CPU)"]}
    for _ in range(a.rounds):
        for label, fn in steps.items():
            t0 = time.perf_counter()
            for _ in range(a.block):
                fn()
            if variants[label][0] == "tpu":
                torch.tpu.synchronize()
            times[label].append((time.perf_counter() - t0) * 1e3 / a.block)
        times["jax (XLA:CPU)"].append(jax_worker.ask(f"steps {a.block}"))
    med = {k: statistics.median(v) for k, v in times.items()}

    print(f"minGPT training step (2x128, batch 16x64, AdamW): median over {a.rounds} blocks of "
          f"{a.block} steps, ms per step")
    for label, ms in med.items():
        print(f"  {label:16s} {ms:7.1f} ms   {med['cpu eager'] / ms:5.2f}x cpu eager   "
              f"{med['cpu inductor'] / ms:5.2f}x inductor")

    programs = sorted(glob.glob(os.path.join(dump_dir, "region_*.mlir")))
    big = [f for f in programs if int(re.search(r"_(\d+)ops", f).group(1)) >= 20]
    if big:
        print("\nour programs of that step, run by JAX's runtime (median ms per run):")
        total = 0.0
        for f in big:
            ms = jax_worker.ask(f"program {f}")
            total += ms
            print(f"  {os.path.basename(f):28s} {ms:7.2f}")
        print(f"  sum {total:.1f} ms; the whole step through torch_tpu: {med['tpu compiled']:.1f} ms")
    jax_worker.close()


if __name__ == "__main__":
    main()
