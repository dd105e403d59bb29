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
