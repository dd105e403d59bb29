"""Compiled-graph callables: an AOTAutograd graph run inside one
`_graph.capture()` region (one program), or, when some ops cannot be
lowered, split into lowerable parts (one program each) with the rest run
eagerly between them."""
import time

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from .. import _graph
from . import _report
from ._host import split_host_prelude
from ._support import node_runs_natively, overload_name


_MAX_REPLAYS = 8
_NUMBERS = (int, float, bool)


def _split(values):
    """Tensors (and Nones) in order, and {position: value} of the Python
    numbers among `values` (sizes, for graphs with dynamic dims); None when a
    value is neither."""
    tensors, numbers = [], {}
    for i, v in enumerate(values):
        if v is None or isinstance(v, torch.Tensor):
            tensors.append(v)
        elif isinstance(v, _NUMBERS):
            numbers[i] = v
        else:
            return None
    return tensors, numbers


def _key(numbers):
    return tuple((i, type(v), v) for i, v in sorted(numbers.items()))


class _Support(OperatorSupportBase):
    def is_node_supported(self, submodules, node):
        return node.op == "call_function" and node_runs_natively(node)


def _aten_ops(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function"
            and isinstance(n.target, torch._ops.OpOverload)]


class _CapturedPart(torch.nn.Module):
    """Runs a lowerable part inside one capture region and tallies it. When
    the part is the whole graph it also keeps replays of its program (up to
    _MAX_REPLAYS argument layouts): later calls launch the program directly
    instead of dispatching every op again."""

    def __init__(self, gm, tally, whole_graph=False):
        super().__init__()
        self.gm = gm
        self.tally = tally
        # (handle, output container type, key of the number arguments,
        #  {output position: number}, output count)
        self.replays = []
        self.replay_why_not = "" if whole_graph else "the graph is split into parts"

    def forward(self, *args):
        want = not self.replay_why_not and len(self.replays) < _MAX_REPLAYS
        split = _split(args) if want else None
        if want and split is None:
            self.replay_why_not = "an argument is neither a tensor nor a number"
            want = False
        with _graph.capture(replay_args=split[0] if want else None) as cap:
            out = self.gm(*args)
            out_split = _split(out) if want and isinstance(out, (list, tuple)) else None
            # Number arguments (sizes) only shape the program: a replay serves
            # calls with the same numbers, whose number outputs are the same.
            cap.outputs = out_split[0] if out_split else None
        if want:
            if cap.replay is not None:
                self.replays.append((cap.replay, type(out), _key(split[1]), out_split[1], len(out)))
            else:  # a property of the graph, not of these arguments: stop trying
                self.replay_why_not = cap.replay_why_not or "no outputs list"
        self.tally(cap)
        return out

    def replay(self, args):
        """The outputs of a kept replay matching `args`, or None."""
        split = _split(args)
        if split is None:
            return None
        key = _key(split[1])
        for handle, container, k, numbers, n_out in self.replays:
            if k != key:
                continue
            outs = _graph.replay(handle, split[0])
            if outs is None:
                continue
            it = iter(outs)
            return container(numbers[i] if i in numbers else next(it) for i in range(n_out))
        return None


class CompiledGraph:
    """Boxed callable (AOTAutograd's calling convention: one list of args)."""
    _boxed_call = True

    def __init__(self, gm, kind, report, options):
        self.options = options
        # CPU scalar math (a compiled optimizer's step counters) runs as a
        # host prelude, so that the device part's arguments are all tpu
        # tensors and it can be replayed.
        self.host = split_host_prelude(gm)
        if self.host is not None:
            gm = self.host.device
        ops = _aten_ops(gm)
        eager = [n for n in ops if not node_runs_natively(n)]
        if eager and options.fallback == "raise":
            names = sorted({overload_name(n.target) for n in eager})
            raise NotImplementedError(
                f"torch_tpu.compile: the {kind} graph has ops without a tpu lowering: "
                f"{', '.join(names)} (options fallback='raise'; use 'allow' to run them eagerly)")
        self.graph_report = _report.GraphReport(
            kind=kind, ops=len(ops), partitions=[], eager_ops=[overload_name(n.target) for n in eager],
            host_ops=0 if self.host is None else len(_aten_ops(self.host.host)))
        report.graphs.append(self.graph_report)
        self._programs = self._breaks = None
        if not eager:
            self.graph_report.partitions = [len(ops)]
            self.module = _CapturedPart(gm, self._tally, whole_graph=True)
        else:
            self.module = self._partition(gm)

    def _partition(self, gm):
        parted = CapabilityBasedPartitioner(
            gm, _Support(), allows_single_node_partition=True).partition_and_fuse()
        for node in list(parted.graph.nodes):
            if node.op == "call_module" and node.target.startswith("fused_"):
                sub = getattr(parted, node.target)
                n_ops = len(_aten_ops(sub))
                if n_ops == 0:
                    continue
                self.graph_report.partitions.append(n_ops)
                setattr(parted, node.target, _CapturedPart(sub, self._tally))
        parted.recompile()
        return parted

    def _tally(self, cap):
        if self._programs is not None:
            self._programs = None if cap.programs is None else self._programs + cap.programs
        self._breaks.extend(cap.breaks)
        self.graph_report.compiles += getattr(cap, "compiles", 0)

    def run(self, args):
        if self.host is None:
            return self._run_device(args)
        device_args, host_out = self.host.run_host(args)
        return self.host.merge(host_out, self._run_device(device_args))

    def _run_device(self, args):
        if isinstance(self.module, _CapturedPart) and self.module.replays:
            out = self.module.replay(args)
            if out is not None:
                self.graph_report.calls += 1
                self.graph_report.replays += 1
                self.graph_report.programs = 1
                self.graph_report.breaks = []
                return out
        self._programs, self._breaks = 0, []
        first = self.graph_report.calls == 0
        t0 = time.perf_counter() if first else 0.0
        out = self.module(*args)
        r = self.graph_report
        r.calls += 1
        r.programs, r.breaks = self._programs, list(self._breaks)
        if isinstance(self.module, _CapturedPart):
            r.replay_why_not = self.module.replay_why_not
        if first:
            r.first_call_s = time.perf_counter() - t0
            if _report.log_enabled(self.options):
                _report.log(r)
        return out

    def __call__(self, args):
        return self.run(args)
