"""Traces minGPT's training step (examples/mingpt.py at its default sizes,
Fused eager, a fresh persistent cache so the first step compiles) with
torch_tpu.profiler: 3 steps, each in a record_function("train_step") range;
writes the Chrome trace and prints the summary and the tracks seen.

    python tools/profile_mingpt.py trace.json
"""
import collections
import json
import os
import sys
import tempfile

os.environ.setdefault("TORCH_TPU_CACHE_DIR", tempfile.mkdtemp(prefix="tt_prof_cache_"))
import torch  # noqa: E402

import torch_tpu  # noqa: E402
from torch_tpu import bench  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "trace.json"
    w = bench.example_factory(bench.capture_example("mingpt", []))(torch.device("tpu"))
    with torch_tpu.eager_mode("fused"), torch_tpu.profiler.profile() as prof:
        for _ in range(3):
            with torch.profiler.record_function("train_step"):
                loss = w["step"]()
                loss.item()
    prof.export_chrome_trace(out)
    print(prof.summary())
    evs = json.load(open(out))["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs
             if e["ph"] == "M" and e["name"] == "thread_name"}
    seen = collections.Counter(names[(e["pid"], e["tid"])] for e in evs if e["ph"] == "X")
    seen["device memory (counter)"] = sum(e["ph"] == "C" for e in evs)
    print("tracks:", dict(seen))


if __name__ == "__main__":
    main()
