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


def run_child(code, devices, path, timeout):
    """Runs `code` in a Fused-eager child with `devices` tpu devices; returns
    the JSON it writes to `path` (its argv[1])."""
    env = dict(os.environ, TORCH_TPU_NUM_DEVICES=str(devices), OMP_NUM_THREADS="1",
               TORCH_TPU_EAGER_MODE="fused")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    with open(path) as f:
        return json.load(f)


def test_collective_flushes_counted(tmp_path):
    out = run_child(CHILD, 2, tmp_path / "out.json", timeout=120)
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


PROGRAM_CHILD = r'''
import json, sys, threading
import torch, torch_tpu
from torch_tpu import _C
from torch_tpu.distributed import CompiledGroup
from torch_tpu.distributed_threads import stats

def program(n, numel, scale="2.0"):
    t = f"tensor<{numel}xf32>"
    groups = ", ".join(str(i) for i in range(n))
    return f"""module @step attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: {t}) -> ({t}, {t}) {{
    %c = "stablehlo.constant"() {{value = dense<{scale}> : {t}}} : () -> {t}
    %0 = "stablehlo.multiply"(%arg0, %c) : ({t}, {t}) -> {t}
    %1 = "stablehlo.all_reduce"(%0) ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }}) {{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[{groups}]]> : tensor<1x{n}xi64>, use_global_device_ids}} : ({t}) -> {t}
    %2 = "stablehlo.tanh"(%1) : ({t}) -> {t}
    "func.return"(%2, %0) : ({t}, {t}) -> ()
  }}
}}
"""

def launches():
    return _C._cache_stats()["fused"]["programs_run"] + stats()["launches"]

def run(n, body):
    out, errs = [None] * n, [None] * n
    def target(r):
        try:
            out[r] = body(r)
        except Exception as e:  # recorded per rank
            errs[r] = str(e)
    ts = [threading.Thread(target=target, args=(r,)) for r in range(n)]
    [t.start() for t in ts]; [t.join() for t in ts]
    return out, errs

res = {}
for n in (2, 4):
    g = CompiledGroup(world_size=n, timeout=30)
    xs_cpu = [torch.arange(6, dtype=torch.float32) / 4 - r / 8 for r in range(n)]
    xs = [x.to(f"tpu:{r}") for r, x in enumerate(xs_cpu)]
    torch_tpu.sync()
    want = torch.tanh(sum(x * 2 for x in xs_cpu))
    text = program(n, 6)
    # the whole step as one program
    l0 = launches(); p0 = stats()["programs"]
    out, errs = run(n, lambda r: [t.cpu() for t in g.run_program(text, xs[r], num_outputs=2,
                                                                    what="step")])
    l1 = launches(); p1 = stats()["programs"]
    ok = all(e is None for e in errs) and all(
        torch.allclose(o[0], want, rtol=1e-6, atol=1e-6) and torch.equal(o[1], xs_cpu[r] * 2)
        for r, o in enumerate(out))
    # the same step in Fused eager: compute, flush, collective, compute, flush
    def eager(r):
        y = xs[r] * 2
        s = g.all_reduce(y)
        return torch.tanh(s).cpu()
    e0 = launches()
    out2, errs2 = run(n, eager)
    e1 = launches()
    ok2 = all(e is None for e in errs2) and all(torch.allclose(o, want, rtol=1e-6, atol=1e-6)
                                                for o in out2)
    # ranks whose programs differ: every rank raises, naming the program
    texts = [program(n, 6, "3.0" if r == 1 else "2.0") for r in range(n)]
    _, errs3 = run(n, lambda r: g.run_program(texts[r], xs[r], num_outputs=2, what="step"))
    # a rank that never comes: the others time out
    _, errs4 = run(n - 1, lambda r: g.run_program(text, xs[r], num_outputs=2, what="step",
                                                  timeout=0.5))
    out5, errs5 = run(n, lambda r: g.run_program(text, xs[r], num_outputs=2, what="step")[0].cpu())
    res[n] = dict(ok=ok, errs=errs, program_launches=l1 - l0, programs=p1 - p0, eager_ok=ok2,
                  eager_errs=errs2, eager_launches=e1 - e0, mismatch=errs3, timeout=errs4,
                  after=all(e is None for e in errs5) and all(torch.allclose(o, want, rtol=1e-6, atol=1e-6) for o in out5))
with open(sys.argv[1], "w") as f:
    json.dump(res, f)
'''


def test_whole_program_over_rank_threads(tmp_path):
    """compute -> all_reduce -> compute as one SPMD program on 2 and 4 rank
    threads (CompiledGroup.run_program), against CPU and against the same
    step in Fused eager (which flushes around the collective)."""
    res = run_child(PROGRAM_CHILD, 4, tmp_path / "prog.json", timeout=180)
    for n in ("2", "4"):
        r = res[n]
        print(n, "ranks: program launches", r["program_launches"], "eager launches", r["eager_launches"])
        # tanh: XLA's and ATen's differ in the last float32 bits, hence 1e-6
        assert r["ok"], r["errs"]
        assert r["eager_ok"], r["eager_errs"]
        assert r["program_launches"] == 1 and r["programs"] == 1, r
        # eager: each rank's region before the collective, the collective,
        # each rank's region after it
        assert r["eager_launches"] >= int(n) + 1, r
        assert all(e and "step: the ranks' programs differ, so no rank ran it" in e
                   for e in r["mismatch"]), r["mismatch"]
        assert all(e and "step: timed out after 0.5 s waiting for rank(s) " in e
                   for e in r["timeout"]), r["timeout"]
        assert r["after"]
