"""A Chrome trace-event JSON (torch_tpu.profiler's export_chrome_trace) as a
self-contained HTML timeline, for a browser without network access
(ui.perfetto.dev and the Catapult viewer are online or not packaged here).

    python tools/trace_html.py trace.json out.html [--zoom NAME]

One row per trace thread (named by its thread_name metadata), complete
events ("X") as boxes stacked by nesting depth, labelled where they are
wide enough, counters ("C") as a step line. The first panel shows the whole
trace; with --zoom NAME, a second panel shows the last event named NAME
(e.g. a record_function range) and what overlaps it.

`make profiler-screenshot` renders a minGPT training step's trace with
headless Chromium into docs/profiler.png."""
import argparse
import html
import json

COLORS = {"dispatch": "#9ecae1", "region flush": "#fdae6b", "compile": "#e6550d",
          "launch": "#74c476", "device": "#31a354", "transfer": "#9e9ac8", "user": "#fdd0a2"}
ROW_H, LANE_H, LEFT, WIDTH = 16, 14, 170, 1400


def _rows(events):
    names, order = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        if e.get("ph") == "M" and e.get("name") == "thread_sort_index":
            order[(e["pid"], e["tid"])] = e["args"]["sort_index"]
    rows = {}
    for e in events:
        if e.get("ph") == "X":
            rows.setdefault((e["pid"], e["tid"]), []).append(e)
    keys = sorted(rows, key=lambda k: (str(k[0]), order.get(k, 1 << 30), str(k[1])))
    return [(names.get(k, f"{k[0]}/{k[1]}"), rows[k]) for k in keys]


def _lanes(evs):
    """Nesting depth per event: a stack of open end times."""
    out, stack = [], []
    for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
        while stack and stack[-1] <= e["ts"]:
            stack.pop()
        out.append((len(stack), e))
        stack.append(e["ts"] + e["dur"])
    return out


def panel(events, t0, t1, title):
    scale = (WIDTH - LEFT - 10) / max(t1 - t0, 1e-9)
    parts, y = [], 24
    for name, evs in _rows(events):
        lanes = [(d, e) for d, e in _lanes(evs) if e["ts"] + e["dur"] >= t0 and e["ts"] <= t1]
        depth = max([d for d, _ in lanes] + [0]) + 1
        h = depth * LANE_H + 4
        parts.append(f'<text x="4" y="{y + 12}" class="row">{html.escape(name)}</text>'
                     f'<line x1="0" x2="{WIDTH}" y1="{y + h}" y2="{y + h}" stroke="#ddd"/>')
        for d, e in lanes:
            x = LEFT + (max(e["ts"], t0) - t0) * scale
            w = max((min(e["ts"] + e["dur"], t1) - max(e["ts"], t0)) * scale, 1.0)
            color = COLORS.get(e.get("cat"), "#bbb")
            label = html.escape(str(e["name"]))
            tip = html.escape(f'{e["name"]}: {e["dur"] / 1e3:.3f} ms {json.dumps(e.get("args", {}))}')
            parts.append(f'<g><title>{tip}</title><rect x="{x:.1f}" y="{y + 2 + d * LANE_H}" '
                         f'width="{w:.1f}" height="{LANE_H - 2}" fill="{color}" stroke="#555" '
                         f'stroke-width="0.3"/>')
            if w > 7 * min(len(label), 40) * 0.6:
                parts.append(f'<text x="{x + 2:.1f}" y="{y + 12 + d * LANE_H}" class="ev">'
                             f'{label[:60]}</text>')
            parts.append('</g>')
        y += h
    counters = [e for e in events if e.get("ph") == "C" and t0 <= e["ts"] <= t1]
    if counters:
        h = 60
        vmax = max(max(e["args"].values()) for e in counters) or 1
        pts, last = [], None
        for e in sorted(counters, key=lambda e: e["ts"]):
            x = LEFT + (e["ts"] - t0) * scale
            v = y + h - 4 - (h - 8) * list(e["args"].values())[0] / vmax
            if last is not None:
                pts.append(f"{x:.1f},{last:.1f}")
            pts.append(f"{x:.1f},{v:.1f}")
            last = v
        parts.append(f'<text x="4" y="{y + 12}" class="row">device memory</text>'
                     f'<text x="4" y="{y + 26}" class="ev">max {vmax / 2**20:.1f} MiB</text>'
                     f'<polyline points="{" ".join(pts)}" fill="none" stroke="#3182bd"/>')
        y += h
    for i in range(11):  # time axis
        x = LEFT + i * (WIDTH - LEFT - 10) / 10
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="20" y2="{y}" stroke="#eee"/>'
                     f'<text x="{x:.1f}" y="16" class="ax">{(t1 - t0) * i / 10 / 1e3:.1f} ms</text>')
    return (f'<h3>{html.escape(title)}</h3><svg width="{WIDTH}" height="{y + 4}" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>')


def render(trace, zoom=None, title="trace"):
    events = trace["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    t0 = min(e["ts"] for e in spans)
    t1 = max(e["ts"] + e["dur"] for e in spans)
    body = [panel(events, t0, t1, f"{title}: whole trace, {(t1 - t0) / 1e3:.1f} ms")]
    if zoom:
        z = [e for e in spans if e["name"] == zoom]
        if z:
            e = max(z, key=lambda e: e["ts"])
            pad = e["dur"] * 0.02
            body.append(panel(events, e["ts"] - pad, e["ts"] + e["dur"] + pad,
                              f"the last '{zoom}': {e['dur'] / 1e3:.2f} ms"))
    legend = " ".join(f'<span style="background:{c};padding:1px 6px">{k}</span>'
                      for k, c in COLORS.items())
    return ("<!doctype html><html><head><meta charset='utf-8'><style>"
            "body{font-family:sans-serif;margin:8px;background:#fff}"
            ".row{font-size:12px;fill:#222}.ev{font-size:10px;fill:#111}"
            ".ax{font-size:10px;fill:#666}h3{margin:6px 0;font-size:14px}"
            "</style></head><body>" + f"<div style='font-size:12px'>{legend}</div>" +
            "".join(body) + "</body></html>")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--zoom", default=None)
    ap.add_argument("--title", default="torch_tpu.profiler")
    a = ap.parse_args()
    with open(a.trace) as f:
        trace = json.load(f)
    with open(a.out, "w") as f:
        f.write(render(trace, a.zoom, a.title))


if __name__ == "__main__":
    main()
