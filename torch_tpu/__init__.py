"""torch_tpu: a native PyTorch backend for XLA devices, driven by a C core over PJRT.

    import torch, torch_tpu
    model.to("tpu")          # real tensors on the `tpu` device
"""
import atexit
import os
import sys
import warnings

import torch

from . import _C


_doctor_environ = None  # the environment as given, when the doctor runs with bad values


def _check_environment():
    # Every TORCH_TPU_* value must parse (ValueError naming the variable and
    # what it accepts), and an unknown TORCH_TPU_* variable, most likely a
    # typo, gets one warning naming the nearest known one.
    try:
        _C._check_settings()
    except ValueError:
        # `python -m torch_tpu doctor` imports this package first (sys.argv[0]
        # is "-m" while runpy locates the module): it must still run, to
        # diagnose the bad value.
        if not (sys.argv[:1] == ["-m"] and sys.argv[1:2] == ["doctor"]):
            raise
        # The doctor reports every bad value from the saved environment; the
        # package itself imports with those variables at their defaults.
        global _doctor_environ
        _doctor_environ = dict(os.environ)
        for s in _C._settings():
            value = os.environ.get(s["name"])
            if value is not None:
                try:
                    _C._parse_setting(s["name"], value)
                except ValueError:
                    del os.environ[s["name"]]
        _C._reset_settings()
        return
    for name, nearest in _C._unknown_settings():
        warnings.warn(f"{name} is not a torch_tpu setting and is ignored; did you mean {nearest}?",
                      RuntimeWarning, stacklevel=2)


_check_environment()
_C._set_search_dirs([p for p in sys.path if p])
torch.utils.rename_privateuse1_backend("tpu")

from . import device as _device_module  # noqa: E402

torch._register_device_module("tpu", _device_module)
torch.utils.generate_methods_for_privateuse1_backend(
    for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True)

from . import _printing  # noqa: E402

_printing.install()  # tensor contents are formatted from one host copy

from . import debug  # noqa: E402,F401
from . import profiler  # noqa: E402,F401  (torch_tpu.profiler.profile: Chrome traces)
from . import compile  # noqa: E402,F401  (registers the torch.compile backend "tpu")
from . import distributed  # noqa: E402  (registers the torch.distributed backend "tpu")

distributed._register()
_device_module.distributed_transport = distributed.distributed_transport
from . import distributed_streams  # noqa: E402

distributed_streams.install(_device_module)  # torch.tpu.Stream/Event/stream, as FSDP2 calls them


def _let_autograd_threads_settle():
    # The autograd engine's tpu worker thread drops its last reference to a
    # finished backward (and a Python object in its thread-local state) a
    # moment after backward() returns. If the interpreter is finalizing at
    # that moment, PyTorch's decref cannot take the GIL and the process
    # aborts ("terminate called without an active exception"). Sleeping
    # releases the GIL and lets the worker finish first.
    if _C._is_initialized():
        import time
        time.sleep(0.05)


atexit.register(_let_autograd_threads_settle)
from ._stats import cache_stats, reset_cache_stats  # noqa: E402,F401
from .export import export, load  # noqa: E402,F401  (artifacts: docs/export.md)
from .modes import eager_mode, get_eager_mode, set_eager_mode, sync  # noqa: E402,F401
# StableHLO kernels as custom ops (docs/custom-kernels.md); the name is the
# function, the module stays importable as torch_tpu.custom_kernel's file
from .custom_kernel import custom_kernel, CustomKernel, CustomKernelError  # noqa: E402,F401
from . import modes as _modes  # noqa: E402

_modes._init_from_environment()


def _mark_step(optimizer, args, kwargs):
    # a training step ends at a tpu optimizer's step(): per-step program counts
    # (not inside a torch.compile'd step: Dynamo cannot trace the C call)
    if torch.compiler.is_compiling():
        return
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.device.type == "tpu":
                _C._mark_step()
            return


from torch.optim.optimizer import register_optimizer_step_post_hook  # noqa: E402
from . import generation as _generation  # noqa: E402

_generation.install()  # HF generate on tpu: static cache, host-side decode loop (generation.py)

register_optimizer_step_post_hook(_mark_step)

__all__ = ["cache_stats", "reset_cache_stats", "debug", "set_eager_mode", "get_eager_mode",
           "eager_mode", "sync", "custom_kernel", "CustomKernel", "CustomKernelError"]
