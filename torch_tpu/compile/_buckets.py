"""Bucketed dynamic shapes for inference and training graphs.

A dim Dynamo made dynamic (symbol s) is padded to a bucket size (the next
power of two, by default) so that many lengths share one program. That is
only exact when no real output element depends on a padded one, which this
module proves per graph before using it:

Every axis of every value is described by its *atoms*: the sizes it was
made from, in row-major order (a view [B, T, C] -> [B*T, C] gives the first
axis the atoms (s_B, s_T)). Padding keeps the atom structure, so an op whose
output element at coordinates (b, t) reads only input elements at the same
(b, t) stays exact: pointwise ops, views that merge or split whole atoms,
transposes, matmuls and reductions over constant axes, slices from 0 of a
constant axis (a [:T] of a table), embedding lookups. Ops that mix positions
along a dynamic axis are made exact by masking the padded positions (the
real length is a runtime input, so it does not change the program), also
on merged axes such as B*T: softmax gets -inf; matmul operands, sums, the
gradients reaching embedding and layer-norm backward, softmax backward and
slice_scatter sources get 0; nll_loss targets get the ignore_index. Masking
uses masked_fill, so even a NaN computed at a padded position cannot reach a
real one. Anything else touching a dynamic atom (means, norms over it,
indexing, data-dependent ops, a symbolic size used as a value) makes the
graph ineligible, and it is compiled per exact size.

Training: the forward graph's outputs (loss, and the activations saved for
backward) are sliced back to the real sizes, so AOTAutograd sees the real
shapes; the backward graph pads them again. Its inputs of merged sizes
(16*s) take their atoms from the forward output of the same name, which the
forward's analysis proved.
"""
import collections
import math
import operator

import sympy
import torch

from . import _report
from ._runner import CompiledGraph

aten = torch.ops.aten
prims = torch.ops.prims


class _Ineligible(Exception):
    pass


def _fail(why):
    raise _Ineligible(why)


def _monomial(expr):
    """Size expression -> (int constant, Counter of symbols); fails on sums."""
    expr = sympy.sympify(expr)
    const, syms = 1, collections.Counter()
    for factor in sympy.Mul.make_args(expr):
        if factor.is_Integer:
            const *= int(factor)
        elif factor.is_Symbol:
            syms[factor] += 1
        elif factor.is_Pow and factor.base.is_Symbol and factor.exp.is_Integer and factor.exp > 0:
            syms[factor.base] += int(factor.exp)
        else:
            _fail(f"size {expr} is not a product of symbols")
    return const, syms


def _size_expr(s):
    return s.node.expr if isinstance(s, torch.SymInt) else sympy.Integer(int(s))


def _normalize(atoms):
    """Merges adjacent constants and drops 1s so equal layouts compare equal."""
    out = []
    for a in atoms:
        if isinstance(a, int):
            if a == 1:
                continue
            if out and isinstance(out[-1], int):
                out[-1] *= a
                continue
        out.append(a)
    return tuple(out)


def _leaf_atoms(size):
    e = _size_expr(size)
    if e.is_Integer:
        return _normalize([int(e)])
    if e.is_Symbol:
        return (e,)
    _fail(f"input size {e} is an expression")


def _has_sym(axis_atoms):
    return any(not isinstance(a, int) for a in axis_atoms)


