"""Output comparison for tools/conformance.py: tpu results against CPU ones.

Values are compared with torch.testing.assert_close at the OpInfo's
tolerance; shapes, dtypes and the strides of views exactly. Index outputs of
sorting-like ops are compared by what they select where PyTorch leaves the
order of ties unspecified (relax_tied_indices).
"""
import math

def _map(x, fn):
    import torch
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_map(e, fn) for e in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_map(e, fn) for e in x)
    if isinstance(x, dict):
        return {k: _map(v, fn) for k, v in x.items()}
    return x



def _leaves(x, out=None):
    import torch
    if out is None:
        out = []
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for e in x:
            _leaves(e, out)
    elif isinstance(x, dict):
        for v in x.values():
            _leaves(v, out)
    return out



def _all_leaves(x, out=None):
    """Every leaf (tensors and Python values) in order."""
    if out is None:
        out = []
    if isinstance(x, (list, tuple)) and not _is_size(x):
        for e in x:
            _all_leaves(e, out)
    elif isinstance(x, dict):
        for k in sorted(x, key=str):
            _all_leaves(x[k], out)
    else:
        out.append(x)
    return out



def _is_size(x):
    import torch
    return isinstance(x, torch.Size)



class _Mismatch(Exception):
    pass



def _compare(actual, expected, atol, rtol, values=True, what="output", strides=True,
             inputs=None, to_cpu=False):
    """Raises _Mismatch when actual (tpu) differs from expected (CPU).

    Strides are compared for outputs that are views of one of `inputs` (the
    CPU sample's tensors) on CPU: the aliasing PyTorch promises. A fresh
    result that CPU happens to build as a view of its own buffer (an FFT
    along an inner dim) has no promised strides. `to_cpu`: the sample asks
    for CPU outputs itself (`x.to("cpu", ...)`), so CPU outputs are right."""
    import torch
    in_storages = {t.untyped_storage().data_ptr() for t in _leaves(inputs)} if inputs is not None else None
    al, el = _all_leaves(actual), _all_leaves(expected)
    if len(al) != len(el):
        raise _Mismatch(f"{what}: {len(al)} leaves on tpu, {len(el)} on CPU")
    for i, (a, e) in enumerate(zip(al, el)):
        w = f"{what}[{i}]" if len(el) > 1 else what
        if isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                raise _Mismatch(f"{w}: tpu returned {type(a).__name__}, CPU a tensor")
            if e.device.type == "cpu" and a.device.type != "tpu" and e.numel() > 0 \
                    and e.layout == torch.strided and not (to_cpu and a.device.type == "cpu"):
                raise _Mismatch(f"{w}: on {a.device}, expected tpu")
            if a.shape != e.shape:
                raise _Mismatch(f"{w}: shape {tuple(a.shape)} != {tuple(e.shape)}")
            if a.dtype != e.dtype:
                raise _Mismatch(f"{w}: dtype {a.dtype} != {e.dtype}")
            if e.layout != torch.strided:
                continue
            aliases_input = in_storages is None or e.untyped_storage().data_ptr() in in_storages
            if strides and e._is_view() and aliases_input and a.numel() > 1:
                if a.stride() != e.stride() and not all(s <= 1 for s in a.shape):
                    raise _Mismatch(f"{w}: view strides {a.stride()} != {e.stride()}")
            if not values:
                continue
            from torch.testing._comparison import default_tolerances
            d_rtol, d_atol = default_tolerances(e)
            try:
                torch.testing.assert_close(a.detach().cpu(), e.detach(), atol=max(atol, d_atol),
                                           rtol=max(rtol, d_rtol),
                                           equal_nan=True, check_dtype=True, check_device=False,
                                           check_stride=False)
            except AssertionError as ex:
                msg = " ".join(str(ex).split())
                raise _Mismatch(f"{w}: {msg[:400]}")
        elif isinstance(e, float):
            if values and not (isinstance(a, (int, float)) and
                               (math.isclose(a, e, rel_tol=max(rtol, 1.3e-6), abs_tol=max(atol, 1e-5))
                                or (math.isnan(a) and math.isnan(e)))):
                raise _Mismatch(f"{w}: {a!r} != {e!r}")
        elif isinstance(e, (bool, int, str, torch.Size, torch.dtype, torch.device, type(None))):
            if isinstance(e, torch.device):
                continue
            if values and a != e:
                raise _Mismatch(f"{w}: {a!r} != {e!r}")



# Ops returning indices whose order among equal values PyTorch does not
# specify: sort/argsort (unless stable=True), topk, kthvalue, median,
# nanmedian and mode document "the index of one of the values" / no order
# for ties, and CPU itself varies with the algorithm it picks (size, dtype).
# For these, the tpu indices must be valid and select the same input values
# as CPU's; they are then taken as equal. Stable sorts must match exactly.
_TIED_INDEX_OPS = {"sort", "argsort", "topk", "kthvalue", "median", "nanmedian", "mode"}


