"""torch.distributed backend "tpu" (docs/distributed.md).

Registered at `import torch_tpu`:

    dist.init_process_group("tpu")              # tpu and cpu tensors
    dist.init_process_group("cpu:gloo,tpu:tpu")  # cpu tensors keep plain gloo
    dist.init_process_group()                    # the same: tpu maps to "tpu"

The backend object is a C++ `c10d::Backend` (`csrc/torch/c10d_backend.cpp`).
Two transports: where every member of a group is a thread of this process on
its own device of this client, the compiled transport (`_TpuCompiledBackend`
over `torch_tpu.distributed_threads.CompiledGroup`: one StableHLO program per
collective over all the devices); otherwise the host transport: tpu tensors
are copied to host memory, reduced or exchanged by an inner gloo Backend made
here from the group's own Store under the prefix "tpu_host/", and copied back
into the caller's tensors. `distributed_transport()` (also `torch.tpu.distributed_transport`)
says which transport a group uses and why.
"""
import os
import threading
import uuid

import torch
import torch.distributed as dist

from . import _C

BACKEND_NAME = "tpu"
_STORE_PREFIX = "tpu_host/"
_registered = False


def _plugin_to_load():
    """The plugin file the device initialization will load (the core's rule:
    TORCH_TPU_PJRT_PLUGIN, else the first candidate on sys.path)."""
    import sys
    path = _C._setting("TORCH_TPU_PJRT_PLUGIN")
    if path:
        return path
    found = _C._plugin_candidates([d for d in sys.path if d])
    return found[0][1] if found else ""


# Why this process's client is (or is not) a multi-process one; set once, by
# the first backend made before the device was initialized.
_client_setup = {"kind": None, "multiprocess": False, "why": None}


def _setup_client(store, rank, size):
    """Before the device is initialized, with a world of several processes:
    a plugin that is neither the CPU one nor libtpu (the CUDA plugin) gets a
    client spanning the job's processes (num_nodes = world size, node_id =
    rank, visible_devices = LOCAL_RANK) whose key-value callbacks use the
    c10d store; libtpu joins its processes through its own environment; the
    CPU plugin has no multi-process client."""
    path = _plugin_to_load()
    kind = _C._plugin_kind(path) if path else "unknown"
    _client_setup["kind"] = kind
    if size < 2:
        return
    if kind == "other":
        local = os.environ.get("LOCAL_RANK")
        visible = int(local) if local is not None and local.isdigit() else -1
        _C._set_multiprocess_client(dist.PrefixStore("tpu_pjrt/", store), size, rank, visible)
        _client_setup.update(multiprocess=True,
                             why=f"the client was made for {size} processes (num_nodes={size}, "
                                 f"node_id={rank}, key-value callbacks over the c10d store)")
    elif kind == "tpu":
        _client_setup["why"] = "libtpu joins the processes of a slice through its own environment"


def _pick_device(store=None, rank=0, size=1):
    # Each process owns one tpu device. Where this process's client has
    # several (TORCH_TPU_NUM_DEVICES, or a multi-chip host), LOCAL_RANK picks
    # it, as launchers set it; on the CPU plugin each process has its own
    # client whose tpu:0 is its device. Initializing the plugin here also
    # keeps DeviceMesh from calling set_device(LOCAL_RANK) on a client that
    # has fewer devices than local ranks.
    if torch.tpu.is_initialized():
        return
    if store is not None:
        _setup_client(store, rank, size)
    torch.tpu.init()
    local = os.environ.get("LOCAL_RANK")
    if local is not None and local.isdigit() and int(local) < torch.tpu.device_count():
        torch.tpu.set_device(int(local))


# Identifies this process to the other members of a group (a pid alone can
# repeat across hosts or pid namespaces).
_PROCESS_TOKEN = f"{os.getpid()}-{uuid.uuid4().hex}"
_compiled_lock = threading.Lock()
_compiled_groups = {}  # group token -> [CompiledGroup, members still to take it]


def _compiled_backend(store, prefix, rank, size, timeout):
    """The compiled transport's backend when every member of the group is a
    thread of this process on its own device of this client (each thread's
    current device), else None (the host transport). Members compare where
    they are through the group's store."""
    if size < 2 or not hasattr(_C, "_TpuCompiledBackend"):
        return None
    me = f"{_PROCESS_TOKEN}|{torch.tpu.current_device()}"
    store.set(f"{prefix}where/{rank}", me)
    wheres = [store.get(f"{prefix}where/{r}").decode() for r in range(size)]
    tokens = {w.rsplit("|", 1)[0] for w in wheres}
    devices = [int(w.rsplit("|", 1)[1]) for w in wheres]
    if tokens != {_PROCESS_TOKEN} or len(set(devices)) != size:
        return None
    if rank == 0:
        store.set(f"{prefix}compiled_token", uuid.uuid4().hex)
    token = store.get(f"{prefix}compiled_token").decode()
    seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
    with _compiled_lock:
        entry = _compiled_groups.get(token)
        if entry is None:
            from .distributed_threads import CompiledGroup
            entry = _compiled_groups[token] = [CompiledGroup(devices=devices, timeout=seconds), size]
        entry[1] -= 1
        if entry[1] == 0:
            del _compiled_groups[token]
    return _C._TpuCompiledBackend(entry[0]._g, rank, size, seconds)


