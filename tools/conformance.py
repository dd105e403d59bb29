"""Op conformance against PyTorch's own OpInfo database.

For every OpInfo (op_db, which already holds the linalg/fft/special/signal
databases, plus the foreach databases) and every dtype in
{float32, bfloat16, float16, int64, int32, bool} that the OpInfo supports on
CPU, runs its sample inputs on `tpu` and on CPU and compares. Forward for all
dtypes; backward (gradients w.r.t. every input that requires grad) for
float32; error inputs (`op.error_inputs`) once per OpInfo.

Each (OpInfo, dtype, direction) case lands in one class:
  native_pass       every sample matches CPU and no op fell back to CPU
  fallback_pass     every sample matches CPU, some op ran through the CPU fallback
  mismatch          wrong values / shape / dtype / device / view strides
  expected_error    CPU raises on every sample and tpu raises the same type
  unexpected_error  tpu raises where CPU does not, or a different exception type
  crash             the worker process died (segfault, abort) or hung (timeout)

Cases run in persistent worker subprocesses, one case at a time; when a
worker dies or a case exceeds --timeout the case is recorded as a crash and
the worker is restarted, so the run goes on.

    python tools/conformance.py                      # full run -> docs/op_coverage.md
    python tools/conformance.py --mode fused         # Fused eager -> docs/op_coverage_fused.md
    python tools/conformance.py --ops softmax --dtypes float32 --json /tmp/r.json

Library use (the fast test): `run_case(key, dtype, direction, ...)` runs one
case in-process and returns its result dict.
"""
import argparse
import collections
import itertools
import json
import os
import select
import subprocess
import sys
import threading
import time
import traceback

import conformance_report
from conformance_compare import (_Mismatch, _all_leaves, _compare, _leaves, _map,  # noqa: F401
                                 relax_tied_indices, within_fp64_error)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# complex64 is measured by default (one sample, as the minor dtypes);
# complex128 on request (--dtypes complex128)
DTYPE_NAMES = ["float32", "bfloat16", "float16", "int64", "int32", "bool", "complex64"]
CLASSES = ["native_pass", "fallback_pass", "mismatch", "expected_error",
           "unexpected_error", "crash"]
DIRECTIONS = ["forward", "backward", "error"]

# Ops whose values are random or uninitialized: only shape, dtype and device
# are compared (their values cannot match CPU's generator).
RANDOM_NAME_PARTS = ("dropout", "rand", "bernoulli", "multinomial", "normal", "uniform",
                     "cauchy", "exponential", "geometric", "log_normal", "rrelu",
                     "empty", "fractional_max_pool", "poisson",
                     "multi_head_attention_forward")  # its samples use dropout

_MARK = "@@CONF@@ "
FOREACH_TENSORS = 3
MINOR_DTYPES = ("float16", "int32", "bool", "complex64", "complex128")


# ---------------------------------------------------------------- op catalogue

_OPS = None


