"""The slower fault-injection cases (tests/python/test_fault_injection.py
has the helpers and the fast cases that `make test` runs); `make
test-reliability` runs both."""
import os
import signal
import subprocess
import sys
import time

import pytest

from harness import run_python
from test_fault_injection import (FAILING, FAILING_CHILD, REPO, SHIM, TRAIN, _child, _entries, _plugin_path,
                                  _temps, _train, check_full_disk, check_plugin_execute_fails_mid_run)


def test_full_disk_from_the_first_byte(tmp_path):
    check_full_disk(tmp_path, 0)


def test_full_disk_then_a_process_with_room(tmp_path):
    check_full_disk(tmp_path, 40000)


def test_plugin_execute_fails_mid_run_fused(tmp_path):
    check_plugin_execute_fails_mid_run(tmp_path, "fused")


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
    u = t
    for i in range(1000000):
        u = (u * 0.999 + 0.001).tanh()  # recorded; cut at the op cap, compiled, run
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


def test_plugin_without_failures_is_transparent(tmp_path):
    # the wrapper itself changes nothing: control for the test above
    env = {"TORCH_TPU_PJRT_PLUGIN": FAILING, "FAILING_PLUGIN_REAL": _plugin_path(),
           "TORCH_TPU_CACHE_DIR": str(tmp_path), "TORCH_TPU_EAGER_MODE": "strict"}
    out = run_python(FAILING_CHILD, env=env).strip().splitlines()
    assert out[0].split() == ["12", "0"]

