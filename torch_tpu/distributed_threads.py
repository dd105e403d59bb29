"""Compiled collectives for ranks that are threads of one process.

Where one PJRT client addresses every participating device (on the CPU
plugin: one process with ``TORCH_TPU_NUM_DEVICES=N``), each rank can be a
thread working on its own device ``tpu:r``. A :class:`CompiledGroup` lists
the devices; every rank's thread calls the same collective with its own
tensor, and the calls meet in a rendezvous in the C core
(``csrc/dist/collectives.c``): the last to arrive launches one StableHLO
program, compiled for N partitions with the group's device assignment and
cached, over all N devices, and each thread gets its own result.

    group = torch_tpu.distributed.CompiledGroup(world_size=2)   # tpu:0, tpu:1
    def rank_main(r):
        x = torch.ones(4, device=f"tpu:{r}") * (r + 1)
        y = group.all_reduce(x)            # tensor([3., 3., 3., 3.]) on tpu:r
    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(2)]

A thread's rank is the position of its tensor's device in ``devices``.
Results are new tensors (functional collectives' style); ``all_reduce_``
writes the caller's tensor. Ranks whose tensors or ops differ all get a
RuntimeError naming the op and each shape; a rank that does not arrive
within ``timeout`` seconds makes the others raise instead of hanging.

``group.process_group(rank)`` makes that rank's own ``torch.distributed``
ProcessGroup whose tpu backend is the compiled transport, so a thread can
call ``dist.all_reduce(t, group=pg)``, ``all_gather_into_tensor``,
``reduce_scatter_tensor``, ``all_to_all_single`` (equal splits),
``broadcast`` and ``barrier`` with an explicit group. It is not the
process's world group: ``init_process_group`` keeps one world group per
process, while here the ranks share a process.
"""
from __future__ import annotations

import torch

from . import _C

_KINDS = {"all_reduce": 0, "all_gather": 1, "reduce_scatter": 2, "all_to_all": 3,
          "collective_permute": 4}
_REDUCE = {"sum": 0, "avg": 1, "mean": 1, "max": 2, "min": 3, "product": 4, "prod": 4}


def _reduce_code(op) -> int:
    if op is None:
        return 0
    try:  # torch.distributed.ReduceOp
        import torch.distributed as dist
        table = {dist.ReduceOp.SUM: "sum", dist.ReduceOp.AVG: "avg", dist.ReduceOp.MAX: "max",
                 dist.ReduceOp.MIN: "min", dist.ReduceOp.PRODUCT: "product"}
        for k, v in table.items():
            if op == k:
                op = v
                break
    except (ImportError, TypeError):
        pass
    if isinstance(op, str) and op.lower() in _REDUCE:
        return _REDUCE[op.lower()]
    raise ValueError(f"compiled collectives: unsupported reduction {op!r} "
                     f"(sum, avg, max, min, product)")


