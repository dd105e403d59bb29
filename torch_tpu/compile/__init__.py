"""`torch.compile(model, backend="tpu")`: Dynamo captures FX, AOTAutograd
splits forward and backward (with PyTorch's decompositions for the ops we do
not lower), and each resulting aten graph runs inside one
`torch_tpu._graph.capture()` region, so the forward, the backward and an
inference graph are each one StableHLO program. Ops without a lowering split
the graph: the lowerable parts stay one program each and the rest runs
eagerly (CPU fallback); `last_report()` shows the parts.

Options (`torch.compile(..., backend="tpu", options={...})`):

- ``fallback``: ``"allow"`` (default) runs ops without a lowering eagerly;
  ``"raise"`` raises NotImplementedError naming them when the graph is compiled.
- ``explain``: ``True`` prints each graph's report at its first call (as does
  ``TORCH_TPU_LOG_COMPILE_GRAPHS=1``).
- ``dynamic_buckets``: for dims Dynamo made dynamic (``dynamic=True`` or
  ``torch._dynamo.mark_dynamic``): ``"pow2"`` (default: the next power of two,
  at least ``min_bucket``), a list of sizes, or ``"off"`` (every size exact).
- ``min_bucket`` (default 1) and ``max_bucket`` (default 4096): sizes above
  ``max_bucket`` are compiled exactly.

See docs/compile.md.
"""
import dataclasses
import importlib.abc
import importlib.util
import sys
import time

import torch

from .. import _C

from . import _report
from ._report import last_report, reports, reset_reports
from ._runner import CompiledGraph
from ._support import decompositions

__all__ = ["tpu_backend", "last_report", "reports", "reset_reports", "Options"]


@dataclasses.dataclass(frozen=True)
class Options:
    fallback: str = "allow"
    explain: bool = False
    dynamic_buckets: object = "pow2"
    min_bucket: int = 1
    max_bucket: int = 4096

    @classmethod
    def parse(cls, options) -> "Options":
        options = dict(options or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"torch_tpu.compile: unknown option(s) {unknown}; known: {sorted(known)}")
        opts = cls(**options)
        if opts.fallback not in ("allow", "raise"):
            raise ValueError(f"torch_tpu.compile: fallback must be 'allow' or 'raise', got {opts.fallback!r}")
        b = opts.dynamic_buckets
        if not (b in ("pow2", "off") or (isinstance(b, (list, tuple)) and b
                                         and all(isinstance(v, int) and v > 0 for v in b))):
            raise ValueError("torch_tpu.compile: dynamic_buckets must be 'pow2', 'off' or a list "
                             f"of positive ints, got {b!r}")
        if isinstance(b, list):
            opts = dataclasses.replace(opts, dynamic_buckets=tuple(sorted(b)))
        return opts


def _dump_graph(kind, gm, inputs):
    def describe(a):
        if isinstance(a, torch.Tensor):
            return f"{str(a.dtype).replace('torch.', '')}{list(a.shape)} on {a.device}"
        return repr(a)
    head = "".join(f"# input {i}: {describe(a)}\n" for i, a in enumerate(inputs))
    try:
        body = gm.print_readable(print_output=False)
    except Exception:  # noqa: BLE001 (older FX: the code alone)
        body = gm.code
    _C._dump_note(kind, type(gm).__name__, ".py", head + body)
    from .. import modes
    _C._dump_fill_source(modes._user_line())


def tpu_backend(gm: torch.fx.GraphModule, example_inputs, options=None, **_ignored):
    """The Dynamo backend registered as "tpu"."""
    from torch._functorch.aot_autograd import aot_module_simplified
    from ._padding import BucketedGraph  # these import sympy: only when compiling
    from ._shape_analysis import bucketing_plan
    opts = Options.parse(options)
    report = _report.new_report()
    t0 = time.perf_counter()

    saved_atoms = {}  # forward output name -> atoms, for the backward's saved inputs

    dumping = _C._dump_enabled()
    if dumping:  # TORCH_TPU_DUMP_DIR: the graph Dynamo hands us, before AOTAutograd
        _dump_graph("fx_dynamo", gm, example_inputs)

    def compiler(kind):
        def compile_graph(aten_gm, aten_inputs):
            if dumping:  # after AOTAutograd (aten ops, decomposed, split fw/bw)
                _dump_graph(f"fx_aot_{kind}", aten_gm, aten_inputs)
            plan = bucketing_plan(aten_gm, aten_inputs, opts,
                                  known=saved_atoms if kind == "backward" else None)
            if plan is not None:
                if kind == "forward":
                    saved_atoms.update(plan.named_outputs)
                return BucketedGraph(aten_gm, plan, kind, report, opts)
            graph = CompiledGraph(aten_gm, kind, report, opts)
            if any(isinstance(a, torch.SymInt) for a in aten_inputs):
                graph.graph_report.bucketing = "exact"
            return graph
        return compile_graph

    try:
        compiled = aot_module_simplified(
            gm, example_inputs,
            fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
            inference_compiler=compiler("inference"),
            decompositions=decompositions(), keep_inference_input_mutations=True)
    except BaseException:
        # Dynamo retries (or reports) a failed trace; keep only graphs that run.
        _report.drop(report)
        raise
    report.compile_s = time.perf_counter() - t0
    return compiled


_REGISTRY = "torch._dynamo.backends.registry"


def _register():
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend
    if "tpu" not in _COMPILER_FNS:
        register_backend(name="tpu")(tpu_backend)


class _RegisterWhenDynamoLoads(importlib.abc.MetaPathFinder):
    """Importing Dynamo costs over a second, so `import torch_tpu` does not:
    the backend is registered right after Dynamo's backend registry loads
    (torch.compile loads it before looking the name up)."""

    def find_spec(self, name, path=None, target=None):
        if name != _REGISTRY:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            _register()
        spec.loader.exec_module = exec_then_register
        return spec


if _REGISTRY in sys.modules:
    _register()
else:
    sys.meta_path.insert(0, _RegisterWhenDynamoLoads())
