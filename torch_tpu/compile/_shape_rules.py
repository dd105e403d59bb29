"""The per-op rules of the bucketing analysis, as a table.

RULES maps an aten OpOverload to its rule: a function (an, node, val) ->
the per-axis atoms of the op's result (a list of those for a tuple result),
where `an` is the running analysis (_shape_analysis.Analysis: `an.t(arg)`
gives an argument's atoms, `an.mask(...)`/`an.mask_dynamic(...)` ask for
padded positions to be filled, `an.bound(sym, n)` caps a symbol's bucket)
and `val` the node's fake value. A rule raises Ineligible (via `fail`) when
padding could let a padded position reach a real one.

`rule_for(op)` picks the rule: ops tagged pointwise broadcast, then the
table, then `other_op` (fine only away from dynamic dims).
"""
import torch

from ._atoms import broadcast_atoms, fail, has_sym, leaf_atoms, normalize, size_expr, view_atoms

aten = torch.ops.aten
prims = torch.ops.prims

RULES = {}  # OpOverload -> rule(an, node, val)

# Ops whose arguments may be symbolic sizes (any other op using one as a
# value makes the graph ineligible).
_VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)
SHAPE_ARG_OPS = frozenset(_VIEWS + (
    aten.expand.default, aten.slice.Tensor, aten.arange.default, aten.arange.start,
    aten.full.default, aten.zeros.default, aten.ones.default, aten.empty.memory_format,
    aten.slice_scatter.default))


def rule(*ops):
    """Registers the decorated function as the rule of `ops`."""
    def register(fn):
        for op in ops:
            assert op not in RULES, f"two bucketing rules for {op}"
            RULES[op] = fn
        return fn
    return register


def rule_for(op):
    if torch.Tag.pointwise in op.tags:
        return pointwise
    return RULES.get(op, other_op)


def _keepdim(node, args):
    return args[2] if len(args) > 2 else node.kwargs.get("keepdim", False)


def _reduced(x, dims, keep):
    return tuple(() if i in dims else x[i] for i in range(len(x)) if keep or i not in dims)


# ---- elementwise and layout ----

@rule(aten.masked_fill.Scalar, aten.masked_fill.Tensor, aten.where.self,
      aten.where.ScalarOther, aten.where.ScalarSelf, aten.clone.default,
      aten._to_copy.default, aten.alias.default, aten.detach.default,
      aten.lift_fresh_copy.default, aten.copy.default, prims.convert_element_type.default)
def pointwise(an, node, val):
    flat = []
    torch.fx.node.map_arg((node.args, node.kwargs), flat.append)
    inputs = [an.atoms[n] for n in flat if isinstance(an.atoms.get(n), tuple)]
    return broadcast_atoms(val, inputs)


