"""Which aten ops of an FX graph run natively on tpu, and the decompositions
AOTAutograd applies so graphs reach ops we lower."""
import functools
import operator

import torch
from torch._decomp import core_aten_decompositions

from .. import _C

# Kernels registered directly at the PyTorch boundary (csrc/torch/kernels.cpp):
# allocation, metadata-only views and host transfers. They never fall back.
_BOUNDARY_KERNELS = frozenset({
    "empty.memory_format", "empty_strided", "as_strided", "view", "_reshape_alias", "unfold",
    "copy_", "_copy_from", "_copy_from_and_resize", "_local_scalar_dense", "resize_",
})


@functools.lru_cache(maxsize=None)
def lowered_names() -> frozenset:
    return frozenset(_C._lowered_ops())


def overload_name(op: torch._ops.OpOverload) -> str:
    """'add.Tensor', or 'mm' for a default overload (the names lowered_ops() uses)."""
    base = op._schema.name.split("::", 1)[-1]
    return f"{base}.{op._overloadname}" if op._overloadname != "default" else base


def _has_composite_kernel(op) -> bool:
    name = op.name()
    return any(torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
               for key in ("CompositeImplicitAutograd", "CompositeExplicitAutograd",
                           "CompositeExplicitAutogradNonFunctional"))


def _lowered_variant(op) -> bool:
    """The op or its in-place/out sibling has a lowering (structured kernels
    reach the lowering through the `.out` overload)."""
    name = overload_name(op)
    low = lowered_names()
    if name in low or name in _BOUNDARY_KERNELS:
        return True
    base = op._schema.name.split("::", 1)[-1]
    return (f"{base}.out" in low or f"{base}_" in low
            or any(n.startswith(base + ".") and n.endswith("out") for n in low))


@functools.lru_cache(maxsize=None)
def runs_natively(op) -> bool:
    """Static prediction: True when `op` has a lowering, is a boundary kernel
    or view, or is a composite that PyTorch decomposes into other ops (which
    the run then reports if they fall back)."""
    if not isinstance(op, torch._ops.OpOverload):
        # operator.getitem, SymInt arithmetic, higher-order ops: no device work.
        return True
    if _lowered_variant(op) or op.is_view:
        return True
    from ..custom_kernel import is_custom_kernel  # a user's StableHLO kernel (custom_kernel.py)
    if is_custom_kernel(op):
        return True
    return _has_composite_kernel(op)


def node_runs_natively(node: torch.fx.Node) -> bool:
    if node.op != "call_function":
        return True
    if node.target is operator.getitem:
        return True
    return runs_natively(node.target)


@functools.lru_cache(maxsize=None)
def decompositions() -> dict:
    """PyTorch's core-aten decompositions for the ops we do not lower
    directly; ops with a lowering stay whole (one lowering is never slower
    than its decomposition)."""
    return {op: fn for op, fn in core_aten_decompositions().items()
            if isinstance(op, torch._ops.OpOverload) and not _lowered_variant(op)
            and not op.is_view}
