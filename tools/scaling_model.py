"""A scaling model on paper: communication volume and step time of FSDP and
FSDP x TP training of an 8B dense transformer (Qwen3-8B's shape) from 8 to
8192 TPU chips, from published chip and interconnect figures. Nothing here
is measured; docs/distributed.md sets the output beside TorchTitan's
published figures.

    python tools/scaling_model.py [--chip v5p|v5e] [--tokens-per-chip 8192] [--eta 0.6] [--markdown]

Published figures (Google Cloud TPU documentation, system architecture pages
https://cloud.google.com/tpu/docs/v5p and https://cloud.google.com/tpu/docs/v5e):
- v5p: 459 TFLOP/s bf16 per chip, 95 GiB HBM, bidirectional ICI 1200 GB/s
  per chip, 3D torus, DCN 50 Gbit/s per chip, largest slice 6144 chips
  (multislice beyond, over DCN).
- v5e: 197 TFLOP/s bf16 per chip, 16 GB HBM, bidirectional ICI 400 GB/s per
  chip, 2D torus, 256-chip pods, 8 chips per host with 2 x 100 Gbit/s NICs
  (25 Gbit/s of DCN per chip).

The model (each choice is stated, none is fitted):
- Compute: model FLOPs per token 6 N + 12 L d s (TorchTitan's formula: the
  parameter matmuls forward and backward, plus attention scores); a step's
  compute time = FLOPs / (peak x eta), eta the fraction of peak a single
  chip's kernels reach (an input, default 0.6). No activation recomputation.
- Collectives are rings (bandwidth terms only, no latency): all-gather and
  reduce-scatter of S bytes over n chips move S (n - 1) / n bytes per chip,
  all-reduce twice that. A chip's collective bandwidth is half its
  bidirectional ICI figure (what it can send), i.e. the collective is
  assumed to use every torus link at once: optimistic for one axis of a
  torus, exact for a ring over all links.
- FSDP (ZeRO-3, reshard after forward, as FSDP2's default): per step, the
  bf16 parameters are all-gathered twice (forward and backward) and the
  gradients reduce-scattered in fp32 (FSDP2 MixedPrecisionPolicy(bf16,
  fp32)): 2 x 2N + 4N bytes of collective input per step.
- Beyond one slice (v5p: 6144 chips; v5e: 256), sharding stays within the
  slice and the slices replicate (HSDP, TorchTitan's choice across slow
  links): each chip all-reduces its fp32 gradient shard, 4N / n_slice bytes,
  over DCN with the other slices.
- TP of degree t inside a data-parallel group (Megatron-style, as
  ColwiseParallel/RowwiseParallel): per layer 2 all-reduces of the
  activations (b s d, bf16) in forward and 2 in backward, over the t chips
  of the group, who share their batch (t times one chip's tokens).
- Overlap: FSDP's all-gathers and reduce-scatters overlap the compute of
  other layers (prefetch); TP's all-reduces sit on the critical path. The
  step time is max(compute, FSDP + DCN traffic) + TP traffic; the step with
  no overlap at all (the sum) is printed beside it.
- Memory per chip: fp32 parameters, gradients and two Adam moments (16 N
  bytes) divided by the number of shards; activations not counted.
"""
import argparse
import json

CHIPS = {
    "v5p": dict(peak=459e12, hbm=95 * 2 ** 30, ici_bidir=1200e9, dcn=50e9 / 8, slice_max=6144,
                source="https://cloud.google.com/tpu/docs/v5p"),
    "v5e": dict(peak=197e12, hbm=16e9, ici_bidir=400e9, dcn=2 * 100e9 / 8 / 8, slice_max=256,
                source="https://cloud.google.com/tpu/docs/v5e"),
}

# Qwen3-8B (its published config): 36 layers, hidden 4096, 32 query heads, 8
# kv heads of 128, MLP 12288, vocabulary 151936, 8.2e9 parameters.
QWEN3_8B = dict(name="Qwen3-8B", params=8.19e9, layers=36, dim=4096, seq=4096)


