"""python -m torch_tpu.bench: a training step's figures on tpu, measured.

    python -m torch_tpu.bench mingpt                      # an example's model
    python -m torch_tpu.bench mingpt --variants fused,strict,compile,cpu
    python -m torch_tpu.bench mypkg.train:make_step       # your own step

A workload is one of the examples (examples/*.py: its model, optimizer,
batches and loss, captured where its main() would start training; `--args`
passes it flags, e.g. `--args="--batch 32"`), or `module:function`, a
function taking a torch.device and returning a dict with `step` (a callable
running one training step and returning its loss or None), optionally
`items` (samples or tokens a step processes, default 1) and `unit`
("samples" by default).

Each variant runs the workload in this process: `fused` / `strict` (tpu
eager modes), `compile` (the model under torch.compile(backend="tpu"),
examples only), `profiler` (Fused, inside torch_tpu.profiler.profile: its
overhead), `cpu` (CPU eager, for scale). Every variant warms up (its first
step timed alone: compile time included), then the variants run round by
round, interleaved, `--steps` steps a round with one device sync, so a
noisy machine slows them all alike. Reported per variant: the median step
time over rounds with its min, max and spread, the median of the per-round
ratio to the first variant (paired, robust to load), the process's CPU
seconds per step (all threads; steadier than wall time on a loaded
machine) and their paired ratio, first-step time,
warm-up overhead (the first step and the warm-up rounds, minus as many median
steps), programs
compiled during warm-up and after, peak device memory, items/s, and MFU:
model FLOPs per step (torch.utils.flop_counter.FlopCounterMode over one
step on CPU) / step time / the device's peak FLOP/s (a table per TPU
generation; the CPU plugin's peak, and CPU eager's, measured by a timed
large matmul). Writes JSON and a PNG chart (matplotlib).
"""
import argparse
import contextlib
import copy
import importlib
import inspect
import json
import os
import shlex
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402

import torch_tpu  # noqa: E402
import torch_tpu.memory  # noqa: E402,F401

EXAMPLES = ("mingpt", "llama", "qwen3", "resnet", "dlrm", "unet")
VARIANTS = ("fused", "strict", "compile", "profiler", "cpu")

# Dense bf16 peak FLOP/s per chip, from the vendors' published figures,
# keyed by a substring of the device kind PJRT reports.
PEAK_FLOPS = {
    "TPU v2": 45e12, "TPU v3": 123e12, "TPU v4": 275e12, "TPU v5 lite": 197e12,
    "TPU v5e": 197e12, "TPU v5p": 459e12, "TPU v5": 459e12, "TPU v6 lite": 918e12,
    "TPU v6e": 918e12, "TPU7x": 2307e12,
}


def _examples_dir():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    d = os.path.join(here, "examples")
    if not os.path.isdir(d):
        raise SystemExit("torch_tpu.bench: the examples/ folder is not next to this torch_tpu "
                         "(an installed wheel has none): run from a checkout, or pass "
                         "module:function")
    return d


class _Captured(Exception):
    pass


def capture_example(name, argv):
    """The example's (model, opt, batch_fn, loss_fn, count) on CPU."""
    sys.path.insert(0, _examples_dir())
    import _common
    mod = importlib.import_module(name)
    got = {}
    real = _common.train

    def fake_train(model, opt, batch_fn, loss_fn, args, unit, count):
        got.update(model=model, opt=opt, batch_fn=batch_fn, loss_fn=loss_fn, unit=unit,
                   count=count)
        raise _Captured

    patched = [m for m in list(sys.modules.values()) if getattr(m, "train", None) is real]
    for m in patched:
        m.train = fake_train
    try:
        mod.main(["--device", "cpu"] + list(argv))
    except _Captured:
        pass
    finally:
        for m in patched:
            m.train = real
    if not got:
        raise RuntimeError(f"{name}: its main() did not reach the training loop")
    return got


def _to(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(v, device) for v in obj)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    return obj


def example_factory(cap):
    """A workload function (device, compiled) -> dict(step, items, unit)."""
    def make(device, compiled=False):
        model = copy.deepcopy(cap["model"]).to(device)
        cls = type(cap["opt"])
        accepted = inspect.signature(cls.__init__).parameters
        opt = cls(model.parameters(),
                  **{k: v for k, v in cap["opt"].defaults.items() if k in accepted})
        fwd = torch.compile(model, backend="tpu") if compiled else model
        batches = [_to(cap["batch_fn"](s), device) for s in range(1, 4)]
        i = [0]

        def step():
            b = batches[i[0] % len(batches)]
            i[0] += 1
            loss = cap["loss_fn"](fwd, b)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss
        return {"step": step, "items": cap["count"](batches[0]), "unit": cap["unit"]}
    return make


