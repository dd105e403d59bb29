"""torch_tpu.profiler: a Fused training step's Chrome trace has the tracks
(dispatch, region flush with its reason, compile, launch, the program's run
on the device, transfer with bytes, user record_function ranges, the
device-memory counter), well formed and properly nested; merged with
torch.profiler's trace, both are on one aligned clock. Run in
a child process with a fresh persistent cache so the region compiles."""
import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = """
import json, sys, torch, torch_tpu
m = torch.nn.Linear(16, 8).to("tpu")
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(4, 16)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as tp:
    with torch_tpu.profiler.profile() as prof:
        for _ in range(2):
            with torch.profiler.record_function("train_step"):
                loss = m(x.to("tpu")).square().mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
                loss.item()
prof.export_chrome_trace(sys.argv[1])
prof.export_chrome_trace(sys.argv[1] + ".merged.json", torch_profiler=tp)
print(prof.summary())
# Off: nothing is recorded any more.
(torch.ones(3, device="tpu") * 2).cpu()
events, dropped = torch_tpu._C._trace_take()
print("AFTER_STOP", len(events), dropped)
"""


def test_training_step_trace(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
    env.update(PYTHONPATH=ROOT, TORCH_TPU_CACHE_DIR=str(tmp_path / "cache"),
               TORCH_TPU_EAGER_MODE="fused")
    (tmp_path / "s.py").write_text(textwrap.dedent(SCRIPT))
    trace_path = tmp_path / "trace.json"
    p = subprocess.run([sys.executable, str(tmp_path / "s.py"), str(trace_path)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "AFTER_STOP 0 0" in p.stdout
    assert "region flushes by reason: host_read 2" in p.stdout

    trace = json.loads(trace_path.read_text())
    evs = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in evs
             if e["ph"] == "M" and e["name"] == "thread_name"}
    spans = [e for e in evs if e["ph"] == "X"]
    for e in spans:
        assert e["dur"] >= 0 and e["ts"] > 0 and e["tid"] in names
    tracks = {}
    for e in spans:
        tracks.setdefault(e["cat"], []).append(e)
    assert {"dispatch", "region flush", "compile", "launch", "transfer"} <= set(tracks), tracks.keys()
    assert any(e["name"] == "aten::addmm" for e in tracks["dispatch"])
    flushes = tracks["region flush"]
    assert len(flushes) == 2 and all(e["name"] == "host_read" for e in flushes)
    assert all("reason host_read" in e["args"]["detail"] for e in flushes)
    # One compile (the second step's region is found in the cache), inside
    # the first flush, on the same thread's timeline.
    (c,) = tracks["compile"]
    f0 = flushes[0]
    assert f0["ts"] <= c["ts"] and c["ts"] + c["dur"] <= f0["ts"] + f0["dur"]
    assert c["name"].startswith("fused region, ")
    # Each flush launches its program within its span.
    assert len(tracks["launch"]) == 2
    for f, launch in zip(flushes, sorted(tracks["launch"], key=lambda e: e["ts"])):
        assert f["ts"] <= launch["ts"] <= f["ts"] + f["dur"]
    up = [e for e in tracks["transfer"] if e["name"] == "host to device"]
    assert any(e["args"]["detail"] == f"{4 * 16 * 4} bytes" for e in up)  # x.to("tpu")
    down = [e for e in tracks["transfer"] if e["name"] == "device to host"]
    assert [e["args"]["detail"] for e in down] == ["4 bytes", "4 bytes"]  # loss.item() twice
    counters = [e for e in evs if e["ph"] == "C"]
    assert counters and all(e["args"]["buffer bytes"] >= 0 for e in counters)

    # Device spans: one per launch, named after the region's program, each
    # starting at or after its launch and ending after it started.
    launches = sorted(tracks["launch"], key=lambda e: e["ts"])
    dev = sorted(tracks["device"], key=lambda e: e["ts"])
    assert len(dev) == 2 and names[dev[0]["tid"]] == "device 0"
    for launch, d in zip(launches, dev):
        prog = launch["args"]["detail"].split(",")[0]
        assert prog.startswith("program #") and d["args"]["program"] == prog
        assert d["name"].startswith("fused region: ") and "addmm" in d["name"]
        assert d["args"]["launch_ts"] == launch["ts"] and d["ts"] >= launch["ts"]
    assert dev[0]["ts"] + dev[0]["dur"] <= dev[1]["ts"]  # one device: no overlap
    assert "top programs by device time:" in p.stdout
    # record_function ranges: two train_step ranges, each holding its flush.
    steps = sorted((e for e in tracks["user"] if e["name"] == "train_step"), key=lambda e: e["ts"])
    assert len(steps) == 2
    for st, f in zip(steps, flushes):
        assert st["ts"] <= f["ts"] and f["ts"] + f["dur"] <= st["ts"] + st["dur"]

    merged = json.loads((tmp_path / "trace.json.merged.json").read_text())["traceEvents"]
    ours = [e for e in merged if e.get("pid") == "torch_tpu" and e.get("ph") == "X"]
    theirs = [e for e in merged if e.get("pid") != "torch_tpu" and e.get("ph") == "X"]
    assert {e["cat"] for e in ours} >= {"device", "region flush", "user"}
    assert any(e.get("cat") == "cpu_op" for e in theirs)
    # Both recorded the train_step ranges: aligned within a millisecond.
    a = sorted(e["ts"] for e in theirs if e["name"] == "train_step")
    b = sorted(e["ts"] for e in ours if e["name"] == "train_step")
    assert len(a) == len(b) == 2 and all(abs(x - y) < 1000 for x, y in zip(a, b))