def _view_atoms(in_axes, out_sizes):
    seq = [a for axis in in_axes for a in axis]
    out = []
    for size in out_sizes:
        want_c, want_s = _monomial(_size_expr(size))
        got = []
        while True:
            have_c = math.prod(a for a in got if isinstance(a, int))
            have_s = collections.Counter(a for a in got if not isinstance(a, int))
            if have_c == want_c and have_s == want_s:
                break
            if not seq:
                _fail("view does not regroup whole dims")
            a = seq.pop(0)
            if isinstance(a, int):
                rest = want_c // have_c if want_c % have_c == 0 else 0
                if rest and a % rest == 0 and a != rest and not (want_s - have_s):
                    got.append(rest)
                    seq.insert(0, a // rest)
                    continue
                if not rest or rest % a:
                    _fail("view splits a dim across a dynamic size")
            elif have_s[a] >= want_s[a]:
                _fail("view splits a dynamic size")
            got.append(a)
        out.append(_normalize(got))
    if any(a != 1 for a in seq):
        _fail("view leaves elements over")
    return tuple(out)


_POINTWISE_EXTRA = {aten.masked_fill.Scalar, aten.masked_fill.Tensor, aten.where.self,
                    aten.where.ScalarOther, aten.where.ScalarSelf, aten.clone.default,
                    aten._to_copy.default, aten.alias.default, aten.detach.default,
                    aten.lift_fresh_copy.default, aten.copy.default,
                    prims.convert_element_type.default}
_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
_REDUCTIONS = {aten.sum.dim_IntList, aten.mean.dim, aten.amax.default, aten.amin.default,
               aten.var.correction, aten.prod.dim_int, aten.any.dim, aten.all.dim}
_SHAPE_ARG_OPS = _VIEWS | {aten.expand.default, aten.slice.Tensor, aten.arange.default,
                           aten.arange.start, aten.full.default, aten.zeros.default,
                           aten.ones.default, aten.empty.memory_format,
                           aten.slice_scatter.default}


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


class _Analysis:
    def __init__(self, gm, dyn_syms, known=None):
        self.gm = gm
        self.dyn = dyn_syms
        self.known = known or {}  # placeholder name -> atoms proven by the forward graph
        self.atoms = {}         # node -> tuple of per-axis atoms (or list of those for tuples)
        self.masks = []         # (node, arg index, axis, atoms of that axis, fill)
        self.bounds = {}        # symbol -> largest size a table slice allows
        self.expr_inputs = {}   # placeholder index -> size expression (a SymInt like 16*s)
        self.seen_symbols = set()
        self.output_names = []

    def _t(self, arg):
        if not isinstance(arg, torch.fx.Node):
            return None
        return self.atoms.get(arg)

    def _check_sym_args(self, node):
        if node.target in _SHAPE_ARG_OPS:
            return
        flat = []
        torch.fx.node.map_arg((node.args, node.kwargs), flat.append)
        for a in flat:
            if isinstance(a.meta.get("val"), (torch.SymInt, torch.SymFloat, torch.SymBool)):
                _fail(f"{node.target} uses a symbolic size as a value")

    def _placeholder(self, node, val, index):
        if isinstance(val, torch.Tensor):
            known = self.known.get(node.name)
            if known is None:
                self.atoms[node] = tuple(_leaf_atoms(s) for s in val.shape)
                return
            if len(known) != len(val.shape):
                _fail(f"input {node.name} does not match the forward output it saves")
            for axis, size in zip(known, val.shape):
                c, syms = _monomial(_size_expr(size))
                if (math.prod(a for a in axis if isinstance(a, int)), collections.Counter(
                        a for a in axis if not isinstance(a, int))) != (c, syms):
                    _fail(f"input {node.name} does not match the forward output it saves")
            self.atoms[node] = known
        elif isinstance(val, torch.SymInt):
            expr = _size_expr(val)
            if expr.is_Symbol and expr not in self.seen_symbols:
                self.seen_symbols.add(expr)  # the input bucketing_plan reads the size from
                return
            _monomial(expr)  # a product of symbols, or ineligible
            self.expr_inputs[index] = expr

    def run(self):
        index = 0
        for node in self.gm.graph.nodes:
            val = node.meta.get("val")
            if node.op == "placeholder":
                self._placeholder(node, val, index)
                index += 1
            elif node.op == "call_function":
                if node.target is operator.getitem:
                    src = self.atoms.get(node.args[0])
                    if isinstance(src, list):
                        self.atoms[node] = src[node.args[1]]
                    elif isinstance(val, torch.Tensor):
                        _fail("getitem of an unknown tuple")
                    continue
                if not isinstance(node.target, torch._ops.OpOverload):
                    continue  # SymInt arithmetic for shapes
                self._check_sym_args(node)
                self.atoms[node] = self._op(node, val)
            elif node.op == "output":
                outs = []
                for o in node.args[0]:
                    self.output_names.append(o.name if isinstance(o, torch.fx.Node) else None)
                    if isinstance(o, torch.fx.Node) and isinstance(o.meta.get("val"), torch.Tensor):
                        outs.append(self.atoms[o])
                    elif isinstance(o, torch.fx.Node) and isinstance(o.meta.get("val"), torch.SymInt):
                        expr = _size_expr(o.meta["val"])
                        _monomial(expr)
                        outs.append(expr)
                    else:
                        outs.append(None)
                self.outputs = outs
            else:
                _fail(f"node kind {node.op}")
        return self

    def _mask(self, node, index, axes, axis, fill):
        atoms = axes[axis]
        if _has_sym(atoms):
            self.masks.append((node, index, axis, atoms, fill))

    def _mask_dynamic(self, node, index, fill):
        """Masks every dynamic axis of tensor argument `index`."""
        axes = self._t(node.args[index])
        if axes is None:
            _fail(f"{node.target}: argument {index} is not a tensor")
        for axis in range(len(axes)):
            self._mask(node, index, axes, axis, fill)
        return axes

    def _op(self, node, val):
        t, args = node.target, node.args
        tensors = [self._t(a) for a in args if isinstance(a, torch.fx.Node) and self._t(a) is not None]
        if t in _POINTWISE_EXTRA or (torch.Tag.pointwise in t.tags):
            return self._broadcast(node, val)
        if t in _VIEWS:
            return _view_atoms(self._t(args[0]), val.shape)
        if t in (aten.permute.default,):
            x = self._t(args[0])
            return tuple(x[d % len(x)] for d in args[1])
        if t in (aten.transpose.int,):
            x = list(self._t(args[0]))
            i, j = args[1] % len(x), args[2] % len(x)
            x[i], x[j] = x[j], x[i]
            return tuple(x)
        if t is aten.t.default:
            return tuple(reversed(self._t(args[0])))
        if t in (aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default):
            return _view_atoms(self._t(args[0]), val.shape)
        if t is aten.expand.default:
            x = self._t(args[0])
            out = list(val.shape)
            res = []
            for i, size in enumerate(out):
                j = i - (len(out) - len(x))
                if j >= 0 and x[j] != ():
                    res.append(x[j])
                else:
                    res.append(_leaf_atoms(size))
            return tuple(res)
        if t is aten.slice.Tensor:
            x = self._t(args[0])
            dim = args[1] % len(x)
            start = args[2] if len(args) > 2 else 0
            step = args[4] if len(args) > 4 else 1
            out_size = _size_expr(val.shape[dim])
            res = list(x)
            if _has_sym(x[dim]):
                if out_size != _size_expr(node.args[0].meta["val"].shape[dim]):
                    _fail("slice of a dynamic dim")
            elif out_size.is_Integer:
                res[dim] = _normalize([int(out_size)])
            elif out_size.is_Symbol and start == 0 and step == 1:
                res[dim] = (out_size,)
                self.bounds[out_size] = min(self.bounds.get(out_size, 1 << 62),
                                            int(_size_expr(node.args[0].meta["val"].shape[dim])))
            else:
                _fail("slice to a size expression")
            return tuple(res)
        if t is aten.select.int:
            x = list(self._t(args[0]))
            dim = args[1] % len(x)
            if _has_sym(x[dim]):
                _fail("select on a dynamic dim")
            del x[dim]
            return tuple(x)
        if t is aten.cat.default:
            parts = [self._t(a) for a in args[0]]
            dim = (args[1] if len(args) > 1 else 0) % len(val.shape)
            first = parts[0]
            for p in parts:
                if _has_sym(p[dim]) or any(p[i] != first[i] for i in range(len(p)) if i != dim):
                    _fail("cat along or across different dynamic dims")
            return tuple(first[i] if i != dim else _normalize([int(val.shape[dim])])
                         for i in range(len(first)))
        if t in (aten.split.Tensor, aten.split_with_sizes.default):
            x = self._t(args[0])
            dim = (args[2] if len(args) > 2 else 0) % len(x)
            if _has_sym(x[dim]):
                _fail("split of a dynamic dim")
            return [tuple(x[i] if i != dim else _normalize([int(v.shape[dim])]) for i in range(len(x)))
                    for v in val]
        if t is aten.embedding.default:
            return self._t(args[1]) + (_normalize([int(val.shape[-1])]),)
        if t in (aten.mm.default, aten.bmm.default, aten.addmm.default):
            off = 1 if t is aten.addmm.default else 0
            a, b = self._t(args[off]), self._t(args[off + 1])
            if a[:-2] != b[:-2]:
                _fail("batched matmul over different batch layouts")
            if a[-1] != b[-2]:
                _fail("matmul contracts differently laid out dims")
            self._mask(node, off, a, len(a) - 1, 0.0)
            self._mask(node, off + 1, b, len(b) - 2, 0.0)
            out = a[:-1] + (b[-1],)
            if off:
                self._broadcast_check(val, [self._t(args[0]), out])
            return out
        if t in (aten._softmax.default, aten._log_softmax.default):
            x = self._t(args[0])
            self._mask(node, 0, x, args[1] % len(x), float("-inf"))
            return x
        if t is aten.sum.dim_IntList and args[1]:
            x = self._t(args[0])
            dims = [d % len(x) for d in args[1]]
            keep = (args[2] if len(args) > 2 else node.kwargs.get("keepdim", False))
            for d in dims:  # padded positions add 0
                self._mask(node, 0, x, d, 0.0)
            return tuple(() if i in dims else x[i] for i in range(len(x)) if keep or i not in dims)
        if t is aten.nll_loss_forward.default:
            x, tgt = self._t(args[0]), self._t(args[1])
            ignore = args[4] if len(args) > 4 else -100
            if _has_sym(x[-1]) or (len(args) > 2 and args[2] is not None and _has_sym(self._t(args[2])[0])):
                _fail("nll_loss over a dynamic class dim")
            if len(x) > 1:
                self._mask(node, 0, x, 0, 0.0)       # NaN-free rows
                self._mask(node, 1, tgt, 0, ignore)  # padded rows are ignored targets
            reduction = args[3] if len(args) > 3 else 1
            return [tgt if reduction == 0 else (), ()]
        if t is aten.nll_loss_backward.default:
            x, tgt = self._t(args[1]), self._t(args[2])
            ignore = args[5] if len(args) > 5 else -100
            if _has_sym(x[-1]):
                _fail("nll_loss over a dynamic class dim")
            if len(x) > 1:
                self._mask(node, 2, tgt, 0, ignore)
                if args[4] == 0:
                    self._mask_dynamic(node, 0, 0.0)
            return x
        if t in (aten._softmax_backward_data.default, aten._log_softmax_backward_data.default):
            g, out = self._t(args[0]), self._t(args[1])
            if g != out:
                _fail("softmax backward over differently laid out dims")
            d = args[2] % len(g)
            self._mask(node, 0, g, d, 0.0)
            self._mask(node, 1, out, d, 0.0)
            return g
        if t is aten.native_layer_norm_backward.default:
            x = self._t(args[1])
            k = len(args[2])
            if any(_has_sym(a) for a in x[-k:]):
                _fail("layer norm over a dynamic dim")
            for i in (0, 1, 3, 4):  # weight/bias grads sum over the leading dims
                self._mask_dynamic(node, i, 0.0)
            w = [self._t(args[i]) if isinstance(args[i], torch.fx.Node) else None for i in (5, 6)]
            return [x, w[0], w[1]]
        if t is aten.embedding_dense_backward.default:
            if len(args) > 4 and args[4]:
                _fail("embedding backward scaled by frequency")
            self._mask_dynamic(node, 0, 0.0)  # padded positions scatter nothing
            return tuple(_normalize([int(v)]) for v in val.shape)
        if t is aten.slice_scatter.default:
            base, src = self._t(args[0]), self._t(args[1])
            d = (args[2] if len(args) > 2 else 0) % len(base)
            start = args[3] if len(args) > 3 else None
            step = args[5] if len(args) > 5 else 1
            if any(base[i] != src[i] for i in range(len(base)) if i != d):
                _fail("slice_scatter across differently laid out dims")
            if _has_sym(src[d]):
                end = node.args[4] if len(node.args) > 4 else None
                end_val = end.meta.get("val") if isinstance(end, torch.fx.Node) else end
                if (_has_sym(base[d]) or len(src[d]) != 1 or start not in (0, None) or step != 1
                        or _size_expr(end_val) != src[d][0] or not _is_zeros(node.args[0])):
                    _fail("slice_scatter of a dynamic size")
                s_ = src[d][0]
                self.bounds[s_] = min(self.bounds.get(s_, 1 << 62),
                                      int(_size_expr(node.args[0].meta["val"].shape[d])))
                self._mask(node, 1, src, d, 0.0)  # the padded rows scatter zeros
            return base
        if t in _REDUCTIONS:
            x = self._t(args[0])
            dims = args[1] if len(args) > 1 else None
            dims = range(len(x)) if not dims else [d % len(x) for d in dims]
            keep = (args[2] if len(args) > 2 else node.kwargs.get("keepdim", False))
            if any(_has_sym(x[d]) for d in dims):
                _fail(f"{t} reduces over a dynamic dim")
            return tuple(() if i in dims else x[i] for i in range(len(x)) if keep or i not in dims)
        if t is aten.native_layer_norm.default:
            x = self._t(args[0])
            k = len(args[1])
            if any(_has_sym(a) for a in x[-k:]):
                _fail("layer norm over a dynamic dim")
            stats = x[:-k] + ((),) * k
            return [x, stats, stats]
        if t in (aten.arange.default, aten.full.default, aten.zeros.default, aten.ones.default,
                 aten.empty.memory_format, aten.scalar_tensor.default):
            return tuple(_leaf_atoms(s) for s in val.shape)
        # Any other op is fine only away from dynamic dims.
        if any(_has_sym(a) for axes in tensors for a in axes):
            _fail(f"{t} on a dynamic dim")
        vals = val if isinstance(val, (list, tuple)) else [val]
        res = []
        for v in vals:
            if isinstance(v, torch.Tensor):
                if any(not _size_expr(s).is_Integer for s in v.shape):
                    _fail(f"{t} makes a dynamic size")
                res.append(tuple(_normalize([int(s)]) for s in v.shape))
            else:
                res.append(None)
        return res if isinstance(val, (list, tuple)) else res[0]

    def _broadcast_check(self, val, inputs):
        self._broadcast_atoms(val, inputs)

    def _broadcast(self, node, val):
        flat = []
        torch.fx.node.map_arg((node.args, node.kwargs), flat.append)
        inputs = [self.atoms[n] for n in flat if isinstance(self.atoms.get(n), tuple)]
        return self._broadcast_atoms(val, inputs)

    @staticmethod
    def _broadcast_atoms(val, inputs):
        nd = len(val.shape)
        out = []
        for i in range(nd):
            cands = set()
            for x in inputs:
                j = i - (nd - len(x))
                if j >= 0 and x[j] != ():
                    cands.add(x[j])
            if len(cands) > 1:
                _fail("pointwise op over differently laid out dims")
            out.append(cands.pop() if cands else _leaf_atoms(val.shape[i]))
        return tuple(out)


def _dynamic_symbols(inputs):
    """symbol -> index of the first SymInt input that is that symbol."""
    syms = {}
    for i, a in enumerate(inputs):
        if isinstance(a, torch.SymInt) and _size_expr(a).is_Symbol:
            syms.setdefault(_size_expr(a), i)
    return syms


class Plan:
    def __init__(self, sym_inputs, bounds, an, tensor_axes, n_inputs):
        self.sym_inputs = sym_inputs      # symbol -> index of its SymInt input
        self.bounds = bounds              # symbol -> upper bound for the bucket
        self.outputs = an.outputs         # per output: per-axis atoms, a size expression, or None
        self.tensor_axes = tensor_axes    # input index -> [(axis, atoms of that axis)]
        self.expr_inputs = an.expr_inputs  # input index -> size expression
        self.n_inputs = n_inputs
        self.len_symbols = []             # symbols whose real length is an appended input
        # output name -> atoms: what a backward graph's saved inputs are made of
        self.named_outputs = {n: a for n, a in zip(an.output_names, an.outputs)
                              if n is not None and isinstance(a, tuple)}


def _symbols(atoms_or_expr):
    if isinstance(atoms_or_expr, tuple):
        return {a for axis in atoms_or_expr for a in (axis if isinstance(axis, tuple) else (axis,))
                if not isinstance(a, int)}
    if atoms_or_expr is None:
        return set()
    return set(_monomial(atoms_or_expr)[1])


def bucketing_plan(gm, inputs, opts, known=None):
    """A Plan when the graph has dynamic dims and padding them is provably
    exact (the graph is rewritten with the masks it needs); None otherwise.
    `known`: atoms of inputs that a forward graph's analysis proved (by
    name), for a backward graph's saved activations."""
    syms = _dynamic_symbols(inputs)
    if not syms or opts.dynamic_buckets == "off":
        return None
    try:
        an = _Analysis(gm, set(syms), known).run()
        # Every size the rewrite or the call must compute is made of input symbols.
        used = set()
        for m in an.masks:
            used |= set(a for a in m[3] if not isinstance(a, int))
        for v in list(an.atoms.values()) + list(an.outputs) + list(an.expr_inputs.values()):
            if isinstance(v, list):
                for x in v:
                    used |= _symbols(x)
            else:
                used |= _symbols(v)
        missing = used - set(syms)
        if missing:
            _fail(f"sizes {sorted(map(str, missing))} are not inputs of the graph")
    except _Ineligible as why:
        _report.note_ineligible(str(why))
        return None
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    bounds = {}
    for s, i in syms.items():
        r = inputs[i].node.shape_env.var_to_range.get(s)
        upper = int(r.upper) if r is not None and isinstance(r.upper, sympy.Integer) else 1 << 62
        bounds[s] = min(upper, an.bounds.get(s, 1 << 62))
    tensor_axes = {}
    for i, n in enumerate(placeholders):
        axes = an.atoms.get(n)
        if axes:
            tensor_axes[i] = [(d, a) for d, a in enumerate(axes) if _has_sym(a)]
    plan = Plan(syms, bounds, an, tensor_axes, len(placeholders))
    _insert_masks(gm, an.masks, placeholders, syms, plan)
    return plan


def _insert_masks(gm, masks, placeholders, syms, plan):
    """Inserts masked_fill(arg, padded positions, fill) before each masked
    argument. The padded positions of an axis made of several atoms (B*T)
    are those where any symbol atom's index reaches its real length."""
    g = gm.graph
    len_nodes, invalid = {}, {}
    last = placeholders[-1]
    for s in sorted({a for m in masks for a in m[3] if not isinstance(a, int)}, key=str):
        with g.inserting_after(last):
            last = len_nodes[s] = g.placeholder(f"valid_len_{s}")
        plan.len_symbols.append(s)
    device = next((n.meta["val"].device for n in placeholders
                   if isinstance(n.meta.get("val"), torch.Tensor)), torch.device("tpu"))
    for node, index, axis, atoms, fill in masks:
        arg = node.args[index]
        ndim = len(arg.meta["val"].shape)
        key = (atoms, ndim - axis)
        with g.inserting_before(node):
            if key not in invalid:
                k = len(atoms)
                sizes = [a if isinstance(a, int) else placeholders[syms[a]] for a in atoms]
                bad = None
                for j, a in enumerate(atoms):
                    if isinstance(a, int):
                        continue
                    ar = g.call_function(aten.arange.default, (sizes[j],),
                                         {"dtype": torch.int64, "device": device})
                    b = g.call_function(aten.ge.Tensor, (ar, len_nodes[a]))
                    if k > 1:
                        b = g.call_function(aten.view.default,
                                            (b, [1] * j + [sizes[j]] + [1] * (k - 1 - j)))
                    bad = b if bad is None else g.call_function(aten.logical_or.default, (bad, b))
                if k > 1:
                    bad = g.call_function(aten.expand.default, (bad, sizes))
                    bad = g.call_function(aten.clone.default, (bad,),
                                          {"memory_format": torch.contiguous_format})
                invalid[key] = g.call_function(aten.view.default,
                                               (bad, [-1] + [1] * (ndim - 1 - axis)))
            masked = g.call_function(aten.masked_fill.Scalar, (arg, invalid[key], fill))
            masked.meta["val"] = arg.meta["val"]  # a second mask of this argument reads it
        new_args = list(node.args)
        new_args[index] = masked
        node.args = tuple(new_args)
    g.lint()
    gm.recompile()


def _evaluate(expr, sizes):
    const, syms = _monomial(expr)
    return const * math.prod(sizes[s] ** n for s, n in syms.items())


def _atom_sizes(atoms, sizes):
    return [a if isinstance(a, int) else sizes[a] for a in atoms]


def _pad_axis(x, d, atoms, real, size):
    """Pads axis d (made of `atoms`, at their real sizes) to the bucket sizes."""
    shape = list(x.shape)
    have, want = _atom_sizes(atoms, real), _atom_sizes(atoms, size)
    if have == want:
        return x
    x = x.reshape(shape[:d] + have + shape[d + 1:])
    for j, (h, w) in enumerate(zip(have, want)):
        if h != w:
            pad_shape = list(x.shape)
            pad_shape[d + j] = w - h
            x = torch.cat([x, x.new_zeros(pad_shape)], dim=d + j)
    return x.reshape(shape[:d] + [math.prod(want)] + shape[d + 1:])


def _unpad_axis(o, d, atoms, real, size):
    """Slices axis d (made of `atoms`, at their bucket sizes) to the real sizes."""
    have, want = _atom_sizes(atoms, size), _atom_sizes(atoms, real)
    if have == want or o.shape[d] != math.prod(have):
        return o
    if len(atoms) == 1:
        return o.narrow(d, 0, want[0])
    shape = list(o.shape)
    o = o.reshape(shape[:d] + have + shape[d + 1:])
    for j, (h, w) in enumerate(zip(have, want)):
        if h != w:
            o = o.narrow(d + j, 0, w)
    return o.reshape(shape[:d] + [math.prod(want)] + shape[d + 1:])


def bucket_size(n, bound, opts):
    if n > opts.max_bucket:
        return n
    b = opts.dynamic_buckets
    if b == "pow2":
        size = max(opts.min_bucket, 1 << (n - 1).bit_length())
    else:
        size = next((v for v in b if v >= n), n)
    return max(n, min(size, bound))


class BucketedGraph(CompiledGraph):
    """Pads dynamic dims to their bucket, runs the masked graph, slices the
    outputs back: one program per bucket instead of one per size."""

    def __init__(self, gm, plan, kind, report, options):
        super().__init__(gm, kind, report, options)
        self.plan = plan
        self.graph_report.bucketing = "bucketed"

    def __call__(self, args):
        p = self.plan
        real = {s: int(args[i]) for s, i in p.sym_inputs.items()}
        size = {s: bucket_size(n, p.bounds[s], self.options) for s, n in real.items()}
        args = list(args)
        for s, i in p.sym_inputs.items():
            args[i] = size[s]
        for i, expr in p.expr_inputs.items():  # also a symbol passed more than once
            args[i] = _evaluate(expr, size)
        device = None
        for i, axes in p.tensor_axes.items():
            x = args[i]
            device = x.device
            for d, atoms in axes:
                x = _pad_axis(x, d, atoms, real, size)
            args[i] = x
        for s in p.len_symbols:
            args.append(torch.tensor(real[s], dtype=torch.int64, device=device or "tpu"))
        key = ",".join(str(size[s]) for s in sorted(size, key=str))
        self.graph_report.buckets[key] = self.graph_report.buckets.get(key, 0) + 1
        outs = self.run(args)
        res = []
        for o, axes in zip(outs, p.outputs):
            if isinstance(o, torch.Tensor) and isinstance(axes, tuple):
                for d, atoms in enumerate(axes):
                    if _has_sym(atoms):
                        o = _unpad_axis(o, d, atoms, real, size)
            elif isinstance(axes, sympy.Expr):
                o = _evaluate(axes, real)
            res.append(o)
        return res
