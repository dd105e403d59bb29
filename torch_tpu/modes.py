"""Eager execution modes.

- ``strict``: every op runs as one cached program, launched
  asynchronously; the host only waits when it reads a value.
- ``fused`` (the default): ops are recorded, not launched; the recorded ops compile into
  one program (at full XLA effort, cached by the op sequence) and run when a
  value is needed on the host (``.item()``, ``.cpu()``, ``print``,
  ``torch.save``, ``bool()``), when a CPU-fallback op needs its inputs, on
  ``torch_tpu.sync()``, when the op sequence starts repeating (a loop
  boundary, so a training step becomes one cached program), or after
  ``TORCH_TPU_FUSED_MAX_OPS`` ops (default 2048; on the CPU plugin lowered
  automatically when a region's program needs over 32 MiB of scratch per run).
  Tensors that die before the flush are never materialized.
- ``debug``: every op waits for its result (so a device failure is reported
  at the op that caused it) and compiles are logged with the op and shapes
  that caused them. Two optional checks, by environment variable:
  ``TORCH_TPU_DEBUG_NAN=1`` raises at the first op that produces NaN or Inf,
  naming the op and the user's source line; ``TORCH_TPU_DEBUG_CHECK=cpu``
  also runs every op on CPU and raises at the first op whose result
  diverges beyond tolerance, with its inputs' shapes and dtypes.

Select a mode with ``TORCH_TPU_EAGER_MODE``, ``set_eager_mode()`` (process
default) or the per-thread context manager ``eager_mode()``. Fused is the
default because it is measured faster and leaner than Strict on every model
we benchmark (benchmarks/eager_modes.py: minGPT training step 2.1x, the
Llama-style stack 1.5x, peak device memory 0.35-0.45x of Strict's) with the
same results, and the persistent cache makes its larger compiles a one-time
cost. Strict suits code whose op sequence never repeats (each region would
compile once and never be reused); debug mode costs one host round trip per
op (and a CPU run per op with the CPU check).
"""
import contextlib
import os
import threading
import traceback

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from . import _C

__all__ = ["set_eager_mode", "get_eager_mode", "eager_mode", "sync", "MODES"]

MODES = tuple(_C._mode_names())  # TORCH_TPU_EAGER_MODE's values, in tt_exec_mode's order
_MODE_CODE = {name: code for code, name in enumerate(MODES)}
# Frames that are not the user's: torch, torch_tpu, the standard library
# (contextlib around our capture) and FX's generated graph code.
_PKG_DIRS = (os.path.dirname(torch.__file__), os.path.dirname(os.path.abspath(__file__)),
             os.path.dirname(os.__file__) + os.sep)

_state = threading.local()
_default_mode = _C._default_eager_mode()  # the settings registry's (csrc/core/settings.c)
_default_debug = None  # the _DebugMode pushed by set_eager_mode("debug")


def _user_line() -> str:
    """The innermost stack frame outside torch and torch_tpu."""
    for frame in reversed(traceback.extract_stack()):
        path = os.path.abspath(frame.filename)
        if not path.startswith(_PKG_DIRS) and "<frozen" not in path and "<eval_with_key>" not in path:
            return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return "<unknown>"


def _describe(args) -> str:
    flat, _ = tree_flatten(args)
    parts = [f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}" for t in flat
             if isinstance(t, torch.Tensor)]
    return ", ".join(parts) or "no tensor inputs"


