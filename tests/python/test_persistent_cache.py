"""The persistent compilation cache across processes: warm starts in every
mode, corrupted and truncated entries, concurrent writers, eviction, and
recompile explanations."""
import glob
import os
import subprocess
import sys

import pytest

from harness import run_python

# A short training run; prints the final loss, then the compile counters.
TRAIN = """
import torch, torch_tpu
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).to('tpu')
opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
x = torch.randn(64, 16).to('tpu'); y = torch.randint(0, 4, (64,)).to('tpu')
for _ in range(4):
    loss = torch.nn.functional.cross_entropy(m(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
s = torch_tpu.cache_stats()
print(repr(loss.item()), sum(s['compiles_by_mode'].values()), s['persistent']['loads'])
"""


def train(cache_dir, mode, extra_env=None):
    env = {"TORCH_TPU_CACHE_DIR": str(cache_dir), "TORCH_TPU_EAGER_MODE": mode}
    env.update(extra_env or {})
    loss, compiles, loads = run_python(TRAIN, env=env).split()
    return float(loss), int(compiles), int(loads)


def entries(cache_dir):
    return glob.glob(os.path.join(str(cache_dir), "*", "*.ttc"))


@pytest.mark.parametrize("mode", ["strict", "fused", "debug"])
def test_second_process_starts_warm(tmp_path, mode):
    loss1, compiles1, loads1 = train(tmp_path, mode)
    assert compiles1 > 0 and loads1 == 0
    assert entries(tmp_path)
    loss2, compiles2, loads2 = train(tmp_path, mode)
    assert compiles2 == 0, "a warm cache must not compile again"
    assert loads2 > 0
    assert loss2 == loss1


def test_xla_flags_get_their_own_partition(tmp_path):
    # XLA_FLAGS change the compiled code: a cache filled without them must
    # not serve a process that sets them (and vice versa).
    _, compiles1, _ = train(tmp_path, "fused")
    flags = {"XLA_FLAGS": "--xla_cpu_enable_fast_math=false"}
    _, compiles2, loads2 = train(tmp_path, "fused", flags)
    assert compiles2 > 0 and loads2 == 0
    _, compiles3, loads3 = train(tmp_path, "fused", flags)
    assert compiles3 == 0 and loads3 > 0


@pytest.mark.parametrize("damage", ["corrupt", "truncate"])
def test_damaged_entries_are_removed_and_recompiled(tmp_path, damage):
    loss1, compiles1, _ = train(tmp_path, "fused")
    files = entries(tmp_path)
    for path in files:
        data = bytearray(open(path, "rb").read())
        if damage == "corrupt":
            data[len(data) // 2] ^= 0xFF
        else:
            data = data[: len(data) // 2]
        open(path, "wb").write(bytes(data))
    env = {"TORCH_TPU_CACHE_DIR": str(tmp_path), "TORCH_TPU_EAGER_MODE": "fused"}
    proc = subprocess.run([sys.executable, "-c", TRAIN], capture_output=True, text=True,
                          env={**os.environ, **env,
                               "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "removed corrupt cache entry" in proc.stderr
    loss2, compiles2, loads2 = proc.stdout.split()
    assert float(loss2) == loss1
    assert int(compiles2) == compiles1, "every damaged program is compiled again"
    assert int(loads2) == 0


def test_two_processes_fill_one_directory_at_once(tmp_path):
    env = {**os.environ, "TORCH_TPU_CACHE_DIR": str(tmp_path), "TORCH_TPU_EAGER_MODE": "fused",
           "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, "-c", TRAIN], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        assert "corrupt" not in err
    losses = {float(out.split()[0]) for out, _ in outs}
    assert len(losses) == 1
    loss3, compiles3, loads3 = train(tmp_path, "fused")
    assert compiles3 == 0 and loads3 > 0 and loss3 in losses


def test_size_cap_evicts_least_recently_used(tmp_path):
    train(tmp_path, "strict")  # many small per-op programs
    total = sum(os.path.getsize(p) for p in entries(tmp_path))
    n = len(entries(tmp_path))
    cap = total // 3
    other = tmp_path / "capped"
    train(other, "strict", {"TORCH_TPU_CACHE_MAX_BYTES": str(cap)})
    kept = entries(other)
    assert 0 < len(kept) < n
    assert sum(os.path.getsize(p) for p in kept) <= cap


def test_recompile_explanations_name_the_op_argument_and_line(tmp_path):
    code = (
        "import torch, torch_tpu\n"
        "a = torch.ones(4, 3).to('tpu')\n"
        "(a + a).cpu()\n"
        "b = torch.ones(5, 3).to('tpu')\n"
        "(b + b).cpu()  # the recompiling line\n")
    env = {**os.environ, "TORCH_TPU_CACHE_DIR": str(tmp_path), "TORCH_TPU_EXPLAIN_RECOMPILES": "1",
           "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for mode, expect in [("strict", "recompiling aten::add.Tensor: argument 0 is float32[5,3], the "
                                    "cached program has float32[4,3]"),
                         ("fused", "argument 0 is float32[5,3], the nearest cached region")]:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**env, "TORCH_TPU_EAGER_MODE": mode})
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert expect in proc.stderr, proc.stderr[-3000:]
        assert "<string>:5" in proc.stderr
