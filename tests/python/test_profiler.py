"""torch_tpu.profiler: a Fused training step's Chrome trace has the tracks
(dispatch, region flush with its reason, compile, launch, transfer with
bytes, the device-memory counter), well formed and properly nested. Run in
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
with torch_tpu.profiler.profile() as prof:
    for _ in range(2):
        loss = m(x.to("tpu")).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        loss.item()
prof.export_chrome_trace(sys.argv[1])
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
    assert any(e["name"] == "addmm.default" for e in tracks["dispatch"])
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
