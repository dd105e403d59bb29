"""Exporting a model to a portable artifact, and running one back.

``torch_tpu.export(model, example_inputs, path)`` runs ``torch.export`` on
the model, then runs the exported graph on tpu under graph capture, so the
same lowerings that serve eager and ``torch.compile`` produce one StableHLO
module whose parameters are the graph's weights and inputs. The artifact is
a directory (format in docs/export.md):

    signature.json        inputs, outputs, programs and their parameter plans
    program_<i>.mlir      StableHLO (MLIR generic syntax), one per shape bucket
    weights.safetensors   every weight a program reads
    exe_<i>_<k>.pjrt      optional: compiled executables, keyed in
                          signature.json by the plugin's fingerprint

``torch_tpu.load(path)`` returns a callable that runs it on tpu tensors;
``build/tpurun`` and the C API ``include/torch_tpu/runner.h`` run it with no
Python.
"""
import copy
import inspect
import itertools
import json
import os

import torch
from torch.export.passes import move_to_device_pass
from torch.utils import _pytree as pytree

from . import _C
from .modes import _MODE_CODE

__all__ = ["export", "load", "ExportedModel", "FORMAT"]

FORMAT = "torch_tpu artifact 1"

# tt_dtype names (csrc/core/dtype.c) <-> torch dtypes, for what an artifact
# may hold.
_DTYPES = {
    "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16,
    "int32": torch.int32, "int64": torch.int64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
}
_NAMES = {v: k for k, v in _DTYPES.items()}


def _dtype_name(dt):
    if dt not in _NAMES:
        raise TypeError(f"torch_tpu.export: dtype {dt} cannot be exported "
                        f"(supported: {', '.join(_DTYPES)})")
    return _NAMES[dt]


def _input_names(model, args, kwargs):
    names = []
    fn = model.forward if isinstance(model, torch.nn.Module) else None
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)] if fn else []
    except (TypeError, ValueError):
        params = []
    for i in range(len(args)):
        names.append(params[i] if i < len(params) else f"input{i}")
    names.extend(kwargs)
    return names


