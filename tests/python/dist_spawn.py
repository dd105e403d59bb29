"""Launching the ranks of a distributed test or benchmark as real processes.

Shared by tests/python/test_distributed.py, test_dist_reshard.py and
benchmarks/distributed_bench.py: N plain processes with torchrun's
environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), or a
`torchrun --standalone` job; each with this checkout on PYTHONPATH and one
OpenMP thread. A launch that outlives its timeout is killed (every rank),
so a hang fails the caller instead of blocking it.
"""
import json
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(**extra):
    """This environment with the checkout importable, one OpenMP thread, and `extra`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_ranks(argv, n, env=None):
    """n processes of `python argv...` (rank r: RANK=LOCAL_RANK=r), one rendezvous; not waited for."""
    env = dict(env if env is not None else child_env(), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), WORLD_SIZE=str(n))
    return [subprocess.Popen([sys.executable, *argv], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for r in range(n)]


def wait_ranks(procs, timeout):
    """Each rank's (exit status, output); kills every rank still running at the timeout."""
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=timeout)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [(p.returncode, log) for p, log in zip(procs, logs)]


def run_ranks(argv, n, env=None, timeout=240):
    """Starts n ranks, waits, raises if one failed; returns their outputs."""
    done = wait_ranks(start_ranks(argv, n, env), timeout)
    for r, (code, log) in enumerate(done):
        if code != 0:
            raise AssertionError(f"rank {r} of {' '.join(argv[:2])} exited with {code}:\n{log[-3000:]}")
    return [log for _, log in done]


def torchrun(n, argv, env=None, timeout=300):
    """`torchrun --standalone --nproc-per-node n python argv...`; raises if it failed; its output."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n), *argv]
    proc = subprocess.run(cmd, env=env if env is not None else child_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"torchrun of {' '.join(argv[:2])} exited with {proc.returncode}:\n"
                             f"{proc.stdout[-4000:]}")
    return proc.stdout


def read_results(out_dir, scenario, n):
    """The JSON each rank wrote to OUT_DIR/<scenario>-<rank>.json, in rank order."""
    results = []
    for r in range(n):
        path = os.path.join(out_dir, f"{scenario}-{r}.json")
        assert os.path.exists(path), f"rank {r} wrote no results ({path})"
        with open(path) as f:
            results.append(json.load(f))
    return results


# ---- inside the ranks: pieces the workers and the benchmark share ----

def fsdp2_mlp(mesh, seed, widths):
    """An MLP on tpu (Linear layers of `widths`, Tanh between them) built from
    `seed`, with FSDP2's fully_shard on each Linear and at the root over `mesh`."""
    import torch
    from torch.distributed.fsdp import fully_shard
    torch.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        layers += [torch.nn.Linear(a, b)] + ([torch.nn.Tanh()] if i + 2 < len(widths) else [])
    model = torch.nn.Sequential(*layers).to("tpu")
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)  # reshard after forward (the default)
    return fully_shard(model, mesh=mesh)


def mean_loss_step(model, opt, x, y):
    """One optimizer step of mse_loss on this rank's (x, y); returns the loss
    averaged over the ranks (an all_reduce AVG), as a float."""
    import torch
    import torch.distributed as dist
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    mean = loss.detach().clone()
    dist.all_reduce(mean, op=dist.ReduceOp.AVG)
    return mean.item()


def time_rank_threads(n, setup, step, finish, iters, rounds=1):
    """Ranks as threads: thread r runs state = setup(r) (the warm-up), then per
    round, between barriers, `iters` calls of step(r, state) and finish() of
    the last result. Returns rank 0's seconds per call, one per round."""
    import threading
    import time
    times, errors = [], []
    barrier = threading.Barrier(n)

    def rank_main(r):
        try:
            state = setup(r)
            for _ in range(rounds):
                barrier.wait()
                t0 = time.perf_counter()
                for _ in range(iters):
                    out = step(r, state)
                finish(out)
                barrier.wait()
                if r == 0:
                    times.append((time.perf_counter() - t0) / iters)
        except BaseException as e:  # noqa: BLE001  (re-raised by the caller's thread)
            errors.append(e)
            barrier.abort()
    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return times
