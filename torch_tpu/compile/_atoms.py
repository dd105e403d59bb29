"""Axis atoms: what each axis of a value is made of, for bucketing.

Every axis of every value is described by its *atoms*: the sizes it was made
from, in row-major order, each an int (a constant size) or a sympy symbol (a
dynamic size). A view [B, T, C] -> [B*T, C] gives the first axis the atoms
(s_B, s_T). Padding every symbol to its bucket keeps this structure, which is
what the shape analysis (_shape_analysis.py, _shape_rules.py) checks op by op.

This module holds the algebra of atoms and size expressions; any layout it
cannot follow raises Ineligible (the graph is then compiled per exact size).
"""
import collections
import math

import sympy
import torch


class Ineligible(Exception):
    """The graph cannot be bucketed exactly; the message says why."""


def fail(why):
    raise Ineligible(why)


def monomial(expr):
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
            fail(f"size {expr} is not a product of symbols")
    return const, syms


def size_expr(s):
    return s.node.expr if isinstance(s, torch.SymInt) else sympy.Integer(int(s))


def evaluate(expr, sizes):
    """The value of a product-of-symbols size expression at `sizes` (symbol -> int)."""
    const, syms = monomial(expr)
    return const * math.prod(sizes[s] ** n for s, n in syms.items())


def normalize(atoms):
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


def leaf_atoms(size):
    e = size_expr(size)
    if e.is_Integer:
        return normalize([int(e)])
    if e.is_Symbol:
        return (e,)
    fail(f"input size {e} is an expression")


def has_sym(axis_atoms):
    return any(not isinstance(a, int) for a in axis_atoms)


def symbols_of(atoms_or_expr):
    """The symbols in per-axis atoms, in a size expression, or none (None)."""
    if isinstance(atoms_or_expr, tuple):
        return {a for axis in atoms_or_expr for a in (axis if isinstance(axis, tuple) else (axis,))
                if not isinstance(a, int)}
    if atoms_or_expr is None:
        return set()
    return set(monomial(atoms_or_expr)[1])


def view_atoms(in_axes, out_sizes):
    """Per-axis atoms of a view of `in_axes` to `out_sizes`: each output axis
    takes whole atoms (or whole factors of a constant) in row-major order."""
    seq = [a for axis in in_axes for a in axis]
    out = []
    for size in out_sizes:
        want_c, want_s = monomial(size_expr(size))
        got = []
        while True:
            have_c = math.prod(a for a in got if isinstance(a, int))
            have_s = collections.Counter(a for a in got if not isinstance(a, int))
            if have_c == want_c and have_s == want_s:
                break
            if not seq:
                fail("view does not regroup whole dims")
            a = seq.pop(0)
            if isinstance(a, int):
                rest = want_c // have_c if want_c % have_c == 0 else 0
                if rest and a % rest == 0 and a != rest and not (want_s - have_s):
                    got.append(rest)
                    seq.insert(0, a // rest)
                    continue
                if not rest or rest % a:
                    fail("view splits a dim across a dynamic size")
            elif have_s[a] >= want_s[a]:
                fail("view splits a dynamic size")
            got.append(a)
        out.append(normalize(got))
    if any(a != 1 for a in seq):
        fail("view leaves elements over")
    return tuple(out)


def broadcast_atoms(val, inputs):
    """Per-axis atoms of a broadcast of `inputs` (per-axis atoms each) to the
    shape of `val`; the inputs must agree on every axis they do not broadcast."""
    nd = len(val.shape)
    out = []
    for i in range(nd):
        cands = set()
        for x in inputs:
            j = i - (nd - len(x))
            if j >= 0 and x[j] != ():
                cands.add(x[j])
        if len(cands) > 1:
            fail("pointwise op over differently laid out dims")
        out.append(cands.pop() if cands else leaf_atoms(val.shape[i]))
    return tuple(out)
