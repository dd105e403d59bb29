"""Differential fuzzer: random programs of ops from PyTorch's OpInfo database
(op_db), run on tpu and on CPU, compared.

A program is drawn from one integer seed: 1 to --max-ops steps, each an
OpInfo, a dtype it supports on CPU (float32, float64, float16, bfloat16,
int64, int32, bool, complex64) and one of its sample inputs, whose tensors
are then mutated at random: a dimension narrowed to 0 or 1 elements (0-size
tensors, size-1 broadcasting against the other operands), a non-contiguous
layout (transposed storage, every other element of a larger storage), an
overlapping view (a dimension expanded from one slice: stride 0), an output
of an earlier step substituted for an input of the same shape and dtype,
and the op's in-place variant applied to a mutated input. The steps run
without host reads between them, so in Fused eager they record one region.
The eager mode (fused, strict, debug) comes from the seed too and is set
as TORCH_TPU_EAGER_MODE in the worker process that runs the program.

Each program runs in a worker child process (one per mode, restarted after
a crash or a hang): CPU first, then tpu on copies of the same inputs that
keep their storage layout, and the results are compared: a tpu result must
match CPU's within the OpInfo's tolerance (or torch.testing's default for
the dtype), an error must be of the same type as CPU's, a crash (the worker
died) or a hang (over --timeout) is always a finding.

    python tools/fuzz/fuzz.py --seed 1 --time 600        # ten minutes
    python tools/fuzz/fuzz.py --seed 1 --programs 40     # a fixed set (make test)
    python tools/fuzz/fuzz.py --replay 123456            # one program, in-process, verbose

Findings are written to --findings (JSON lines); the corpus of findings kept
with their repro is tools/fuzz/corpus/*.json (`--check-corpus` replays it
and reports which still fail). Exit status 1 when a finding is not in the
corpus (known findings are reported, not failed on)."""
import argparse
import glob
import json
import os
import random
import select
import signal
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

MODES = ("fused", "strict", "debug")
DTYPES = ("float32", "float32", "float64", "float16", "bfloat16", "int64", "int32", "bool",
          "complex64")
CORPUS = os.path.join(HERE, "corpus")
_MARK = "@@FUZZ@@ "

# Ops never drawn: values from a generator (compared by shape only in
# conformance; useless here), uninitialized memory, sparse layouts, and a
# few whose samples take minutes on CPU.
SKIP_PARTS = ("dropout", "rand", "bernoulli", "multinomial", "normal", "uniform", "empty",
              "sparse", "to_sparse", "fractional_max_pool", "poisson", "multi_head_attention",
              "cauchy", "exponential", "geometric", "log_normal", "nonzero_static",
              "_segment_reduce", "jiterator", "torch._scaled", "svd_lowrank", "pca_lowrank",
              "normal", "item", "tolist", "resize", "allclose", "equal", "data_ptr")


# Arguments PyTorch requires on the CPU for every device (CUDA too): kept
# there in the tpu run. op key -> positions in args.
CPU_ARGS = {"tensor_split": (0,)}


# Arguments PyTorch's CPU kernel reads through data_ptr, ignoring their
# strides: for a non-contiguous one CPU's result is undefined (it reads past
# the view: -5.4e32 seen for native_group_norm with weight of stride 2; the
# public group_norm makes weight and bias contiguous first). Kept contiguous
# in both runs. op key -> positions in args.
# _batch_norm_with_update too: with weight etc. longer than the input's
# channel count (a narrowed input; CPU does not check), CPU's bfloat16 output
# is (5, 5, 5) for strided parameters and (5, 1, 5) for contiguous ones
# (seed 821375813011).
CPU_CONTIG_ARGS = {"native_group_norm": (0, 1), "_batch_norm_with_update": (0, 1, 2, 3)}


def program_mode(seed):
    return MODES[seed % len(MODES)]


# ---------------------------------------------------------------- generation

