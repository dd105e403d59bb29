"""Fault injection: the persistent cache on a full disk, a read-only
directory, a directory removed while running and entries changed under a
reader; SIGINT during a compile and during a long Fused region; a plugin
whose execute fails mid-run. Every case runs in a child process and must
end with correct results (compared with CPU), never a crash or a wrong
program: a warning and a recompile at most.

Helpers built by make: build/fault_shim.so (tests/c/fault_shim.c, an
LD_PRELOAD shim failing writes under one directory) and
build/failing_plugin.so (tests/c/failing_plugin.c, the CPU plugin with an
Execute that fails its Nth call)."""
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

@pytest.mark.parametrize("limit", [0, 3000])
def test_full_disk(tmp_path, limit):
    # write() under the cache fails with ENOSPC after `limit` bytes: the
    # first entries may land, the rest fail; each failure is a warning
    shim = {"LD_PRELOAD": SHIM, "FAULT_SHIM_DIR": str(tmp_path), "FAULT_SHIM_MODE": "enospc",
            "FAULT_SHIM_BYTES": str(limit)}
    compiles, loads, err = _train(tmp_path, shim, mode="strict")
    assert compiles > 0 and loads == 0
    assert "write failed" in err and "No space left on device" in err, err[-2000:]
    assert not _temps(tmp_path), "a failed write left its temp file"
    landed = len(_entries(tmp_path))
    # a fresh process with room: every entry on disk is whole (loaded, not
    # removed as corrupt), the rest compiled again, same losses
    compiles2, loads2, err2 = _train(tmp_path, mode="strict")
    assert "corrupt" not in err2, err2[-2000:]
    assert loads2 == landed and compiles2 == compiles - landed


def test_read_only_directory(tmp_path):
    # a cache that exists and is full, then read-only (EROFS: the tests run
    # as root, which chmod cannot stop): loads work, stores warn
    compiles, _, _ = _train(tmp_path, mode="strict")
    ro = {"LD_PRELOAD": SHIM, "FAULT_SHIM_DIR": str(tmp_path), "FAULT_SHIM_MODE": "readonly"}
    c2, loads2, err = _train(tmp_path, ro, mode="strict")
    assert c2 == 0 and loads2 == compiles
    # new programs (another batch size) cannot be stored: warned, still right
    c3, _, err3 = _train_new_shapes(tmp_path, ro)
    assert c3 > 0
    assert "write failed" in err3 and "Read-only file system" in err3, err3[-2000:]
    assert not _temps(tmp_path)


def _train_new_shapes(cache, env):
    # TRAIN with another batch size: new programs to compile and store
    code = TRAIN.replace("torch.randn(64, 16)", "torch.randn(48, 16)").replace("(64,)", "(48,)") % ""
    full = {"TORCH_TPU_CACHE_DIR": str(cache), "TORCH_TPU_EAGER_MODE": "strict"}
    full.update(env)
    p = _child(code, full)
    assert p.returncode == 0, p.stderr[-3000:]
    diff, compiles, loads = p.stdout.split()[-3:]
    assert float(diff) < 1e-4
    return int(compiles), int(loads), p.stderr


def test_read_only_directory_from_the_start(tmp_path):
    # the cache root cannot even be created: the cache is disabled with a
    # warning, everything else works
    root = tmp_path / "never"
    ro = {"LD_PRELOAD": SHIM, "FAULT_SHIM_DIR": str(tmp_path), "FAULT_SHIM_MODE": "readonly"}
    compiles, loads, err = _train(root, ro, mode="strict")
    assert compiles > 0 and loads == 0
    assert "persistent compilation cache" in err and "Read-only file system" in err, err[-2000:]
    assert not root.exists()


def test_directory_removed_while_running(tmp_path):
    # the whole cache directory is deleted between steps 1 and 2, and again
    # at step 3: later stores recreate it or warn; results stay right
    prelude = ("import shutil\n"
               f"def HOOK(i):\n    if i in (1, 3): shutil.rmtree({str(tmp_path)!r}, ignore_errors=True)\n")
    compiles, loads, err = _train(tmp_path, prelude=prelude, mode="strict")
    assert compiles > 0
    assert "Traceback" not in err


