"""Compilation cache statistics."""
from . import _C


def cache_stats() -> dict:
    """Counts of the compilation cache: requests, hits, misses, entries,
    compile_seconds, plus native launches (ops_run), declined lowerings and
    ops with no lowering."""
    return dict(_C._cache_stats())


def reset_cache_stats() -> None:
    _C._reset_cache_stats()