def _ops():
    from conformance import all_opinfos, is_random
    ops = []
    for key, op in sorted(all_opinfos().items()):
        if key.startswith("_foreach") or any(p in key for p in SKIP_PARTS) or is_random(op):
            continue
        ops.append((key, op))
    return ops


def _mutate_tensor(rng, t, log):
    """A tensor holding t's kind of values in a randomly chosen shape/layout."""
    import torch
    if t.layout != torch.strided or t.requires_grad:
        return t
    r = rng.random()
    if r < 0.15 and t.dim() > 0:
        d = rng.randrange(t.dim())
        k = rng.choice((0, 1))
        log.append(f"narrow(dim={d}, to={k})")
        return t.narrow(d, 0, min(k, t.shape[d])).clone()
    if r < 0.35 and t.dim() >= 2:
        log.append("transposed storage")
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if r < 0.5 and t.dim() >= 1 and t.numel() > 0:
        d = rng.randrange(t.dim())
        big = torch.repeat_interleave(t, 2, dim=d)
        log.append(f"every other element (dim={d}, offset 1)")
        return big.narrow(d, 1, big.shape[d] - 1)[tuple([slice(None)] * d + [slice(None, None, 2)])]
    if r < 0.6 and t.dim() >= 1 and t.numel() > 0:
        d = rng.randrange(t.dim())
        log.append(f"overlapping (dim={d} expanded, stride 0)")
        return t.narrow(d, 0, 1).expand(t.shape)
    if r < 0.68 and t.dim() >= 1 and t.numel() > 1:
        log.append("storage offset")
        flat = torch.cat([t.reshape(-1)[:1], t.reshape(-1)])
        return flat[1:].view(t.shape)
    return t


def _mutate(rng, x, log, prev_outputs):
    import torch
    from conformance_compare import _map

    def f(t):
        if isinstance(t, torch.Tensor) and prev_outputs and rng.random() < 0.2:
            same = [p for p in prev_outputs if isinstance(p, torch.Tensor) and p.shape == t.shape
                    and p.dtype == t.dtype and p.layout == t.layout]
            if same:
                log.append(f"input <- earlier output {list(t.shape)}")
                pick = rng.choice(same)
                return ("prev", next(i for i, p in enumerate(prev_outputs) if p is pick))
        return _mutate_tensor(rng, t, log) if isinstance(t, torch.Tensor) else t
    return _map(x, f)


def generate(seed, max_ops=4, ops=None):
    """The program of a seed: a list of steps (dict) with CPU sample inputs."""
    import torch
    from conformance_compare import _map
    rng = random.Random(seed)
    ops = ops or _ops()
    steps, fake_prev = [], []
    n = rng.randint(1, max_ops)
    tries = 0
    while len(steps) < n and tries < 40:
        tries += 1
        key, op = rng.choice(ops)
        dts = [d for d in DTYPES if getattr(torch, d) in op.supported_dtypes("cpu")]
        if not dts:
            continue
        dn = rng.choice(dts)
        torch.manual_seed(rng.randrange(1 << 30))
        try:
            samples = []
            for i, s in enumerate(op.sample_inputs("cpu", getattr(torch, dn), requires_grad=False)):
                samples.append(s)
                if i >= 7:
                    break
        except Exception:  # noqa: BLE001 -- the sample generator itself fails: not ours
            continue
        if not samples:
            continue
        s = rng.choice(samples)
        big = [t for t in _leaves((s.input, s.args, s.kwargs)) if isinstance(t, torch.Tensor) and t.numel() > 20000]
        if big:
            continue
        log = []
        inp = _mutate(rng, (s.input, list(s.args), dict(s.kwargs)), log, fake_prev)
        # a dropout probability makes the op random (seed 904592177625:
        # scaled_dot_product_attention with dropout_p=0.5 differed on the
        # elements each side dropped): drawn deterministic
        if isinstance(inp[2].get("dropout_p"), float) and inp[2]["dropout_p"] > 0:
            inp[2]["dropout_p"] = 0.0
        for pos in CPU_CONTIG_ARGS.get(key, ()):
            if pos < len(inp[1]) and isinstance(inp[1][pos], torch.Tensor):
                inp[1][pos] = inp[1][pos].contiguous()
        inplace = op.inplace_variant is not None and rng.random() < 0.2 \
            and isinstance(inp[0], torch.Tensor)
        steps.append(dict(key=key, op=op, dtype=dn, inputs=inp, inplace=inplace, mutations=log))
        # the step's CPU output, so that a later step may take it as input
        out = _run(dict(steps=steps), "cpu", only_last=True, prev=fake_prev)
        fake_prev.append(out)
    return dict(seed=seed, mode=program_mode(seed), steps=steps)


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [e for v in x for e in _leaves(v)]
    if isinstance(x, dict):
        return [e for v in x.values() for e in _leaves(v)]
    return [x]