def user_factory(spec):
    mod_name, _, fn_name = spec.partition(":")
    fn = getattr(importlib.import_module(mod_name), fn_name)

    def make(device, compiled=False):
        if compiled:
            raise ValueError("the compile variant needs an example workload (a user's step "
                             "decides itself whether it compiles)")
        w = fn(device)
        if not isinstance(w, dict) or not callable(w.get("step")):
            raise TypeError(f"{spec} must return a dict with a callable 'step'")
        return {"step": w["step"], "items": int(w.get("items", 1)),
                "unit": w.get("unit", "samples")}
    return make


def model_flops(make):
    """FLOPs of one training step, counted on CPU (after one uncounted step,
    so lazily created optimizer state is not counted as model work)."""
    from torch.utils.flop_counter import FlopCounterMode
    w = make(torch.device("cpu"))
    w["step"]()
    counter = FlopCounterMode(display=False)
    with counter:
        w["step"]()
    return int(counter.get_total_flops())


def _time_matmul(device, n, reps):
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    sync = (lambda: torch.tpu.synchronize()) if device.type == "tpu" else (lambda: None)
    with torch_tpu.eager_mode("strict") if device.type == "tpu" else contextlib.nullcontext():
        (a @ b).sum().item()  # compiles
        best = float("inf")
        for _ in range(reps):
            sync()
            t = time.perf_counter()
            c = a @ b
            sync()
            c.sum().item() if device.type == "cpu" else None
            best = min(best, time.perf_counter() - t)
    return 2 * n ** 3 / best


def peak_flops(device):
    """(FLOP/s, where it comes from) for a device."""
    if device.type == "tpu":
        kind = torch.tpu.get_device_name(device)
        for key, v in PEAK_FLOPS.items():
            if key.lower() in kind.lower():
                return v, f"table: {key} (bf16 dense)"
    n = 1024
    return _time_matmul(device, n, 5), f"measured: best of 5 float32 {n}x{n} matmuls on {device.type}"


def _compiles():
    s = torch_tpu.cache_stats()
    return sum(s["compiles_by_mode"].values()) + s["persistent"]["loads"]


class Variant:
    def __init__(self, name, make, steps):
        self.name, self.steps = name, steps
        self.device = torch.device("cpu" if name == "cpu" else "tpu")
        self.mode = "strict" if name == "strict" else "fused"
        self.times, self.cpu_times, self.peak_alloc, self.peak_reserved = [], [], 0, 0
        self.profiler_stop_s = []
        with self._ctx():
            self.w = make(self.device, compiled=(name == "compile"))

    def _ctx(self):
        if self.device.type == "cpu":
            return contextlib.nullcontext()
        return torch_tpu.eager_mode(self.mode)

    def _sync(self, out):
        if self.device.type == "tpu":
            if isinstance(out, torch.Tensor):
                out.detach().sum().item()  # reads the result: waits for the device
            torch.tpu.synchronize()

    def warm_up(self, n):
        c0 = _compiles()
        prof = torch_tpu.profiler.profile() if self.name == "profiler" else None
        with self._ctx(), prof if prof is not None else contextlib.nullcontext():
            t = time.perf_counter()
            self._sync(self.w["step"]())
            self.first_step_s = time.perf_counter() - t
            # then n blocks shaped as the timed rounds (a Fused region can
            # span a block's steps: the timed rounds must find it compiled)
            t = time.perf_counter()
            for _ in range(n):
                for _ in range(self.steps):
                    out = self.w["step"]()
                self._sync(out)
            self.warmup_s = time.perf_counter() - t
        self.warmup_steps = n * self.steps
        self.compiles_warmup = _compiles() - c0
        self.compiles_after = 0

    def run_round(self):
        c0 = _compiles()
        if self.device.type == "tpu":
            torch.tpu.reset_peak_memory_stats()
        prof = torch_tpu.profiler.profile() if self.name == "profiler" else None
        with self._ctx():
            if prof is not None:
                prof.start()
            t, c = time.perf_counter(), time.process_time()
            for _ in range(self.steps):
                out = self.w["step"]()
            self._sync(out)
            dt, dc = time.perf_counter() - t, time.process_time() - c
            if prof is not None:
                t1 = time.perf_counter()
                prof.stop()
                self.profiler_stop_s.append(time.perf_counter() - t1)
                self.last_profile = prof
        self.times.append(dt / self.steps)
        self.cpu_times.append(dc / self.steps)
        self.compiles_after += _compiles() - c0
        if self.device.type == "tpu":
            self.peak_alloc = max(self.peak_alloc, torch.tpu.max_memory_allocated())
            self.peak_reserved = max(self.peak_reserved, torch_tpu.memory.max_memory_reserved())