def op_key(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def all_opinfos():
    """{key: OpInfo} for op_db plus the foreach databases (key = name[.variant])."""
    global _OPS
    if _OPS is None:
        from torch.testing._internal import common_methods_invocations as cmi
        dbs = [cmi.op_db]
        for name in ("foreach_unary_op_db", "foreach_binary_op_db", "foreach_pointwise_op_db",
                     "foreach_reduce_op_db", "foreach_other_op_db"):
            dbs.append(getattr(cmi, name, []))
        ops = {}
        for op in itertools.chain(*dbs):
            key = op_key(op)
            if key in ops:  # e.g. a foreach op listed twice
                continue
            ops[key] = op
        _OPS = ops
    return _OPS


def _dtype(name):
    import torch
    return getattr(torch, name)


def supported_cases(op, dtype_names, directions):
    """The (dtype, direction) pairs of an OpInfo this runner measures."""
    import torch
    cpu = op.supported_dtypes("cpu")
    out = []
    for dn in dtype_names:
        if _dtype(dn) not in cpu:
            continue
        if "forward" in directions:
            out.append((dn, "forward"))
        if dn == "float32" and "backward" in directions and op.supports_autograd \
                and torch.float32 in op.supported_backward_dtypes("cpu"):
            out.append((dn, "backward"))
    if "error" in directions and op.error_inputs_func is not None:
        out.append(("any", "error"))
    return out


def is_random(op):
    import torch
    name = op.name.split(".")[-1]
    if any(p in op.name for p in RANDOM_NAME_PARTS):
        return True
    packet = getattr(torch.ops.aten, op.aten_name or name, None) if hasattr(op, "aten_name") else None
    try:
        if packet is not None:
            for ov in packet.overloads():
                if torch.Tag.nondeterministic_seeded in getattr(packet, ov).tags:
                    return True
    except Exception:
        pass
    return False


def op_tolerance(op, dtype):
    """(atol, rtol): the largest toleranceOverride the OpInfo declares for the
    (input) dtype in any of its decorators, (0, 0) if none; each output is
    compared with the larger of this and torch.testing's defaults for the
    output's dtype."""
    from torch.testing._internal.common_device_type import toleranceOverride
    atol, rtol = 0.0, 0.0
    for d in getattr(op, "decorators", ()) or ():
        for dec in getattr(d, "decorators", [d]):
            if isinstance(dec, toleranceOverride) and dtype in dec.d:
                t = dec.d[dtype]
                atol, rtol = max(atol, t.atol), max(rtol, t.rtol)
    return atol, rtol


# ---------------------------------------------------------------- one case

def _leaf_clone(t):
    c = t.detach().clone()
    return c.requires_grad_(t.requires_grad)


def _to_tpu(t):
    c = t.detach().to("tpu")
    return c.requires_grad_(t.requires_grad)


def _aliasing_to_tpu():
    """A tensor copier that keeps aliasing: CPU tensors sharing a storage
    become views of one tpu copy of that storage (same sizes, strides,
    offset), so out= arguments that overlap an input still do on tpu."""
    import torch
    storages = {}

    def copy(t):
        if t.device.type != "cpu" or t.layout != torch.strided or t.requires_grad:
            return _to_tpu(t)
        st = t.untyped_storage()
        base = storages.get(st.data_ptr())
        if base is None:
            flat = torch.empty(0, dtype=t.dtype).set_(st, 0, (st.nbytes() // t.element_size(),), (1,))
            base = storages[st.data_ptr()] = flat.to("tpu")
        if base.dtype != t.dtype:
            return _to_tpu(t)
        return base.as_strided(t.shape, t.stride(), t.storage_offset())
    return copy


def _tpu_inputs(inp, keep_aliasing=False):
    """(input, args, kwargs) on tpu: tensors copied, device= kwargs retargeted."""
    import torch
    x, args, kwargs = _map(inp, _aliasing_to_tpu() if keep_aliasing else _to_tpu)
    kwargs = {k: (torch.device("tpu") if k == "device" and v is not None else v)
              for k, v in kwargs.items()}
    return x, args, kwargs


def describe(sample):
    import torch

    def d(x):
        if isinstance(x, torch.Tensor):
            s = f"T{list(x.shape)}"
            if not x.is_contiguous() and x.numel() > 1:
                s += "nc"
            return s
        if isinstance(x, (list, tuple)):
            if len(x) > 4 and all(isinstance(e, torch.Tensor) for e in x):
                return f"[{len(x)} tensors, first {d(x[0])}]"
            return "[" + ", ".join(d(e) for e in x) + "]"
        if isinstance(x, dict):
            return "{" + ", ".join(f"{k}={d(v)}" for k, v in x.items()) + "}"
        r = repr(x)
        return r if len(r) <= 40 else r[:37] + "..."
    parts = [d(sample.input)] + [d(a) for a in sample.args]
    parts += [f"{k}={d(v)}" for k, v in sample.kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _fallbacks():
    import torch_tpu
    return dict(torch_tpu.debug.fallback_report())


def _reset_fallbacks():
    import torch_tpu
    torch_tpu.debug.reset_fallback_report()


class _OpTracer:
    """Records the aten overloads that reach the backend (for --trace)."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        outer = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                n = func.__name__
                if n.endswith(".default"):
                    n = n[:-len(".default")]
                outer.ops.add(n)
                return func(*args, **(kwargs or {}))
        self.ops = set()
        self.mode = Mode()


def _exc_name(e):
    return type(e).__name__


def _run_forward_sample(op, sample, dtype, random, trace):
    import torch
    atol, rtol = op_tolerance(op, dtype)
    cpu_in = _map((sample.input, sample.args, sample.kwargs), _leaf_clone)
    tpu_in = _tpu_inputs(cpu_in)
    torch.manual_seed(0)
    try:
        expected = op(cpu_in[0], *cpu_in[1], **cpu_in[2])
        cpu_exc = None
    except Exception as e:  # noqa: BLE001
        cpu_exc = e
    _reset_fallbacks()
    torch.manual_seed(0)
    try:
        actual = op(tpu_in[0], *tpu_in[1], **tpu_in[2])
        tpu_exc = None
    except Exception as e:  # noqa: BLE001
        tpu_exc = e
    fb = _fallbacks()
    res = {"fallbacks": fb}
    if cpu_exc is not None:
        if tpu_exc is not None and type(tpu_exc) is type(cpu_exc):
            res["cls"] = "expected_error"
        else:
            res["cls"] = "unexpected_error"
            res["detail"] = (f"CPU raised {_exc_name(cpu_exc)}, tpu "
                             + (f"raised {_exc_name(tpu_exc)}: {_short(tpu_exc)}" if tpu_exc else "did not raise"))
        return res
    if tpu_exc is not None:
        res["cls"] = "unexpected_error"
        res["detail"] = f"tpu raised {_exc_name(tpu_exc)}: {_short(tpu_exc)}"
        return res
    if not random:
        actual = relax_tied_indices(op.name, cpu_in[0], cpu_in[1], cpu_in[2], actual, expected)
    to_cpu = op.name == "to" and any(
        (isinstance(v, str) and v == "cpu") or (isinstance(v, torch.device) and v.type == "cpu")
        for v in _all_leaves(tpu_in))
    try:
        _compare(actual, expected, atol, rtol, values=not random, inputs=cpu_in, to_cpu=to_cpu)
    except _Mismatch as m:
        # values off by more than the tolerance: the float64-reference rule for
        # float32/complex64 (summation order of a matmul; see within_fp64_error)
        ref64 = None
        if not random and "not close" in str(m) and dtype in (torch.float32, torch.complex64):
            ref64 = _fp64_forward(op, cpu_in)
        if ref64 is None or not within_fp64_error(actual, expected, ref64):
            res["cls"] = "mismatch"
            res["detail"] = str(m)
            return res
        res["fp64_ref"] = True
    except Exception as e:  # noqa: BLE001 -- reading the result back failed
        res["cls"] = "unexpected_error"
        res["detail"] = f"reading tpu output raised {_exc_name(e)}: {_short(e)}"
        return res
    res["cls"] = "fallback_pass" if fb else "native_pass"
    if trace and not fb:
        tr = _OpTracer()
        try:
            tpu_in2 = _tpu_inputs(cpu_in)
            with tr.mode:
                op(tpu_in2[0], *tpu_in2[1], **tpu_in2[2])
            res["ops"] = sorted(tr.ops)
        except Exception:  # noqa: BLE001
            pass
    return res


def _fp64_forward(op, cpu_in):
    """The sample's CPU output computed from inputs widened to float64 /
    complex128 (None if the op refuses them)."""
    import torch

    def up(t):
        if t.is_complex():
            return t.detach().to(torch.complex128)
        return t.detach().double() if t.is_floating_point() else t.detach().clone()
    inp = _map(cpu_in, up)
    try:
        torch.manual_seed(0)
        return op(inp[0], *inp[1], **inp[2])
    except Exception:  # noqa: BLE001
        return None


def _fp64_grads(cpu_in, grads):
    """The sample's CPU gradients computed in float64 (None if the op
    refuses float64); same grad_outputs, rounded from the same draws."""
    import torch

    def up(t):
        d = t.detach().double() if t.is_floating_point() else t.detach().clone()
        return d.requires_grad_(t.requires_grad)
    inp = _map(cpu_in, up)
    try:
        return grads(inp, [t for t in _leaves(inp) if t.requires_grad], "cpu", torch.float64)
    except Exception:  # noqa: BLE001
        return None


def _run_backward_sample(op, sample, random, trace=False):
    import torch
    dtype = torch.float32
    atol, rtol = op_tolerance(op, dtype)
    cpu_in = _map((sample.input, sample.args, sample.kwargs), _leaf_clone)
    cpu_req = [t for t in _leaves(cpu_in) if t.requires_grad]
    if not cpu_req:
        return None
    tpu_in = _tpu_inputs(cpu_in)
    tpu_req = [t for t in _leaves(tpu_in) if t.requires_grad]

    def grads(inp, req, device, up=None):
        torch.manual_seed(0)
        out = op(inp[0], *inp[1], **inp[2])
        outs = [o for o in _leaves(out) if o.requires_grad and o.is_floating_point()]
        if not outs:
            return None
        g = torch.Generator().manual_seed(1)
        gos = [torch.randn(o.shape, generator=g, dtype=dtype).to(device, up or o.dtype) for o in outs]
        return torch.autograd.grad(outs, req, gos, allow_unused=True, materialize_grads=True)

    try:
        expected = grads(cpu_in, cpu_req, "cpu")
        cpu_exc = None
    except Exception as e:  # noqa: BLE001
        cpu_exc = e
    if cpu_exc is None and expected is None:
        return None  # no differentiable output
    _reset_fallbacks()
    try:
        actual = grads(tpu_in, tpu_req, "tpu")
        tpu_exc = None
    except Exception as e:  # noqa: BLE001
        tpu_exc = e
    fb = _fallbacks()
    res = {"fallbacks": fb}
    if cpu_exc is not None:
        if tpu_exc is not None and type(tpu_exc) is type(cpu_exc):
            res["cls"] = "expected_error"
        else:
            res["cls"] = "unexpected_error"
            res["detail"] = (f"CPU raised {_exc_name(cpu_exc)}, tpu "
                             + (f"raised {_exc_name(tpu_exc)}: {_short(tpu_exc)}" if tpu_exc else "did not raise"))
        return res
    if tpu_exc is not None:
        res["cls"] = "unexpected_error"
        res["detail"] = f"tpu raised {_exc_name(tpu_exc)}: {_short(tpu_exc)}"
        return res
    if actual is None:
        res["cls"] = "mismatch"
        res["detail"] = "tpu output does not require grad"
        return res
    try:
        _compare(list(actual), list(expected), atol, rtol, values=not random, what="grad",
                 strides=False)  # gradient strides are not promised
    except _Mismatch as m:
        ref64 = None if random else _fp64_grads(cpu_in, grads)
        if ref64 is None or not within_fp64_error(list(actual), list(expected), list(ref64)):
            res["cls"] = "mismatch"
            res["detail"] = str(m)
            return res
        res["fp64_ref"] = True  # passed by the float64-reference rule (see within_fp64_error)
    except Exception as e:  # noqa: BLE001
        res["cls"] = "unexpected_error"
        res["detail"] = f"reading tpu grad raised {_exc_name(e)}: {_short(e)}"
        return res
    res["cls"] = "fallback_pass" if fb else "native_pass"
    if trace and not fb:
        tr = _OpTracer()
        try:
            tpu_in2 = _tpu_inputs(cpu_in)
            with tr.mode:
                grads(tpu_in2, [t for t in _leaves(tpu_in2) if t.requires_grad], "tpu")
            res["ops"] = sorted(tr.ops)
        except Exception:  # noqa: BLE001
            pass
    return res


def _raises_on_cpu(op, sample):
    try:
        op(sample.input, *sample.args, **sample.kwargs)
    except Exception:  # noqa: BLE001
        return True
    return False


def _run_error_input(op, ei):
    import re
    s = ei.sample_input
    tpu_in = _tpu_inputs((s.input, s.args, s.kwargs), keep_aliasing=True)
    _reset_fallbacks()
    try:
        op(tpu_in[0], *tpu_in[1], **tpu_in[2])
        exc = None
    except Exception as e:  # noqa: BLE001
        exc = e
    fb = _fallbacks()
    res = {"fallbacks": fb}
    if exc is None and not _raises_on_cpu(op, s):
        # The OpInfo's error input does not fail on CPU either (the reference):
        # tpu behaving like CPU passes; the report lists these.
        res["cls"] = "fallback_pass" if fb else "native_pass"
        res["detail"] = "CPU does not raise on this error input either"
    elif exc is None:
        res["cls"] = "unexpected_error"
        res["detail"] = f"tpu did not raise (expected {ei.error_type.__name__}: {ei.error_regex!r})"
    elif not isinstance(exc, ei.error_type):
        res["cls"] = "unexpected_error"
        res["detail"] = f"tpu raised {_exc_name(exc)}: {_short(exc)} (expected {ei.error_type.__name__})"
    elif ei.error_regex and not re.search(ei.error_regex, str(exc)):
        res["cls"] = "mismatch"  # right type, message not comparable
        res["detail"] = f"message {_short(exc)!r} does not match {ei.error_regex!r}"
    else:
        res["cls"] = "fallback_pass" if fb else "native_pass"
    return res


def _short(e, n=200):
    s = " ".join(str(e).split())
    return s if len(s) <= n else s[:n] + "..."


def _aggregate(samples):
    """Case class from its samples' classes."""
    classes = [s["cls"] for s in samples]
    if not classes:
        return "no_samples"
    for c in ("crash", "mismatch", "unexpected_error"):
        if c in classes:
            return c
    if "fallback_pass" in classes:
        return "fallback_pass"
    if "native_pass" in classes:
        return "native_pass"
    return "expected_error"


def run_case(key, dtype_name, direction, max_samples=4, mode=None, trace=False,
             sample_indices=None, progress=None):
    """Runs one (OpInfo, dtype, direction) case in this process.

    Returns {"key", "dtype", "dir", "cls", "samples": [...], "fallbacks": {...}}.
    `sample_indices` restricts the run to those sample positions; `progress`
    is called with the index of each sample before it runs."""
    import torch
    import torch_tpu  # noqa: F401 -- registers the tpu device
    if mode is not None and mode != torch_tpu.get_eager_mode():
        raise ValueError(f"run_case: the process runs {torch_tpu.get_eager_mode()!r} eager mode, "
                         f"not {mode!r} (workers set theirs at start)")
    op = all_opinfos()[key]
    random = is_random(op)
    out = {"key": key, "dtype": dtype_name, "dir": direction, "samples": []}
    t0 = time.time()
    try:
        torch.manual_seed(0)
        if direction == "error":
            it = op.error_inputs("cpu")
        else:
            dt = _dtype(dtype_name)
            kw = {}
            if key.startswith("_foreach"):
                kw["num_input_tensors"] = [FOREACH_TENSORS]  # 20+ tensors per sample is slow
            it = op.sample_inputs("cpu", dt, requires_grad=(direction == "backward"), **kw)
        n = 0
        for i, sample in enumerate(it):
            if n >= max_samples:
                break
            if sample_indices is not None and i not in sample_indices:
                continue
            if progress:
                progress(i)
            if direction == "error":
                r = _run_error_input(op, sample)
                r["desc"] = describe(sample.sample_input)
            elif direction == "forward":
                r = _run_forward_sample(op, sample, dt, random, trace)
                r["desc"] = describe(sample)
            else:
                r = _run_backward_sample(op, sample, random, trace)
                if r is None:
                    continue
                r["desc"] = describe(sample)
            r["index"] = i
            out["samples"].append(r)
            n += 1
    except Exception as e:  # noqa: BLE001 -- sample generation itself failed
        out["gen_error"] = f"{_exc_name(e)}: {_short(e)}"
        if not out["samples"]:
            out["cls"] = "no_samples"
    fb = collections.Counter()
    for s in out["samples"]:
        fb.update(s.get("fallbacks", {}))
    out["fallbacks"] = dict(fb)
    out.setdefault("cls", _aggregate(out["samples"]))
    out["random"] = random
    out["seconds"] = round(time.time() - t0, 3)
    return out


# ---------------------------------------------------------------- workers

def worker_main(max_samples, mode, trace, minor_max_samples=None):
    """Reads one JSON case per line on stdin; writes progress and results on
    the original stdout (the process's own prints go to stderr)."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    import torch  # noqa: F401
    import torch_tpu
    torch_tpu.set_eager_mode(mode)
    all_opinfos()

    def send(obj):
        proto.write(_MARK + json.dumps(obj) + "\n")
        proto.flush()

    send({"ready": True})
    for line in sys.stdin:
        case = json.loads(line)
        try:
            n = max_samples
            if minor_max_samples and case["dtype"] in MINOR_DTYPES:
                n = minor_max_samples
            res = run_case(case["key"], case["dtype"], case["dir"], n, mode, trace,
                           progress=lambda i: send({"sample": i}))
        except Exception as e:  # noqa: BLE001
            res = {"key": case["key"], "dtype": case["dtype"], "dir": case["dir"], "samples": [],
                   "cls": "unexpected_error", "detail": f"runner: {_exc_name(e)}: {_short(e)}",
                   "tb": traceback.format_exc()[-800:]}
        send({"result": res})


class _Worker:
    def __init__(self, args, idx):
        self.args = args
        self.idx = idx
        self.proc = None
        self.errlog = os.path.join(args.tmpdir, f"worker{idx}.stderr")

    def start(self):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker",
               "--max-samples", str(self.args.max_samples), "--mode", self.args.mode,
               "--minor-max-samples", str(self.args.minor_max_samples)]
        if self.args.trace:
            cmd.append("--trace")
        env = dict(os.environ)
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("OMP_NUM_THREADS", "1")
        self.err = open(self.errlog, "ab")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, env=env, bufsize=0)
        self._buf = b""
        msg = self._read(timeout=300)
        if msg is None or not msg.get("ready"):
            raise RuntimeError(f"worker {self.idx} did not start; see {self.errlog}")

    def _read(self, timeout):
        """Next protocol message, or None on death / timeout."""
        deadline = time.time() + timeout
        while True:
            nl = self._buf.find(b"\n")
            while nl >= 0:
                line, self._buf = self._buf[:nl], self._buf[nl + 1:]
                s = line.decode("utf-8", "replace")
                if s.startswith(_MARK):
                    return json.loads(s[len(_MARK):])
                nl = self._buf.find(b"\n")
            left = deadline - time.time()
            if left <= 0:
                return "timeout"
            r, _, _ = select.select([self.proc.stdout], [], [], min(left, 5))
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    return None
                self._buf += chunk

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
        self.proc = None

    def stderr_tail(self, n=600):
        try:
            with open(self.errlog, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - 4000))
                lines = [ln for ln in f.read().decode("utf-8", "replace").splitlines()
                         if ln.strip() and "absl::InitializeLog" not in ln
                         and "pjrt_c_api_cpu" not in ln]
                return " | ".join(lines[-4:])[-n:]
        except OSError:
            return ""

    def run(self, case):
        """Runs a case; returns its result, a crash result when the worker dies or hangs."""
        if self.proc is None:
            self.start()
        self.proc.stdin.write((json.dumps(case) + "\n").encode())
        self.proc.stdin.flush()
        sample = None
        while True:
            msg = self._read(self.args.timeout)
            if isinstance(msg, dict) and "sample" in msg:
                sample = msg["sample"]
                continue
            if isinstance(msg, dict) and "result" in msg:
                return msg["result"]
            hang = msg == "timeout"
            if not hang:
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            code = self.proc.poll()
            self.kill()
            detail = (f"hang: no progress for {self.args.timeout}s" if hang
                      else f"worker died (exit {code})")
            if sample is not None:
                detail += f" in sample {sample}"
            tail = self.stderr_tail()
            if tail:
                detail += f"; stderr: {tail}"
            return dict(case, cls="crash", samples=[{"cls": "crash", "index": sample,
                                                       "detail": detail}],
                        detail=detail, fallbacks={})


def plan(args):
    ops = all_opinfos()
    dtypes = args.dtypes.split(",")
    dirs = args.directions.split(",")
    filters = [f for f in (args.ops or "").split(",") if f]
    cases = []
    for key in sorted(ops):
        if filters and not any(f in key for f in filters):
            continue
        for dn, d in supported_cases(ops[key], dtypes, dirs):
            cases.append({"key": key, "dtype": dn, "dir": d})
    # The targeted (dtype, direction) pairs first, so a time-boxed run measures them.
    prio = [("float32", "forward"), ("float32", "backward"), ("bfloat16", "forward"),
            ("int64", "forward"), ("any", "error"), ("float16", "forward"),
            ("int32", "forward"), ("bool", "forward"), ("complex64", "forward"),
            ("float64", "forward"), ("complex128", "forward")]
    cases.sort(key=lambda c: prio.index((c["dtype"], c["dir"])))
    return cases


def run_all(args):
    cases = plan(args)
    # Spread the heavy ops (foreach, linalg) rather than running them back to back.
    todo = collections.deque(cases)
    results = []
    lock = threading.Lock()
    done = [0]
    t0 = time.time()

    def loop(w):
        while True:
            with lock:
                if not todo:
                    break
                if args.budget and time.time() - t0 > args.budget:
                    while todo:  # time-boxed: the rest is reported as not run
                        c = todo.popleft()
                        results.append(dict(c, cls="not_run", samples=[], fallbacks={}))
                    break
                case = todo.popleft()
            try:
                res = w.run(case)
            except Exception as e:  # noqa: BLE001 -- could not even start the worker
                w.kill()
                res = dict(case, cls="crash", samples=[], fallbacks={},
                           detail=f"worker start failed: {e}")
            with lock:
                results.append(res)
                done[0] += 1
                if partial:
                    partial.write(json.dumps(res) + "\n")
                    partial.flush()
                if res["cls"] == "crash" or done[0] % 50 == 0 or args.verbose:
                    el = time.time() - t0
                    print(f"[{done[0]}/{len(cases)} {el:.0f}s] {res['key']} {res['dtype']} "
                          f"{res['dir']}: {res['cls']}"
                          + (f" -- {res.get('detail', '')[:200]}" if res["cls"] == "crash" else ""),
                          flush=True)
        w.kill()

    os.makedirs(args.tmpdir, exist_ok=True)
    partial = open(args.json + "l", "w") if args.json else None
    workers = [_Worker(args, i) for i in range(max(1, args.workers))]
    threads = [threading.Thread(target=loop, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    order = {(c["key"], c["dtype"], c["dir"]): i for i, c in enumerate(cases)}
    results.sort(key=lambda r: order[(r["key"], r["dtype"], r["dir"])])
    return results, wall


# ---------------------------------------------------------------- report

def write_report(results, wall, args, path):
    conformance_report.write_report(results, wall, args, path, opinfos=all_opinfos(), classes=CLASSES,
                                    foreach_tensors=FOREACH_TENSORS, minor_dtypes=MINOR_DTYPES)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default="", help="comma-separated substrings of OpInfo names")
    p.add_argument("--dtypes", default=",".join(DTYPE_NAMES))
    p.add_argument("--directions", default="forward,backward,error")
    p.add_argument("--mode", default="strict", choices=["strict", "fused"],
                   help="eager mode to measure (the report of a full fused run goes to "
                        "docs/op_coverage_fused.md)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--max-samples", type=int, default=2)
    p.add_argument("--minor-max-samples", type=int, default=1,
                   help="samples for float16/int32/bool (default: --max-samples)")
    p.add_argument("--budget", type=float, default=0,
                   help="stop starting cases after this many seconds (rest: not_run)")
    p.add_argument("--timeout", type=int, default=180, help="seconds without progress = hang")
    p.add_argument("--out", default=None, help="markdown report (default docs/op_coverage.md "
                   "for a full run, none with --ops)")
    p.add_argument("--json", default=None, help="write all results as JSON")
    p.add_argument("--fast", action="store_true",
                   help="run the fast subset of tests/python/test_conformance_fast.py")
    p.add_argument("--from-json", metavar="RESULTS_JSON",
                   help="rewrite the report from a --json file instead of running")
    p.add_argument("--select-fast", metavar="RESULTS_JSONL",
                   help="print the fast subset chosen from a --trace run's results")
    p.add_argument("--trace", action="store_true",
                   help="record the aten ops of native-passing forward samples (fast subset selection)")
    p.add_argument("--tmpdir", default="/tmp/tt_conformance")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker_main(args.max_samples, args.mode, args.trace, args.minor_max_samples)
        return 0
    if args.fast:
        return run_fast(args)
    if args.select_fast:
        with open(args.select_fast) as f:
            res = [json.loads(ln) for ln in f if ln.strip()]
        cases, covered, missing = select_fast(res)
        print(f"# {len(cases)} cases; cover {len(covered)} lowerings; "
              f"{len(missing)} lowerings not reached by a traced native-passing sample")
        print("FAST_CASES = [")
        for c in cases:
            print(f"    {c!r},")
        print("]")
        print("NOT_REACHED = " + repr(missing))
        return 0
    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        results, wall = saved["results"], saved["wall"]
        for k in ("max_samples", "minor_max_samples", "workers", "budget", "dtypes", "timeout"):
            setattr(args, k, saved["args"][k])
    else:
        results, wall = run_all(args)
    totals = conformance_report.summarize(results)
    for (dt, d), t in totals.items():
        print(f"{dt:9s} {d:9s} " + " ".join(f"{c}={t[c]}" for c in CLASSES + ["no_samples"]))
    print(f"wall {wall:.0f}s")
    if args.json and not args.from_json:
        with open(args.json, "w") as f:
            json.dump({"wall": wall, "args": vars(args), "results": results}, f)
    default_out = "docs/op_coverage.md" if args.mode == "strict" else "docs/op_coverage_fused.md"
    out = args.out if args.out is not None else (None if args.ops else default_out)
    if out:
        write_report(results, wall, args, out)
        print("wrote", out)
    return 0


def _norm(name):
    return name[:-len(".default")] if name.endswith(".default") else name


def select_fast(results, target=300):
    """Chooses the fast subset from --trace runs: a greedy cover of every
    lowering that a traced native-passing sample reaches, topped up
    with more native-passing cases (float32 backward, bfloat16, int64) up to
    `target`. Returns (cases, lowerings covered, lowerings not reached)."""
    import torch_tpu
    lowered = set(torch_tpu.debug.lowered_ops())
    cand = {}
    rank = {("float32", "forward"): 0, ("float32", "backward"): 1, ("int64", "forward"): 2,
            ("bfloat16", "forward"): 3}
    for r in results:
        for s in r.get("samples", []):
            if s["cls"] == "native_pass" and "ops" in s:
                cand[(r["key"], r["dtype"], r["dir"], s["index"])] = \
                    {_norm(o) for o in s["ops"]} & lowered
    # Ties: prefer float32 forward, then backward, int64, bfloat16; then fewer ops.
    pref = {c: (rank.get((c[1], c[2]), 9), len(cand[c])) for c in cand}
    covered, chosen = set(), []
    while True:
        best = max(cand, key=lambda c: (len(cand[c] - covered), -pref[c][0], -pref[c][1]),
                   default=None)
        if best is None or not cand[best] - covered:
            break
        chosen.append(best)
        covered |= cand.pop(best)
    extra = []
    for want in (("float32", "backward"), ("bfloat16", "forward"), ("int64", "forward"),
                 ("float32", "forward")):
        for r in results:
            if (r["dtype"], r["dir"]) == want and r["cls"] == "native_pass" and r["samples"]:
                c = (r["key"], r["dtype"], r["dir"], r["samples"][0]["index"])
                if c not in chosen and c not in extra:
                    extra.append(c)
    chosen_keys = {c[0] for c in chosen}
    # Spread the top-up over ops: prefer ops not yet in the subset.
    extra.sort(key=lambda c: (c[0] in chosen_keys, c[0].startswith("_foreach")))
    chosen += extra[:max(0, target - len(chosen))]
    return chosen, sorted(covered), sorted(lowered - covered)


def run_fast(args):
    """Runs the fast subset through the isolated workers (same cases as the test)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import test_conformance_fast as fast
    bad = 0
    t0 = time.time()
    for key, dtype, direction, idx in fast.FAST_CASES:
        r = run_case(key, dtype, direction, max_samples=1, sample_indices={idx})
        if r["cls"] in ("mismatch", "crash", "unexpected_error"):
            bad += 1
            print(key, dtype, direction, idx, r["cls"], r["samples"][:1])
    print(f"{len(fast.FAST_CASES)} cases, {bad} bad, {time.time() - t0:.0f}s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
