"""The graph rewrite of bucketing: masks at padded positions.

The shape analysis (_shape_analysis.py) lists the op arguments whose padded
positions must hold a neutral value (0, -inf, an ignore_index); this module
inserts a masked_fill before each, computed from the real lengths, which
become extra graph inputs (so the program does not depend on them).
"""
import torch

aten = torch.ops.aten


def insert_masks(gm, masks, placeholders, syms):
    """Inserts masked_fill(arg, padded positions, fill) before each masked
    argument; returns the symbols whose real length is now an appended input
    (in input order). The padded positions of an axis made of several atoms
    (B*T) are those where any symbol atom's index reaches its real length."""
    g = gm.graph
    len_nodes, invalid, len_symbols = {}, {}, []
    last = placeholders[-1]
    for s in sorted({a for m in masks for a in m[3] if not isinstance(a, int)}, key=str):
        with g.inserting_after(last):
            last = len_nodes[s] = g.placeholder(f"valid_len_{s}")
        len_symbols.append(s)
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
    return len_symbols