def run(workload, variants, rounds, steps, warmup, argv=(), log=print):
    if ":" in workload:
        make, label = user_factory(workload), workload
    elif workload in EXAMPLES:
        make, label = example_factory(capture_example(workload, argv)), workload
    else:
        raise SystemExit(f"torch_tpu.bench: unknown workload {workload!r}: one of "
                         f"{', '.join(EXAMPLES)}, or module:function")
    for v in variants:
        if v not in VARIANTS:
            raise SystemExit(f"torch_tpu.bench: unknown variant {v!r}: one of {', '.join(VARIANTS)}")
    flops = model_flops(make)
    runs = [Variant(v, make, steps) for v in variants]
    for r in runs:
        r.warm_up(warmup)
        log(f"  {r.name}: first step {r.first_step_s * 1e3:.1f} ms, {r.compiles_warmup} "
            f"programs compiled or loaded in warm-up")
    for i in range(rounds):
        for r in runs:
            r.run_round()
        log(f"  round {i + 1}/{rounds}: " +
            "  ".join(f"{r.name} {r.times[-1] * 1e3:.2f} ms" for r in runs))
    peaks = {}
    for dev in {r.device.type for r in runs}:
        peaks[dev] = peak_flops(torch.device(dev))
    base = runs[0]
    out = {"workload": label, "args": list(argv), "flops_per_step": flops,
           "unit": runs[0].w["unit"], "items_per_step": runs[0].w["items"],
           "rounds": rounds, "steps_per_round": steps, "warmup_steps": warmup,
           "device": f"tpu ({torch.tpu.get_device_name()})" if "tpu" in peaks else "cpu",
           "peak_flops": {k: v[0] for k, v in peaks.items()},
           "peak_flops_source": {k: v[1] for k, v in peaks.items()},
           "torch": torch.__version__, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "load_average": list(os.getloadavg()), "cpus": os.cpu_count(), "variants": {}}
    for r in runs:
        med = statistics.median(r.times)
        ratios = [t / b for t, b in zip(r.times, base.times)]
        v = {"step_s_median": med, "step_s_min": min(r.times), "step_s_max": max(r.times),
             "spread_pct": 100 * (max(r.times) - min(r.times)) / med,
             "step_s_rounds": r.times,
             # CPU seconds the whole process (every thread) spent per step:
             # steadier than wall time on a loaded machine
             "cpu_s_median": statistics.median(r.cpu_times), "cpu_s_rounds": r.cpu_times,
             "cpu_ratio_to_" + base.name + "_median":
                 statistics.median([t / b for t, b in zip(r.cpu_times, base.cpu_times)]),
             "ratio_to_" + base.name + "_median": statistics.median(ratios),
             "first_step_s": r.first_step_s, "warmup_s": r.first_step_s + r.warmup_s,
             "warmup_overhead_s": r.first_step_s + r.warmup_s - (1 + r.warmup_steps) * med,
             "compiles_warmup": r.compiles_warmup, "compiles_after_warmup": r.compiles_after,
             "throughput": r.w["items"] / med, "throughput_unit": f"{r.w['unit']}/s",
             "mfu": flops / med / peaks[r.device.type][0]}
        if r.device.type == "tpu":
            v.update(peak_allocated_bytes=r.peak_alloc, peak_reserved_bytes=r.peak_reserved)
        if r.profiler_stop_s:
            v["profiler_stop_s_median"] = statistics.median(r.profiler_stop_s)
        out["variants"][r.name] = v
    return out, runs


