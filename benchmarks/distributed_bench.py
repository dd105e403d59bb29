"""Distributed benchmarks of the `tpu` c10d backend, ratios measured in one run
(docs/distributed.md). The machine is shared and has 2 cores: absolute
figures are context; the report does not tune to it.

1. all_reduce bus bandwidth, 2 ranks, float32, 4 KiB to 64 MiB per rank:
   - host transport: 2 processes, `init_process_group("cpu:gloo,tpu:tpu")`,
     tpu tensors staged through host memory and reduced by gloo;
   - gloo on CPU tensors: the same processes, the same sizes, interleaved
     with the host transport round by round (the baseline);
   - compiled transport: one process with 2 devices (TORCH_TPU_NUM_DEVICES=2),
     ranks as threads, one StableHLO all_reduce launched over both devices
     (`CompiledGroup.all_reduce`, the functional form).
   - the tpu backend on CPU tensors (no staging) at each TORCH_TPU_DIST_CHECKS
     level, set on the group's backend round by round: the "check ms" column
     is the cross-rank check's cost per call at levels 1 and 2 over level 0.
   Bus bandwidth as nccl-tests defines it: algbw = bytes / time,
   busbw = algbw * 2 (n - 1) / n for all_reduce, so that it compares with
   the link's bandwidth whatever the rank count.
2. Training step time at 1, 2 and 4 ranks (processes, `init_process_group("tpu")`,
   host transport) of the Llama-style model of examples/train_llama_distributed.py,
   each rank 4 sequences of 64 tokens (weak scaling): DDP and FSDP2
   (`fully_shard` per block and at the root), AdamW, alternated step by step in
   the same processes; the median step after warm-up.

    python benchmarks/distributed_bench.py [--quick] [--out bench_results/distributed_bench.json]
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from dist_spawn import child_env, run_ranks, time_rank_threads  # noqa: E402  (shared with the tests)
SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
QUICK_SIZES = [4 << 10, 1 << 20, 16 << 20]


def iters_for(size):
    """Calls per timed round: many for small sizes, whose per-call time is
    small against the machine's noise; 3 for 64 MiB."""
    return max(3, min(200, (64 << 20) // size))


def bus_bw(size, seconds, n):
    """GB/s (1e9 bytes) of all_reduce bus bandwidth (nccl-tests)."""
    return size / seconds * 2 * (n - 1) / n / 1e9


# ---- children ----

def child_allreduce(out, sizes, rounds):
    import torch
    import torch.distributed as dist
    import torch_tpu  # noqa: F401
    dist.init_process_group("cpu:gloo,tpu:tpu", timeout=datetime.timedelta(seconds=300))
    rank, n = dist.get_rank(), dist.get_world_size()
    # the tpu backend on CPU tensors (used in place, no staging): gloo plus
    # the backend's cross-rank check (one small message to each peer per
    # checked call), at each TORCH_TPU_DIST_CHECKS level (set on the group's
    # backend round by round: 0 never, 1 the first call of a signature, 2 every call)
    tpu_group = dist.new_group(list(range(n)), backend="tpu")
    tpu_backend = torch_tpu.distributed._tpu_backend(tpu_group)
    levels = {"tpu_backend_cpu_checks0": 0, "tpu_backend_cpu_checks1": 1, "tpu_backend_cpu_checks2": 2}
    res = {}
    for size in sizes:
        numel = size // 4
        xs = {"host": torch.ones(numel, device="tpu"), "gloo_cpu": torch.ones(numel)}
        xs.update({k: torch.ones(numel) for k in levels})
        groups = {k: tpu_group for k in levels}
        it = iters_for(size)
        times = {k: [] for k in xs}
        for k, x in xs.items():  # warm-up: compiles the staging programs, connects
            tpu_backend.checks = levels.get(k, 1)
            dist.all_reduce(x, group=groups.get(k))
        for _ in range(rounds):
            for k, x in xs.items():
                tpu_backend.checks = levels.get(k, 1)
                dist.barrier()
                t0 = time.perf_counter()
                for _ in range(it):
                    dist.all_reduce(x, group=groups.get(k))
                if x.device.type == "tpu":
                    torch.tpu.synchronize()
                times[k].append((time.perf_counter() - t0) / it)
        res[size] = {k: statistics.median(v) for k, v in times.items()}
        res[size].update({k + "_min": min(v) for k, v in times.items()})
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"n": n, "seconds": res, "transport": torch.tpu.distributed_transport()}, f)
    dist.destroy_process_group()