def test_entries_changed_under_a_reader(tmp_path):
    # fill the cache, then read it while a thread keeps rewriting every
    # entry: flipping a byte, truncating, or swapping in another entry's
    # bytes. Every load must be a whole, right program or a miss.
    compiles, _, _ = _train(tmp_path, mode="strict")
    assert len(_entries(tmp_path)) >= 2
    prelude = f"""
import glob, os, random, threading
stop = False
def vandal():
    rnd = random.Random(0)
    while not stop:
        files = glob.glob(os.path.join({str(tmp_path)!r}, '*', '*.ttc'))
        for f in files:
            try:
                data = open(f, 'rb').read()
                k = rnd.randrange(3)
                if k == 0 and data:
                    i = rnd.randrange(len(data)); data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
                elif k == 1:
                    data = data[:rnd.randrange(len(data) + 1)]
                else:
                    data = open(rnd.choice(files), 'rb').read()
                with open(f + '.x', 'wb') as o: o.write(data)
                os.replace(f + '.x', f)
            except OSError:
                pass
threading.Thread(target=vandal, daemon=True).start()
"""
    c2, loads2, err = _train(tmp_path, prelude=prelude, mode="strict")
    assert c2 + loads2 >= compiles  # every program compiled or loaded
    assert "Traceback" not in err


# ---------------------------------------------------------------- SIGINT

SIGINT_CHILD = """
import sys, torch, torch_tpu
torch.manual_seed(0)
x = torch.randn(64, 64)
t = x.to('tpu')
print('READY', flush=True)
try:
%s
    print('NOT INTERRUPTED', flush=True)
except KeyboardInterrupt:
    print('INTERRUPTED', flush=True)
# the process stays usable: a new op, compared with CPU
y = (t @ t).relu().sum(0)
torch.testing.assert_close(y.cpu(), (x @ x).relu().sum(0), rtol=1e-4, atol=1e-3)
print('NEXT OK', flush=True)
"""

# a long Fused region: thousands of small ops recorded without a read
LONG_REGION = """
    for i in range(1000000):
        t = (t * 0.999 + 0.001).tanh()
        if i % 1500 == 1499:
            t = t + 0  # the region is cut at the op cap and compiled as it goes
"""

# compiles: a fresh large program (many distinct ops) per iteration
COMPILES = """
    k = 0
    while True:
        k += 1
        u = t
        for j in range(300):
            u = (u * (1 + j * 1e-6) + k * 1e-3).sin()
        u.sum().item()
"""


@pytest.mark.parametrize("body", ["long_region", "compile"])
def test_sigint(tmp_path, body):
    code = SIGINT_CHILD % (LONG_REGION if body == "long_region" else COMPILES)
    env = dict(os.environ, PYTHONPATH=REPO, TORCH_TPU_CACHE_DIR=str(tmp_path),
               TORCH_TPU_EAGER_MODE="fused")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "READY"
        time.sleep(3.0)  # inside the loop: recording, compiling or running
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err[-3000:]
    assert "INTERRUPTED" in out and "NEXT OK" in out, out + err[-2000:]
    # the cache it wrote is consistent: every entry checks as valid
    chk = subprocess.run([sys.executable, "-m", "torch_tpu.cache", "ls"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert chk.returncode == 0, chk.stderr
    assert not _temps(tmp_path)
    for f in _entries(tmp_path):
        assert os.path.getsize(f) > 40


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


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_plugin_execute_fails_mid_run(tmp_path, mode):
    env = {"TORCH_TPU_PJRT_PLUGIN": FAILING, "FAILING_PLUGIN_REAL": _plugin_path(),
           "FAILING_PLUGIN_FAIL_AT": "5", "TORCH_TPU_CACHE_DIR": str(tmp_path),
           "TORCH_TPU_EAGER_MODE": mode}
    out = run_python(FAILING_CHILD, env=env).strip().splitlines()
    done, failed = map(int, out[0].split())
    # exactly one launch failed: one iteration raised, with the plugin's
    # message; all the others (before and after) computed the right values
    assert failed == 1 and done == 11, out
    assert "injected execute failure 5" in out[1], out


def test_plugin_without_failures_is_transparent(tmp_path):
    # the wrapper itself changes nothing: control for the test above
    env = {"TORCH_TPU_PJRT_PLUGIN": FAILING, "FAILING_PLUGIN_REAL": _plugin_path(),
           "TORCH_TPU_CACHE_DIR": str(tmp_path), "TORCH_TPU_EAGER_MODE": "strict"}
    out = run_python(FAILING_CHILD, env=env).strip().splitlines()
    assert out[0].split() == ["12", "0"]