def describe(prog):
    import torch
    from conformance_compare import _map
    lines = [f"seed {prog['seed']} mode {prog['mode']}"]
    for i, st in enumerate(prog["steps"]):
        def d(t):
            if isinstance(t, torch.Tensor):
                return f"T{list(t.shape)}{'' if t.is_contiguous() else ' strides ' + str(t.stride())}"
            return t
        lines.append(f"  {i}: {st['key']}{'_ (in-place)' if st['inplace'] else ''} {st['dtype']} "
                     f"{_map(st['inputs'], d)} mutations {st['mutations']}")
    return "\n".join(lines)


# ---------------------------------------------------------------- running

def _resolve(x, outputs):
    """Replaces ("prev", i) placeholders by step i's first tensor output."""
    import torch
    if isinstance(x, tuple) and len(x) == 2 and x[0] == "prev":
        o = outputs[x[1]] if x[1] < len(outputs) else None
        o = o[0] if isinstance(o, (list, tuple)) and o else o
        return o if isinstance(o, torch.Tensor) else None
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_resolve(e, outputs) for e in x)
    if isinstance(x, dict):
        return {k: _resolve(v, outputs) for k, v in x.items()}
    return x


def _run(prog, device, only_last=False, prev=None):
    """Runs the program on device: list of ("ok", output) / ("err", exc) per
    step. only_last: runs the last step alone, earlier outputs from prev
    (generation), and returns its first tensor output or None."""
    import torch
    results, outputs = [], list(prev or [])
    steps = prog["steps"][-1:] if only_last else prog["steps"]
    for st in steps:
        inp = _resolve(st["inputs"], outputs)
        inp = _copy_keep_layout(inp, device)
        x, args, kwargs = inp
        for i in CPU_ARGS.get(st["key"], ()):
            if device != "cpu" and i < len(args) and hasattr(args[i], "device"):
                args = list(args)
                args[i] = args[i].cpu()
        if device != "cpu":  # a sample naming CPU as a destination names tpu here
            kwargs = {k: (torch.device("tpu") if k == "device" and v is not None else v)
                      for k, v in kwargs.items()}
            args = [torch.device("tpu") if (a == "cpu" if isinstance(a, str) else
                                            isinstance(a, torch.device) and a.type == "cpu") else a
                    for a in args]
        # named on stderr first: a crash's report then says which op and where
        print(f"@@STEP {device} {st['key']}{'_' if st['inplace'] else ''} {st['dtype']}",
              file=sys.stderr, flush=True)
        torch.manual_seed(0)
        try:
            if st["inplace"]:
                out = st["op"].inplace_variant(x, *args, **kwargs)
            else:
                out = st["op"](x, *args, **kwargs)
            results.append(("ok", out))
            outputs.append(out)
        except Exception as e:  # noqa: BLE001
            results.append(("err", e))
            outputs.append(None)
    if only_last:
        o = results[0][1] if results[0][0] == "ok" else None
        o = o[0] if isinstance(o, (list, tuple)) and o else o
        return o.detach() if isinstance(o, torch.Tensor) and o.layout == torch.strided else None
    return results


