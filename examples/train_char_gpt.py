"""Main job (`make demo`): train a small character-level GPT on `tpu`.

The text is Python's own standard-library source, read at run time (nothing
is downloaded). Prints step, loss and tokens/s, then samples text, then the
compilation-cache statistics and the number of CPU fallbacks."""
import argparse
import os
import sys
import time

import torch

import torch_tpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models.mingpt import GPT, GPTConfig  # noqa: E402


def load_text(max_chars: int) -> str:
    root = os.path.dirname(os.__file__)
    chunks, total = [], 0
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            with open(os.path.join(root, name), encoding="utf-8", errors="ignore") as f:
                s = f.read()
            chunks.append(s)
            total += len(s)
            if total >= max_chars:
                break
    return "".join(chunks)[:max_chars]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--device", default="tpu")
    p.add_argument("--sample-chars", type=int, default=300)
    args = p.parse_args()

    torch.manual_seed(1337)
    text = load_text(400_000)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    print(f"text: {len(text):,} chars of Python stdlib source, vocab {len(chars)}")

    cfg = GPTConfig(vocab_size=len(chars), block_size=args.block, n_layer=2, n_head=4, n_embd=128)
    dev = torch.device(args.device)
    model = GPT(cfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    print(f"model: {sum(p.numel() for p in model.parameters()):,} parameters on {dev}")

    def batch():
        ix = torch.randint(len(data) - args.block - 1, (args.batch,))
        x = torch.stack([data[i:i + args.block] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + args.block] for i in ix])
        return x.to(dev), y.to(dev)

    torch_tpu.debug.reset_fallback_report()
    t0 = time.time()
    tokens = 0
    for step in range(1, args.steps + 1):
        x, y = batch()
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        tokens += x.numel()
        if step == 1 or step % 25 == 0 or step == args.steps:
            lv = loss.item()
            dt = time.time() - t0
            print(f"step {step:4d}  loss {lv:.4f}  {tokens / dt:8.0f} tokens/s")

    model.eval()
    # Sample with a fixed-length window (left-padded with newlines) so every
    # step has the same shape and reuses one compiled program.
    prompt = "def "
    pad = stoi.get("\n", 0)
    out = torch.tensor([[pad] * (args.block - len(prompt)) + [stoi[c] for c in prompt]])
    t1 = time.time()
    with torch.no_grad():
        for _ in range(args.sample_chars):
            logits, _ = model(out[:, -args.block:].to(dev))
            probs = torch.softmax(logits[:, -1, :].float(), dim=-1).cpu()
            nxt = torch.multinomial(probs, 1)
            out = torch.cat([out, nxt], dim=1)
    text_out = "".join(chars[i] for i in out[0, args.block - len(prompt):].tolist())
    print(f"sample ({args.sample_chars} chars in {time.time() - t1:.1f}s):\n{text_out}")
    if dev.type == "tpu":
        print("cache stats:", torch_tpu.cache_stats())
        report = torch_tpu.debug.fallback_report()
        print(f"CPU fallbacks: {sum(report.values())} calls {report}")


if __name__ == "__main__":
    main()
