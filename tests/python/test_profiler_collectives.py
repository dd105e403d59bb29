"""torch_tpu.profiler's collectives track, for both transports of the tpu
torch.distributed backend (docs/tools.md):

* compiled (ranks as threads of one process, TORCH_TPU_NUM_DEVICES=2): each
  rank's span on its own `collectives rank N` track, with op, bytes and
  group size, nested in the dispatcher's `c10d::` op span; the collective's
  program on `device 0` and `device 1`, named by the collective;
* host (two processes over a FileStore, gloo inside): the span with its
  phases `stage to host`, `gloo <op>` and `copy back` nested in it.

Each child also times a small all_reduce with the profiler off and on
(interleaved rounds) and prints the per-call cost (docs/tools.md quotes it).
"""
import json
import os
import subprocess
import sys
import textwrap

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

COMMON = """
import json, sys, time
import torch, torch.distributed as dist
import torch_tpu, torch_tpu.profiler

def collectives(pg, rank, device):
    x = torch.arange(16, dtype=torch.float32, device=device) + rank
    dist.all_reduce(x, group=pg)
    assert torch.equal(x.cpu(), 2 * torch.arange(16.0) + 1), x
    out = torch.empty(32, device=device)
    dist.all_gather_into_tensor(out, torch.full((16,), float(rank), device=device), group=pg)
    assert torch.equal(out.cpu(), torch.cat([torch.zeros(16), torch.ones(16)]))
    parts = [torch.empty(8, device=device) for _ in range(2)]
    dist.all_gather(parts, torch.full((8,), rank + 1.0, device=device), group=pg)
    assert parts[1].cpu().sum().item() == 16.0

def timed(pg, device, n):
    x = torch.ones(16, device=device)
    t = time.perf_counter()
    for _ in range(n):
        dist.all_reduce(x, group=pg)
    x.cpu()
    return (time.perf_counter() - t) / n
"""

COMPILED = COMMON + """
import threading
out = sys.argv[1]
group = torch_tpu.distributed.CompiledGroup(world_size=2)
pgs = [group.process_group(r) for r in range(2)]

def in_threads(fn):
    res, errs = [None, None], []
    def main(r):
        try:
            res[r] = fn(pgs[r], r, torch.device("tpu", r))
        except BaseException as e:
            errs.append(repr(e))
    ts = [threading.Thread(target=main, args=(r,)) for r in range(2)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errs, errs
    return res

in_threads(collectives)  # warm: programs compiled
with torch_tpu.profiler.profile() as prof:
    in_threads(collectives)
prof.export_chrome_trace(out + "/compiled.json")
print(prof.summary())
off, on = [], []
for _ in range(5):
    off.append(in_threads(lambda pg, r, d: timed(pg, d, 50))[0])
    with torch_tpu.profiler.profile():
        on.append(in_threads(lambda pg, r, d: timed(pg, d, 50))[0])
json.dump({"off": off, "on": on}, open(out + "/compiled-timing.json", "w"))
"""

HOST = COMMON + """
rank, out = int(sys.argv[1]), sys.argv[2]
store = dist.FileStore(out + "/store", 2)
dist.init_process_group("tpu", store=store, rank=rank, world_size=2)
dev = torch.device("tpu")
collectives(None, rank, dev)
with torch_tpu.profiler.profile() as prof:
    collectives(None, rank, dev)
prof.export_chrome_trace(out + f"/host-{rank}.json")
off, on = [], []
for _ in range(5):
    off.append(timed(None, dev, 30))
    with torch_tpu.profiler.profile():
        on.append(timed(None, dev, 30))
json.dump({"off": off, "on": on}, open(out + f"/host-timing-{rank}.json", "w"))
dist.destroy_process_group()
"""