def _procs_choice(store, prefix, rank, size):
    """(global ids of every member's device, None) when this process's client
    sees the devices of every member of the group (a multi-process client),
    else (None, the reason)."""
    table = _C._client_device_table()
    local = {loc: gid for gid, _, loc in table if loc >= 0}
    kind = _client_setup["kind"] or _C._plugin_kind(_C._plugin_path())
    if len(table) == len(local):
        if kind == "cpu":
            why = (f"the CPU plugin has no multi-process client: it reads only its cpu_device_count "
                   f"option and ignores num_nodes, node_id and the key-value callbacks, so this "
                   f"process's client sees its own {len(table)} device(s) and none of the other "
                   f"processes'")
        else:
            why = (f"this process's client sees only its own {len(table)} device(s) "
                   f"({_client_setup['why'] or 'it was not made as a multi-process client: the device was initialized before init_process_group'})")
        return None, why
    me = local.get(torch.tpu.current_device(), -1)
    store.set(f"{prefix}gid/{rank}", str(me))
    ids = [int(store.get(f"{prefix}gid/{r}").decode()) for r in range(size)]
    seen = {gid for gid, _, _ in table}
    if len(set(ids)) != size or not set(ids) <= seen or -1 in ids:
        return None, (f"the members' devices (global ids {ids}) are not {size} distinct devices of "
                      f"this client's {len(table)}")
    return ids, None


def _create_backend(store, rank, size, timeout):
    _pick_device(store, rank, size)
    # The inner gloo group lives under its own prefix of this group's store
    # (itself already prefixed by the group's name), so any number of groups,
    # and a plain gloo backend for cpu tensors beside us, never share keys.
    # A group made again under the same name (destroy_process_group, then a
    # second init_process_group, with torchrun's agent store outliving both)
    # must not read the first one's rendezvous keys: every member adds 1 to a
    # counter once per creation, so all members compute the same generation,
    # and each generation has keys of its own.
    generation = (store.add(_STORE_PREFIX + "generation", 1) - 1) // size
    compiled = _compiled_backend(store, f"{_STORE_PREFIX}{generation}/", rank, size, timeout)
    if compiled is not None:
        return compiled
    why_host = None
    if size > 1:
        ids, why_host = _procs_choice(store, f"{_STORE_PREFIX}{generation}/", rank, size)
        if ids is not None:
            return _C._TpuProcsBackend(ids, rank)
    inner = dist.ProcessGroupGloo(dist.PrefixStore(f"{_STORE_PREFIX}{generation}/", store),
                                  rank, size, timeout)
    backend = _C._TpuHostBackend(inner, rank, size)
    backend.reason = why_host or "a group of one process"
    return backend


def _register():
    global _registered
    if _registered or not dist.is_available():
        return
    _C._register_c10d(_C)
    _C._register_compiled_backend(_C)
    # devices: "tpu" gets this backend by default (init_process_group() with no
    # backend is "cpu:gloo,tpu:tpu"); "cpu" lets init_process_group("tpu")
    # serve cpu tensors as well, which barrier() and the object collectives use.
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, devices=["cpu", "tpu"])
    _registered = True


def _tpu_backend(group=None):
    group = group if group is not None else dist.group.WORLD
    if group is None:
        raise RuntimeError("distributed_transport: no process group is initialized "
                           "(call torch.distributed.init_process_group first)")
    try:
        return group._get_backend(torch.device("tpu"))
    except RuntimeError:
        return None


def distributed_transport(group=None) -> dict:
    """Which transport the `tpu` collectives of `group` (default: the world group) use, and why.

    A `torch_tpu.distributed.CompiledGroup` (ranks as threads of this process)
    reports "compiled". Returns a dict: ``transport`` ("host", "compiled" or "none"), ``backend`` (the backend
    name serving device tpu), ``inner`` (the engine that moves the bytes),
    ``reason`` (a sentence), ``world_size`` and ``rank``.
    """
    from .distributed_threads import CompiledGroup
    if isinstance(group, CompiledGroup):
        return group.transport()
    backend = _tpu_backend(group)
    g = group if group is not None else dist.group.WORLD
    if isinstance(backend, getattr(_C, "_TpuCompiledBackend", ())):
        info = {"world_size": g.size(), "rank": g.rank()}  # not a registered group
        info.update(transport="compiled", backend="tpu_compiled", inner=None,
                    devices=list(backend.devices),
                    reason=("every rank of this group is a thread of this process on its own "
                            "device of one PJRT client (torch_tpu.distributed.CompiledGroup), "
                            "so each collective is one StableHLO program compiled for "
                            f"{len(backend.devices)} partitions with this device assignment "
                            "and launched once over all of them"))
        return info
    info = {"world_size": dist.get_world_size(g), "rank": dist.get_rank(g)}
    if backend is None:
        info.update(transport="none", backend=None, inner=None,
                    reason="this group has no backend for device tpu; pass backend='tpu' "
                           "or 'cpu:gloo,tpu:tpu' to init_process_group / new_group")
        return info
    if isinstance(backend, getattr(_C, "_TpuProcsBackend", ())):
        info.update(transport="compiled", backend="tpu_compiled_procs", inner=None,
                    device_ids=list(backend.ids),
                    reason=("this process's PJRT client sees every member's device (a multi-process "
                            f"client: {_client_setup['why']}), so each collective is one StableHLO "
                            f"program compiled for {len(backend.ids)} partitions with the device "
                            "assignment of their global ids, each process launching its own share"))
        return info
    if not isinstance(backend, _C._TpuHostBackend):
        info.update(transport="other", backend=type(backend).__name__, inner=None,
                    reason="device tpu is served by a backend that is not torch_tpu's")
        return info
    why = backend.reason
    info.update(
        transport="host", backend=BACKEND_NAME, inner=backend.inner.name(), checks=backend.checks,
        reason=(f"{why}; so the compiled transport (one program over every member's device) "
                "cannot run, and tensors are staged through host memory and exchanged by gloo"))
    return info


def stats() -> dict:
    """Counters of the host transport: collectives run through it, bytes staged to and from tpu."""
    return dict(_C._c10d_stats())


from .distributed_threads import CompiledGroup  # noqa: E402  (ranks as threads)
