"""Training-step driver for tools/device/gpu_check.sh: a minGPT training step
(examples/models/mingpt.py, AdamW) on one device, timed, with the losses and
final parameters saved for a parity check against the same run on CPU.

    gpu_train_step.py run --device tpu|cpu|cuda [--mode fused|strict] \
        [--size small|medium] [--warmup 3] [--steps 20] [--block 5] \
        --json RESULT.json --params PARAMS.pt
    gpu_train_step.py summarize RESULT.json... [--out SUMMARY.json]

`run` builds the model on CPU from a fixed seed (the same weights and batch
for every device), moves it to the device, runs warm-up steps (the first one
timed alone: it compiles), then --steps timed steps in blocks of --block with
one synchronize per block (as a training loop that reads its loss now and
then). Each step's loss is kept on the device and read at the end.

`summarize` prints one line per run and compares every run with the CPU run
of the same size: first-step loss, last loss, and the largest parameter
difference after the same number of steps. tpu runs the plugin named by
TORCH_TPU_PJRT_PLUGIN; its eager mode comes from --mode.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

SIZES = {
    # the benchmarks' minGPT (README: 2 layers, d=128, batch 16x64)
    "small": dict(vocab_size=96, block_size=64, n_layer=2, n_head=4, n_embd=128, batch=16),
    # big enough for the GPU to have some work per launch
    "medium": dict(vocab_size=256, block_size=128, n_layer=4, n_head=6, n_embd=384, batch=16),
}


def _sync(device):
    import torch
    if device == "tpu":
        torch.tpu.synchronize()
    elif device == "cuda":
        torch.cuda.synchronize()


def run(a, result):
    if a.device == "tpu":
        os.environ["TORCH_TPU_EAGER_MODE"] = a.mode
    import torch
    result.update(warmup=a.warmup, steps=a.steps, block=a.block, torch=torch.__version__)
    t_import0 = time.perf_counter()
    if a.device == "tpu":
        import torch_tpu
        torch_tpu.set_eager_mode(a.mode)
    result["import_torch_tpu_s"] = time.perf_counter() - t_import0
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from models.mingpt import GPT, GPTConfig

    cfg = dict(SIZES[a.size])
    batch = cfg.pop("batch")
    torch.manual_seed(0)
    model = GPT(GPTConfig(dropout=0.0, **cfg))
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, cfg["vocab_size"], (batch, cfg["block_size"]), generator=g)
    y = torch.randint(0, cfg["vocab_size"], (batch, cfg["block_size"]), generator=g)
    result["params"] = sum(p.numel() for p in model.parameters())

    dev = a.device
    t0 = time.perf_counter()
    model.to(dev)
    x, y = x.to(dev), y.to(dev)
    if dev == "tpu":
        result["device_name"] = torch.tpu.get_device_name()
    elif dev == "cuda":
        result["device_name"] = torch.cuda.get_device_name()
        result["allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    _sync(dev)
    result["to_device_s"] = time.perf_counter() - t0

    losses = []

    def step():
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())

    def stats():
        if dev != "tpu":
            return None
        import torch_tpu
        return torch_tpu.cache_stats()

    t0 = time.perf_counter()
    step()
    _sync(dev)
    result["first_step_s"] = time.perf_counter() - t0
    result["first_loss"] = losses[0].item()
    print(f"[{dev}/{result['mode']}/{a.size}] first step {result['first_step_s']:.2f} s, "
          f"loss {result['first_loss']:.6f}", flush=True)
    t0 = time.perf_counter()
    for _ in range(a.warmup - 1):
        step()
    _sync(dev)
    result["warmup_rest_s"] = time.perf_counter() - t0
    s0 = stats()
    if dev == "tpu":
        torch.tpu.reset_peak_memory_stats()
    blocks = []
    for _ in range(max(1, a.steps // a.block)):
        t0 = time.perf_counter()
        for _ in range(a.block):
            step()
        _sync(dev)
        blocks.append((time.perf_counter() - t0) * 1e3 / a.block)
    s1 = stats()
    result["block_ms"] = blocks
    result["step_ms_median"] = statistics.median(blocks)
    result["step_ms_min"] = min(blocks)
    result["losses"] = [v.item() for v in losses]
    if s1 is not None:
        result["cache_stats"] = {k: v for k, v in s1.items()
                                 if isinstance(v, (int, float, str, bool, dict, list))}
        c0 = sum(s0.get("compiles_by_mode", {}).values()) if isinstance(
            s0.get("compiles_by_mode"), dict) else s0.get("misses", 0)
        c1 = sum(s1.get("compiles_by_mode", {}).values()) if isinstance(
            s1.get("compiles_by_mode"), dict) else s1.get("misses", 0)
        result["compiles_total"] = c1
        result["compiles_during_timed"] = c1 - c0
        result["programs_last_step"] = s1.get("programs_last_step")
        result["launches_last_step"] = s1.get("launches_last_step")
        try:
            result["device_memory"] = torch.tpu.device_memory_stats()
        except Exception as e:  # noqa: BLE001
            result["device_memory"] = repr(e)
    elif dev == "cuda":
        result["cuda_peak_bytes"] = torch.cuda.max_memory_allocated()
    sd = {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()}
    torch.save(sd, a.params)
    result["params_file"] = a.params
    result["ok"] = all(math.isfinite(v) for v in result["losses"])
    print(f"[{dev}/{result['mode']}/{a.size}] step {result['step_ms_median']:.2f} ms median "
          f"(blocks {', '.join(f'{b:.2f}' for b in blocks)}), last loss {result['losses'][-1]:.6f}"
          + (f", compiles {result['compiles_total']} ({result['compiles_during_timed']} during "
             f"timed steps), programs/launches last step {result['programs_last_step']}/"
             f"{result['launches_last_step']}" if s1 is not None else ""), flush=True)


class _Terminated(Exception):
    pass


def _on_sigterm(signum, frame):
    raise _Terminated("terminated (the stage's time limit)")


def cmd_run(a):
    import signal
    signal.signal(signal.SIGTERM, _on_sigterm)  # a timeout still writes what was measured
    result = {"device": a.device, "mode": a.mode if a.device == "tpu" else "eager",
              "size": a.size, "ok": False}
    try:
        run(a, result)
    except BaseException as e:  # noqa: BLE001  (record it, then fail)
        result.update(ok=False, error=f"{type(e).__name__}: {e}",
                      traceback=traceback.format_exc()[-4000:])
        traceback.print_exc()
    with open(a.json, "w") as f:
        json.dump(result, f, indent=1, default=str)
    return 0 if result.get("ok") else 1


def _param_diff(ref_file, other_file):
    import torch
    ref = torch.load(ref_file)
    oth = torch.load(other_file)
    worst_abs, worst_rel, worst_name = 0.0, 0.0, None
    for k, r in ref.items():
        o = oth[k].to(r.dtype)
        d = (o - r).abs().max().item() if r.numel() else 0.0
        scale = r.abs().max().item() or 1.0
        if d > worst_abs:
            worst_abs, worst_name = d, k
        worst_rel = max(worst_rel, d / scale)
    return worst_abs, worst_rel, worst_name


def cmd_summarize(a):
    runs = []
    for p in a.results:
        try:
            with open(p) as f:
                runs.append(json.load(f))
        except Exception as e:  # noqa: BLE001
            runs.append({"file": p, "ok": False, "error": f"unreadable: {e}"})
    refs = {r["size"]: r for r in runs if r.get("device") == "cpu" and r.get("ok")}
    lines = []
    for r in runs:
        name = f"{r.get('device')}/{r.get('mode')}/{r.get('size')}"
        if not r.get("ok"):
            err = r.get("error") or "non-finite loss"
            got = f" (first step {r['first_step_s']:.2f} s, loss {r['first_loss']:.6f})" \
                if "first_loss" in r else ""
            lines.append(f"{name:22s} FAILED: {err[:300]}{got}")
            continue
        ref = refs.get(r["size"])
        parity = ""
        if ref is not None and r is not ref:
            d_first = abs(r["first_loss"] - ref["first_loss"])
            d_last = abs(r["losses"][-1] - ref["losses"][-1])
            n = min(len(r["losses"]), len(ref["losses"]))
            d_max = max(abs(u - v) for u, v in zip(r["losses"][:n], ref["losses"][:n]))
            try:
                pa, pr, pn = _param_diff(ref["params_file"], r["params_file"])
            except Exception as e:  # noqa: BLE001
                pa, pr, pn = float("nan"), float("nan"), f"({e})"
            # loose bounds: TF32-class matmuls on a GPU are allowed
            good = d_first <= 1e-3 * max(1.0, abs(ref["first_loss"])) and pa <= 5e-3
            r["parity"] = {"d_first_loss": d_first, "d_last_loss": d_last, "d_max_loss": d_max,
                           "max_param_abs_diff": pa, "max_param_rel_diff": pr,
                           "worst_param": pn, "within_bounds": good}
            parity = (f" | vs cpu: first-loss diff {d_first:.2e}, last-loss diff {d_last:.2e}, "
                      f"max param diff {pa:.2e} (rel {pr:.2e}, {pn}) "
                      f"{'OK' if good else 'OFF'}")
        extra = ""
        if r.get("device") == "tpu":
            extra = (f", compiles {r.get('compiles_total')} (+{r.get('compiles_during_timed')} "
                     f"timed), programs/launches per step {r.get('programs_last_step')}/"
                     f"{r.get('launches_last_step')}")
        if r.get("device_name"):
            extra += f" [{r['device_name']}]"
        lines.append(f"{name:22s} step {r['step_ms_median']:8.3f} ms (min {r['step_ms_min']:.3f}), "
                     f"first step {r['first_step_s']:.2f} s, first loss {r['first_loss']:.6f}, "
                     f"last loss {r['losses'][-1]:.6f}{extra}{parity}")
    by = {(r.get("device"), r.get("mode"), r.get("size")): r for r in runs if r.get("ok")}
    for size in SIZES:
        f_, s_, c_ = (by.get(("tpu", "fused", size)), by.get(("tpu", "strict", size)),
                      by.get(("cuda", "eager", size)))
        parts = []
        if f_ and s_:
            parts.append(f"Strict/Fused {s_['step_ms_median'] / f_['step_ms_median']:.2f}x")
        if f_ and c_:
            parts.append(f"Fused/cuda-eager step time {f_['step_ms_median'] / c_['step_ms_median']:.2f}x")
        if s_ and c_:
            parts.append(f"Strict/cuda-eager {s_['step_ms_median'] / c_['step_ms_median']:.2f}x")
        if parts:
            lines.append(f"ratios ({size}): " + ", ".join(parts))
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(runs, f, indent=1, default=str)
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--device", choices=("tpu", "cpu", "cuda"), required=True)
    r.add_argument("--mode", choices=("fused", "strict"), default="fused")
    r.add_argument("--size", choices=tuple(SIZES), default="small")
    r.add_argument("--warmup", type=int, default=3)
    r.add_argument("--steps", type=int, default=20)
    r.add_argument("--block", type=int, default=5)
    r.add_argument("--json", required=True)
    r.add_argument("--params", required=True)
    s = sub.add_parser("summarize")
    s.add_argument("results", nargs="+")
    s.add_argument("--out")
    a = p.parse_args()
    if a.cmd == "run":
        a.warmup = max(1, a.warmup)
        sys.exit(cmd_run(a))
    sys.exit(cmd_summarize(a))


if __name__ == "__main__":
    main()
