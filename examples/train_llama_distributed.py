"""A TorchTitan-style training recipe on `tpu`: a small Llama-style model
trained with FSDP2 (`fully_shard`) over the data-parallel dimension of a
device mesh and DTensor tensor parallelism (ColwiseParallel/RowwiseParallel
on attention and MLP) over the other, with activation checkpointing and,
optionally, `torch.compile(backend="tpu")` per transformer block.

    torchrun --nproc-per-node 2 examples/train_llama_distributed.py --dp 2
    torchrun --nproc-per-node 2 examples/train_llama_distributed.py --tp 2 --compile
    torchrun --nproc-per-node 4 examples/train_llama_distributed.py --dp 2 --tp 2 --check
    python examples/train_llama_distributed.py --threads 4 --dp 2 --tp 2 --check   # ranks as threads
    python examples/train_llama_distributed.py          # one process, no process group

`--threads N` runs the N ranks as threads of one process, each on its own
device of one client (`TORCH_TPU_NUM_DEVICES=N`), in PyTorch's threaded
process-group world: the "tpu" backend sees every member in this process
and picks the compiled transport (one SPMD program per collective).

The order of wrapping is TorchTitan's: tensor parallelism on each block,
then activation checkpointing, then compile, then FSDP2 on each block and
on the root. Data is synthetic and seeded (a toy language in which each
token mostly determines the next, so the loss falls as the model learns it); every rank draws
the same global batch and keeps its data-parallel slice, so a one-process
run on the whole batch sees exactly the same data. `--check` then runs that
one-process run (rank 0, plain model, no process group) and prints the
per-step losses side by side and their largest relative difference; it
exits with status 1 when that exceeds `--tol`.

Progress (rank 0): step, loss (the mean over all ranks), tokens/s, step
time; then a summary line, `SUMMARY {json}`, which `make examples-dist`
and tests/python/test_dist_example.py read.
"""
import argparse
import datetime
import json
import math
import os
import sys
import time
from dataclasses import dataclass


def _threads_requested(argv):
    """--threads N from the command line, read before the plugin loads (its
    device count is fixed then)."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return None


if _threads_requested(sys.argv[1:]) and __name__ == "__main__":
    os.environ.setdefault("TORCH_TPU_NUM_DEVICES", _threads_requested(sys.argv[1:]))

import threading  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_tpu  # noqa: F401  (the tpu device and the "tpu" c10d backend)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models.llama import RMSNorm, rotary_tables, rotate_half  # noqa: E402


@dataclass
class ModelArgs:
    vocab: int = 256
    dim: int = 128
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    ffn: int = 352
    seq: int = 64
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0


class Attention(nn.Module):
    """Grouped-query attention. Head counts are read from the projections'
    output sizes (`-1` in the views), so under tensor parallelism each rank
    runs its own share of query and key/value heads."""

    def __init__(self, a: ModelArgs):
        super().__init__()
        self.head_dim = a.dim // a.n_heads
        self.wq = nn.Linear(a.dim, a.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(a.dim, a.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(a.dim, a.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(a.n_heads * self.head_dim, a.dim, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        hd = self.head_dim
        q = self.wq(x).view(B, T, -1, hd).transpose(1, 2)
        k = self.wk(x).view(B, T, -1, hd).transpose(1, 2)
        v = self.wv(x).view(B, T, -1, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, -1)
        return self.wo(y)


class FeedForward(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.w1 = nn.Linear(a.dim, a.ffn, bias=False)   # gate
        self.w3 = nn.Linear(a.dim, a.ffn, bias=False)   # up
        self.w2 = nn.Linear(a.ffn, a.dim, bias=False)   # down

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.attention_norm = RMSNorm(a.dim, a.norm_eps)
        self.attention = Attention(a)
        self.ffn_norm = RMSNorm(a.dim, a.norm_eps)
        self.feed_forward = FeedForward(a)

    def forward(self, x, cos, sin, mask):
        x = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return x + self.feed_forward(self.ffn_norm(x))


class Transformer(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.args = a
        self.tok_embeddings = nn.Embedding(a.vocab, a.dim)
        # a ModuleDict, as TorchTitan's: blocks are replaced by name when wrapped
        self.layers = nn.ModuleDict({str(i): Block(a) for i in range(a.n_layers)})
        self.norm = RMSNorm(a.dim, a.norm_eps)
        self.output = nn.Linear(a.dim, a.vocab, bias=False)
        cos, sin = rotary_tables(a.dim // a.n_heads, a.seq, a.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.register_buffer("mask", torch.tril(torch.ones(a.seq, a.seq, dtype=torch.bool)),
                             persistent=False)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, tokens):
        T = tokens.shape[1]
        cos, sin, mask = self.rope_cos[:T], self.rope_sin[:T], self.mask[:T, :T]
        h = self.tok_embeddings(tokens)
        for block in self.layers.values():
            h = block(h, cos, sin, mask)
        return self.output(self.norm(h))


_rng_lock = threading.Lock()  # --threads: the ranks share the process's CPU generator


def build_model(a: ModelArgs, seed: int):
    with _rng_lock:
        torch.manual_seed(seed)
        return Transformer(a)  # on CPU; every rank (and the reference) builds the same weights


def batch(step: int, a: ModelArgs, global_batch: int, seed: int):
    """The global batch of `step`: (inputs, targets), each (global_batch, seq).
    A seeded toy language: the token after t is perm[t] three times in four,
    otherwise a random token, so the loss falls from ln(vocab) towards the
    noise's entropy as the model learns perm."""
    perm = torch.randperm(a.vocab, generator=torch.Generator().manual_seed(seed))
    g = torch.Generator().manual_seed(seed * 100003 + step)
    cur = torch.randint(0, a.vocab, (global_batch,), generator=g)
    cols = [cur]
    for _ in range(a.seq):
        noise = torch.rand(global_batch, generator=g) < 0.25
        cur = torch.where(noise, torch.randint(0, a.vocab, (global_batch,), generator=g), perm[cur])
        cols.append(cur)
    data = torch.stack(cols, 1)
    return data[:, :-1], data[:, 1:]