def _resize(t, dim, size):
    """An example input with dimension dim of the given size (values repeat)."""
    if t.shape[dim] == size:
        return t
    reps = [1] * t.dim()
    reps[dim] = -(-size // t.shape[dim])
    return t.repeat(*reps).narrow(dim, 0, size).contiguous()


def _buckets(names, inputs, dynamic_shapes):
    """[{input index: {dim: size}}] per program (one program without dynamic dims)."""
    if not dynamic_shapes:
        return [{}]
    if isinstance(dynamic_shapes, dict):
        spec = {}
        for key, dims in dynamic_shapes.items():
            if key not in names:
                raise ValueError(f"torch_tpu.export: dynamic_shapes names '{key}', not an input "
                                 f"(inputs: {names})")
            spec[names.index(key)] = dims
    else:
        spec = {i: d for i, d in enumerate(dynamic_shapes) if d}
    n = None
    for i, dims in spec.items():
        for dim, sizes in dims.items():
            if not isinstance(sizes, (list, tuple)) or not sizes:
                raise ValueError("torch_tpu.export: a dynamic dimension is given as a list of "
                                 f"bucket sizes, got {sizes!r} for {names[i]} dim {dim}")
            if not 0 <= int(dim) < inputs[i].dim():
                raise ValueError(f"torch_tpu.export: {names[i]} has no dimension {dim}")
            if n is not None and len(sizes) != n:
                raise ValueError("torch_tpu.export: every dynamic dimension needs the same number "
                                 "of buckets (program b uses bucket b of each)")
            n = len(sizes)
    return [{i: {int(d): int(s[b]) for d, s in dims.items()} for i, dims in spec.items()}
            for b in range(n)]


def _state_tensors(gm):
    """(name, tensor) for every parameter, buffer and tensor constant of gm."""
    seen = set()
    for name, t in itertools.chain(gm.named_parameters(remove_duplicate=False),
                                   gm.named_buffers(remove_duplicate=False)):
        seen.add(name)
        yield name, t
    for mod_name, mod in gm.named_modules(remove_duplicate=False):
        for attr, v in vars(mod).items():
            name = f"{mod_name}.{attr}" if mod_name else attr
            if isinstance(v, torch.Tensor) and name not in seen and not attr.startswith("__"):
                seen.add(name)
                yield name, v


def _run_graph(gm, weights, args, kwargs, outs, out_names):
    with torch.no_grad():
        result = torch.func.functional_call(gm, weights, tuple(args), kwargs, strict=False,
                                            tie_weights=False)
        leaves, _ = pytree.tree_flatten_with_path(result)
        for path, leaf in leaves:
            if leaf is None:
                continue
            if not isinstance(leaf, torch.Tensor):
                raise TypeError(f"torch_tpu.export: output {pytree.keystr(path)} is a "
                                f"{type(leaf).__name__}; outputs must be tensors")
            outs.append(leaf.clone(memory_format=torch.contiguous_format))
            out_names.append(pytree.keystr(path).strip(".[]'\"") or f"out{len(out_names)}")


def _capture_program(gm, args, kwargs, names):
    """Runs gm on tpu under graph capture: (plan dict, output names,
    output tensors on CPU for reference, weight name per argument)."""
    state = list(_state_tensors(gm))
    tpu_of = {}
    weights = {}
    for name, t in state:
        if id(t) not in tpu_of:
            tpu_of[id(t)] = t.detach().to("tpu").clone()
        weights[name] = tpu_of[id(t)]
    flat_in = [t.detach().to("tpu").clone() for t in list(args) + list(kwargs.values())]
    tpu_args = flat_in[:len(args)]
    tpu_kwargs = dict(zip(kwargs, flat_in[len(args):]))
    _C._init()
    _C._capture_begin()
    previous = _C._thread_mode_enter(_MODE_CODE["fused"])
    outs, out_names = [], []
    try:
        # in a function of its own: the graph's own outputs and
        # intermediates must be dead when the capture ends, or they would
        # be program results too
        _run_graph(gm, weights, tpu_args, tpu_kwargs, outs, out_names)
    finally:
        _C._thread_mode_exit(previous)
        weight_names = list(weights)
        arg_tensors = list(weights.values()) + flat_in
        plan = _C._capture_end_export(arg_tensors, outs)
    if isinstance(plan, str):
        hint = ("the model keeps a tensor it computed (a cache attribute?)"
                if "neither a graph output" in plan else
                "an op needing a host value or a CPU fallback splits the graph; see "
                "torch_tpu.debug.fallback_report()")
        raise RuntimeError(f"torch_tpu.export: the graph is not one exportable program: {plan} "
                           f"({hint})")
    return plan, out_names, outs, weight_names, arg_tensors


def _program_entry(plan, weight_names, arg_tensors, n_weights, outs, index):
    params = []
    for kind, arg, dtype, numel, donated, raw in plan["params"]:
        if kind == "rng":
            raise RuntimeError("torch_tpu.export: the graph draws random numbers (dropout in "
                               "training mode?); call model.eval() before exporting")
        if donated:
            raise RuntimeError("torch_tpu.export: the graph writes one of its inputs or buffers "
                               "(a BatchNorm in training mode?); call model.eval() before exporting")
        if kind == "value":
            size = torch.empty((), dtype=_DTYPES[dtype]).element_size()
            params.append({"kind": "value", "dtype": dtype, "shape": [], "hex": raw[:size].hex()})
        elif arg < n_weights:
            params.append({"kind": "weight", "name": weight_names[arg], "dtype": dtype,
                           "shape": [numel]})
        else:
            params.append({"kind": "input", "index": arg - n_weights, "dtype": dtype,
                           "shape": [numel]})
    new_to_out = {}
    for k, (kind, j) in enumerate(plan["outputs"]):
        if kind != "new":
            raise RuntimeError(f"torch_tpu.export: output {k} is not computed by the program "
                               "(it returns an input or a weight unchanged)")
        new_to_out[j] = k
    results = []
    for kind, j in plan["results"]:
        if kind != "new":
            raise RuntimeError("torch_tpu.export: the graph writes one of its inputs or buffers "
                               "(a BatchNorm in training mode?); call model.eval() before exporting")
        results.append(new_to_out[j])
    return {
        "file": f"program_{index}.mlir",
        "inputs": [list(t.shape) for t in arg_tensors[n_weights:]],
        "outputs": [list(t.shape) for t in outs],
        "params": params,
        "results": results,
        "checks": [{"op": op, "code": code, "message": msg} for op, code, msg in plan["checks"]],
        "executables": [],
    }


def export(model, example_inputs, path, dynamic_shapes=None, *, executables=True):
    """Writes the artifact for ``model`` (an ``nn.Module`` or a
    ``torch.export.ExportedProgram``) called with ``example_inputs`` (a
    tuple of positional tensors, or a dict of keyword tensors) into the
    directory ``path``. ``dynamic_shapes``: per input (a tuple in argument
    order, or a dict by input name) a dict ``{dim: [size, ...]}``; program b
    is exported with every dynamic dimension at its b-th size, and a run
    picks the program whose sizes equal its inputs'. ``executables``: also
    store the program compiled for the current plugin, keyed by its
    fingerprint, so a runner on the same plugin skips compiling. Returns
    the signature (a dict)."""
    if isinstance(example_inputs, dict):
        args, kwargs = (), dict(example_inputs)
    else:
        args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
        kwargs = {}
    for t in list(args) + list(kwargs.values()):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"torch_tpu.export: example inputs must be tensors, got {type(t).__name__}")
    args = tuple(t.detach().cpu() for t in args)
    kwargs = {k: t.detach().cpu() for k, t in kwargs.items()}
    is_ep = isinstance(model, torch.export.ExportedProgram)
    names = _input_names(model if not is_ep else None, args, kwargs)
    if is_ep:
        names = [s.arg.name for s in model.graph_signature.input_specs
                 if s.kind == torch.export.graph_signature.InputKind.USER_INPUT] or names
    inputs = list(args) + list(kwargs.values())
    buckets = _buckets(names, inputs, dynamic_shapes)
    if is_ep and len(buckets) > 1:
        raise ValueError("torch_tpu.export: dynamic_shapes needs the nn.Module (each bucket is "
                         "exported at its own sizes)")
    if isinstance(model, torch.nn.Module) and any(
            t.device.type != "cpu" for t in itertools.chain(model.parameters(), model.buffers())):
        model = copy.deepcopy(model).cpu()  # traced on CPU; the caller's model stays where it is
    _C._init()
    os.makedirs(path, exist_ok=True)
    programs, all_weights, outputs = [], {}, None
    for b, sizes in enumerate(buckets):
        ins = list(inputs)
        for i, dims in sizes.items():
            for dim, size in dims.items():
                ins[i] = _resize(ins[i], dim, size)
        b_args, b_kwargs = tuple(ins[:len(args)]), dict(zip(kwargs, ins[len(args):]))
        ep = copy.deepcopy(model) if is_ep else torch.export.export(model, b_args, b_kwargs)
        # device kwargs and metadata assertions the trace burnt in name cpu
        ep = move_to_device_pass(ep, {"cpu": "tpu:0"})
        gm = ep.module()
        plan, out_names, outs, weight_names, arg_tensors = _capture_program(gm, b_args, b_kwargs, names)
        entry = _program_entry(plan, weight_names, arg_tensors, len(weight_names), outs, b)
        for p in entry["params"]:
            if p["kind"] == "weight" and p["name"] not in all_weights:
                all_weights[p["name"]] = arg_tensors[weight_names.index(p["name"])].cpu().contiguous()
        with open(os.path.join(path, entry["file"]), "w") as f:
            f.write(plan["text"])
        blob = plan["executable"] if executables else None
        if blob:
            exe_file = f"exe_{b}_0.pjrt"
            with open(os.path.join(path, exe_file), "wb") as f:
                f.write(blob)
            entry["executables"].append({"fingerprint": executable_key(), "file": exe_file})
        programs.append(entry)
        outputs = [{"name": n, "dtype": _dtype_name(t.dtype)} for n, t in zip(out_names, outs)]
    from safetensors.torch import save_file
    save_file({k: v.clone() for k, v in all_weights.items()}, os.path.join(path, "weights.safetensors"),
              metadata={"format": FORMAT})
    dynamic = {}
    for sizes in buckets:
        for i, dims in sizes.items():
            for dim, size in dims.items():
                dynamic.setdefault(i, {}).setdefault(str(dim), []).append(size)
    sig = {
        "format": FORMAT,
        "stablehlo": {
            "syntax": "MLIR generic",
            "dialect": "stablehlo",
            # the version of the plugin it was exported with: a runner refuses
            # plugins whose StableHLO is older
            "version": _stablehlo_version(),
        },
        "exported_with": {"torch": torch.__version__, "platform": _C._platform_name(),
                          "plugin_fingerprint": _C._plugin_fingerprint()},
        "inputs": [{"name": n, "dtype": _dtype_name(t.dtype), "shape": list(t.shape),
                    "dynamic": dynamic.get(i, {})} for i, (n, t) in enumerate(zip(names, inputs))],
        "outputs": outputs,
        "weights": "weights.safetensors",
        "programs": programs,
    }
    with open(os.path.join(path, "signature.json"), "w") as f:
        json.dump(sig, f, indent=1)
    return sig