def child_compiled(out, sizes, rounds, n):
    import torch
    import torch_tpu  # noqa: F401
    from torch_tpu.distributed import CompiledGroup
    group = CompiledGroup(world_size=n, timeout=300.0)
    res = {}
    for size in sizes:
        numel = size // 4

        def setup(r):
            x = torch.ones(numel, device=f"tpu:{r}")
            group.all_reduce(x).cpu()  # compiles (cached for later rounds)
            return x
        times = time_rank_threads(n, setup, lambda r, x: group.all_reduce(x), lambda y: y.cpu(),
                                  iters_for(size), rounds)
        res[size] = {"compiled": statistics.median(times)}
    with open(out, "w") as f:
        json.dump({"n": n, "seconds": res, "transport": group.transport()["transport"]}, f)


def child_train(out, steps, warmup):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import torch_tpu  # noqa: F401
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel as DDP
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from train_llama_distributed import ModelArgs, batch, build_model
    dist.init_process_group("tpu", timeout=datetime.timedelta(seconds=300))
    rank, n = dist.get_rank(), dist.get_world_size()
    a = ModelArgs()
    rows = 4
    ddp = DDP(build_model(a, 0).to("tpu"))
    fsdp = build_model(a, 0).to("tpu")
    mesh = init_device_mesh("tpu", (n,))
    for block in fsdp.layers.values():
        fully_shard(block, mesh=mesh)
    fully_shard(fsdp, mesh=mesh)
    models = {"ddp": ddp, "fsdp2": fsdp}
    opts = {k: torch.optim.AdamW(m.parameters(), lr=1e-3) for k, m in models.items()}
    times = {k: [] for k in models}
    for step in range(warmup + steps):
        x, y = batch(step, a, rows * n, 0)
        x, y = x[rank * rows:(rank + 1) * rows].to("tpu"), y[rank * rows:(rank + 1) * rows].to("tpu")
        for k, m in models.items():
            dist.barrier()
            t0 = time.perf_counter()
            loss = F.cross_entropy(m(x).reshape(-1, a.vocab), y.reshape(-1))
            opts[k].zero_grad(set_to_none=True)
            loss.backward()
            opts[k].step()
            loss.item()
            torch.tpu.synchronize()
            if step >= warmup:
                times[k].append(time.perf_counter() - t0)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"n": n, "step_s": {k: statistics.median(v) for k, v in times.items()},
                       "params": sum(p.numel() for p in ddp.parameters()),
                       "tokens_per_rank": rows * a.seq}, f)
    dist.destroy_process_group()


# ---- parent ----

