"""Fused regions flushed by collectives are counted (issue 16, deliverable 3).

A collective that reads a tpu tensor whose value is still pending in the open
Fused region must flush the region first. Such a flush has its own reason,
``collective`` (in ``torch_tpu._C._cache_stats()["fused"]["flushes"]``), and
is counted per transport in ``torch_tpu.distributed_threads.stats()``:
``host_flushes`` (the host transport: tensors staged through gloo) and
``compiled_flushes`` (ranks as threads on the compiled transport).
A child process with TORCH_TPU_NUM_DEVICES=2 runs the checks.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CHILD = r'''
import json, sys, threading
import torch, torch_tpu
from torch_tpu import _C
from torch_tpu.distributed import CompiledGroup
from torch_tpu.distributed_threads import stats

def counts():
    s = stats()
    return (_C._cache_stats()["fused"]["flushes"]["collective"], s["host_flushes"],
            s["compiled_flushes"], s["launches"])

out = {}
torch_tpu.sync()
# the entry the host transport calls before staging a tpu tensor
x = torch.arange(6, dtype=torch.float32, device="tpu:0")
torch_tpu.sync()
c0 = counts()
y = x * 2 + 1                          # pending in the open Fused region
_C._coll_flush_for_collective(y, "host")
c1 = counts()
_C._coll_flush_for_collective(y, "host")  # no longer pending: nothing to flush
_C._coll_flush_for_collective(x, "host")  # never pending
c2 = counts()
out["host"] = [c0, c1, c2, (y.cpu() == torch.arange(6.) * 2 + 1).all().item()]

# the compiled transport, one rank (deterministic: the rank's value is pending)
g1 = CompiledGroup(devices=[0], timeout=10)
z = x * 3                              # pending
c3 = counts()
s1 = g1.all_reduce(z)
c4 = counts()
out["compiled1"] = [c3, c4, torch.equal(s1.cpu(), torch.arange(6.) * 3)]

# two rank threads, each with a pending value: the rank whose value is still
# in the region when its collective comes flushes it (the other rank's value
# may have been flushed by a device change already)
g2 = CompiledGroup(world_size=2, timeout=20)
res = [None, None]
def rank(r):
    a = torch.full((4,), float(r + 1), device=f"tpu:{r}") * 2   # pending
    res[r] = g2.all_reduce(a).cpu()
c5 = counts()
ts = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
c6 = counts()
out["compiled2"] = [c5, c6, all(torch.equal(v, torch.full((4,), 6.)) for v in res)]
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
'''


def test_collective_flushes_counted(tmp_path):
    path = str(tmp_path / "out.json")
    env = dict(os.environ, TORCH_TPU_NUM_DEVICES="2", OMP_NUM_THREADS="1", TORCH_TPU_EAGER_MODE="fused")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", CHILD, path], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    with open(path) as f:
        out = json.load(f)
    # (collective-reason flushes, host_flushes, compiled_flushes, launches)
    c0, c1, c2, ok = out["host"]
    assert ok
    assert c1[0] - c0[0] == 1 and c1[1] - c0[1] == 1 and c1[2] == c0[2], (c0, c1)
    assert c2 == c1, (c1, c2)  # nothing pending: no flush, nothing counted
    c3, c4, ok = out["compiled1"]
    assert ok
    assert c4[0] - c3[0] == 1 and c4[2] - c3[2] == 1 and c4[1] == c3[1], (c3, c4)
    assert c4[3] - c3[3] == 1  # one collective program launched
    c5, c6, ok = out["compiled2"]
    assert ok
    flushed = c6[2] - c5[2]
    assert 1 <= flushed <= 2 and c6[0] - c5[0] == flushed, (c5, c6)
    assert c6[1] == c5[1]  # no host-transport flush counted