def _arg(sample_args, kwargs, pos, name, default):
    if name in kwargs:
        return kwargs[name]
    return sample_args[pos] if len(sample_args) > pos else default


def _index_dim_keep(name, args, kwargs):
    """(dim, keepdim or None for same-rank indices) of the op's index output."""
    if name in ("sort", "argsort"):
        return _arg(args, kwargs, 0, "dim", -1), None
    if name == "topk":
        return _arg(args, kwargs, 1, "dim", -1), None
    if name == "kthvalue":
        return _arg(args, kwargs, 1, "dim", -1), _arg(args, kwargs, 2, "keepdim", False)
    if name in ("median", "nanmedian"):
        if not args and "dim" not in kwargs:
            return None, None  # full reduction: a value, no indices
        return _arg(args, kwargs, 0, "dim", None), _arg(args, kwargs, 1, "keepdim", False)
    return _arg(args, kwargs, 0, "dim", -1), _arg(args, kwargs, 1, "keepdim", False)  # mode


def relax_tied_indices(op_name, inp, args, kwargs, actual, expected):
    """Returns actual with its index output replaced by CPU's when both select
    equal input values (see _TIED_INDEX_OPS); anything else is left for
    _compare to report."""
    import torch
    if op_name not in _TIED_INDEX_OPS or kwargs.get("stable", False):
        return actual
    dim, keep = _index_dim_keep(op_name, args, kwargs)
    if dim is None or not isinstance(inp, torch.Tensor):
        return actual
    single = isinstance(expected, torch.Tensor)
    if single and op_name != "argsort":
        return actual
    a_idx = actual if single else actual[1]
    e_idx = expected if single else expected[1]
    if not isinstance(a_idx, torch.Tensor) or a_idx.shape != e_idx.shape or \
            a_idx.dtype != e_idx.dtype or e_idx.dtype != torch.int64:
        return actual
    x = inp.detach().reshape(1) if inp.dim() == 0 else inp.detach()
    d = dim % x.dim()
    ai, ei = a_idx.detach().cpu(), e_idx.detach()
    if inp.dim() == 0:
        ai, ei = ai.reshape(1), ei.reshape(1)
    elif keep is False:
        ai, ei = ai.unsqueeze(d), ei.unsqueeze(d)
    if ai.numel() and (ai.min() < 0 or ai.max() >= x.shape[d]):
        return actual
    if keep is not None:  # reductions: indices along d broadcast over the rest
        shape = list(x.shape)
        shape[d] = 1
        if list(ai.shape) != shape:
            return actual
    ga, ge = x.gather(d, ai), x.gather(d, ei)
    same = (ga == ge) | (ga.isnan() & ge.isnan())
    if not bool(same.all()):
        return actual
    same_idx = e_idx.to(a_idx.device)
    if single:
        return same_idx
    out = list(actual)
    out[1] = same_idx
    return type(actual)(*out) if hasattr(actual, "_fields") else type(actual)(out)


def within_fp64_error(actual, expected, ref64, factor=2.0):
    """True when every tpu gradient is as close to the float64 reference as
    CPU's float32 gradient (or forward output) is, up to `factor` (the accuracy rule of PyTorch's
    own compiler tests, torch._dynamo.utils.same with fp64_ref, multiplier 2).
    For gradients that cancel (a difference of two exps) or sum many terms,
    float32 results from two correct implementations differ by more than
    assert_close's float32 defaults; neither is more right than the other,
    and PyTorch promises neither the summation order nor last-bit libm
    results. A gradient that is wrong stays far from the reference."""
    import torch
    al, el, rl = _all_leaves(actual), _all_leaves(expected), _all_leaves(ref64)
    if not (len(al) == len(el) == len(rl)):
        return False
    for a, e, r in zip(al, el, rl):
        if not isinstance(e, torch.Tensor):
            continue
        if not isinstance(a, torch.Tensor) or a.shape != e.shape or a.dtype != e.dtype:
            return False
        def wide(t):
            t = t.detach().cpu()
            return t.to(torch.complex128) if t.is_complex() else t.double()
        a64, e64, r64 = wide(a), wide(e), wide(r)
        fin = torch.isfinite(r64)
        if not bool((a64[~fin].nan_to_num() == e64[~fin].nan_to_num()).all()):
            return False
        if not fin.any():
            continue
        err_a = (a64[fin] - r64[fin]).abs().max().item()
        err_e = (e64[fin] - r64[fin]).abs().max().item()
        if not err_a <= factor * err_e + 1e-7:
            return False
    return True
