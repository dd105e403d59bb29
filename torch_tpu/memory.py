"""Memory statistics of tpu devices, with torch.cuda's names where they mean
the same thing. Exposed as `torch.tpu.memory_stats()`, `memory_summary()`,
`mem_get_info()`, `empty_cache()` (see docs/tools.md).

What the keys count (the C core keeps the counters, as atomics):

* `allocated_bytes.all.*` / `allocation.all.*`: tensor storages, as
  torch.cuda counts blocks handed to tensors. A storage counts from its
  creation until the last tensor using it dies, whether or not a device
  buffer backs it yet: `torch.empty` counts at once, and in Fused eager a
  tensor recorded in a pending region counts although its value is not
  computed until the region flushes. `current` and `peak` per device;
  `allocated` and `freed` are totals since the last
  `reset_accumulated_memory_stats()` (a resize counts its growth as
  allocated, its shrinkage as freed).
* `reserved_bytes.all.*`: the bytes of PJRT device buffers torch_tpu holds
  (all devices together; the plugin owns the allocator, so this is what is
  really materialized). It can be lower than `allocated_bytes` (Fused eager
  never makes buffers for values that die inside a region; `empty` storages
  get one at their first write) or higher for a moment (a buffer a launched
  program still reads is destroyed once that program finishes).
* `num_alloc_retries`, `num_ooms`, `inactive_split*`, large/small pool
  splits: torch.cuda's caching-allocator concepts; torch_tpu has no caching
  allocator of its own (the plugin allocates), so they are 0 / absent.
"""
from . import _C


def _index(device):
    from .device import _index as idx
    return idx(device)


def memory_stats(device=None) -> dict:
    """A flat dict of counters with torch.cuda.memory_stats()'s key names."""
    d = _index(device)
    s = _C._memory_stats(d)
    out = {
        "allocated_bytes.all.current": s["bytes"],
        "allocated_bytes.all.peak": s["peak_bytes"],
        "allocated_bytes.all.allocated": s["bytes_allocated"],
        "allocated_bytes.all.freed": s["bytes_freed"],
        "allocation.all.current": s["count"],
        "allocation.all.peak": s["peak_count"],
        "allocation.all.allocated": s["count_allocated"],
        "allocation.all.freed": s["count_freed"],
        "reserved_bytes.all.current": s["buffer_bytes"],
        "reserved_bytes.all.peak": s["peak_buffer_bytes"],
        "num_alloc_retries": 0,
        "num_ooms": 0,
    }
    # Everything a torch.cuda reader sums over ("active" blocks are the
    # allocated ones here: no block is kept inactive by a cache).
    for k in ("current", "peak", "allocated", "freed"):
        out[f"active_bytes.all.{k}"] = out[f"allocated_bytes.all.{k}"]
        out[f"active.all.{k}"] = out[f"allocation.all.{k}"]
    return dict(sorted(out.items()))


def memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_accumulated_memory_stats(device=None) -> None:
    _C._reset_accumulated_memory_stats(_index(device))


def mem_get_info(device=None):
    """(free, total) device bytes, as the plugin reports them through
    PJRT_Device_MemoryStats (bytes_in_use and bytes_limit). Raises
    NotImplementedError naming the plugin's reason where it does not report
    them (XLA's CPU plugin: its memory is the host's)."""
    d = _index(device)
    m = _C._device_memory(d)
    if m["bytes_limit"] < 0:
        raise NotImplementedError(
            f"the PJRT plugin reports {m['bytes_in_use']} bytes in use on tpu:{d} but no "
            "memory limit, so free memory is unknown")
    return m["bytes_limit"] - m["bytes_in_use"], m["bytes_limit"]


def empty_cache() -> None:
    """Releases what torch_tpu holds beyond live tensors: the pending Fused
    region is flushed (its intermediate values and the buffers it would
    donate are released) and released buffers are destroyed once the
    programs reading them finish. There is no caching allocator to empty;
    the plugin's own allocator keeps its pools."""
    if _C._is_initialized():
        _C._flush()
        _C._synchronize()


def _fmt(n):
    for unit in ("B ", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:7.0f} {unit}" if unit == "B " else f"{n:7.2f} {unit}"
        n /= 1024
    return str(n)


def memory_summary(device=None, abbreviated=False) -> str:
    """A readable table of memory_stats(), as torch.cuda.memory_summary()."""
    d = _index(device)
    s = memory_stats(d)
    rows = [("Allocated memory", "allocated_bytes.all", True),
            ("Device buffers (reserved)", "reserved_bytes.all", True),
            ("Tensor storages (allocations)", "allocation.all", False)]
    cols = ("Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed")
    w = 32 + 13 * len(cols) + 1
    lines = ["=" * w, f"|{'torch_tpu memory summary, device tpu:' + str(d):^{w - 2}}|", "=" * w,
             f"| {'Metric':<30}|" + "".join(f"{c:>12}|" for c in cols), "-" * w]
    for label, key, is_bytes in rows:
        vals = [s.get(f"{key}.{k}") for k in ("current", "peak", "allocated", "freed")]
        cells = ["" if v is None else (_fmt(v) if is_bytes else str(v)) for v in vals]
        lines.append(f"| {label:<30}|" + "".join(f"{c:>12}|" for c in cells))
    lines.append("-" * w)
    try:
        free, total = mem_get_info(d)
        lines.append(f"| device memory (plugin): {_fmt(free).strip()} free of {_fmt(total).strip()}")
    except (NotImplementedError, RuntimeError) as e:
        lines.append(f"| device memory (plugin): not reported: {str(e).splitlines()[0]}")
    lines.append("=" * w)
    return "\n".join(lines) + "\n"
