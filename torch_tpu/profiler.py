"""torch_tpu.profiler: a timeline of what torch_tpu does, as a Chrome
trace-event JSON file (open it in ui.perfetto.dev or chrome://tracing).

    with torch_tpu.profiler.profile() as prof:
        step()
    prof.export_chrome_trace("trace.json")
    print(prof.summary())

(or `prof = profile(); prof.start(); ...; prof.stop()`). Tracks (one trace
thread each, per OS thread):

* `dispatch`: every aten op the host dispatches, named as torch.profiler
  names it (`aten::addmm`), nested (an op inside a composite op), on the
  thread that ran it (autograd's backward thread too); CPU ops included (a
  RecordFunction callback registered while the profile runs; the names
  only, no inputs; `record_dispatch=False` leaves it out);
* `region flush`: each Fused region flush, named by its reason (sync, read,
  fallback, ...), with its op count and first/last op;
* `compile`: each program compiled (Strict op or Fused region; programs
  found in the in-memory or persistent cache compile nothing and do not
  appear);
* `launch`: each program launch, host side (the call that enqueues it),
  naming its program (`program #N`);
* `device N`: each program's run on device N, from its launch to its
  completion (the PJRT completion event; a program queued behind another
  starts where the previous one ended, its wait in `queued_us`), named by
  the host span that launched it (the Fused region's ops, the Strict op);
* `transfer`: host to device and device to host copies, with their bytes;
* `user`: `torch.profiler.record_function(...)` ranges (a RecordFunction
  callback registered while the profile runs);
* `device memory`: a counter of the bytes of device buffers held, sampled
  at each launch and copy;
* `collectives` (one per rank's thread): each torch.distributed collective
  of the tpu backend, with its op, transport, rank, group size and bytes
  per rank in its args. The compiled transport (ranks as threads of this
  process): the rank's span from its arrival to its result; the launch
  (by the last rank to arrive) and each device's run appear on `launch` and
  `device N`. The host transport: the span with its phases nested in it
  (`shape check (gloo)`, `stage to host`, `gloo <op>`, `copy back`).

Inside `torch.profiler.profile()`, pass that profiler to
`export_chrome_trace(path, torch_profiler=p)` (after it stopped): the file
holds PyTorch's trace and ours side by side (our events as process
"torch_tpu", aligned on a `torch_tpu.profiler` range both recorded).

The core appends its events (csrc/core/trace.c) only while a profile is
running: off, each instrumented call costs one atomic load.
"""
import bisect
import json
import os
import tempfile
from collections import defaultdict

import torch

from . import _C

__all__ = ["profile"]


_HOST_SPANS = ("region flush", "dispatch", "user", "collectives")


def collective_args(detail):
    """A collective span's detail (`transport=host rank=0 group=2 bytes=64
    tensor=float32[16]`) as a dict, numbers as ints; {} for a phase."""
    out = {}
    for item in detail.split():
        k, sep, v = item.partition("=")
        if sep:
            out["group_size" if k == "group" else k] = int(v) if v.lstrip("-").isdigit() else v
    return out


