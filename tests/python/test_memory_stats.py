"""torch.tpu.memory_stats() and friends, against known allocations.

allocated_bytes / allocation count tensor storages (from creation to the
death of the last tensor using them, computed or not); reserved_bytes
counts the device buffers really held (torch_tpu/memory.py)."""
import gc

import pytest
import torch
import torch_tpu


def stats():
    return torch.tpu.memory_stats()


def test_allocate_and_free_exact_bytes():
    gc.collect()
    torch.tpu.reset_accumulated_memory_stats()
    s0 = stats()
    assert s0["allocated_bytes.all.allocated"] == 0 and s0["allocation.all.freed"] == 0
    x = torch.empty(1000, dtype=torch.float32, device="tpu")
    y = torch.empty(300, dtype=torch.float64, device="tpu")
    s1 = stats()
    assert s1["allocated_bytes.all.current"] - s0["allocated_bytes.all.current"] == 4000 + 2400
    assert s1["allocation.all.current"] - s0["allocation.all.current"] == 2
    assert s1["allocated_bytes.all.allocated"] == 6400
    assert s1["allocation.all.allocated"] == 2
    assert torch.tpu.memory_allocated() == s1["allocated_bytes.all.current"]
    v = x.view(10, 100)[2:]  # a view allocates nothing
    assert stats()["allocated_bytes.all.current"] == s1["allocated_bytes.all.current"]
    del x
    assert stats()["allocated_bytes.all.current"] == s1["allocated_bytes.all.current"]  # v holds it
    del v, y
    s2 = stats()
    assert s2["allocated_bytes.all.current"] == s0["allocated_bytes.all.current"]
    assert s2["allocated_bytes.all.freed"] == 6400 and s2["allocation.all.freed"] == 2
    assert s2["allocation.all.current"] == s0["allocation.all.current"]
    # torch.cuda's active_* mirror allocated_* (no inactive cached blocks here).
    assert s2["active_bytes.all.freed"] == 6400


def test_peak_and_reset():
    gc.collect()
    torch.tpu.reset_peak_memory_stats()
    base = torch.tpu.memory_allocated()
    assert torch.tpu.max_memory_allocated() == base
    a = torch.empty(2048, dtype=torch.float32, device="tpu")
    b = torch.empty(1024, dtype=torch.int64, device="tpu")
    del a, b
    c = torch.empty(100, dtype=torch.float32, device="tpu")
    assert torch.tpu.max_memory_allocated() == base + 8192 + 8192
    assert stats()["allocated_bytes.all.peak"] == base + 16384
    assert stats()["allocation.all.peak"] >= stats()["allocation.all.current"] + 1
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == base + 400
    del c


def test_resize_counts_growth_and_shrinkage():
    torch.tpu.reset_accumulated_memory_stats()
    x = torch.empty(10, device="tpu")
    x.resize_(110)
    s = stats()
    assert s["allocated_bytes.all.allocated"] == 440  # 40 + 400 of growth
    del x
    assert stats()["allocated_bytes.all.freed"] == 440


def test_reserved_counts_materialized_buffers_strict():
    with torch_tpu.eager_mode("strict"):
        a = torch.ones(4096, device="tpu")
        torch.tpu.synchronize()
        r0 = torch.tpu.memory_reserved()
        b = a * 3
        torch.tpu.synchronize()
        assert torch.tpu.memory_reserved() - r0 == 4096 * 4
        assert torch.tpu.max_memory_reserved() >= torch.tpu.memory_reserved()
        del b
        torch.tpu.synchronize()
        assert torch.tpu.memory_reserved() == r0


def test_fused_pending_values_count_as_allocated_not_reserved():
    # Fused semantics: a tensor recorded in a pending region is allocated
    # (its storage exists) but holds no device buffer until the region
    # flushes; values that die inside the region never get one.
    with torch_tpu.eager_mode("fused"):
        a = torch.ones(4096, device="tpu")
        torch_tpu.sync()
        r0, m0 = torch.tpu.memory_reserved(), torch.tpu.memory_allocated()
        t = a + 1                       # dies inside the region
        b = t * 2
        del t
        assert torch.tpu.memory_allocated() - m0 == 4096 * 4
        assert torch.tpu.memory_reserved() == r0
        torch_tpu.sync()
        assert torch.tpu.memory_reserved() - r0 == 4096 * 4  # only b materialized
        assert torch.equal(b.cpu(), torch.full((4096,), 4.0))
        del b


def test_empty_cache_flushes_pending_region():
    with torch_tpu.eager_mode("fused"):
        a = torch.ones(1024, device="tpu")
        torch_tpu.sync()
        r0 = torch.tpu.memory_reserved()
        b = a + 5
        torch.tpu.empty_cache()
        assert torch.tpu.memory_reserved() - r0 == 4096
        assert b.sum().item() == 6 * 1024


def test_mem_get_info_reports_or_says_why():
    try:
        free, total = torch.tpu.mem_get_info()
    except NotImplementedError as e:
        # XLA's CPU plugin does not implement PJRT_Device_MemoryStats.
        assert "PJRT_Device_MemoryStats" in str(e) or "limit" in str(e)
    else:
        assert 0 <= free <= total


def test_memory_summary_table():
    x = torch.empty(1 << 20, dtype=torch.uint8, device="tpu")
    text = torch.tpu.memory_summary()
    assert "Allocated memory" in text and "Device buffers (reserved)" in text
    assert "Tensor storages (allocations)" in text and "device memory (plugin)" in text
    cur = [ln for ln in text.splitlines() if ln.startswith("| Allocated memory")][0]
    assert "MiB" in cur  # at least the 1 MiB storage above
    del x


def test_bad_device_index():
    with pytest.raises((RuntimeError, IndexError, ValueError)):
        torch.tpu.mem_get_info(999)


_TWO_DEVICES = r'''
import threading, torch, torch_tpu
from torch_tpu.distributed import CompiledGroup
x = torch.randn(4096, device="tpu:0")
torch.tpu.synchronize()

def reserved():
    torch.tpu.synchronize()
    return torch.tpu.memory_reserved()

def copy():  # a fresh source buffer each time, freed with its tensor
    src = x + 1
    y = src.to("tpu:1"); del y, src

for _ in range(3):  # warm: programs, caches
    copy()
base = reserved()
for _ in range(40):
    copy()
copies = reserved() - base
g = CompiledGroup(world_size=2, timeout=60.0)

def rank(r, n):
    for _ in range(n):
        g.all_reduce(torch.ones(4096, device=f"tpu:{r}") * 2)

def run(n):
    ts = [threading.Thread(target=rank, args=(r, n)) for r in range(2)]
    [t.start() for t in ts]; [t.join() for t in ts]

run(3)
base = reserved()
run(40)
print("GROWTH", copies, reserved() - base)
'''


def test_cross_device_copies_and_collectives_release_their_buffers(tmp_path):
    # each call used to keep one reference too many to its input's device
    # buffer (16 KiB here): 40 calls leaked 640 KiB of device memory
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, TORCH_TPU_NUM_DEVICES="2", PYTHONPATH=root)
    p = subprocess.run([sys.executable, "-c", _TWO_DEVICES], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    copies, collectives = (int(v) for v in p.stdout.split("GROWTH")[1].split())
    assert copies <= 0 and collectives <= 0, (copies, collectives)
