"""Child process of test_compiled_collectives.py: ranks as threads of this
process, each on its own device of one client (TORCH_TPU_NUM_DEVICES=N set
by the parent). Every check compares with the same computation on CPU and is
recorded by name; the JSON goes to argv[2]."""
import json
import sys
import warnings
import threading
import time
import traceback

import torch
import torch_tpu  # noqa: F401
from torch_tpu.distributed import CompiledGroup

from dist_spawn import time_rank_threads

warnings.filterwarnings("ignore")  # deprecation notices of *_tensor and barrier's device
N = int(sys.argv[1])
OUT = sys.argv[2]
DTYPES = [torch.float32, torch.bfloat16, torch.int32, torch.int64]
results = {}
lock = threading.Lock()
rng_lock = threading.Lock()  # the CPU generator is shared by the rank threads


def record(name, ok, detail=""):
    with lock:
        prev = results.get(name)
        results[name] = {"ok": bool(ok) and (prev is None or prev["ok"]),
                         "detail": (prev["detail"] + "; " if prev and prev["detail"] else "") + detail}


def make_input(case, r, dtype, shape):
    g = torch.Generator().manual_seed(1000 * case + r)
    x = torch.randint(-4, 5, shape, generator=g)
    if dtype.is_floating_point:
        return (x.to(torch.float32) / 2).to(dtype)  # halves of small integers: sums exact in bf16
    return x.to(dtype)


def reference(kind, op, xs, pairs=None):
    s = torch.stack(xs)
    if kind == "all_reduce" or kind == "reduce_scatter":
        if op == "sum":
            red = s.sum(0, dtype=s.dtype)
        elif op == "avg":
            tot = s.sum(0, dtype=s.dtype)
            red = tot / N if s.dtype.is_floating_point else torch.div(tot, N, rounding_mode="trunc")
            red = red.to(s.dtype)
        elif op == "max":
            red = s.amax(0)
        elif op == "min":
            red = s.amin(0)
        else:
            red = s.prod(0, dtype=s.dtype)
        if kind == "all_reduce":
            return [red] * N
        return list(red.chunk(N, 0))
    if kind == "all_gather":
        return [torch.cat(xs, 0)] * N
    if kind == "all_to_all":
        return [torch.cat([xs[i].chunk(N, 0)[j] for i in range(N)], 0) for j in range(N)]
    outs = [torch.zeros_like(xs[0]) for _ in range(N)]
    for src, dst in pairs:
        outs[dst] = xs[src]
    return outs


def cases():
    case = 0
    for dtype in DTYPES:
        for op in ["sum", "avg", "max", "min", "product"]:
            case += 1
            yield case, "all_reduce", op, dtype, (2 * N, 3), None
        case += 1
        yield case, "all_gather", None, dtype, (2, 3), None
        for op in ["sum", "max"]:
            case += 1
            yield case, "reduce_scatter", op, dtype, (2 * N, 3), None
        case += 1
        yield case, "all_to_all", None, dtype, (2 * N, 3), None
        case += 1
        yield case, "collective_permute", None, dtype, (5,), [(r, (r + 1) % N) for r in range(N)]
        case += 1
        yield case, "collective_permute", None, dtype, (2, 2), [(N - 1, 0)]