def step_model(chips, chip, model, tokens_per_chip, tp=1, eta=0.6):
    c = CHIPS[chip]
    N, L, d, s = model["params"], model["layers"], model["dim"], model["seq"]
    flops_per_token = 6 * N + 12 * L * d * s
    t_comp = flops_per_token * tokens_per_chip / (c["peak"] * eta)
    bw = c["ici_bidir"] / 2
    dp = chips // tp
    in_slice = chips                          # multislice: equal slices of at most slice_max
    while in_slice > c["slice_max"]:
        in_slice //= 2
    shard = min(dp, in_slice // tp)           # FSDP shards within a slice
    slices = chips // in_slice
    ring = (shard - 1) / shard if shard > 1 else 0.0
    fsdp_bytes = (2 * 2 * N + 4 * N) / tp * ring          # per chip (TP splits the weights t ways)
    dcn_bytes = 2 * (slices - 1) / slices * 4 * N / tp / shard if slices > 1 else 0.0
    tp_bytes = 0.0
    if tp > 1:
        act = tp * tokens_per_chip * d * 2                 # the group's batch, bf16
        tp_bytes = L * 4 * 2 * (tp - 1) / tp * act         # 4 all-reduces per layer
    t_fsdp, t_dcn, t_tp = fsdp_bytes / bw, dcn_bytes / c["dcn"], tp_bytes / bw
    t_step = max(t_comp, t_fsdp + t_dcn) + t_tp
    t_serial = t_comp + t_fsdp + t_dcn + t_tp
    mem = 16 * N / (shard * tp)
    return dict(chips=chips, tp=tp, tokens_per_chip=tokens_per_chip, fsdp_shard=shard, slices=slices,
                fsdp_gb=fsdp_bytes / 1e9, dcn_gb=dcn_bytes / 1e9, tp_gb=tp_bytes / 1e9,
                compute_s=t_comp, fsdp_s=t_fsdp, dcn_s=t_dcn, tp_s=t_tp, step_s=t_step,
                step_serial_s=t_serial, mfu=eta * t_comp / t_step, mfu_serial=eta * t_comp / t_serial,
                tokens_per_s_per_chip=tokens_per_chip / t_step, state_gib_per_chip=mem / 2 ** 30,
                fits=mem < c["hbm"])


def table(chip, model, tokens_per_chip, eta, tps=(1, 4), global_tokens=None):
    """Weak scaling (tokens_per_chip fixed), or strong scaling when
    global_tokens is given (the global batch fixed, split over the chips)."""
    rows = []
    for tp in tps:
        chips = 8
        while chips <= 8192:
            per_chip = global_tokens // chips if global_tokens else tokens_per_chip
            if chips >= tp:
                rows.append(step_model(chips, chip, model, per_chip, tp, eta))
            chips *= 2
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chip", default="v5p", choices=sorted(CHIPS))
    p.add_argument("--tokens-per-chip", type=int, default=8192,
                   help="tokens per chip per step (weak scaling: the global batch grows with the chips)")
    p.add_argument("--global-tokens", type=int, default=None,
                   help="strong scaling instead: this many tokens per step over all the chips")
    p.add_argument("--seq", type=int, default=QWEN3_8B["seq"])
    p.add_argument("--eta", type=float, default=0.6, help="fraction of peak a chip's kernels reach")
    p.add_argument("--tp", default="1,4", help="tensor-parallel degrees to tabulate")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    model = dict(QWEN3_8B, seq=args.seq)
    rows = table(args.chip, model, args.tokens_per_chip, args.eta,
                 tuple(int(t) for t in args.tp.split(",")), args.global_tokens)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    c = CHIPS[args.chip]
    print(f"{model['name']} ({model['params'] / 1e9:.1f}B, seq {model['seq']}) on TPU {args.chip} "
          f"({c['peak'] / 1e12:.0f} TFLOP/s bf16, ICI {c['ici_bidir'] / 1e9:.0f} GB/s bidirectional, "
          f"DCN {c['dcn'] * 8 / 1e9:.0f} Gbit/s per chip, slices of {c['slice_max']}; {c['source']}); "
          + (f"{args.global_tokens} tokens per step in all (strong scaling)" if args.global_tokens
             else f"{args.tokens_per_chip} tokens per chip per step (weak scaling)") + f", eta {args.eta}")
    head = ["chips", "TP", "tokens/chip", "FSDP shards", "slices", "FSDP GB/chip", "DCN GB/chip", "TP GB/chip",
            "compute ms", "FSDP ms", "DCN ms", "TP ms", "step ms", "MFU", "MFU no overlap",
            "state GiB/chip"]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    else:
        print("  ".join(f"{h:>10}" for h in head))
    for r in rows:
        whole = r["tokens_per_chip"] * r["tp"] >= model["seq"]  # a TP group holds whole sequences
        cells = [r["chips"], r["tp"], str(r["tokens_per_chip"]) + ("" if whole else " (<1 seq)"), r["fsdp_shard"], r["slices"], f"{r['fsdp_gb']:.1f}",
                 f"{r['dcn_gb']:.3f}", f"{r['tp_gb']:.1f}", f"{r['compute_s'] * 1e3:.0f}",
                 f"{r['fsdp_s'] * 1e3:.0f}", f"{r['dcn_s'] * 1e3:.1f}", f"{r['tp_s'] * 1e3:.0f}",
                 f"{r['step_s'] * 1e3:.0f}", f"{r['mfu'] * 100:.1f}%", f"{r['mfu_serial'] * 100:.1f}%",
                 f"{r['state_gib_per_chip']:.1f}" + ("" if r["fits"] else " (over HBM)")]
        if args.markdown:
            print("| " + " | ".join(str(x) for x in cells) + " |")
        else:
            print("  ".join(f"{str(x):>10}" for x in cells))


if __name__ == "__main__":
    main()
