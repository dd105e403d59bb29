"""Host prelude: the part of an aten graph that computes on CPU scalars only.

A compiled optimizer step keeps its step counters on CPU (as eager PyTorch
does), so its graph mixes CPU scalar math (step += 1, bias corrections) with
tpu tensor math that reads those scalars. CPU arguments keep a graph from
being replayed, so every call would dispatch all its ops again. Here the
graph is split in two: the host prelude runs on CPU as an FX graph (it also
updates the step counters in place), its 0-dim results are stacked per dtype
and uploaded as one tpu vector each, and the device graph, whose arguments
are now all tpu tensors, reads them with `select`. Values are unchanged: the
same CPU ops compute the scalars, and a 0-dim tensor promotes the same way
whichever device it lives on.
"""
from dataclasses import dataclass

import torch
from torch.utils._pytree import tree_flatten


def _vals(node):
    return tree_flatten(node.meta.get("val"))[0]


def _is_cpu_tensor(v):
    return isinstance(v, torch.Tensor) and v.device.type == "cpu"


def _input_nodes(node):
    return [a for a in tree_flatten((node.args, node.kwargs))[0] if isinstance(a, torch.fx.Node)]


def _mutated_args(node):
    """Argument nodes an op writes to (schema alias info with is_write)."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return []
    out = []
    for i, arg in enumerate(target._schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            value = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
            out += [a for a in tree_flatten(value)[0] if isinstance(a, torch.fx.Node)]
    return out


@dataclass
class HostSplit:
    host: torch.fx.GraphModule     # args -> host values the device graph reads, then host outputs
    device: torch.fx.GraphModule   # device args + one packed vector per dtype -> device outputs
    device_args: list              # indices of the original args the device graph takes
    groups: list                   # per packed vector: (dtype, number of values)
    n_read: int                    # leading host-graph outputs that are read by the device graph
    outputs: list                  # per original output: ("host", k) or ("device", k)

    def run_host(self, args):
        """Runs the prelude; returns (device graph args, host outputs)."""
        vals = self.host(*args)
        read, host_out = vals[:self.n_read], vals[self.n_read:]
        packed, k = [], 0
        for _dtype, n in self.groups:
            packed.append(torch.stack(read[k:k + n]).to("tpu"))
            k += n
        return [args[i] for i in self.device_args] + packed, host_out

    def merge(self, host_out, device_out):
        return [host_out[k] if side == "host" else device_out[k] for side, k in self.outputs]


def split_host_prelude(gm):
    """A HostSplit when `gm` has CPU-only ops whose device-side uses are
    0-dim values, else None (the graph then runs as one)."""
    nodes = list(gm.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    host = set()
    for n in placeholders:
        vals = _vals(n)
        if len(vals) == 1 and _is_cpu_tensor(vals[0]):
            host.add(n)
    if not host:
        return None
    for n in nodes:
        if n.op != "call_function":
            continue
        vals = _vals(n)
        if vals and all(_is_cpu_tensor(v) for v in vals) and all(a in host for a in _input_nodes(n)):
            host.add(n)
    if not any(n.op == "call_function" for n in host):
        return None

    output = next(n for n in nodes if n.op == "output")
    device_nodes = [n for n in nodes if n.op == "call_function" and n not in host]
    device_set = set(device_nodes)
    # host values the device graph reads, in graph order
    read = [n for n in nodes if n in host and any(u in device_set for u in n.users)]
    for n in read:
        vals = _vals(n)
        if len(vals) != 1 or vals[0].dim() != 0:
            return None  # only scalars are packed
    # A CPU argument the prelude writes must not also be read by the device
    # graph: it would see the written value, as the prelude runs first.
    written = {a for n in host if n.op == "call_function" for a in _mutated_args(n)}
    if any(n in written for n in read):
        return None

    out_args = output.args[0]
    flat_out = list(out_args) if isinstance(out_args, (list, tuple)) else [out_args]
    host_outs = [a for a in flat_out if isinstance(a, torch.fx.Node) and a in host]

    groups, order = {}, []
    for n in read:
        dtype = _vals(n)[0].dtype
        if dtype not in groups:
            groups[dtype] = []
            order.append(dtype)
        groups[dtype].append(n)
    read_sorted = [n for dtype in order for n in groups[dtype]]

    # Host graph: every original argument, the host ops, the read values and host outputs.
    hg = torch.fx.Graph()
    env = {}
    for n in nodes:
        if n.op == "placeholder":
            env[n] = hg.placeholder(n.name)
            env[n].meta = dict(n.meta)
        elif n in host:
            env[n] = hg.node_copy(n, lambda a: env[a])
    hg.output(tuple(env[n] for n in read_sorted + host_outs))

    # Device graph: the tpu arguments, one packed vector per dtype, the device ops.
    dg = torch.fx.Graph()
    denv, device_args = {}, []
    for i, n in enumerate(placeholders):
        if n not in host:
            denv[n] = dg.placeholder(n.name)
            denv[n].meta = dict(n.meta)
            device_args.append(i)
    packed = [dg.placeholder(f"host_scalars_{i}") for i in range(len(order))]
    for g, dtype in enumerate(order):
        for i, n in enumerate(groups[dtype]):
            denv[n] = dg.call_function(torch.ops.aten.select.int, (packed[g], 0, i))
    for n in device_nodes:
        denv[n] = dg.node_copy(n, lambda a: denv[a])
    outputs, dev_outs = [], []
    for a in flat_out:
        if isinstance(a, torch.fx.Node) and a in host:
            outputs.append(("host", host_outs.index(a)))
        else:
            outputs.append(("device", len(dev_outs)))
            dev_outs.append(denv[a] if isinstance(a, torch.fx.Node) else a)
    dg.output(tuple(dev_outs))

    return HostSplit(
        host=torch.fx.GraphModule(gm, hg), device=torch.fx.GraphModule(gm, dg),
        device_args=device_args, groups=[(d, len(groups[d])) for d in order],
        n_read=len(read_sorted), outputs=outputs)

