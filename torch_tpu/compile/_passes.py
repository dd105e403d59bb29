"""Graph rewrites applied to every AOTAutograd graph before it runs."""
import torch


def _device_of(node):
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val.device if isinstance(val, torch.Tensor) else None


def move_host_scalars_into_foreach(gm: torch.fx.GraphModule) -> int:
    """A compiled optimizer step keeps `step` as a 0-dim CPU tensor, so
    Dynamo's foreach form divides tpu lists by lists of CPU scalars. The tpu
    lowering of `_foreach_div.List` misreads such CPU scalars (it returns inf;
    reported to csrc/ops/optim.c), so they are copied to the device first:
    the same values, one tiny transfer each. Returns the number moved."""
    moved = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        if not node.target.__name__.startswith("_foreach_"):
            continue
        devices = set()
        torch.fx.node.map_arg(node.args, lambda n: devices.add(_device_of(n)))
        target = next((d for d in devices if d is not None and d.type != "cpu"), None)
        if target is None:
            continue
        new_args = []
        for arg in node.args:
            if isinstance(arg, (list, tuple)):
                fixed = []
                for n in arg:
                    dev = _device_of(n)
                    if dev is not None and dev.type == "cpu" and n.meta["val"].dim() == 0:
                        with gm.graph.inserting_before(node):
                            n = gm.graph.call_function(torch.ops.aten._to_copy.default, (n,),
                                                       {"device": target})
                        moved += 1
                    fixed.append(n)
                arg = type(arg)(fixed)
            new_args.append(arg)
        node.args = tuple(new_args)
    if moved:
        gm.recompile()
    return moved
