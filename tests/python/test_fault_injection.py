"""Fault injection: the persistent cache on a full disk, a read-only
directory, a directory removed while running and entries changed under a
reader; SIGINT during a compile and during a long Fused region; a plugin
whose execute fails mid-run. Every case runs in a child process and must
end with correct results (compared with CPU), never a crash or a wrong
program: a warning and a recompile at most.

Helpers built by make: build/fault_shim.so (tests/c/fault_shim.c, an
LD_PRELOAD shim failing writes under one directory) and
build/failing_plugin.so (tests/c/failing_plugin.c, the CPU plugin with an
Execute that fails its Nth call).
The cases here are the fast ones `make test` runs; the rest (read-only
directory, removed directory, entries changed under a reader, SIGINT, more
modes and limits) are tests/reliability/, run by `make test-reliability`."""
import glob
import os
import signal
import subprocess
import sys
import time

import pytest

from harness import run_python

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIM = os.path.join(REPO, "build", "fault_shim.so")
FAILING = os.path.join(REPO, "build", "failing_plugin.so")

# Trains a small MLP on tpu and on CPU from the same weights and data;
# prints max |loss diff| over the steps, compiles, persistent loads.
TRAIN = """
import torch, torch_tpu
torch.manual_seed(0)
def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
x = torch.randn(64, 16); y = torch.randint(0, 4, (64,))
def run(dev, hook=None):
    m = make().to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    out = []
    for i in range(4):
        if hook: hook(i)
        loss = torch.nn.functional.cross_entropy(m(x.to(dev)), y.to(dev))
        opt.zero_grad(); loss.backward(); opt.step()
        out.append(loss.item())
    return out
HOOK = None
%s
a = run('tpu', HOOK); b = run('cpu')
s = torch_tpu.cache_stats()
print(max(abs(p - q) for p, q in zip(a, b)), sum(s['compiles_by_mode'].values()), s['persistent']['loads'])
"""


def _child(code, env, timeout=240):
    full = dict(os.environ)
    full["PYTHONPATH"] = REPO
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full,
                          timeout=timeout)


def _train(cache, extra_env=None, prelude="", mode="fused"):
    env = {"TORCH_TPU_CACHE_DIR": str(cache), "TORCH_TPU_EAGER_MODE": mode}
    env.update(extra_env or {})
    p = _child(TRAIN % prelude, env)
    assert p.returncode == 0, f"child failed ({p.returncode}):\n{p.stderr[-3000:]}"
    diff, compiles, loads = p.stdout.split()[-3:]
    # same tolerance as the persistent-cache tests' loss comparison: float32
    # training on two backends, 4 AdamW steps
    assert float(diff) < 1e-4, f"tpu losses differ from CPU by {diff}"
    return int(compiles), int(loads), p.stderr


def _entries(cache):
    return glob.glob(os.path.join(str(cache), "*", "*.ttc"))


def _temps(cache):
    return glob.glob(os.path.join(str(cache), "*", ".tmp-*"))


@pytest.fixture(scope="module", autouse=True)
def _helpers_built():
    assert os.path.exists(SHIM) and os.path.exists(FAILING), "run `make build` first"


# ---------------------------------------------------------------- the cache

def _entry_is_whole(path):
    # docs/persistent-cache.md: 40-byte header (magic, version, key and blob
    # lengths, BLAKE2b-64 over header[:32] + key + blob), then key and blob
    import hashlib
    import struct
    data = open(path, "rb").read()
    if len(data) < 40 or data[:8] != b"TTPUDC\r\n":
        return False
    klen, blen = struct.unpack("<QQ", data[16:32])
    if 40 + klen + blen != len(data):
        return False
    return hashlib.blake2b(data[:32] + data[40:], digest_size=8).digest() == data[32:40]


def check_full_disk(tmp_path, limit, second_process=True):
    # write() under the cache fails with ENOSPC after `limit` bytes: the
    # first entries may land, the rest fail; each failure is a warning
    shim = {"LD_PRELOAD": SHIM, "FAULT_SHIM_DIR": str(tmp_path), "FAULT_SHIM_MODE": "enospc",
            "FAULT_SHIM_BYTES": str(limit)}
    compiles, loads, err = _train(tmp_path, shim, mode="strict")
    assert compiles > 0 and loads == 0
    assert "write failed" in err and "No space left on device" in err, err[-2000:]
    assert not _temps(tmp_path), "a failed write left its temp file"
    landed = _entries(tmp_path)
    assert all(_entry_is_whole(f) for f in landed), "a torn entry was renamed into place"
    if limit:
        assert landed, "the first entries fit under the limit"
    if second_process:
        # a fresh process with room loads every entry that landed (none is
        # removed as corrupt) and compiles the rest; same losses
        compiles2, loads2, err2 = _train(tmp_path, mode="strict")
        assert "corrupt" not in err2, err2[-2000:]
        assert loads2 == len(landed) and compiles2 == compiles - len(landed)


def test_full_disk(tmp_path):
    check_full_disk(tmp_path, 40000, second_process=False)


# ---------------------------------------------------------------- plugin failures

def _plugin_path():
    import xla_plugins
    return os.path.join(list(xla_plugins.__path__)[0], "xla_cpu_pjrt", "xla_cpu_pjrt.so")


FAILING_CHILD = """
import torch, torch_tpu
torch.manual_seed(0)
xs = [torch.randn(8, 8) for _ in range(12)]
failures, done = [], 0
for i, x in enumerate(xs):
    try:
        y = ((x.to('tpu') * 2 + 1).exp() @ x.to('tpu')).cpu()
        torch.testing.assert_close(y, (x * 2 + 1).exp() @ x, rtol=1e-4, atol=1e-3)
        done += 1
    except RuntimeError as e:
        failures.append(str(e))
print(done, len(failures))
print(failures[0] if failures else '')
"""


def check_plugin_execute_fails_mid_run(tmp_path, mode):
    env = {"TORCH_TPU_PJRT_PLUGIN": FAILING, "FAILING_PLUGIN_REAL": _plugin_path(),
           "FAILING_PLUGIN_FAIL_AT": "5", "TORCH_TPU_CACHE_DIR": str(tmp_path),
           "TORCH_TPU_EAGER_MODE": mode}
    out = run_python(FAILING_CHILD, env=env).strip().splitlines()
    done, failed = map(int, out[0].split())
    # exactly one launch failed: one iteration raised, with the plugin's
    # message; all the others (before and after) computed the right values
    assert failed == 1 and done == 11, out
    assert "injected execute failure 5" in out[1], out


def test_plugin_execute_fails_mid_run(tmp_path):
    check_plugin_execute_fails_mid_run(tmp_path, "strict")