@rule(*_VIEWS, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def view(an, node, val):
    return view_atoms(an.t(node.args[0]), val.shape)


@rule(aten.permute.default)
def permute(an, node, val):
    x = an.t(node.args[0])
    return tuple(x[d % len(x)] for d in node.args[1])


@rule(aten.transpose.int)
def transpose(an, node, val):
    args = node.args
    x = list(an.t(args[0]))
    i, j = args[1] % len(x), args[2] % len(x)
    x[i], x[j] = x[j], x[i]
    return tuple(x)


@rule(aten.t.default)
def transpose_2d(an, node, val):
    return tuple(reversed(an.t(node.args[0])))


@rule(aten.expand.default)
def expand(an, node, val):
    x = an.t(node.args[0])
    out = list(val.shape)
    res = []
    for i, size in enumerate(out):
        j = i - (len(out) - len(x))
        if j >= 0 and x[j] != ():
            res.append(x[j])
        else:
            res.append(leaf_atoms(size))
    return tuple(res)


@rule(aten.slice.Tensor)
def slice_(an, node, val):
    """Slices of constant axes; [0:s] of a constant axis (a table) bounds s."""
    args = node.args
    x = an.t(args[0])
    dim = args[1] % len(x)
    start = args[2] if len(args) > 2 else 0
    step = args[4] if len(args) > 4 else 1
    out_size = size_expr(val.shape[dim])
    res = list(x)
    if has_sym(x[dim]):
        if out_size != size_expr(args[0].meta["val"].shape[dim]):
            fail("slice of a dynamic dim")
    elif out_size.is_Integer:
        res[dim] = normalize([int(out_size)])
    elif out_size.is_Symbol and start == 0 and step == 1:
        res[dim] = (out_size,)
        an.bound(out_size, int(size_expr(args[0].meta["val"].shape[dim])))
    else:
        fail("slice to a size expression")
    return tuple(res)


@rule(aten.select.int)
def select(an, node, val):
    x = list(an.t(node.args[0]))
    dim = node.args[1] % len(x)
    if has_sym(x[dim]):
        fail("select on a dynamic dim")
    del x[dim]
    return tuple(x)


@rule(aten.cat.default)
def cat(an, node, val):
    args = node.args
    parts = [an.t(a) for a in args[0]]
    dim = (args[1] if len(args) > 1 else 0) % len(val.shape)
    first = parts[0]
    for p in parts:
        if has_sym(p[dim]) or any(p[i] != first[i] for i in range(len(p)) if i != dim):
            fail("cat along or across different dynamic dims")
    return tuple(first[i] if i != dim else normalize([int(val.shape[dim])])
                 for i in range(len(first)))


@rule(aten.split.Tensor, aten.split_with_sizes.default)
def split(an, node, val):
    args = node.args
    x = an.t(args[0])
    dim = (args[2] if len(args) > 2 else 0) % len(x)
    if has_sym(x[dim]):
        fail("split of a dynamic dim")
    return [tuple(x[i] if i != dim else normalize([int(v.shape[dim])]) for i in range(len(x)))
            for v in val]


@rule(aten.embedding.default)
def embedding(an, node, val):
    return an.t(node.args[1]) + (normalize([int(val.shape[-1])]),)


@rule(aten.arange.default, aten.full.default, aten.zeros.default, aten.ones.default,
      aten.empty.memory_format, aten.scalar_tensor.default)
def factory(an, node, val):
    return tuple(leaf_atoms(s) for s in val.shape)


# ---- ops that mix positions: masked along dynamic axes ----

@rule(aten.mm.default, aten.bmm.default, aten.addmm.default)
def matmul(an, node, val):
    """Both operands are zero at padded positions of the contracted axis."""
    args = node.args
    off = 1 if node.target is aten.addmm.default else 0
    a, b = an.t(args[off]), an.t(args[off + 1])
    if a[:-2] != b[:-2]:
        fail("batched matmul over different batch layouts")
    if a[-1] != b[-2]:
        fail("matmul contracts differently laid out dims")
    an.mask(node, off, a, len(a) - 1, 0.0)
    an.mask(node, off + 1, b, len(b) - 2, 0.0)
    out = a[:-1] + (b[-1],)
    if off:
        broadcast_atoms(val, [an.t(args[0]), out])  # only checks the bias
    return out


@rule(aten._softmax.default, aten._log_softmax.default)
def softmax(an, node, val):
    x = an.t(node.args[0])
    an.mask(node, 0, x, node.args[1] % len(x), float("-inf"))
    return x


@rule(aten.sum.dim_IntList, aten.mean.dim, aten.amax.default, aten.amin.default,
      aten.var.correction, aten.prod.dim_int, aten.any.dim, aten.all.dim)
def reduction(an, node, val):
    """Reductions over constant axes only (a sum over dims masks with 0)."""
    args = node.args
    if node.target is aten.sum.dim_IntList and args[1]:
        x = an.t(args[0])
        dims = [d % len(x) for d in args[1]]
        for d in dims:  # padded positions add 0
            an.mask(node, 0, x, d, 0.0)
        return _reduced(x, dims, _keepdim(node, args))
    x = an.t(args[0])
    dims = args[1] if len(args) > 1 else None
    dims = range(len(x)) if not dims else [d % len(x) for d in dims]
    keep = _keepdim(node, args)
    if any(has_sym(x[d]) for d in dims):
        fail(f"{node.target} reduces over a dynamic dim")
    return _reduced(x, dims, keep)


@rule(aten.nll_loss_forward.default)
def nll_loss(an, node, val):
    """Padded rows are ignored targets (and NaN-free inputs)."""
    args = node.args
    x, tgt = an.t(args[0]), an.t(args[1])
    ignore = args[4] if len(args) > 4 else -100
    if has_sym(x[-1]) or (len(args) > 2 and args[2] is not None and has_sym(an.t(args[2])[0])):
        fail("nll_loss over a dynamic class dim")
    if len(x) > 1:
        an.mask(node, 0, x, 0, 0.0)       # NaN-free rows
        an.mask(node, 1, tgt, 0, ignore)  # padded rows are ignored targets
    reduction = args[3] if len(args) > 3 else 1
    return [tgt if reduction == 0 else (), ()]


@rule(aten.nll_loss_backward.default)
def nll_loss_backward(an, node, val):
    args = node.args
    x, tgt = an.t(args[1]), an.t(args[2])
    ignore = args[5] if len(args) > 5 else -100
    if has_sym(x[-1]):
        fail("nll_loss over a dynamic class dim")
    if len(x) > 1:
        an.mask(node, 2, tgt, 0, ignore)
        if args[4] == 0:
            an.mask_dynamic(node, 0, 0.0)
    return x


@rule(aten._softmax_backward_data.default, aten._log_softmax_backward_data.default)
def softmax_backward(an, node, val):
    args = node.args
    g, out = an.t(args[0]), an.t(args[1])
    if g != out:
        fail("softmax backward over differently laid out dims")
    d = args[2] % len(g)
    an.mask(node, 0, g, d, 0.0)
    an.mask(node, 1, out, d, 0.0)
    return g


@rule(aten.native_layer_norm.default)
def layer_norm(an, node, val):
    x = an.t(node.args[0])
    k = len(node.args[1])
    if any(has_sym(a) for a in x[-k:]):
        fail("layer norm over a dynamic dim")
    stats = x[:-k] + ((),) * k
    return [x, stats, stats]


@rule(aten.native_layer_norm_backward.default)
def layer_norm_backward(an, node, val):
    args = node.args
    x = an.t(args[1])
    k = len(args[2])
    if any(has_sym(a) for a in x[-k:]):
        fail("layer norm over a dynamic dim")
    for i in (0, 1, 3, 4):  # weight/bias grads sum over the leading dims
        an.mask_dynamic(node, i, 0.0)
    w = [an.t(args[i]) if isinstance(args[i], torch.fx.Node) else None for i in (5, 6)]
    return [x, w[0], w[1]]


@rule(aten.embedding_dense_backward.default)
def embedding_backward(an, node, val):
    args = node.args
    if len(args) > 4 and args[4]:
        fail("embedding backward scaled by frequency")
    an.mask_dynamic(node, 0, 0.0)  # padded positions scatter nothing
    return tuple(normalize([int(v)]) for v in val.shape)


def _is_zeros(node):
    """A tensor made as all zeros (the padded rows of a slice_scatter into it
    then receive the zeros they already hold)."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return False
    if node.target in (aten.zeros.default, aten.new_zeros.default, aten.zeros_like.default):
        return True
    if node.target in (aten.full.default, aten.new_full.default):
        return node.args[-1] == 0 if node.target is aten.full.default else node.args[2] == 0
    return False


@rule(aten.slice_scatter.default)
def slice_scatter(an, node, val):
    """A dynamic source only as [0:s] into zeros (a position table's gradient)."""
    args = node.args
    base, src = an.t(args[0]), an.t(args[1])
    d = (args[2] if len(args) > 2 else 0) % len(base)
    start = args[3] if len(args) > 3 else None
    step = args[5] if len(args) > 5 else 1
    if any(base[i] != src[i] for i in range(len(base)) if i != d):
        fail("slice_scatter across differently laid out dims")
    if has_sym(src[d]):
        end = args[4] if len(args) > 4 else None
        end_val = end.meta.get("val") if isinstance(end, torch.fx.Node) else end
        if (has_sym(base[d]) or len(src[d]) != 1 or start not in (0, None) or step != 1
                or size_expr(end_val) != src[d][0] or not _is_zeros(args[0])):
            fail("slice_scatter of a dynamic size")
        an.bound(src[d][0], int(size_expr(args[0].meta["val"].shape[d])))
        an.mask(node, 1, src, d, 0.0)  # the padded rows scatter zeros
    return base


# ---- everything else ----

def other_op(an, node, val):
    """Any other op is fine only away from dynamic dims."""
    t = node.target
    tensors = [an.t(a) for a in node.args if isinstance(a, torch.fx.Node) and an.t(a) is not None]
    if any(has_sym(a) for axes in tensors for a in axes):
        fail(f"{t} on a dynamic dim")
    vals = val if isinstance(val, (list, tuple)) else [val]
    res = []
    for v in vals:
        if isinstance(v, torch.Tensor):
            if any(not size_expr(s).is_Integer for s in v.shape):
                fail(f"{t} makes a dynamic size")
            res.append(tuple(normalize([int(s)]) for s in v.shape))
        else:
            res.append(None)
    return res if isinstance(val, (list, tuple)) else res[0]
