"""Bucketed dynamic shapes: the analysis that proves padding exact.

A dim Dynamo made dynamic (symbol s) is padded to a bucket size (the next
power of two, by default) so that many lengths share one program. That is
only exact when no real output element depends on a padded one, which this
module proves per graph before using it (bucketing_plan):

Every axis of every value is described by its atoms (_atoms.py). Padding
keeps the atom structure, so an op whose output element at coordinates
(b, t) reads only input elements at the same (b, t) stays exact: pointwise
ops, views that merge or split whole atoms, transposes, matmuls and
reductions over constant axes, slices from 0 of a constant axis (a [:T] of a
table), embedding lookups. Ops that mix positions along a dynamic axis are
made exact by masking the padded positions (the real length is a runtime
input, so it does not change the program), also on merged axes such as B*T:
softmax gets -inf; matmul operands, sums, the gradients reaching embedding
and layer-norm backward, softmax backward and slice_scatter sources get 0;
nll_loss targets get the ignore_index. Masking uses masked_fill (inserted by
_masking.py), so even a NaN computed at a padded position cannot reach a
real one. Anything else touching a dynamic atom (means, norms over it,
indexing, data-dependent ops, a symbolic size used as a value) makes the
graph ineligible, and it is compiled per exact size. The rule of each op is
in the table of _shape_rules.py.

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
from ._atoms import Ineligible, fail, has_sym, leaf_atoms, monomial, size_expr, symbols_of
from ._masking import insert_masks
from ._shape_rules import SHAPE_ARG_OPS, rule_for

_NO_BOUND = 1 << 62


class Analysis:
    """One walk over an aten graph: the atoms of every value, the masks the
    graph needs, and the bounds tables put on symbols. Rules (_shape_rules)
    read and extend it through t(), mask(), mask_dynamic() and bound()."""

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

    def t(self, arg):
        """The atoms of a tensor argument, None for anything else."""
        if not isinstance(arg, torch.fx.Node):
            return None
        return self.atoms.get(arg)

    def mask(self, node, index, axes, axis, fill):
        """Fills the padded positions of `axis` of argument `index` with `fill`."""
        atoms = axes[axis]
        if has_sym(atoms):
            self.masks.append((node, index, axis, atoms, fill))

    def mask_dynamic(self, node, index, fill):
        """Masks every dynamic axis of tensor argument `index`."""
        axes = self.t(node.args[index])
        if axes is None:
            fail(f"{node.target}: argument {index} is not a tensor")
        for axis in range(len(axes)):
            self.mask(node, index, axes, axis, fill)
        return axes

    def bound(self, sym, limit):
        """Caps the bucket of `sym` at `limit` (the size of a table it slices)."""
        self.bounds[sym] = min(self.bounds.get(sym, _NO_BOUND), limit)

    def _check_sym_args(self, node):
        if node.target in SHAPE_ARG_OPS:
            return
        flat = []
        torch.fx.node.map_arg((node.args, node.kwargs), flat.append)
        for a in flat:
            if isinstance(a.meta.get("val"), (torch.SymInt, torch.SymFloat, torch.SymBool)):
                fail(f"{node.target} uses a symbolic size as a value")

    def _placeholder(self, node, val, index):
        if isinstance(val, torch.Tensor):
            known = self.known.get(node.name)
            if known is None:
                self.atoms[node] = tuple(leaf_atoms(s) for s in val.shape)
                return
            if len(known) != len(val.shape):
                fail(f"input {node.name} does not match the forward output it saves")
            for axis, size in zip(known, val.shape):
                c, syms = monomial(size_expr(size))
                if (math.prod(a for a in axis if isinstance(a, int)), collections.Counter(
                        a for a in axis if not isinstance(a, int))) != (c, syms):
                    fail(f"input {node.name} does not match the forward output it saves")
            self.atoms[node] = known
        elif isinstance(val, torch.SymInt):
            expr = size_expr(val)
            if expr.is_Symbol and expr not in self.seen_symbols:
                self.seen_symbols.add(expr)  # the input bucketing_plan reads the size from
                return
            monomial(expr)  # a product of symbols, or ineligible
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
                        fail("getitem of an unknown tuple")
                    continue
                if not isinstance(node.target, torch._ops.OpOverload):
                    continue  # SymInt arithmetic for shapes
                self._check_sym_args(node)
                self.atoms[node] = rule_for(node.target)(self, node, val)
            elif node.op == "output":
                outs = []
                for o in node.args[0]:
                    self.output_names.append(o.name if isinstance(o, torch.fx.Node) else None)
                    if isinstance(o, torch.fx.Node) and isinstance(o.meta.get("val"), torch.Tensor):
                        outs.append(self.atoms[o])
                    elif isinstance(o, torch.fx.Node) and isinstance(o.meta.get("val"), torch.SymInt):
                        expr = size_expr(o.meta["val"])
                        monomial(expr)
                        outs.append(expr)
                    else:
                        outs.append(None)
                self.outputs = outs
            else:
                fail(f"node kind {node.op}")
        return self


def _dynamic_symbols(inputs):
    """symbol -> index of the first SymInt input that is that symbol."""
    syms = {}
    for i, a in enumerate(inputs):
        if isinstance(a, torch.SymInt) and size_expr(a).is_Symbol:
            syms.setdefault(size_expr(a), i)
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


def bucketing_plan(gm, inputs, opts, known=None):
    """A Plan when the graph has dynamic dims and padding them is provably
    exact (the graph is rewritten with the masks it needs); None otherwise.
    `known`: atoms of inputs that a forward graph's analysis proved (by
    name), for a backward graph's saved activations."""
    syms = _dynamic_symbols(inputs)
    if not syms or opts.dynamic_buckets == "off":
        return None
    try:
        an = Analysis(gm, set(syms), known).run()
        # Every size the rewrite or the call must compute is made of input symbols.
        used = set()
        for m in an.masks:
            used |= set(a for a in m[3] if not isinstance(a, int))
        for v in list(an.atoms.values()) + list(an.outputs) + list(an.expr_inputs.values()):
            if isinstance(v, list):
                for x in v:
                    used |= symbols_of(x)
            else:
                used |= symbols_of(v)
        missing = used - set(syms)
        if missing:
            fail(f"sizes {sorted(map(str, missing))} are not inputs of the graph")
    except Ineligible as why:
        _report.note_ineligible(str(why))
        return None
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    bounds = {}
    for s, i in syms.items():
        r = inputs[i].node.shape_env.var_to_range.get(s)
        upper = int(r.upper) if r is not None and isinstance(r.upper, sympy.Integer) else _NO_BOUND
        bounds[s] = min(upper, an.bounds.get(s, _NO_BOUND))
    tensor_axes = {}
    for i, n in enumerate(placeholders):
        axes = an.atoms.get(n)
        if axes:
            tensor_axes[i] = [(d, a) for d, a in enumerate(axes) if has_sym(a)]
    plan = Plan(syms, bounds, an, tensor_axes, len(placeholders))
    plan.len_symbols = insert_masks(gm, an.masks, placeholders, syms)
    return plan
