"""Streams and events for `torch.tpu`, as FSDP2 and other stream-aware code call them.

A tpu device has one execution order: every op's program is launched in
program order, and PJRT orders launches that share buffers by the buffers'
readiness. So every `Stream` is that one order (switching, waiting on
another stream or on an event orders nothing more), `Event.synchronize` and
`Stream.synchronize` wait for the device, and queries report whether the
device is idle only after a synchronize (they return True after waiting).
The host transport's collectives complete before they return, so FSDP2's
all-gather and reduce-scatter streams need nothing more.
"""
import contextlib

import torch


class Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.recorded = False

    def record(self, stream=None):
        self.recorded = True

    def wait(self, stream=None):
        pass

    def query(self):
        torch.tpu.synchronize()
        return True

    def synchronize(self):
        torch.tpu.synchronize()


class Stream:
    def __init__(self, device=None, priority=0, **kwargs):
        self.device = torch.device("tpu", torch.tpu.current_device() if device is None else torch.device(device).index or 0)
        self.priority = priority

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event if event is not None else Event()
        event.record(self)
        return event

    def query(self):
        torch.tpu.synchronize()
        return True

    def synchronize(self):
        torch.tpu.synchronize()


_default = None


def current_stream(device=None):
    global _default
    if _default is None:
        _default = Stream()
    return _default


default_stream = current_stream


def stream(s):
    return contextlib.nullcontext(s)


def install(module):
    for name in ("Event", "Stream", "current_stream", "default_stream", "stream"):
        if not hasattr(module, name):
            setattr(module, name, globals()[name])
