"""Runtime padding of bucketed graphs.

A graph with a bucketing Plan (_shape_analysis.py) runs as a BucketedGraph:
each call picks the bucket of every dynamic size, pads the tensor inputs to
it (with zeros), appends the real lengths the masks read, runs the program
of that bucket and slices the outputs back to the real sizes.
"""
import math

import sympy
import torch

from ._atoms import evaluate, has_sym
from ._runner import CompiledGraph


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
            args[i] = evaluate(expr, size)
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
                    if has_sym(atoms):
                        o = _unpad_axis(o, d, atoms, real, size)
            elif isinstance(axes, sympy.Expr):
                o = evaluate(axes, real)
            res.append(o)
        return res