def _copy_keep_layout(inp, device):
    """Copies for one run: tensors sharing a storage keep sharing one copy
    with the same sizes, strides and offsets (so views and in-place writes
    act the same), on the device of the run."""
    import torch
    from conformance_compare import _map
    storages = {}
    to_tpu = device != "cpu"

    def copy(t):
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
            return t
        if t.device.type != "cpu" or t.requires_grad:  # an earlier step's output
            return t
        st = t.untyped_storage()
        key = (st.data_ptr(), t.dtype)
        base = storages.get(key)
        if base is None:
            flat = torch.empty(0, dtype=t.dtype).set_(st, 0, (st.nbytes() // t.element_size(),), (1,))
            base = storages[key] = flat.clone().to("tpu") if to_tpu else flat.clone()
        return base.as_strided(t.shape, t.stride(), t.storage_offset())
    return _map(inp, copy)


def _fft_atol(key, cv, atol):
    """An FFT's rounding error grows with the magnitude of the whole output
    and log2 of its size (error ~ eps * max|y| * log2 n), not with each
    element: a small element of a large transform is as far off as the large
    ones. Seed 592388916991 (fft.hfft2 float32, 5x6x12 output, max 251):
    CPU and tpu are each 2.2e-5 and 2.3e-5 from the float64 transform (1.5
    float32 ulps at 251), 1.5e-5 apart, against an atol of 1e-5. So FFTs get
    atol >= eps * max|output| * log2(numel) (2.5e-4 there). Pure index
    shuffles (fftshift, fftfreq) keep the OpInfo tolerance."""
    import math
    import torch
    if not key.startswith("fft.") or "shift" in key or "freq" in key:
        return atol
    if not isinstance(cv, torch.Tensor) or cv.numel() < 2 or not (cv.is_floating_point() or cv.is_complex()):
        return atol
    real = cv.real.dtype if cv.is_complex() else cv.dtype
    try:
        scale = cv.abs().max().item()
    except RuntimeError:  # complex32 has no abs on CPU
        return atol
    if not math.isfinite(scale):
        return atol
    return max(atol, torch.finfo(real).eps * scale * math.log2(cv.numel()))


def run_program(prog):
    """Runs prog on CPU and tpu; returns {"cls": pass|mismatch|error_type, "detail"}."""
    import torch
    import torch_tpu
    from conformance import op_tolerance
    from conformance_compare import _Mismatch, _compare, relax_tied_indices
    cpu = _run(prog, "cpu")
    tpu = _run(prog, "tpu")
    try:
        torch_tpu.sync()
        torch.tpu.synchronize()
    except Exception as e:  # noqa: BLE001
        # A device-side check (docs/reliability.md) raises at the next wait,
        # not at its op: it matches when CPU's first error is of its type;
        # the steps after that one are not compared (their tpu values may
        # come from the failed op's clamped results).
        first = next((i for i, (ck, _) in enumerate(cpu) if ck == "err"), None)
        if ("device-side check" not in str(e) or first is None
                or not isinstance(e, type(cpu[first][1]))):
            return dict(cls="error_type", detail=f"synchronize raised {type(e).__name__}: {str(e)[:300]}")
        cpu, tpu = cpu[:first], tpu[:first]
    for i, (st, (ck, cv), (tk, tv)) in enumerate(zip(prog["steps"], cpu, tpu)):
        where = f"step {i} {st['key']}{'_' if st['inplace'] else ''} {st['dtype']}"
        if ck == "err":
            if tk != "err" or not isinstance(tv, type(cv)):
                what = f"raised {type(tv).__name__}: {str(tv)[:200]}" if tk == "err" else "did not raise"
                return dict(cls="error_type", detail=f"{where}: CPU raised {type(cv).__name__}: "
                            f"{str(cv)[:160]}; tpu {what}")
            continue
        if tk == "err" and isinstance(tv, TypeError) and "torch_tpu does not support dtype" in str(tv):
            break  # a result dtype tpu cannot hold (uint64, complex32): documented, as MPS's float64
        if tk == "err":
            return dict(cls="error_type", detail=f"{where}: tpu raised {type(tv).__name__}: "
                        f"{str(tv)[:300]} (CPU did not)")
        atol, rtol = op_tolerance(st["op"], getattr(torch, st["dtype"]))
        atol = _fft_atol(st["key"], cv, atol)
        try:
            x, args, kwargs = _resolve(st["inputs"], [c[1] if c[0] == "ok" else None for c in cpu])
            tv = relax_tied_indices(st["op"].name, x, args, kwargs, tv, cv)
            _compare(tv, cv, atol, rtol, strides=False)
        except _Mismatch as m:
            return dict(cls="mismatch", detail=f"{where}: {m}")
        except Exception as e:  # noqa: BLE001
            return dict(cls="error_type", detail=f"{where}: reading the tpu result raised "
                        f"{type(e).__name__}: {str(e)[:300]}")
    return dict(cls="pass")


def worker_main(max_ops):
    """Reads program seeds on stdin, answers one JSON line per seed."""
    import torch_tpu  # noqa: F401
    ops = _ops()
    print(_MARK + json.dumps({"ready": len(ops)}), flush=True)
    for line in sys.stdin:
        seed = int(line)
        t0 = time.time()
        try:
            prog = generate(seed, max_ops, ops)
            res = run_program(prog)
            res["program"] = describe(prog)
        except Exception as e:  # noqa: BLE001 -- a fuzzer bug, reported as such
            res = dict(cls="harness_error", detail="".join(traceback.format_exception(e))[-600:])
        res["seconds"] = round(time.time() - t0, 2)
        print(_MARK + json.dumps(res), flush=True)


class Worker:
    def __init__(self, mode, args):
        self.mode, self.args, self.p = mode, args, None

    def start(self):
        env = dict(os.environ, TORCH_TPU_EAGER_MODE=self.mode, PYTHONPATH=ROOT,
                   HF_HUB_OFFLINE="1", TORCH_TPU_CACHE_DIR=self.args.cache_dir)
        self.p = subprocess.Popen([sys.executable, __file__, "--worker", "--max-ops", str(self.args.max_ops)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, text=True, bufsize=1)
        self.err = []
        r = self._read(180)
        if r is None or "ready" not in r:
            raise RuntimeError(f"fuzz worker did not start: {self.stderr_tail()}")

    def _read(self, timeout):
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.p.stdout, self.p.stderr], [], [], left)
            if self.p.stderr in ready:
                line = self.p.stderr.readline()
                if line:
                    self.err.append(line)
                    self.err = self.err[-40:]
            if self.p.stdout in ready:
                line = self.p.stdout.readline()
                if not line:
                    return None
                if line.startswith(_MARK):
                    return json.loads(line[len(_MARK):])
            if self.p.poll() is not None and not ready:
                return None

    def stderr_tail(self):
        steps = [l.strip() for l in self.err if l.startswith("@@STEP")]
        rest = "".join(l for l in self.err if "I0000" not in l and "absl::" not in l
                       and not l.startswith("@@STEP"))[-500:]
        return (f"last step: {steps[-1][7:]}; " if steps else "") + rest

    def kill(self):
        if self.p:
            self.p.kill()
            self.p.wait()
            self.p = None

    def run(self, seed):
        if self.p is None:
            self.start()
        self.err = []
        self.p.stdin.write(f"{seed}\n")
        self.p.stdin.flush()
        r = self._read(self.args.timeout)
        if r is None:
            hung = self.p.poll() is None
            rc = self.p.returncode
            tail = self.stderr_tail()
            self.kill()
            return dict(cls="hang" if hung else "crash",
                        detail=(f"no answer in {self.args.timeout} s" if hung else f"worker exit {rc}")
                        + f"; stderr: {tail}")
        return r


def load_corpus():
    out = {}
    for p in sorted(glob.glob(os.path.join(CORPUS, "*.json"))):
        with open(p) as f:
            e = json.load(f)
        out[int(e["seed"])] = e
    return out


def _stop(signum, frame):
    raise KeyboardInterrupt  # SIGTERM: stop like ^C, with the summary


def fuzz(args):
    signal.signal(signal.SIGTERM, _stop)
    corpus = load_corpus()
    workers = {}
    rng = random.Random(args.seed)
    t_end = time.time() + args.time if args.time else None
    counts, findings, n = {}, [], 0
    t_start = time.time()
    out = open(args.findings, "a") if args.findings else None
    try:
        while (args.programs is None or n < args.programs) and (t_end is None or time.time() < t_end):
            # the mode changes every --block programs (a worker per mode;
            # with --one-worker each change restarts one); it is still a
            # function of the program's seed: replays need only the seed
            m = (n // args.block) % len(MODES)
            pseed = rng.randrange(1 << 40)
            pseed += (m - pseed % len(MODES)) % len(MODES)
            mode = program_mode(pseed)
            if mode not in workers:
                workers[mode] = Worker(mode, args)
            if args.one_worker:  # keep one process alive at a time (memory)
                for m, w in workers.items():
                    if m != mode:
                        w.kill()
            res = workers[mode].run(pseed)
            n += 1
            counts[res["cls"]] = counts.get(res["cls"], 0) + 1
            if res["cls"] != "pass":
                known = pseed in corpus
                res.update(seed=pseed, mode=mode, known=known)
                findings.append(res)
                if out:
                    out.write(json.dumps(res) + "\n")
                    out.flush()
                print(f"[{n}] {'known ' if known else ''}{res['cls']} seed {pseed} mode {mode}: "
                      f"{res['detail'][:300]}", flush=True)
            elif args.verbose or n % 25 == 0:
                print(f"[{n}] pass seed {pseed} mode {mode} ({res.get('seconds')} s); "
                      f"{time.time() - t_start:.0f} s, counts {counts}", flush=True)
    finally:
        for w in workers.values():
            w.kill()
        if out:
            out.close()
        new = [f for f in findings if not f["known"]]
        print(json.dumps(dict(programs=n, seconds=round(time.time() - t_start), counts=counts,
                              findings=len(findings), new=len(new))), flush=True)
    return 1 if new else 0


def replay(args):
    os.environ["TORCH_TPU_EAGER_MODE"] = args.mode or program_mode(args.replay)
    import torch_tpu  # noqa: F401
    prog = generate(args.replay, args.max_ops)
    print(describe(prog))
    res = run_program(prog)
    print(json.dumps(res, indent=1))
    return 0 if res["cls"] == "pass" else 1


def check_corpus(args):
    """Replays every corpus entry in a fresh child (its mode) and reports."""
    still = 0
    for seed, e in sorted(load_corpus().items()):
        env = dict(os.environ, PYTHONPATH=ROOT, TORCH_TPU_CACHE_DIR=args.cache_dir)
        try:
            p = subprocess.run([sys.executable, __file__, "--replay", str(seed), "--mode", e["mode"]],
                               capture_output=True, text=True, timeout=args.timeout, env=env)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        state = "fixed" if rc == 0 else f"still fails (rc {rc})"
        still += rc != 0
        print(f"{seed} {e['mode']} {e['cls']}: {state}  -- {e.get('title', '')}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--programs", type=int, default=None, help="stop after this many programs")
    ap.add_argument("--max-ops", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=120, help="seconds per program before a hang")
    ap.add_argument("--findings", default=None, help="append findings here (JSON lines)")
    ap.add_argument("--cache-dir", default=os.environ.get("TT_FUZZ_CACHE_DIR", "/tmp/torch_tpu_fuzz_cache"))
    ap.add_argument("--one-worker", action="store_true", help="one worker process alive at a time")
    ap.add_argument("--block", type=int, default=20, help="programs per eager mode in turn")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--replay", type=int, default=None)
    ap.add_argument("--mode", choices=MODES, default=None)
    ap.add_argument("--check-corpus", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker_main(args.max_ops)
    if args.replay is not None:
        return replay(args)
    if args.check_corpus:
        return check_corpus(args)
    if args.programs is None and args.time is None:
        args.time = 60
    return fuzz(args)


if __name__ == "__main__":
    sys.exit(main())