def _tolerance(dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1.6e-2
    return 1e-5, 1.3e-6


class _DebugMode(TorchDispatchMode):
    """Synchronizes after every op and runs the optional NaN / CPU checks."""

    def __init__(self, check_nan=None, check_cpu=None, atol=None, rtol=None):
        super().__init__()
        env_nan = _C._setting("TORCH_TPU_DEBUG_NAN")
        env_cpu = _C._setting("TORCH_TPU_DEBUG_CHECK") == "cpu"
        self.check_nan = env_nan if check_nan is None else check_nan
        self.check_cpu = env_cpu if check_cpu is None else check_cpu
        self.atol, self.rtol = atol, rtol

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        on_tpu = any(isinstance(t, torch.Tensor) and t.device.type == "tpu" for t in flat)
        reference = None
        if on_tpu and self.check_cpu and torch.Tag.nondeterministic_seeded not in func.tags:
            cpu_args, cpu_kwargs = tree_map(
                lambda t: t.detach().cpu().clone() if isinstance(t, torch.Tensor) else t,
                (args, kwargs))
            try:
                reference = func(*cpu_args, **cpu_kwargs)
            except Exception:  # the tpu run will raise the user-facing error
                reference = None
        out = func(*args, **kwargs)
        if not on_tpu:
            return out
        torch.tpu.synchronize()
        outs, _ = tree_flatten(out)
        if self.check_nan:
            for t in outs:
                if (isinstance(t, torch.Tensor) and t.device.type == "tpu" and t.is_floating_point()
                        and not bool(torch.isfinite(t).all())):
                    raise FloatingPointError(
                        f"torch_tpu debug: {func} produced NaN or Inf\n  at {_user_line()}\n"
                        f"  inputs: {_describe((args, kwargs))}")
        if reference is not None:
            refs, _ = tree_flatten(reference)
            for i, (t, r) in enumerate(zip(outs, refs)):
                if not (isinstance(t, torch.Tensor) and isinstance(r, torch.Tensor)):
                    continue
                d_atol, d_rtol = _tolerance(r.dtype)
                atol = d_atol if self.atol is None else self.atol
                rtol = d_rtol if self.rtol is None else self.rtol
                got = t.detach().cpu()
                if got.shape != r.shape or got.dtype != r.dtype or not torch.allclose(
                        got.double(), r.double(), atol=atol, rtol=rtol, equal_nan=True):
                    diff = ((got.double() - r.double()).abs().max().item()
                            if got.shape == r.shape else float("nan"))
                    raise RuntimeError(
                        f"torch_tpu debug: {func} output {i} diverges from CPU "
                        f"(max abs diff {diff:.3g}, atol {atol}, rtol {rtol})\n"
                        f"  at {_user_line()}\n  inputs: {_describe((args, kwargs))}")
        return out


def _apply(mode: str):
    if mode not in MODES:
        raise ValueError(f"unknown eager mode {mode!r}; choose one of {MODES}")


def sync() -> None:
    """Fused eager: compiles and launches what has been recorded so far
    (asynchronously; torch.tpu.synchronize() also waits). A no-op in the
    other modes."""
    if _C._is_initialized():
        _C._flush()


def get_eager_mode() -> str:
    """The mode in effect on this thread."""
    return getattr(_state, "mode", None) or _default_mode


def set_eager_mode(mode: str) -> None:
    """Sets the process-wide default mode (the per-thread context manager
    overrides it). In debug mode every launch waits for its result on every
    thread; the NaN/CPU checks apply to ops issued from this thread and to
    the backward passes it starts."""
    global _default_mode, _default_debug
    _apply(mode)
    sync()  # what was recorded runs in the mode it was recorded in
    if _default_debug is not None:
        _default_debug.__exit__(None, None, None)
        _default_debug = None
    _default_mode = mode
    _C._set_default_mode(_MODE_CODE[mode])
    _C._set_synchronous(mode == "debug")
    _C._set_log_compiles(mode == "debug" or _C._setting("TORCH_TPU_LOG_COMPILES"))
    if mode == "debug":
        _default_debug = _DebugMode()
        _default_debug.__enter__()


@contextlib.contextmanager
def eager_mode(mode: str, **checks):
    """Runs the block in `mode` on this thread (and the backward passes it
    starts). Keyword checks for debug mode: check_nan, check_cpu, atol, rtol
    (defaults from the environment)."""
    _apply(mode)
    prev = getattr(_state, "mode", None)
    sync()
    _state.mode = mode
    prev_code = _C._thread_mode_enter(_MODE_CODE[mode])
    try:
        if mode == "debug":
            with _DebugMode(**checks):
                yield
        else:
            yield
    finally:
        try:
            sync()
        finally:
            _C._thread_mode_exit(prev_code)
            _state.mode = prev


def _init_from_environment():
    # TORCH_TPU_EAGER_MODE, or its deprecated aliases, or the default
    set_eager_mode(_C._default_eager_mode())
