"""torch_tpu.profiler: a timeline of what torch_tpu does, as a Chrome
trace-event JSON file (open it in ui.perfetto.dev or chrome://tracing).

    with torch_tpu.profiler.profile() as prof:
        step()
    prof.export_chrome_trace("trace.json")
    print(prof.summary())

(or `prof = profile(); prof.start(); ...; prof.stop()`). Tracks (one trace
thread each, per OS thread):

* `dispatch`: every aten op on tpu tensors as Python dispatched it (host
  time; `record_dispatch=False` leaves it out and with it the only
  Python-side overhead);
* `region flush`: each Fused region flush, named by its reason (sync, read,
  fallback, ...), with its op count and first/last op;
* `compile`: each program compiled (Strict op or Fused region; programs
  found in the in-memory or persistent cache compile nothing and do not
  appear);
* `launch`: each program launch, host side (the call that enqueues it; the
  device's run until completion is not traced yet);
* `transfer`: host to device and device to host copies, with their bytes;
* `device memory`: a counter of the bytes of device buffers held, sampled
  at each dispatched op.

The core appends its events (csrc/core/trace.c) only while a profile is
running: off, each instrumented call costs one atomic load.
"""
import json
import os
import threading
from collections import defaultdict

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import _C

__all__ = ["profile"]


def _on_tpu(args):
    for a in args:
        if isinstance(a, torch.Tensor) and a.device.type == "tpu":
            return True
        if isinstance(a, (list, tuple)) and _on_tpu(a):
            return True
    return False


class _DispatchRecorder(TorchDispatchMode):
    def __init__(self, sink):
        super().__init__()
        self.sink = sink

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        t0 = _C._trace_now_us()
        out = func(*args, **(kwargs or {}))
        if _on_tpu(args) or _on_tpu(list((kwargs or {}).values())) or _on_tpu(
                out if isinstance(out, (list, tuple)) else [out]):
            t1 = _C._trace_now_us()
            self.sink.append(("dispatch", str(func.overloadpacket.__name__) + "." +
                              func._overloadname, t0, t1 - t0, threading.get_native_id(), ""))
            live, _peak = _C._buffer_bytes()
            self.sink.append(("device memory", "bytes", t1, 0.0, 0, str(live)))
        return out


class profile:
    def __init__(self, record_dispatch=True):
        self.record_dispatch = record_dispatch
        self._py_events = []
        self._events = []
        self._mode = None
        self.dropped = 0

    def start(self):
        _C._trace_take()  # drop anything left from an earlier profile
        self._py_events = []
        _C._trace_set(True)
        if self.record_dispatch:
            self._mode = _DispatchRecorder(self._py_events)
            self._mode.__enter__()
        return self

    def stop(self):
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        _C._trace_set(False)
        core, self.dropped = _C._trace_take()
        self._events = sorted(list(core) + self._py_events, key=lambda e: e[2])
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def events(self):
        """Every event: dicts with track, name, ts_us, dur_us, tid, detail."""
        keys = ("track", "name", "ts_us", "dur_us", "tid", "detail")
        return [dict(zip(keys, e)) for e in self._events]

    def chrome_trace(self):
        tids, out = {}, []
        pid = os.getpid()
        for track, name, ts, dur, tid, detail in self._events:
            if track == "device memory":
                out.append({"ph": "C", "name": "device memory", "pid": pid, "ts": ts,
                            "args": {"buffer bytes": int(detail)}})
                continue
            key = (track, tid)
            if key not in tids:
                tids[key] = len(tids) + 1
                label = track if sum(k[0] == track for k in tids) == 1 else f"{track} ({tid})"
                out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tids[key],
                            "args": {"name": label}})
                out.append({"ph": "M", "name": "thread_sort_index", "pid": pid,
                            "tid": tids[key], "args": {"sort_index": tids[key]}})
            ev = {"ph": "X", "name": name, "cat": track, "pid": pid, "tid": tids[key],
                  "ts": ts, "dur": max(dur, 0.0)}
            if detail:
                ev["args"] = {"detail": detail}
            out.append(ev)
        out.insert(0, {"ph": "M", "name": "process_name", "pid": pid,
                       "args": {"name": "torch_tpu"}})
        return {"traceEvents": out, "displayTimeUnit": "ms",
                "otherData": {"dropped_events": self.dropped}}

    def export_chrome_trace(self, path):
        with open(path, "w") as f:
            json.dump(self.chrome_trace(), f)

    def summary(self, top=10):
        """Text: time per track, top compiles and flush reasons, transfers."""
        by_track = defaultdict(lambda: [0, 0.0])
        compiles, flushes, xfer = [], defaultdict(int), defaultdict(lambda: [0, 0])
        for e in self.events():
            if e["track"] == "device memory":
                continue
            by_track[e["track"]][0] += 1
            by_track[e["track"]][1] += e["dur_us"]
            if e["track"] == "compile":
                compiles.append(e)
            elif e["track"] == "region flush":
                flushes[e["name"]] += 1
            elif e["track"] == "transfer":
                xfer[e["name"]][0] += 1
                xfer[e["name"]][1] += int(e["detail"].split()[0] or 0)
        lines = [f"{'track':<14}{'events':>8}{'total ms':>12}"]
        for t, (n, us) in sorted(by_track.items()):
            lines.append(f"{t:<14}{n:>8}{us / 1e3:>12.2f}")
        if compiles:
            lines.append("top compiles:")
            for e in sorted(compiles, key=lambda e: -e["dur_us"])[:top]:
                lines.append(f"  {e['dur_us'] / 1e3:9.1f} ms  {e['name']}  ({e['detail']})")
        if flushes:
            lines.append("region flushes by reason: " +
                         ", ".join(f"{k} {v}" for k, v in sorted(flushes.items())))
        for k, (n, b) in sorted(xfer.items()):
            lines.append(f"transfers {k}: {n}, {b} bytes")
        return "\n".join(lines)