def run_rank(group, r, barrier):
    dev = f"tpu:{r}"
    for case, kind, op, dtype, shape, pairs in cases():
        name = f"{kind}/{op or '-'}/{str(dtype).split('.')[1]}" + (f"/{len(pairs)}pairs" if pairs else "")
        try:
            xs = [make_input(case, q, dtype, shape) for q in range(N)]
            x = xs[r].to(dev)
            if kind in ("all_reduce", "reduce_scatter"):
                y = getattr(group, kind)(x, op=op)
            elif kind == "collective_permute":
                y = group.collective_permute(x, pairs)
            else:
                y = getattr(group, kind)(x)
            want = reference(kind, op, xs, pairs)[r]
            got = y.cpu()
            ok = y.device == torch.device(dev) and got.dtype == want.dtype and torch.equal(got, want)
            record(name, ok, "" if ok else f"rank {r}: got {got.tolist()} want {want.tolist()}")
        except Exception as e:  # noqa: BLE001
            record(name, False, f"rank {r}: {type(e).__name__}: {e}")
    # a transposed (non-contiguous) input, a 0-dim tensor, in-place all_reduce_
    try:
        base = make_input(900, r, torch.float32, (3, 2 * N))
        y = group.all_reduce(base.to(dev).t())
        want = sum(make_input(900, q, torch.float32, (3, 2 * N)) for q in range(N)).t()
        record("all_reduce/transposed", torch.equal(y.cpu(), want), f"rank {r}: {y.cpu()}")
        z = group.all_reduce(torch.tensor(float(r + 1), device=dev), op="max")
        record("all_reduce/0-dim", z.shape == () and z.item() == N, f"rank {r}: {z}")
        w = torch.full((4,), float(r), device=dev)
        group.all_reduce_(w)
        record("all_reduce_/in-place", torch.equal(w.cpu(), torch.full((4,), N * (N - 1) / 2)),
               f"rank {r}: {w.cpu()}")
    except Exception as e:  # noqa: BLE001
        record("extras", False, f"rank {r}: {type(e).__name__}: {e}")
    # the same transport through torch.distributed, on this rank's own ProcessGroup
    try:
        import torch.distributed as dist
        pg = group.process_group(r)
        for dtype in (torch.float32, torch.int64):
            dn = str(dtype).split('.')[1]
            xs = [make_input(950, q, dtype, (2 * N, 3)) for q in range(N)]
            for op_name, op in (("sum", dist.ReduceOp.SUM), ("avg", dist.ReduceOp.AVG),
                                ("max", dist.ReduceOp.MAX)):
                x = xs[r].to(dev)
                dist.all_reduce(x, op=op, group=pg)
                want = reference("all_reduce", op_name, xs)[r]
                record(f"c10d/all_reduce/{op_name}/{dn}", torch.equal(x.cpu(), want), f"rank {r}: {x.cpu()}")
            out = torch.empty(2 * N * N, 3, dtype=dtype, device=dev)
            dist.all_gather_into_tensor(out, xs[r].to(dev), group=pg)
            record(f"c10d/all_gather_into_tensor/{dn}", torch.equal(out.cpu(), torch.cat(xs)), f"rank {r}")
            lst = [torch.empty(2 * N, 3, dtype=dtype, device=dev) for _ in range(N)]
            dist.all_gather(lst, xs[r].to(dev), group=pg)
            record(f"c10d/all_gather/{dn}", all(torch.equal(a.cpu(), b) for a, b in zip(lst, xs)), f"rank {r}")
            rs = torch.empty(2, 3, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(rs, xs[r].to(dev), group=pg)
            record(f"c10d/reduce_scatter_tensor/{dn}",
                   torch.equal(rs.cpu(), reference("reduce_scatter", "sum", xs)[r]), f"rank {r}")
            a2a = torch.empty(2 * N, 3, dtype=dtype, device=dev)
            dist.all_to_all_single(a2a, xs[r].to(dev), group=pg)
            record(f"c10d/all_to_all_single/{dn}",
                   torch.equal(a2a.cpu(), reference("all_to_all", None, xs)[r]), f"rank {r}")
            b = xs[r].to(dev)
            dist.broadcast(b, group_src=N - 1, group=pg)
            record(f"c10d/broadcast/{dn}", torch.equal(b.cpu(), xs[N - 1]), f"rank {r}")
        dist.barrier(group=pg)
        info = torch.tpu.distributed_transport(pg)
        record("c10d/transport", info["transport"] == "compiled" and info["rank"] == r, str(info))
    except Exception as e:  # noqa: BLE001
        record("c10d", False, f"rank {r}: {type(e).__name__}: {e}")
    barrier.wait()
    # shapes that differ between ranks: every rank raises, naming the op and both shapes
    try:
        group.all_reduce(torch.ones(4 + (r == 1), device=dev))
        record("mismatch/raises", False, f"rank {r}: no error")
    except RuntimeError as e:
        msg = str(e)
        record("mismatch/raises", "all_reduce" in msg and "differ" in msg and "[4]" in msg
               and "[5]" in msg, f"rank {r}: {msg}")
    barrier.wait()
    # a rank that never arrives: the others raise within the timeout
    if r != N - 1:
        t0 = time.monotonic()
        try:
            group.all_gather(torch.ones(2, device=dev), timeout=1.0)
            record("timeout/raises", False, f"rank {r}: no error")
        except RuntimeError as e:
            dt = time.monotonic() - t0
            msg = str(e)
            record("timeout/raises", "timed out" in msg and f"rank(s) {N - 1}" in msg
                   and 0.9 < dt < 10, f"rank {r}: {dt:.2f}s {msg}")
    barrier.wait()
    # the group still works afterwards
    try:
        y = group.all_reduce(torch.full((3,), 2.0, device=dev))
        record("after-errors/all_reduce", torch.equal(y.cpu(), torch.full((3,), 2.0 * N)),
               f"rank {r}: {y.cpu()}")
    except Exception as e:  # noqa: BLE001
        record("after-errors/all_reduce", False, f"rank {r}: {type(e).__name__}: {e}")


def bench(group, numel, iters):
    def setup(r):
        x = torch.ones(numel, device=f"tpu:{r}")
        group.all_reduce(x).cpu()  # compile
        return x
    secs = time_rank_threads(N, setup, lambda r, x: group.all_reduce(x), lambda y: y.cpu(), iters)
    return {"compiled_s": secs[0]}


def world_rank(r, store):
    """One rank's thread: init_process_group("tpu") in its own thread-local
    world; the backend finds every member in this process and picks the
    compiled transport by itself."""
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol
    d = f"tpu:{r}"
    torch.tpu.set_device(r)
    dist.init_process_group("tpu", rank=r, world_size=N, store=store)
    info = torch.tpu.distributed_transport()
    record("world/transport", info["transport"] == "compiled" and info["rank"] == r, str(info))
    xs = [make_input(970, q, torch.float32, (2 * N, 3)) for q in range(N)]
    x = xs[r].to(d)
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    record("world/all_reduce/avg", torch.equal(x.cpu(), reference("all_reduce", "avg", xs)[r]), f"rank {r}")
    b = xs[r].to(d)
    dist.broadcast(b, src=N - 1)
    record("world/broadcast", torch.equal(b.cpu(), xs[N - 1]), f"rank {r}")
    y = funcol.all_reduce(xs[r].to(d), "sum", dist.group.WORLD)
    record("world/funcol/all_reduce", torch.equal(y.cpu(), reference("all_reduce", "sum", xs)[r]), f"rank {r}")
    z = funcol.all_gather_tensor(xs[r].to(d), 0, dist.group.WORLD)
    record("world/funcol/all_gather_tensor", torch.equal(z.cpu(), torch.cat(xs)), f"rank {r}")
    # scatter / gather / reduce to a root that is not rank 0
    root = N - 1
    sc = torch.empty(2 * N, 3, device=d)
    dist.scatter(sc, [x.to(d) for x in xs] if r == root else None, src=root)
    record("world/scatter", torch.equal(sc.cpu(), xs[r]), f"rank {r}")
    gl = [torch.empty(2 * N, 3, device=d) for _ in range(N)] if r == root else None
    dist.gather(xs[r].to(d), gl, dst=root)
    record("world/gather", r != root or all(torch.equal(g.cpu(), xs[q]) for q, g in enumerate(gl)),
           f"rank {r}")
    rd = xs[r].to(d)
    dist.reduce(rd, dst=root, op=dist.ReduceOp.MAX)
    want_rd = reference("all_reduce", "max", xs)[r] if r == root else xs[r]  # others keep theirs
    record("world/reduce", torch.equal(rd.cpu(), want_rd), f"rank {r}")
    objs = [None] * N
    dist.all_gather_object(objs, {"rank": r})
    record("world/all_gather_object", objs == [{"rank": q} for q in range(N)], f"rank {r}: {objs}")
    # DDP: parameters start from rank 0's, gradients are the ranks' average
    with rng_lock:
        torch.manual_seed(r)  # every rank starts with other weights
        m = torch.nn.Linear(3, 2).to(d)
        torch.manual_seed(0)
        ref = torch.nn.Linear(3, 2)
    ddp = torch.nn.parallel.DistributedDataParallel(m)
    inputs = [make_input(980, q, torch.float32, (4, 3)) for q in range(N)]
    grads = []
    for q in range(N):
        ref.zero_grad()
        ref(inputs[q]).square().sum().backward()
        grads.append(ref.weight.grad.clone())
    ddp(inputs[r].to(d)).square().sum().backward()
    want = sum(grads) / N
    # float32 on both sides, summed in different orders: a few ulps
    ok = torch.equal(m.bias.detach().cpu(), ref.bias.detach()) and \
        torch.allclose(m.weight.grad.cpu(), want, rtol=1e-6, atol=1e-6)
    record("world/ddp", ok, f"rank {r}: {m.weight.grad.cpu()} want {want}")
    # FSDP2: fully_shard over a 1-D mesh, 3 SGD steps, each rank half of the
    # batch; the ranks' mean loss against one CPU process on the whole batch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh("tpu", (N,))

    def mlp():
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    with rng_lock:
        torch.manual_seed(0)
        fm, cm = mlp().to(d), mlp()
        cm.load_state_dict({k: v.cpu() for k, v in fm.state_dict().items()})
        batches = [torch.randn(2 * N, 4) for _ in range(3)]
    for layer in (fm[0], fm[2], fm):
        fully_shard(layer, mesh=mesh)
    fopt, copt = torch.optim.SGD(fm.parameters(), lr=0.1), torch.optim.SGD(cm.parameters(), lr=0.1)
    got, want = [], []
    for x in batches:
        loss = fm(x[2 * r:2 * r + 2].to(d)).square().mean()
        loss.backward()
        fopt.step()
        fopt.zero_grad()
        got.append(loss.detach())
        closs = cm(x).square().mean()
        closs.backward()
        copt.step()
        copt.zero_grad()
        want.append(closs.item())
    mean = torch.stack(got)
    dist.all_reduce(mean, op=dist.ReduceOp.AVG)
    # float32 on both sides; XLA:CPU and ATen order the matmul sums differently
    record("world/fsdp2", torch.allclose(mean.cpu(), torch.tensor(want), rtol=1e-5, atol=1e-7),
           f"rank {r}: {mean.cpu().tolist()} want {want}")
    dist.barrier()
    dist.destroy_process_group()


def world_checks():
    import torch.distributed as dist
    from torch.testing._internal.distributed.multi_threaded_pg import _install_threaded_pg
    _install_threaded_pg()  # a thread-local world per rank thread, as PyTorch's own threaded tests
    torch._C._distributed_c10d._set_thread_isolation_mode(True)
    store = dist.HashStore()
    errors = []

    def target(r):
        try:
            world_rank(r, store)
        except BaseException:  # noqa: BLE001
            errors.append(traceback.format_exc())
    ts = [threading.Thread(target=target, args=(r,)) for r in range(N)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=300)
    record("world/finished", not errors and not any(t.is_alive() for t in ts), "\n".join(errors))


def main():
    assert torch.tpu.device_count() >= N, torch.tpu.device_count()
    group = CompiledGroup(world_size=N, timeout=60.0)
    info = torch.tpu.distributed_transport(group)
    record("transport/compiled", info["transport"] == "compiled" and "partitions" in info["reason"],
           str(info))
    if len(sys.argv) > 3 and sys.argv[3] == "bench":
        out = bench(group, 1 << 20, 20)
        with open(OUT, "w") as f:
            json.dump(out, f)
        return
    barrier = threading.Barrier(N)
    errors = []

    def target(r):
        try:
            run_rank(group, r, barrier)
        except BaseException:  # noqa: BLE001
            errors.append(traceback.format_exc())
    threads = [threading.Thread(target=target, args=(r,)) for r in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    record("threads/finished", not errors and not any(t.is_alive() for t in threads), "\n".join(errors))
    # groups whose ranks sit on devices in another order, and a subgroup of the devices
    for devs in [[N - 1 - i for i in range(N)]] + ([[N - 1, 1]] if N > 2 else []):
        sub = CompiledGroup(devices=devs, timeout=60.0)
        n = len(devs)
        xs = [torch.arange(2 * n, dtype=torch.float32) + 100 * (q + 1) for q in range(n)]

        def sub_rank(r):
            d = f"tpu:{devs[r]}"
            x = xs[r].to(d)
            gat = sub.all_gather(x)
            rs = sub.reduce_scatter(x)
            pm = sub.collective_permute(x, [(q, (q + 1) % n) for q in range(n)])
            ok = (torch.equal(gat.cpu(), torch.cat(xs)) and gat.device == torch.device(d)
                  and torch.equal(rs.cpu(), sum(xs).chunk(n)[r])
                  and torch.equal(pm.cpu(), xs[(r - 1) % n]))
            record(f"devices{devs}", ok, f"rank {r}: {gat.cpu()} {rs.cpu()} {pm.cpu()}")
        ts = [threading.Thread(target=sub_rank, args=(r,)) for r in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=120)
    world_checks()
    results["_stats"] = {"ok": True, "detail": str(torch_tpu.distributed_threads.stats())}
    with open(OUT, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