def env(**extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
    e.update(PYTHONPATH=ROOT, OMP_NUM_THREADS="1", TORCH_TPU_CACHE="0", **extra)
    return e


def load(path):
    with open(path) as f:
        evs = json.load(f)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in evs
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    spans = [e for e in evs if e.get("ph") == "X"]
    return names, spans


def inside(inner, outer):
    return (outer["tid"] == inner["tid"] and outer["ts"] <= inner["ts"] + 0.5 and
            inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 0.5)


def per_call_us(timing):
    """Median over rounds of (on - off), microseconds per call."""
    d = sorted(b - a for a, b in zip(timing["off"], timing["on"]))
    return d[len(d) // 2] * 1e6


def check_track(names, spans, transport, ops, ranks):
    coll = [e for e in spans if e["cat"] == "collectives" and "bytes" in e.get("args", {})]
    assert coll, spans[:20]
    assert {names[e["tid"]] for e in coll} == {f"collectives rank {r}" for r in ranks}
    for e in coll:
        a = e["args"]
        assert a["transport"] == transport and a["group_size"] == 2 and a["rank"] in ranks, a
        assert a["op"] == e["name"]
        # each collective sits inside the dispatcher's c10d op on its thread
        outer = [d for d in spans if d["cat"] == "dispatch" and d["name"].startswith("c10d::")
                 and d["pid"] == e["pid"] and
                 names.get(d["tid"], "").startswith("dispatch") and
                 d["ts"] <= e["ts"] + 0.5 and e["ts"] + e["dur"] <= d["ts"] + d["dur"] + 0.5]
        assert outer, e
    by_op = {}
    for e in coll:
        by_op.setdefault(e["name"], []).append(e["args"]["bytes"])
    for op, nbytes in ops.items():
        assert sorted(set(by_op.get(op, []))) == nbytes, (op, by_op)
    return coll


def test_compiled_transport(tmp_path):
    script = tmp_path / "compiled.py"
    script.write_text(textwrap.dedent(COMPILED))
    p = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True,
                       timeout=300, env=env(TORCH_TPU_NUM_DEVICES="2"))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    names, spans = load(tmp_path / "compiled.json")
    # dist.all_reduce of 16 float32, all_gather_into_tensor of 16, all_gather of 8
    coll = check_track(names, spans, "compiled", {"all_reduce": [64], "all_gather": [32, 64]},
                       {0, 1})
    assert len([e for e in coll if e["name"] == "all_reduce"]) == 2  # one per rank
    # the collectives' programs ran on both devices, named by the collective
    dev = [e for e in spans if e["cat"] == "device" and e["name"].startswith("collective ")]
    assert {names[e["tid"]] for e in dev} == {"device 0", "device 1"}, dev
    assert {e["name"] for e in dev} == {"collective all_reduce", "collective all_gather"}
    assert "collective all_reduce (compiled transport): 2 rank calls, 128 bytes" in p.stdout
    t = json.loads((tmp_path / "compiled-timing.json").read_text())
    print(f"compiled transport: profiler on adds {per_call_us(t):.1f} us per all_reduce "
          f"(off {sorted(t['off'])[2] * 1e6:.0f} us)")


def test_host_transport(tmp_path):
    script = tmp_path / "host.py"
    script.write_text(textwrap.dedent(HOST))
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env()) for r in range(2)]
    logs = []
    try:
        for q in procs:
            logs.append(q.communicate(timeout=300)[0])
    finally:
        for q in procs:
            if q.poll() is None:
                q.kill()
                q.wait()
    for r, q in enumerate(procs):
        assert q.returncode == 0, logs[r][-3000:]
    for r in range(2):
        names, spans = load(tmp_path / f"host-{r}.json")
        coll = check_track(names, spans, "host",
                           {"all_reduce": [64], "all_gather_into_tensor": [64],
                            "all_gather": [32]}, {r})
        phases = [e for e in spans if e["cat"] == "collectives" and "bytes" not in e["args"]]
        for e in coll:
            mine = [ph["name"] for ph in phases if inside(ph, e)]
            assert mine == ["shape check (gloo)", "stage to host", f"gloo {e['name']}",
                            "copy back"], (e, mine)
        t = json.loads((tmp_path / f"host-timing-{r}.json").read_text())
        print(f"host transport rank {r}: profiler on adds {per_call_us(t):.1f} us per all_reduce "
              f"(off {sorted(t['off'])[2] * 1e6:.0f} us)")