class profile:
    def __init__(self, record_dispatch=True):
        self.record_dispatch = record_dispatch
        self._events = []
        self.programs = {}  # "program #N" -> the host span that launched it
        self._marker = None
        self.dropped = 0
        self.undrained = 0

    def start(self):
        _C._trace_take()  # drop anything left from an earlier profile
        _C._trace_set(True)
        _C._trace_record_functions(True, self.record_dispatch)
        if torch.autograd.profiler._is_profiler_enabled:
            # A range both profilers record: export_chrome_trace aligns the
            # two clocks on it.
            self._marker = torch.autograd.profiler.record_function("torch_tpu.profiler")
            self._marker.__enter__()
        return self

    def stop(self):
        if self._marker is not None:
            self._marker.__exit__(None, None, None)
            self._marker = None
        # Programs launched and still running: wait for their completions
        # (recorded by the runtime's callback), without flushing anything.
        self.undrained = _C._trace_drain(30.0)
        _C._trace_record_functions(False, False)
        _C._trace_set(False)
        core, self.dropped = _C._trace_take()
        self._events = sorted(core, key=lambda e: e[2])
        self._name_programs()
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def _name_programs(self):
        """Names each program by the innermost host span (on the launching
        thread) around its first launch: the Fused region's reason and ops,
        the Strict op, the user's range."""
        spans = defaultdict(list)
        for e in self._events:
            if e[0] in _HOST_SPANS:
                spans[e[4]].append(e)
        starts = {tid: [e[2] for e in lst] for tid, lst in spans.items()}
        self.programs = {}
        for track, _name, ts, _dur, tid, detail in self._events:
            if track != "launch" or not detail.startswith("program #"):
                continue
            prog = detail.split(",")[0]
            if prog in self.programs:
                continue
            label, best = "", None
            lst = spans.get(tid, [])
            i = bisect.bisect_right(starts.get(tid, []), ts)
            for e in reversed(lst[max(0, i - 256):i]):
                # the innermost span around the launch; a region flush wins
                # over the op whose host read flushed it
                rank = (e[0] != "region flush", e[3])
                if e[2] + e[3] >= ts and (best is None or rank < best_rank):
                    best, best_rank = e, rank
            if best is not None:
                if best[0] == "region flush":
                    label = "fused region: " + best[5].split(", ", 1)[-1]
                elif best[0] == "dispatch":
                    label = "op " + best[1].replace("aten::", "")
                elif best[0] == "collectives":
                    label = "collective " + best[1]
                else:
                    label = best[1]
            self.programs[prog] = label

    def events(self):
        """Every event: dicts with track, name, ts_us, dur_us, tid, detail."""
        keys = ("track", "name", "ts_us", "dur_us", "tid", "detail")
        return [dict(zip(keys, e)) for e in self._events]

    def device_spans(self):
        """Each program run: dicts with device, program, label, launch_us,
        ts_us (its start on the device: launch, or the end of the run before
        it), dur_us (running), queued_us."""
        out, busy_until = [], {}
        for track, name, ts, dur, tid, detail in self._events:
            if track != "device":
                continue
            # Runs on one device do not overlap: a run starts when both its
            # launch and the run before it are done. A completion callback
            # the plugin delivers late can order two ends the other way;
            # the later run then shows as ending with the earlier one.
            start = max(ts, busy_until.get(tid, ts))
            end = max(ts + dur, start)
            busy_until[tid] = end
            out.append({"device": int(tid), "program": name,
                        "label": self.programs.get(name, ""),
                        "launch_us": ts, "ts_us": start, "dur_us": end - start,
                        "queued_us": start - ts, "failed": "failed" in detail})
        return out

    def chrome_trace(self, pid=None):
        tids, out = {}, []
        pid = os.getpid() if pid is None else pid

        def thread(track, tid, label):
            key = (track, tid)
            if key not in tids:
                tids[key] = len(tids) + 1
                out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tids[key],
                            "args": {"name": label}})
                out.append({"ph": "M", "name": "thread_sort_index", "pid": pid,
                            "tid": tids[key], "args": {"sort_index": tids[key]}})
            return tids[key]

        ranks = {}  # a collectives track's thread -> its rank
        for track, _n, _ts, _d, tid, detail in self._events:
            if track == "collectives" and "rank=" in detail:
                ranks.setdefault(tid, collective_args(detail).get("rank"))
        for track, name, ts, dur, tid, detail in self._events:
            if track == "device memory":
                out.append({"ph": "C", "name": "device memory", "pid": pid, "ts": ts,
                            "args": {"buffer bytes": int(detail)}})
                continue
            if track == "device":
                continue
            if track == "collectives" and ranks.get(tid) is not None:
                label = f"collectives rank {ranks[tid]}"
            elif any(k[0] == track and k[1] != tid for k in tids):
                label = f"{track} ({tid})"
            else:
                label = track
            ev = {"ph": "X", "name": name, "cat": track, "pid": pid,
                  "tid": thread(track, tid, label), "ts": ts, "dur": max(dur, 0.0)}
            if track == "collectives":
                args = collective_args(detail)
                ev["args"] = dict(args, op=name) if args else {"collective": detail}
            elif detail:
                ev["args"] = {"detail": detail}
            out.append(ev)
        for d in self.device_spans():
            out.append({"ph": "X", "name": d["label"] or d["program"], "cat": "device",
                        "pid": pid, "tid": thread("device", d["device"], f"device {d['device']}"),
                        "ts": d["ts_us"], "dur": max(d["dur_us"], 0.0),
                        "args": {"program": d["program"], "queued_us": round(d["queued_us"], 3),
                                 "launch_ts": d["launch_us"]}})
        out.insert(0, {"ph": "M", "name": "process_name", "pid": pid,
                       "args": {"name": "torch_tpu"}})
        return {"traceEvents": out, "displayTimeUnit": "ms",
                "otherData": {"dropped_events": self.dropped,
                              "device_spans_missing": self.undrained}}

    def export_chrome_trace(self, path, torch_profiler=None):
        """Writes the Chrome trace JSON. With `torch_profiler` (a stopped
        torch.profiler.profile this profile ran inside), writes PyTorch's
        trace with ours added as its own process, clocks aligned."""
        trace = self.chrome_trace()
        if torch_profiler is not None:
            trace = self._merge(trace, torch_profiler)
        with open(path, "w") as f:
            json.dump(trace, f)

    def _merge(self, ours, torch_profiler):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "torch.json")
            torch_profiler.export_chrome_trace(p)
            with open(p) as f:
                theirs = json.load(f)
        def marker(evs):
            return next((e for e in evs if e.get("ph") == "X" and
                         e.get("name") == "torch_tpu.profiler"), None)
        a, b = marker(theirs["traceEvents"]), marker(ours["traceEvents"])
        if a is None or b is None:
            raise RuntimeError(
                "torch_tpu.profiler: the torch.profiler trace has no 'torch_tpu.profiler' "
                "range: start this profile inside torch.profiler.profile() to merge them")
        shift = float(a["ts"]) - float(b["ts"])
        pid = "torch_tpu"
        for e in ours["traceEvents"]:
            e["pid"] = pid
            if "ts" in e:
                e["ts"] = e["ts"] + shift
        theirs["traceEvents"].extend(ours["traceEvents"])
        theirs.setdefault("otherData", {})  # keep PyTorch's keys
        theirs["otherData"] = dict(theirs["otherData"], torch_tpu=ours["otherData"])
        return theirs

    def summary(self, top=10):
        """Text: time per track, top programs by device time, compiles,
        flush reasons, transfers (bytes, rate), collectives, user ranges."""
        by_track = defaultdict(lambda: [0, 0.0])
        compiles, flushes = [], defaultdict(int)
        xfer = defaultdict(lambda: [0, 0, 0.0])
        for e in self.events():
            if e["track"] in ("device memory", "device"):
                continue
            by_track[e["track"]][0] += 1
            by_track[e["track"]][1] += e["dur_us"]
            if e["track"] == "compile":
                compiles.append(e)
            elif e["track"] == "region flush":
                flushes[e["name"]] += 1
            elif e["track"] == "transfer":
                x = xfer[e["name"]]
                x[0] += 1
                x[1] += int(e["detail"].split()[0] or 0)
                x[2] += e["dur_us"]
        spans = self.device_spans()
        for d in spans:
            by_track["device"][0] += 1
            by_track["device"][1] += d["dur_us"]
        lines = [f"{'track':<14}{'events':>8}{'total ms':>12}"]
        for t, (n, us) in sorted(by_track.items()):
            lines.append(f"{t:<14}{n:>8}{us / 1e3:>12.2f}")
        if spans:
            progs = defaultdict(lambda: [0, 0.0, 0.0, ""])
            for d in spans:
                p = progs[d["program"]]
                p[0] += 1
                p[1] += d["dur_us"]
                p[2] += d["queued_us"]
                p[3] = d["label"]
            lines.append("top programs by device time:")
            lines.append(f"  {'device ms':>10} {'runs':>5} {'mean ms':>9} {'queued ms':>10}  program")
            for k, (n, us, q, label) in sorted(progs.items(), key=lambda kv: -kv[1][1])[:top]:
                lines.append(f"  {us / 1e3:10.2f} {n:5d} {us / n / 1e3:9.3f} {q / 1e3:10.2f}  "
                             f"{k}" + (f": {label}" if label else ""))
        if compiles:
            lines.append(f"compiles: {len(compiles)}, "
                         f"{sum(e['dur_us'] for e in compiles) / 1e3:.1f} ms; top:")
            for e in sorted(compiles, key=lambda e: -e["dur_us"])[:top]:
                lines.append(f"  {e['dur_us'] / 1e3:9.1f} ms  {e['name']}  ({e['detail']})")
        if flushes:
            lines.append("region flushes by reason: " +
                         ", ".join(f"{k} {v}" for k, v in sorted(flushes.items())))
        for k, (n, b, us) in sorted(xfer.items()):
            rate = f", {b / us:.1f} MB/s" if us > 0 else ""
            lines.append(f"transfers {k}: {n}, {b} bytes{rate}")
        colls = defaultdict(lambda: [0, 0, 0.0])
        for e in self.events():
            a = collective_args(e["detail"]) if e["track"] == "collectives" else {}
            if a:
                c = colls[(e["name"], a.get("transport", "?"))]
                c[0] += 1
                c[1] += a.get("bytes", 0)
                c[2] += e["dur_us"]
        for (op, transport), (n, b, us) in sorted(colls.items()):
            lines.append(f"collective {op} ({transport} transport): {n} rank calls, {b} bytes, "
                         f"{us / n / 1e3:.3f} ms mean")
        users = defaultdict(lambda: [0, 0.0])
        for e in self.events():
            if e["track"] == "user":
                users[e["name"]][0] += 1
                users[e["name"]][1] += e["dur_us"]
        for k, (n, us) in sorted(users.items(), key=lambda kv: -kv[1][1])[:top]:
            lines.append(f"user range {k}: {n}, {us / 1e3:.2f} ms")
        return "\n".join(lines)