def launch(n, args, env_extra=None, timeout=900):
    """n processes of this script (`child` args), torchrun's environment; rank 0's JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        run_ranks([os.path.abspath(__file__), "--child", out] + args, n, child_env(**(env_extra or {})),
                  timeout)
        with open(out) as f:
            return json.load(f)


def fmt_size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="3 sizes, fewer steps")
    p.add_argument("--ranks", default="1,2,4", help="rank counts of the training part")
    p.add_argument("--out", default=os.path.join(ROOT, "bench_results", "distributed_bench.json"))
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        out, kind, *rest = args.child
        if kind == "allreduce":
            child_allreduce(out, [int(s) for s in rest[1:]], int(rest[0]))
        elif kind == "compiled":
            child_compiled(out, [int(s) for s in rest[2:]], int(rest[0]), int(rest[1]))
        else:
            child_train(out, int(rest[0]), int(rest[1]))
        return

    sizes = QUICK_SIZES if args.quick else SIZES
    rounds = 2 if args.quick else 5
    t_start = time.time()
    print(f"all_reduce, 2 ranks, float32, {fmt_size(sizes[0])} to {fmt_size(sizes[-1])} per rank "
          f"(median of {rounds} rounds)", flush=True)
    host = launch(2, ["allreduce", str(rounds)] + [str(s) for s in sizes])
    compiled = launch(1, ["compiled", str(rounds), "2"] + [str(s) for s in sizes],
                      env_extra={"TORCH_TPU_NUM_DEVICES": "2"})
    rows = []
    print(f"{'size':>8} | {'host (tpu, gloo)':>22} | {'compiled (threads)':>22} | "
          f"{'gloo, CPU tensors':>22} | host/gloo  compiled/gloo  check ms (1 / 2)")
    print(f"{'':>8} | {'ms':>9} {'busbw GB/s':>12} | {'ms':>9} {'busbw GB/s':>12} | "
          f"{'ms':>9} {'busbw GB/s':>12} |  (time ratios)")
    print(f"{'':>8}   (check ms: the tpu backend on CPU tensors with TORCH_TPU_DIST_CHECKS=1, then 2, "
          f"minus the same with 0, fastest rounds: the cross-rank check's cost per call)")
    for s in sizes:
        h = host["seconds"][str(s)]["host"]
        g = host["seconds"][str(s)]["gloo_cpu"]
        c = compiled["seconds"][str(s)]["compiled"]
        sec = host["seconds"][str(s)]
        tc = {lv: sec[f"tpu_backend_cpu_checks{lv}"] for lv in (0, 1, 2)}
        # the check's cost from the fastest rounds: the medians of two
        # variants both carry the other jobs' load, and their difference is noise
        check1 = sec["tpu_backend_cpu_checks1_min"] - sec["tpu_backend_cpu_checks0_min"]
        check2 = sec["tpu_backend_cpu_checks2_min"] - sec["tpu_backend_cpu_checks0_min"]
        row = dict(bytes=s, host_ms=h * 1e3, compiled_ms=c * 1e3, gloo_cpu_ms=g * 1e3,
                   tpu_backend_cpu_ms={lv: t * 1e3 for lv, t in tc.items()},
                   check1_ms=check1 * 1e3, check2_ms=check2 * 1e3,
                   checks2_over_checks1=sec["tpu_backend_cpu_checks2_min"] / sec["tpu_backend_cpu_checks1_min"],
                   min_ms={k: v * 1e3 for k, v in host["seconds"][str(s)].items() if k.endswith("_min")},
                   host_busbw=bus_bw(s, h, 2), compiled_busbw=bus_bw(s, c, 2),
                   gloo_cpu_busbw=bus_bw(s, g, 2), host_over_gloo=h / g, compiled_over_gloo=c / g)
        rows.append(row)
        print(f"{fmt_size(s):>8} | {h * 1e3:9.3f} {row['host_busbw']:12.3f} | {c * 1e3:9.3f} "
              f"{row['compiled_busbw']:12.3f} | {g * 1e3:9.3f} {row['gloo_cpu_busbw']:12.3f} | "
              f"{h / g:9.2f}  {c / g:12.2f}  {check1 * 1e3:6.3f} / {check2 * 1e3:.3f}", flush=True)

    ranks = [int(r) for r in args.ranks.split(",")]
    steps, warmup = (4, 2) if args.quick else (10, 3)
    print(f"\ntraining step, Llama-style model of examples/train_llama_distributed.py, 4 x 64 tokens "
          f"per rank, AdamW, host transport (median of {steps} steps after {warmup})", flush=True)
    train = []
    for n in ranks:
        r = launch(n, ["train", str(steps), str(warmup)])
        d, f = r["step_s"]["ddp"], r["step_s"]["fsdp2"]
        train.append(dict(ranks=n, ddp_ms=d * 1e3, fsdp2_ms=f * 1e3, fsdp2_over_ddp=f / d,
                          ddp_tokens_per_s=n * r["tokens_per_rank"] / d,
                          fsdp2_tokens_per_s=n * r["tokens_per_rank"] / f, params=r["params"]))
    print(f"{'ranks':>5} | {'DDP ms':>8} {'tokens/s':>9} | {'FSDP2 ms':>8} {'tokens/s':>9} | FSDP2/DDP")
    for t in train:
        print(f"{t['ranks']:>5} | {t['ddp_ms']:8.1f} {t['ddp_tokens_per_s']:9.0f} | {t['fsdp2_ms']:8.1f} "
              f"{t['fsdp2_tokens_per_s']:9.0f} | {t['fsdp2_over_ddp']:9.2f}")
    base = train[0]
    for t in train[1:]:
        print(f"{t['ranks']} ranks against {base['ranks']}: DDP step x{t['ddp_ms'] / base['ddp_ms']:.2f}, "
              f"FSDP2 step x{t['fsdp2_ms'] / base['fsdp2_ms']:.2f} (weak scaling: 1.00 is perfect; "
              f"this machine has {os.cpu_count()} cores for all ranks)")
    result = dict(allreduce=rows, allreduce_transports={"host": host["transport"]["transport"],
                                                        "compiled": compiled["transport"]},
                  train=train, cores=os.cpu_count(), seconds=round(time.time() - t_start, 1))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\n{args.out} ({result['seconds']} s)")


if __name__ == "__main__":
    main()