def chart(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(result["variants"])
    vs = [result["variants"][n] for n in names]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    med = [v["step_s_median"] * 1e3 for v in vs]
    lo = [m - v["step_s_min"] * 1e3 for m, v in zip(med, vs)]
    hi = [v["step_s_max"] * 1e3 - m for m, v in zip(med, vs)]
    a.bar(names, med, yerr=[lo, hi], capsize=4, color="#4477aa")
    a.set_ylabel("step time, ms (median; bars: min-max over rounds)")
    a.set_title("post-warm-up step time")
    if max(med) > 10 * min(med):
        a.set_yscale("log")
    for i, v in enumerate(vs):
        a.annotate(f"first {v['first_step_s'] * 1e3:.0f} ms", (i, med[i]), ha="center",
                   va="bottom", fontsize=8, xytext=(0, 3), textcoords="offset points")
    thr = [v["throughput"] for v in vs]
    b.bar(names, thr, color="#66aa55")
    b.set_ylabel(vs[0]["throughput_unit"])
    b.set_title("throughput (label: MFU)")
    for i, v in enumerate(vs):
        b.annotate(f"{100 * v['mfu']:.2f}%", (i, thr[i]), ha="center", va="bottom", fontsize=8)
    fig.suptitle(f"torch_tpu.bench {result['workload']} on {result['device']}: "
                 f"{result['rounds']} interleaved rounds x {result['steps_per_round']} steps, "
                 f"{result['time'][:10]}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m torch_tpu.bench",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("workload", help=f"{', '.join(EXAMPLES)}, or module:function")
    ap.add_argument("--variants", default="fused,compile,cpu",
                    help=f"comma-separated, the first is the ratios' base ({', '.join(VARIANTS)})")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=5, help="steps per round (one sync per round)")
    ap.add_argument("--warmup", type=int, default=1, help="warm-up rounds (of --steps steps) after the first step")
    ap.add_argument("--args", default="", help="flags for the example's main(), e.g. '--smoke'")
    ap.add_argument("--out", default="bench_results", help="folder for the JSON and PNG")
    ap.add_argument("--chart", default=None, help="also write the chart here (e.g. docs/bench.png)")
    a = ap.parse_args(argv)
    variants = [v for v in a.variants.split(",") if v]
    print(f"torch_tpu.bench {a.workload}: variants {', '.join(variants)}", flush=True)
    result, _ = run(a.workload, variants, a.rounds, a.steps, a.warmup, shlex.split(a.args),
                    log=lambda s: print(s, flush=True))
    os.makedirs(a.out, exist_ok=True)
    stem = os.path.join(a.out, f"{a.workload.replace(':', '_').replace('.', '_')}-"
                               f"{time.strftime('%Y%m%d-%H%M%S')}")
    with open(stem + ".json", "w") as f:
        json.dump(result, f, indent=1)
    chart(result, stem + ".png")
    if a.chart:
        chart(result, a.chart)
    base = variants[0]
    print(f"{'variant':<10}{'cpu ms':>9}{'x cpu':>7}{'step ms':>10}{'min':>9}{'max':>9}{'x ' + base:>10}{'first ms':>10}"
          f"{'compiles':>9}{'peak MB':>9}{result['unit'] + '/s':>12}{'MFU %':>8}")
    for n, v in result["variants"].items():
        peak = v.get("peak_allocated_bytes")
        print(f"{n:<10}{v['cpu_s_median'] * 1e3:9.2f}{v['cpu_ratio_to_' + base + '_median']:7.3f}"
              f"{v['step_s_median'] * 1e3:10.2f}{v['step_s_min'] * 1e3:9.2f}"
              f"{v['step_s_max'] * 1e3:9.2f}{v['ratio_to_' + base + '_median']:10.3f}"
              f"{v['first_step_s'] * 1e3:10.1f}"
              f"{v['compiles_warmup']:>5}+{v['compiles_after_warmup']:<3}"
              f"{(peak / 2**20 if peak is not None else float('nan')):9.1f}"
              f"{v['throughput']:12.1f}{100 * v['mfu']:8.3f}")
    print(f"model FLOPs/step {result['flops_per_step']:.3e}; peak FLOP/s: " +
          ", ".join(f"{k} {v:.3e} ({result['peak_flops_source'][k]})"
                    for k, v in result["peak_flops"].items()))
    print(f"wrote {stem}.json, {stem}.png" + (f", {a.chart}" if a.chart else ""))
    return result


if __name__ == "__main__":
    main()
