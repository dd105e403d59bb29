"""TEMPORARY STAND-IN (branch compile5 only) for the lead's fused-region API.

The real module (commit "graph capture API" on main) records the ops issued
inside `capture()` and launches them as one StableHLO program. This stand-in
runs them eagerly, one program per op, and reports `programs = None`; it
only exists so torch_tpu.compile can run before the real one lands. Delete
it when merging main.
"""
import contextlib

from . import _C


class Capture:
    def __init__(self):
        self.programs = None   # unknown in the stand-in
        self.breaks = []       # (op name, reason)


@contextlib.contextmanager
def capture():
    cap = Capture()
    before = dict(_C._fallback_report())
    try:
        yield cap
    finally:
        after = dict(_C._fallback_report())
        cap.breaks = [(op, "cpu fallback") for op, n in after.items() if n > before.get(op, 0)]
