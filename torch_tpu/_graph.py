"""Graph capture: the shared graph layer that torch.compile's backend uses.

Inside ``capture()`` every op dispatched on this thread (and the autograd
threads it starts) is recorded into the fused region, with loop detection
and the size cap off; leaving the block compiles the recorded ops as one
program (a cache hit from the second call on) and launches it. An op that
needs a pending value on the host (a CPU-fallback op, ``.item()``) splits the
region there: the ops before it form one program, the ops after it another.
"""
import contextlib
from dataclasses import dataclass, field

from . import _C
from .modes import _MODE_CODE

__all__ = ["capture", "Capture", "replay"]


@dataclass
class Capture:
    programs: int = 0        # programs launched for the captured ops
    compiles: int = 0        # of which were compiled now (not cached)
    breaks: list = field(default_factory=list)  # (op, reason) that split the region
    flushes: dict = field(default_factory=dict)  # flush reason -> count inside the capture
    outputs: object = None   # set by the body when a replay is wanted (see capture())
    replay: object = None    # a replay of the capture's program, or None
    replay_why_not: str = ""  # why there is no replay


def _snapshot():
    s = _C._cache_stats()
    return s["fused"], s["ops_run"], dict(_C._fallback_report())


@contextlib.contextmanager
def capture(replay_args=None):
    """With ``replay_args`` (the graph's arguments) and the body setting
    ``cap.outputs`` to the graph's outputs (a list or tuple), ``cap.replay``
    becomes a handle that runs the captured program again on new arguments
    of the same layout (`replay()`), when the capture ran as one program."""
    _C._init()
    _C._capture_begin()  # what was recorded before runs on its own
    fused0, strict0, fallbacks0 = _snapshot()
    cap = Capture()
    previous = _C._thread_mode_enter(_MODE_CODE["fused"])
    try:
        yield cap
    finally:
        _C._thread_mode_exit(previous)
        if replay_args is not None and isinstance(cap.outputs, (list, tuple)):
            made = _C._capture_end_replay(list(replay_args), list(cap.outputs))
            if isinstance(made, str):
                cap.replay_why_not = made
            else:
                cap.replay = made
        else:
            _C._capture_end()
        fused1, strict1, fallbacks1 = _snapshot()
        cap.programs = (fused1["programs_run"] - fused0["programs_run"]) + (strict1 - strict0)
        cap.compiles = fused1["compiles"] - fused0["compiles"]
        cap.flushes = {k: v - fused0["flushes"][k] for k, v in fused1["flushes"].items()
                       if v != fused0["flushes"][k]}
        cap.breaks = [(op, "cpu fallback") for op, n in fallbacks1.items()
                      if n > fallbacks0.get(op, 0)]


def replay(handle, args):
    """Runs a captured program on new arguments: a list of outputs, or None
    (nothing ran) when the arguments' layout differs from the captured call."""
    return _C._replay_run(handle, args if isinstance(args, list) else list(args))
