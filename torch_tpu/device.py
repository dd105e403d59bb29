"""`torch.tpu`: the device module, mirroring the parts of `torch.cuda` that
PyTorch and users call."""
import contextlib

import torch

from . import _C

__all__ = [
    "is_available", "is_initialized", "init", "device_count", "current_device", "set_device",
    "device", "synchronize", "manual_seed", "manual_seed_all", "seed", "seed_all",
    "initial_seed", "get_device_name", "memory_allocated", "max_memory_allocated",
    "reset_peak_memory_stats", "get_rng_state", "set_rng_state", "device_memory_stats",
]


def is_available() -> bool:
    """True when the PJRT plugin loads and reports at least one device. Never raises."""
    return _C._device_count() > 0


def is_initialized() -> bool:
    return _C._is_initialized()


def init() -> None:
    """Loads the plugin now (it is otherwise loaded on first use)."""
    _C._init()


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    """Number of devices; 0 when no plugin can be loaded. Never raises."""
    return _C._device_count()


def _index(dev) -> int:
    if dev is None:
        return current_device()
    if isinstance(dev, int):
        return dev
    dev = torch.device(dev)
    if dev.type != "tpu":
        raise ValueError(f"expected a tpu device, got {dev}")
    return current_device() if dev.index is None else dev.index


def current_device() -> int:
    return _C._current_device()


def set_device(dev) -> None:
    _C._set_device(_index(dev))


@contextlib.contextmanager
def device(dev):
    """Context manager selecting the current tpu device."""
    prev = current_device()
    set_device(dev)
    try:
        yield
    finally:
        _C._set_device(prev)


def synchronize(dev=None) -> None:
    """Waits for all queued work; raises the first asynchronous error, if any."""
    _C._synchronize()


def manual_seed(seed: int) -> None:
    """Seeds the random ops of the current device."""
    _C._manual_seed(current_device(), int(seed) & 0xFFFFFFFFFFFFFFFF)


def manual_seed_all(seed: int) -> None:
    """Seeds every device (torch.manual_seed calls this)."""
    for i in range(max(device_count(), 1)):
        _C._manual_seed(i, int(seed) & 0xFFFFFFFFFFFFFFFF)


def seed() -> None:
    manual_seed(torch.seed())


def seed_all() -> None:
    manual_seed_all(torch.seed())


def initial_seed() -> int:
    return _C._initial_seed(current_device())


def get_rng_state(dev=None) -> torch.Tensor:
    """Seed and call counter of the device's generator, as a uint8 CPU tensor."""
    return torch.tensor(list(_C._initial_seed(_index(dev)).to_bytes(8, "little")), dtype=torch.uint8)


def set_rng_state(state: torch.Tensor, dev=None) -> None:
    _C._manual_seed(_index(dev), int.from_bytes(bytes(state.tolist()), "little"))


def get_device_name(dev=None) -> str:
    return _C._device_name(_index(dev))


def memory_allocated(dev=None) -> int:
    """Bytes held by live tpu tensors' storages on the device."""
    return _C._memory_allocated(_index(dev))


def max_memory_allocated(dev=None) -> int:
    return _C._max_memory_allocated(_index(dev))


def reset_peak_memory_stats(dev=None) -> None:
    _C._reset_peak_memory_stats(_index(dev))


def device_memory_stats() -> dict:
    """Bytes of device buffers torch_tpu holds now and at peak (all
    devices). Unlike memory_allocated (tensor storages), this counts what is
    really materialized: Fused eager never creates buffers for tensors that
    die inside a region, and parameter updates replace buffers."""
    live, peak = _C._buffer_bytes()
    return {"buffer_bytes": live, "peak_buffer_bytes": peak}


# torch.cuda's memory API. The counters live in the C core (csrc/graph/
# storage.c: storages; csrc/pjrt/runtime_buffers.c: device buffers);
# torch_tpu/memory.py formats them.
from .memory import (memory_stats, memory_summary, mem_get_info, empty_cache,  # noqa: E402
                     reset_accumulated_memory_stats, memory_reserved, max_memory_reserved)

__all__ += ["memory_stats", "memory_summary", "mem_get_info", "empty_cache",
            "reset_accumulated_memory_stats", "memory_reserved", "max_memory_reserved"]


# Autocast: torch.autocast("tpu") asks the device module which low-precision
# dtypes it supports; the cast policy itself is csrc/torch/autocast.cpp.
def get_amp_supported_dtype() -> list:
    """Dtypes torch.autocast("tpu", dtype=...) accepts."""
    return [torch.bfloat16, torch.float16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def is_autocast_enabled() -> bool:
    return torch.is_autocast_enabled("tpu")


def set_autocast_enabled(enabled: bool) -> None:
    torch.set_autocast_enabled("tpu", enabled)


def get_autocast_dtype() -> torch.dtype:
    return torch.get_autocast_dtype("tpu")


def set_autocast_dtype(dtype: torch.dtype) -> None:
    torch.set_autocast_dtype("tpu", dtype)


__all__ += ["get_amp_supported_dtype", "is_bf16_supported", "is_autocast_enabled",
            "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype"]
