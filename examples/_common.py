"""Shared plumbing of the reference examples: the common flags, a training
loop that prints step, loss and throughput, and the final summary.

Every example builds its model on CPU from a fixed seed, then moves it to
--device, and draws its data on CPU from its own seeded generator, so a run
with `--device cpu` and one with `--device tpu` see the same weights and the
same batches: their losses can be compared step by step (tests/python/
test_examples.py does, in --smoke mode). main(argv) returns the summary as a
dict; the script form prints it."""
import argparse
import json
import time

import torch

import torch_tpu
import torch_tpu.debug


def parser(description, steps, smoke_steps=3, batch=16, log_every=10):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=steps, help="training steps")
    p.add_argument("--batch", type=int, default=batch, help="batch size")
    p.add_argument("--device", default="tpu", help="tpu (default) or cpu, to compare")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=None, help="learning rate (each example has its own default)")
    p.add_argument("--log-every", type=int, default=log_every)
    p.add_argument("--smoke", action="store_true",
                   help=f"a few-step run ({smoke_steps} steps, tiny sizes) for tests")
    p.set_defaults(smoke_steps=smoke_steps)
    return p


def finish_args(p, argv):
    args = p.parse_args(argv)
    if args.smoke:
        args.steps = args.smoke_steps
        args.log_every = 1
    return args


def train(model, opt, batch_fn, loss_fn, args, unit, count):
    """Runs args.steps steps of loss_fn(model, batch_fn(step)); prints progress.
    Returns (per-step losses as floats, seconds, items/s after the first step)."""
    torch_tpu.debug.reset_fallback_report()
    losses = []
    t0 = time.time()
    t_first = None
    done = first = 0
    for step in range(1, args.steps + 1):
        batch = batch_fn(step)
        loss = loss_fn(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        done += count(batch)
        if step == 1:
            losses[-1] = losses[-1].item()  # waits: the first step's time is compile time
            t_first = time.time()
            first = done
        if step % args.log_every == 0 or step == args.steps:
            lv = loss.item()
            dt = time.time() - t0
            print(f"step {step:5d}  loss {lv:.4f}  {done / dt:9.1f} {unit}/s", flush=True)
    losses = [float(x) for x in losses]
    seconds = time.time() - t0
    steady = (done - first) / max(time.time() - t_first, 1e-9) if args.steps > 1 else 0.0
    return losses, seconds, steady


def summary(name, args, losses, seconds, steady, unit, **extra):
    out = dict(example=name, device=args.device, steps=args.steps, first_loss=losses[0],
               last_loss=losses[-1], losses=losses, train_seconds=round(seconds, 2),
               throughput=round(steady, 1), unit=f"{unit}/s")
    out.update(extra)
    if torch.device(args.device).type == "tpu":
        out["cpu_fallbacks"] = {k: v for k, v in torch_tpu.debug.fallback_report().items() if v}
        stats = torch_tpu.cache_stats()
        out["programs_compiled"] = stats.get("misses")
    print(f"== {name} on {args.device}: {args.steps} steps in {seconds:.1f}s, loss "
          f"{losses[0]:.4f} -> {losses[-1]:.4f}, {steady:.1f} {unit}/s after the first step")
    for k, v in extra.items():
        if not isinstance(v, (list, dict)) or len(v) < 20:
            print(f"   {k}: {v}")
    if "cpu_fallbacks" in out:
        print(f"   CPU fallbacks: {sum(out['cpu_fallbacks'].values())} {out['cpu_fallbacks']}; "
              f"programs compiled: {out['programs_compiled']}")
    print("SUMMARY " + json.dumps(out))
    return out