# ---- parallelization (TorchTitan's order: TP, AC, compile, FSDP) ----

def apply_tp(model: Transformer, tp_mesh, sequence_parallel: bool = False):
    """Megatron-style TP on every block: the q/k/v and gate/up projections
    column-sharded (each rank its heads and its slice of the MLP), the output
    and down projections row-sharded (their partial sums all-reduced).

    With sequence_parallel (TorchTitan's plan): between the blocks the
    activations stay sharded along the sequence (Shard(1)); the norms run
    on sequence shards (SequenceParallel), each block's attention and MLP
    gather the sequence on entry and reduce-scatter on exit, the embedding
    is row-sharded over the vocabulary, and the output projection gathers
    the logits."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel, parallelize_module)
    if sequence_parallel:
        parallelize_module(model, tp_mesh, {
            "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
            "norm": SequenceParallel(),
            "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
        })
    out = Shard(1) if sequence_parallel else Replicate()
    plan = {"attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(),
            "attention.wv": ColwiseParallel(), "attention.wo": RowwiseParallel(output_layouts=out),
            "feed_forward.w1": ColwiseParallel(), "feed_forward.w3": ColwiseParallel(),
            "feed_forward.w2": RowwiseParallel(output_layouts=out)}
    if sequence_parallel:
        seq_in = PrepareModuleInput(input_layouts=(Shard(1), None, None, None),
                                    desired_input_layouts=(Replicate(), None, None, None))
        plan.update({"attention_norm": SequenceParallel(), "ffn_norm": SequenceParallel(),
                     "attention": seq_in,
                     "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),),
                                                        desired_input_layouts=(Replicate(),))})
    for block in model.layers.values():
        parallelize_module(block, tp_mesh, plan)


def apply_ac(model: Transformer):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    for name, block in list(model.layers.items()):
        model.layers[name] = checkpoint_wrapper(block, preserve_rng_state=False)


def apply_compile(model: Transformer):
    for name, block in list(model.layers.items()):
        model.layers[name] = torch.compile(block, backend="tpu")


def apply_fsdp(model: Transformer, dp_mesh, bf16: bool):
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16 if bf16 else torch.float32,
                              reduce_dtype=torch.float32)
    blocks = list(model.layers.values())
    for i, block in enumerate(blocks):
        # the last block's parameters are gathered again at once by backward
        fully_shard(block, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=i < len(blocks) - 1)
    fully_shard(model, mesh=dp_mesh, mp_policy=mp)


# ---- training ----

def train(model, args, a: ModelArgs, device, dp_rank, dp, world, log):
    # With TP alone, the sharded weights are DTensors and the rest (norms,
    # embeddings, output) plain tensors; foreach kernels take one kind at a
    # time, so each kind gets its own parameter group (same settings).
    from torch.distributed.tensor import DTensor
    params = list(model.parameters())
    groups = [g for g in ([p for p in params if isinstance(p, DTensor)],
                          [p for p in params if not isinstance(p, DTensor)]) if g]
    opt = torch.optim.AdamW([{"params": g} for g in groups], lr=args.lr, weight_decay=0.1,
                            foreach=True)
    rows = args.batch // dp
    losses, times = [], []
    tokens_per_step = args.batch * a.seq
    for step in range(1, args.steps + 1):
        x, y = batch(step, a, args.batch, args.seed)  # the data loader, outside the step's time
        t0 = time.perf_counter()
        x = x[dp_rank * rows:(dp_rank + 1) * rows].to(device)
        y = y[dp_rank * rows:(dp_rank + 1) * rows].to(device)
        logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, a.vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip, foreach=True)
        opt.step()
        mean = loss.detach().clone()
        if world > 1:  # every rank's loss (tp ranks hold equal ones): the global batch's mean
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        lv = mean.item()  # waits for the step
        dt = time.perf_counter() - t0
        losses.append(lv)
        times.append(dt)
        if step % args.log_every == 0 or step == 1 or step == args.steps:
            log(f"step {step:4d}/{args.steps}  loss {lv:.4f}  tokens/s {tokens_per_step / dt:9.1f}  "
                f"step {dt * 1000:7.1f} ms{'  (compiles)' if step == 1 else ''}")
    return losses, times


def reference_losses(args, a: ModelArgs, device):
    """The one-process run of the same model on the same data: no mesh, no
    wrapping, the whole global batch."""
    model = build_model(a, args.seed).to(device)
    ref_args = argparse.Namespace(**vars(args))
    ref_args.log_every = 10 ** 9
    losses, _ = train(model, ref_args, a, device, 0, 1, 1, lambda s: None)
    return losses


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dp", type=int, default=None, help="data-parallel (FSDP2) size; default world / tp")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel size")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=8, help="global batch (sequences per step)")
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--ffn", type=int, default=352)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--clip", type=float, default=0.0, help="clip the gradient norm (0: off)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sp", action="store_true",
                   help="sequence parallelism with TP: activations sharded along the sequence between blocks")
    p.add_argument("--no-ac", dest="ac", action="store_false", help="no activation checkpointing")
    p.add_argument("--compile", action="store_true", help='torch.compile(backend="tpu") each block')
    p.add_argument("--bf16", action="store_true",
                   help="FSDP2 mixed precision: bf16 parameters, fp32 reduction (needs --dp > 1)")
    p.add_argument("--check", action="store_true",
                   help="compare the per-step loss with a one-process run (rank 0)")
    p.add_argument("--tol", type=float, default=None,
                   help="largest relative loss difference --check accepts (default 1e-4; 1e-2 with --bf16)")
    p.add_argument("--threads", type=int, default=0,
                   help="run the dp x tp ranks as threads of this process (compiled transport)")
    p.add_argument("--thread-mode", default="strict", choices=["strict", "fused"],
                   help="--threads: each rank thread's eager mode")
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--json", default=None, help="also write the summary to this file (rank 0)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    if args.threads:
        return run_threads(args)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    distributed = "RANK" in os.environ and world >= 1 and "MASTER_ADDR" in os.environ
    tol = validate(args, world)
    if distributed:
        dist.init_process_group("tpu", timeout=datetime.timedelta(seconds=300))
    return run_rank(args, world, distributed, tol)


def run_threads(args):
    """The ranks as threads of this process, each in its own thread-local
    world (PyTorch's threaded process groups, as its own threaded tests)."""
    from torch.testing._internal.distributed.multi_threaded_pg import _install_threaded_pg
    n = args.threads
    if torch.tpu.device_count() < n:
        raise SystemExit(f"--threads {n}: the plugin has {torch.tpu.device_count()} device(s); set "
                         f"TORCH_TPU_NUM_DEVICES={n} before torch_tpu is imported")
    tol = validate(args, n)
    if args.tp > 1:
        # Measured with torch 2.13: with 2 rank threads, ColwiseParallel and
        # RowwiseParallel layers fail in DTensor's sharding propagation
        # ("Expected all tensors to be on the same device ... tpu:0 and
        # tpu:1") once more than one TP layer runs, while one TP linear alone
        # works: DTensor's propagation caches are shared by the threads.
        raise SystemExit("--threads with --tp is refused: DTensor tensor parallelism is not "
                         "thread-safe across rank threads in this PyTorch; use torchrun for TP")
    if args.compile:  # not tried on rank threads
        raise SystemExit("--threads with --compile is not supported; run compiled blocks under torchrun")
    _install_threaded_pg()
    torch._C._distributed_c10d._set_thread_isolation_mode(True)
    store = dist.HashStore()
    results, errors = [None] * n, []

    def rank_main(r):
        try:
            torch.tpu.set_device(r)
            dist.init_process_group("tpu", rank=r, world_size=n, store=store,
                                    timeout=datetime.timedelta(seconds=300))
            # backward on the rank's own thread: its world and device are
            # thread-local, and autograd's device threads have neither.
            # Strict eager: Fused eager keeps one region per process, so rank
            # threads on different devices would cut each other's regions
            # (a new program per interleaving)
            with torch.autograd.set_multithreading_enabled(False), \
                    torch_tpu.modes.eager_mode(args.thread_mode):
                results[r] = run_rank(args, n, True, tol)
        except BaseException as e:  # noqa: BLE001
            import traceback
            errors.append(f"rank {r}: {type(e).__name__}: {e}\n{traceback.format_exc()}")

    threads = [threading.Thread(target=rank_main, args=(r,), name=f"rank{r}") for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print("\n".join(errors), file=sys.stderr, flush=True)
        return 1
    return results[0]


def validate(args, world):
    """Checks the mesh against the job; returns --check's tolerance."""
    if args.dp is None:
        args.dp = max(world // args.tp, 1)
    if args.dp * args.tp != world:
        raise SystemExit(f"train_llama_distributed: --dp {args.dp} x --tp {args.tp} = "
                         f"{args.dp * args.tp} ranks, but the job has {world} "
                         f"(torchrun --nproc-per-node {args.dp * args.tp})")
    if args.batch % args.dp:
        raise SystemExit(f"--batch {args.batch} is not divisible by --dp {args.dp}")
    if args.heads % args.tp or args.kv_heads % args.tp or args.ffn % args.tp:
        raise SystemExit(f"--tp {args.tp} must divide --heads {args.heads}, --kv-heads "
                         f"{args.kv_heads} and --ffn {args.ffn}")
    if args.sp and args.tp < 2:
        raise SystemExit("--sp shards the sequence over the tp dimension: it needs --tp 2 or more")
    if args.sp and args.compile:
        # Measured with torch 2.13: with TP alone, backward fails inside
        # DTensor's redistribute (a plain-tensor gradient reaches
        # NestedRedistribute: "'Tensor' object has no attribute
        # '_local_tensor'"), with backend="aot_eager" as with "tpu" and with
        # or without activation checkpointing; on the 2x2 mesh the run
        # completes but its losses leave the one-process run's by 5e-2.
        raise SystemExit("--sp with --compile is refused: compiled blocks under sequence-parallel "
                         "DTensor hooks fail in backward (TP alone) or give wrong losses (with FSDP2) "
                         "in this PyTorch; run --sp without --compile")
    if args.sp and args.seq % args.tp:
        raise SystemExit(f"--sp: --seq {args.seq} is not divisible by --tp {args.tp}")
    if args.bf16 and args.dp < 2:
        raise SystemExit("--bf16 is FSDP2's mixed precision: it needs --dp 2 or more")
    # Tolerance of --check. float32: the distributed run and the one-process
    # run compute the same sums split differently (FSDP2 averages per-rank
    # gradients of batch slices, TP adds partial matmuls of head and ffn
    # slices), so the losses differ by float32 rounding, which AdamW's
    # division by sqrt(v) carries from step to step: measured 20 steps at
    # most 2.1e-7 (dp4) to 1.8e-6 (dp2, 2x2) relative. 1e-4 is 50x that and
    # below what real errors move: a rank on the wrong slice of the batch
    # changes step 1 by 1.3e-3, gradients of one rank's slice only (no
    # reduction) change step 2 by 6.4e-3 and step 3 by 1.3e-2. (AdamW does
    # not see a gradient's scale, so summed instead of averaged gradients
    # are invisible here: tests/python/test_distributed.py checks that with
    # SGD.) bf16 parameters round every weight to 8 significant bits
    # (4e-3 relative): measured 6.3e-4 over 10 steps (dp2, compile), hence 1e-2.
    return args.tol if args.tol is not None else (1e-2 if args.bf16 else 1e-4)


def run_rank(args, world, distributed, tol):
    """One rank's run (the process group, if any, is initialised); returns
    the process's exit status."""
    a = ModelArgs(vocab=args.vocab, dim=args.dim, n_layers=args.layers, n_heads=args.heads,
                  n_kv_heads=args.kv_heads, ffn=args.ffn, seq=args.seq)
    rank = dist.get_rank() if distributed else 0
    device = torch.device("tpu", torch.tpu.current_device())

    def log(msg):
        if rank == 0:
            print(msg, flush=True)

    model = build_model(a, args.seed)
    n_params = sum(p.numel() for p in model.parameters())
    model = model.to(device)
    dp_rank = 0
    if distributed:
        from torch.distributed.device_mesh import init_device_mesh
        # a 2-D mesh only when both dimensions are used (a 1-D mesh otherwise)
        if args.dp > 1 and args.tp > 1:
            mesh = init_device_mesh("tpu", (args.dp, args.tp), mesh_dim_names=("dp", "tp"))
            dp_mesh, tp_mesh = mesh["dp"], mesh["tp"]
        elif args.tp > 1:
            dp_mesh, tp_mesh = None, init_device_mesh("tpu", (args.tp,), mesh_dim_names=("tp",))
        else:
            dp_mesh, tp_mesh = init_device_mesh("tpu", (args.dp,), mesh_dim_names=("dp",)), None
        dp_rank = dp_mesh.get_local_rank() if dp_mesh is not None else 0
        if tp_mesh is not None:
            apply_tp(model, tp_mesh, args.sp)
    if args.ac:
        apply_ac(model)
    if args.compile:
        apply_compile(model)
    if distributed and args.dp > 1:
        apply_fsdp(model, dp_mesh, args.bf16)
    transport = torch.tpu.distributed_transport() if distributed else {"transport": "none"}
    log(f"Llama-style model: {a.n_layers} layers, dim {a.dim}, {a.n_heads} heads "
        f"({a.n_kv_heads} kv), ffn {a.ffn}, vocab {a.vocab}: {n_params / 1e6:.2f}M parameters")
    log(f"mesh dp={args.dp} x tp={args.tp} on {world} rank(s), device {device}, transport "
        f"{transport['transport']}; FSDP2 {'on' if args.dp > 1 else 'off'}"
        f"{' (bf16 params, fp32 reduce)' if args.bf16 else ''}, TP {'on' if args.tp > 1 else 'off'}"
        f"{' with sequence parallelism' if args.sp else ''}, "
        f"activation checkpointing {'on' if args.ac else 'off'}, compile {'on' if args.compile else 'off'}; "
        f"global batch {args.batch} x {a.seq} tokens")

    t_start = time.perf_counter()
    losses, times = train(model, args, a, device, dp_rank, args.dp, world, log)
    total = time.perf_counter() - t_start
    # the median step after the first (which compiles; a few later ones compile too)
    steady = sorted(times[1:] if len(times) > 1 else times)
    step_ms = 1000 * steady[len(steady) // 2]
    out = dict(example="train_llama_distributed", world=world, threads=args.threads, dp=args.dp, tp=args.tp,
               compile=args.compile, ac=args.ac, sp=args.sp, bf16=args.bf16, params=n_params, steps=args.steps,
               first_loss=losses[0], last_loss=losses[-1], losses=losses,
               step_ms=round(step_ms, 2), tokens_per_s=round(args.batch * a.seq / (step_ms / 1000), 1),
               train_seconds=round(total, 2), transport=transport["transport"])
    if distributed:
        out["collectives_staged"] = torch_tpu.distributed.stats().get("staged_collectives")
        dist.destroy_process_group()
    ok = True
    if args.check and rank == 0:
        ref = reference_losses(args, a, device)
        rel = [abs(x - r) / max(abs(r), 1e-12) for x, r in zip(losses, ref)]
        out.update(ref_losses=ref, max_rel_diff=max(rel), tol=tol)
        ok = max(rel) <= tol
        log("step   distributed     one process    rel diff")
        for i, (x, r, d) in enumerate(zip(losses, ref, rel), 1):
            log(f"{i:4d}  {x:.10f}  {r:.10f}  {d:.1e}")
        log(f"check: max relative difference {max(rel):.2e} against the one-process run "
            f"(tolerance {tol:g}): {'ok' if ok else 'FAILED'}")
    log(f"== dp={args.dp} tp={args.tp}: {args.steps} steps in {total:.1f} s, loss {losses[0]:.4f} -> "
        f"{losses[-1]:.4f}, {out['tokens_per_s']:.0f} tokens/s (median step "
        f"{step_ms:.1f} ms)")
    if rank == 0:
        print("SUMMARY " + json.dumps(out), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
