"""Buffers are freed when the last tensor dies; stats track peaks."""
import gc

import pytest
import torch

import torch_tpu
from harness import run_python


def test_memory_returns_to_baseline():
    gc.collect()
    base = torch.tpu.memory_allocated()
    x = torch.ones(1000).to("tpu")
    y = x * 3
    assert torch.tpu.memory_allocated() == base + 8000
    del x, y
    gc.collect()
    assert torch.tpu.memory_allocated() == base


def test_views_keep_storage_alive():
    base = torch.tpu.memory_allocated()
    x = torch.ones(256).to("tpu")
    v = x[10:20]
    del x
    assert torch.tpu.memory_allocated() == base + 1024
    assert torch.equal(v.cpu(), torch.ones(10))
    del v
    assert torch.tpu.memory_allocated() == base


def test_peak_memory():
    torch.tpu.reset_peak_memory_stats()
    base = torch.tpu.memory_allocated()
    x = torch.ones(2048).to("tpu")
    del x
    assert torch.tpu.max_memory_allocated() >= base + 8192
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == torch.tpu.memory_allocated()


_MALLOC_CYCLES = """
import ctypes, resource, torch, torch_tpu
torch.ones(1).to("tpu").cpu()  # opens the runtime, which sets the thresholds
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
size = 8 << 20
def cycle():  # what a CPU-plugin launch does: allocate, write, free
    blocks = [libc.malloc(size) for _ in range(5)]
    for p in blocks:
        libc.memset(p, 1, size)
    for p in reversed(blocks):
        libc.free(p)
cycle(); cycle()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    cycle()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_host_malloc_reuses_pages_on_cpu_plugin():
    """On the CPU plugin, device memory is malloc'd host memory; blocks freed
    by one launch must be reused by the next without new page faults
    (csrc/pjrt/host_malloc.c). The opted-out child is the control: glibc's
    defaults map and unmap these 8 MiB blocks, faulting in ~80% of the
    102,400 pages the 10 cycles touch."""
    if torch_tpu._C._platform_name() != "cpu":
        pytest.skip("only the CPU plugin keeps device buffers in malloc'd host memory")
    tuned = int(run_python(_MALLOC_CYCLES).split()[-1])
    default = int(run_python(_MALLOC_CYCLES, env={"TORCH_TPU_HOST_MALLOC_TUNING": "0"}).split()[-1])
    assert default > 20000, f"control: glibc defaults faulted only {default} pages"
    assert tuned < 1000, f"{tuned} page faults over 10 allocate/free cycles"
