"""Compilation cache statistics."""
from . import _C


def cache_stats() -> dict:
    """Counts of the compilation cache: requests, hits, misses, entries,
    compile_seconds, plus native launches (ops_run), declined lowerings and
    ops with no lowering. ``executables``: the pool of compiled programs kept
    loaded (live now, peak, cap = TORCH_TPU_MAX_LIVE_EXECUTABLES or lower for
    vm.max_map_count, installs, evictions, the last count of the process's
    memory mappings and the kernel's limit)."""
    s = dict(_C._cache_stats())
    s["executables"] = dict(_C._executable_pool_stats())
    return s


def reset_cache_stats() -> None:
    _C._reset_cache_stats()
    _C._executable_pool_reset_peak()
