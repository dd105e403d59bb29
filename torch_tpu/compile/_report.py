"""What the backend did with each graph: partitions, breaks, programs,
compile time. `torch_tpu.compile.last_report()` returns the newest one."""
import dataclasses
import sys
import threading

from .. import _C


@dataclasses.dataclass
class GraphReport:
    """One AOTAutograd graph (forward, backward or inference)."""
    kind: str
    ops: int                              # aten op nodes in the graph
    partitions: list                      # op count of each part run as one program
    eager_ops: list                       # ops outside every part (run eagerly, CPU fallback)
    host_ops: int = 0                     # CPU scalar ops run before the graph (host prelude)
    calls: int = 0
    first_call_s: float = 0.0             # first call: capture + XLA compile + run
    programs: object = None               # programs launched by the latest call (None: unknown)
    compiles: int = 0                     # programs compiled for this graph (cache misses), all calls
    breaks: list = dataclasses.field(default_factory=list)  # (op, reason) of the latest call
    buckets: dict = dataclasses.field(default_factory=dict)  # bucketed size -> calls
    bucketing: str = "static"             # static | bucketed | exact (why, when not bucketed)
    replays: int = 0                      # calls that launched the kept program directly
    replay_why_not: str = ""              # why calls are not replayed (empty: they are)

    def summary(self) -> str:
        parts = "+".join(str(p) for p in self.partitions) or "0"
        line = (f"{self.kind}: {self.ops} ops in {len(self.partitions)} part(s) [{parts}], "
                f"programs/call={self.programs}, compiles={self.compiles}, calls={self.calls}, "
                f"first call {self.first_call_s * 1e3:.0f} ms, replays={self.replays}")
        if self.replay_why_not:
            line += f" (not replayed: {self.replay_why_not})"
        if self.host_ops:
            line += f", host prelude: {self.host_ops} CPU scalar ops"
        if self.eager_ops:
            line += f", eager ops: {', '.join(sorted(set(self.eager_ops)))}"
        if self.breaks:
            line += f", breaks: {self.breaks}"
        if self.bucketing != "static":
            line += f", shapes: {self.bucketing}"
            if self.buckets:
                line += f" {dict(sorted(self.buckets.items()))}"
        return line


@dataclasses.dataclass
class CompileReport:
    """One Dynamo graph handed to the backend (a graph break makes several)."""
    index: int
    graphs: list = dataclasses.field(default_factory=list)
    compile_s: float = 0.0                # AOTAutograd tracing and partitioning
    not_bucketed: str = ""                # why dynamic dims are compiled per exact size

    def __str__(self):
        lines = [f"torch_tpu.compile graph {self.index} (traced in {self.compile_s * 1e3:.0f} ms)"]
        lines += ["  " + g.summary() for g in self.graphs]
        if self.not_bucketed:
            lines.append(f"  dynamic dims compiled per exact size: {self.not_bucketed}")
        return "\n".join(lines)


_lock = threading.Lock()
_reports: list = []


def new_report() -> CompileReport:
    with _lock:
        r = CompileReport(index=len(_reports))
        _reports.append(r)
        return r


def drop(report: CompileReport) -> None:
    with _lock:
        if report in _reports:
            _reports.remove(report)


def last_report():
    """The report of the newest graph the backend compiled (None before any)."""
    with _lock:
        return _reports[-1] if _reports else None


def reports() -> list:
    """Every report since the start (or the last reset_reports())."""
    with _lock:
        return list(_reports)


def reset_reports() -> None:
    with _lock:
        _reports.clear()


def log_enabled(options) -> bool:
    return bool(options.explain) or _C._setting("TORCH_TPU_LOG_COMPILE_GRAPHS")


def log(graph: GraphReport) -> None:
    print("[torch_tpu.compile] " + graph.summary(), file=sys.stderr)


_ineligible: list = []


def note_ineligible(why: str) -> None:
    """Records why a dynamic graph is compiled per exact size."""
    with _lock:
        _ineligible.append(why)
        if _reports:
            _reports[-1].not_bucketed = why