class CompiledGroup:
    """Ranks as threads: rank r owns ``devices[r]`` (default ``tpu:0..world_size-1``)."""

    def __init__(self, world_size: int | None = None, devices=None, timeout: float = 30.0):
        if devices is None:
            if world_size is None:
                world_size = torch.tpu.device_count()
            devices = list(range(world_size))
        devices = [torch.device(d).index if not isinstance(d, int) else d for d in devices]
        if world_size is not None and world_size != len(devices):
            raise ValueError(f"world_size {world_size} but {len(devices)} devices")
        self._g = _C._CollGroup(devices)
        self.devices = devices
        self.timeout = float(timeout)

    @property
    def world_size(self) -> int:
        return len(self.devices)

    def rank(self, tensor_or_device) -> int:
        d = tensor_or_device.device if isinstance(tensor_or_device, torch.Tensor) else \
            torch.device(tensor_or_device)
        return self.devices.index(d.index)

    def _run(self, kind, tensor, op=None, pairs=(), timeout=None):
        t = self.timeout if timeout is None else float(timeout)
        flat = [int(x) for p in pairs for x in p]
        return self._g.run(_KINDS[kind], _reduce_code(op), flat, tensor, t)

    def all_reduce(self, tensor, op="sum", timeout=None):
        return self._run("all_reduce", tensor, op, timeout=timeout)

    def all_reduce_(self, tensor, op="sum", timeout=None):
        """In place, as ``torch.distributed.all_reduce``."""
        tensor.copy_(self.all_reduce(tensor, op, timeout))
        return tensor

    def all_gather(self, tensor, timeout=None):
        """Concatenation of every rank's tensor along dim 0 (``all_gather_into_tensor``)."""
        return self._run("all_gather", tensor, timeout=timeout)

    def reduce_scatter(self, tensor, op="sum", timeout=None):
        """Rank r's block of dim 0 of the reduction (``reduce_scatter_tensor``)."""
        return self._run("reduce_scatter", tensor, op, timeout=timeout)

    def all_to_all(self, tensor, timeout=None):
        """Equal splits of dim 0: block j goes to rank j (``all_to_all_single``)."""
        return self._run("all_to_all", tensor, timeout=timeout)

    def collective_permute(self, tensor, pairs, timeout=None):
        """(source, target) rank pairs; a rank no pair targets receives zeros."""
        return self._run("collective_permute", tensor, pairs=pairs, timeout=timeout)

    def run_program(self, text: str, *tensors, num_outputs: int = 1, what: str = "program",
                    timeout=None):
        """One whole StableHLO program over the group, launched once on every rank's device.

        Every rank's thread calls it with the same ``text`` (a module whose
        ``@main`` takes each argument as a flat 1-D ``tensor<numel x dtype>``
        of the tensor's elements, as Fused regions pass theirs) and its own
        tensors on its own device; the program may hold collectives
        (``stablehlo.all_reduce`` ... over ``replica_groups`` of partition ids,
        ``use_global_device_ids``, distinct channel handles) among other ops.
        The last rank to arrive compiles it for the group's partitions and
        device assignment (cached) and launches it once; each rank gets its
        own ``num_outputs`` results. Ranks whose texts, or whose arguments'
        dtypes and sizes, differ all get a RuntimeError naming ``what``; a
        rank that does not come within ``timeout`` makes the others raise."""
        t = self.timeout if timeout is None else float(timeout)
        return self._g.run_program(what, text, list(tensors), int(num_outputs), t)

    def process_group(self, rank: int):
        """Rank `rank`'s own ``torch.distributed.ProcessGroup`` on the compiled transport.

        Pass it as ``group=`` to the torch.distributed collectives from that
        rank's thread; it is not registered as a world group."""
        import torch.distributed as dist
        from . import distributed as _d
        _d._register()
        if not 0 <= rank < self.world_size:
            raise ValueError(f"rank {rank} out of range for a group of {self.world_size}")
        pg = dist.ProcessGroup(dist.HashStore(), rank, self.world_size)
        backend = _C._TpuCompiledBackend(self._g, rank, self.world_size, self.timeout)
        backend_type = dist.ProcessGroup.BackendType.CUSTOM
        pg._register_backend(torch.device("tpu"), backend_type, backend)
        pg._set_default_backend(backend_type)
        return pg

    def transport(self) -> dict:
        return {"transport": "compiled", "backend": "tpu", "inner": None,
                "world_size": self.world_size, "devices": list(self.devices),
                "reason": (f"every rank is a thread of this process on its own device "
                           f"{['tpu:%d' % d for d in self.devices]} of one PJRT client, so each "
                           f"collective is one StableHLO program compiled for "
                           f"{self.world_size} partitions with this device assignment and "
                           f"launched once over all of them")}


def stats() -> dict:
    """Counters of the compiled transport: launches (of which ``programs``: whole
    programs of ``run_program``), compiles, errors, launch seconds, and Fused
    regions flushed by collectives: ``compiled_flushes`` (this transport) and
    ``host_flushes`` (the host transport, gloo staging)."""
    return dict(_C._coll_stats())