def executable_key():
    """What stored executables are keyed by (csrc/runner/runner.c computes
    the same): the plugin's fingerprint and, on the CPU plugin, an FNV-1a
    64 hash of /proc/cpuinfo's first flags line (XLA:CPU compiles for the
    host's instruction set)."""
    fp = _C._plugin_fingerprint()
    if _C._platform_name() != "cpu":
        return fp
    h = 0xcbf29ce484222325
    try:
        with open("/proc/cpuinfo", "rb") as f:
            for line in f:
                if line.startswith(b"flags"):
                    for c in line.rstrip(b"\n"):
                        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
                    break
    except OSError:
        pass
    return f"{fp}|cpu-flags:{h:016x}"


def _stablehlo_version():
    v = _C._plugin_attribute("stablehlo_current_version") if hasattr(_C, "_plugin_attribute") else None
    return v or ""


class ExportedModel:
    """An artifact loaded for tpu: call it with tensors in signature order
    (CPU or tpu); returns a tensor (one output) or a tuple of tensors."""

    def __init__(self, path, device=None):
        self.path = path
        with open(os.path.join(path, "signature.json")) as f:
            self.signature = json.load(f)
        if self.signature.get("format") != FORMAT:
            raise ValueError(f"torch_tpu.load: {path}: format {self.signature.get('format')!r}, "
                             f"this torch_tpu reads {FORMAT!r}")
        from safetensors.torch import load_file
        _C._init()
        self.device = torch.device("tpu", device if device is not None else _C._current_device())
        cpu = load_file(os.path.join(path, self.signature["weights"]))
        self.weights = {k: v.to(self.device) for k, v in cpu.items()}
        self.input_names = [i["name"] for i in self.signature["inputs"]]
        self.output_names = [o["name"] for o in self.signature["outputs"]]
        self._replays = {}

    def _program_for(self, inputs):
        shapes = [list(t.shape) for t in inputs]
        for b, prog in enumerate(self.signature["programs"]):
            if prog["inputs"] == shapes:
                return b, prog
        want = [p["inputs"] for p in self.signature["programs"]]
        raise ValueError(f"torch_tpu.load: inputs of shapes {shapes} match no exported program "
                         f"(exported shapes: {want})")

    def _replay(self, b, prog):
        if b in self._replays:
            return self._replays[b]
        names = sorted({p["name"] for p in prog["params"] if p["kind"] == "weight"})
        args = [self.weights[n] for n in names]
        inputs_meta = self.signature["inputs"]
        args += [torch.empty(s, dtype=_DTYPES[m["dtype"]], device=self.device)
                 for s, m in zip(prog["inputs"], inputs_meta)]
        outs = [torch.empty(s, dtype=_DTYPES[m["dtype"]], device=self.device)
                for s, m in zip(prog["outputs"], self.signature["outputs"])]
        params = []
        for p in prog["params"]:
            if p["kind"] == "weight":
                params.append(("storage", names.index(p["name"]), p["dtype"], p["shape"][0], b""))
            elif p["kind"] == "input":
                params.append(("storage", len(names) + p["index"], p["dtype"], p["shape"][0], b""))
            else:
                params.append(("value", -1, p["dtype"], 1, bytes.fromhex(p["hex"])))
        blob = None
        fp = executable_key()
        for e in prog.get("executables", []):
            if e["fingerprint"] == fp:
                with open(os.path.join(self.path, e["file"]), "rb") as f:
                    blob = f.read()
        with open(os.path.join(self.path, prog["file"])) as f:
            text = f.read()
        checks = [(c["op"], c["code"], c["message"]) for c in prog["checks"]]
        capsule = _C._exported_load(text, blob, self.device.index, params, prog["results"], checks,
                                    args, outs)
        self._replays[b] = (capsule, args[:len(names)])
        return self._replays[b]

    def __call__(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"torch_tpu.load: the program takes {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(inputs)}")
        ready = []
        for t, meta in zip(inputs, self.signature["inputs"]):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"torch_tpu.load: input {meta['name']} must be a tensor")
            if t.dtype != _DTYPES[meta["dtype"]]:
                raise TypeError(f"torch_tpu.load: input {meta['name']} has dtype {t.dtype}, "
                                f"the program takes {_DTYPES[meta['dtype']]}")
            t = t.to(self.device)
            if not t.is_contiguous() or t.untyped_storage().nbytes() != t.numel() * t.element_size():
                t = t.clone(memory_format=torch.contiguous_format)
            ready.append(t)
        b, prog = self._program_for(ready)
        capsule, weights = self._replay(b, prog)
        out = _C._replay_run(capsule, weights + ready)
        if out is None:
            raise RuntimeError("torch_tpu.load: the program refused its arguments (its executable "
                               "was unloaded, or an input aliases another)")
        return out[0] if len(out) == 1 else tuple(out)


def load(path, device=None):
    """The artifact at ``path`` as a callable running on tpu tensors."""
    return ExportedModel(path, device)
