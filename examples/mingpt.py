"""Reference example and `make demo`: a small character-level GPT
(examples/models/mingpt.py) trained on Python's own standard-library source,
read at run time (nothing is downloaded). Prints step, loss and tokens/s,
then samples text on the device (torch.multinomial from the device RNG),
then the compilation-cache statistics and the number of CPU fallbacks.

`python examples/mingpt.py` (tpu), `--device cpu` to compare, `--smoke` for
a few steps; `--steps/--batch/--block/--layers/--embd/--sample-chars` size it."""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import finish_args, parser, summary, train  # noqa: E402
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


def main(argv=None):
    p = parser("Train a character-level GPT on Python source, then sample.", steps=400, batch=16,
               log_every=25)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--embd", type=int, default=128)
    p.add_argument("--sample-chars", type=int, default=300)
    args = finish_args(p, argv)
    if args.smoke:
        args.batch, args.block, args.embd, args.sample_chars = 4, 32, 64, 8
    dev = torch.device(args.device)

    text = load_text(400_000)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    print(f"text: {len(text):,} chars of Python stdlib source, vocab {len(chars)}")

    torch.manual_seed(args.seed if args.seed else 1337)
    cfg = GPTConfig(vocab_size=len(chars), block_size=args.block, n_layer=args.layers, n_head=4,
                    n_embd=args.embd)
    model = GPT(cfg).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params:,} parameters on {dev}")
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr or 3e-3, weight_decay=0.01)

    def batch_fn(step):
        g = torch.Generator().manual_seed(args.seed * 100_003 + step)
        ix = torch.randint(len(data) - args.block - 1, (args.batch,), generator=g)
        x = torch.stack([data[i:i + args.block] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + args.block] for i in ix])
        return x.to(dev), y.to(dev)

    def loss_fn(m, b):
        return m(b[0], b[1])[1]

    losses, seconds, steady = train(model, opt, batch_fn, loss_fn, args, "tokens", lambda b: b[0].numel())

    model.eval()
    # Sample with a fixed-length window (left-padded with newlines) so every
    # step has the same shape and reuses one compiled program; the draw stays
    # on the device.
    prompt = "def "
    pad = stoi.get("\n", 0)
    window = torch.tensor([[pad] * (args.block - len(prompt)) + [stoi[c] for c in prompt]], device=dev)
    drawn = []
    torch.manual_seed(args.seed)
    t1 = time.time()
    with torch.no_grad():
        for _ in range(args.sample_chars):
            logits, _ = model(window)
            probs = torch.softmax(logits[:, -1, :].float(), dim=-1)
            nxt = torch.multinomial(probs, 1)
            window = torch.cat([window[:, 1:], nxt], dim=1)
            drawn.append(nxt)
    ids = torch.cat(drawn, dim=1)[0].tolist()
    sample_s = time.time() - t1
    print(f"sample ({args.sample_chars} chars in {sample_s:.1f}s):\n{prompt}{''.join(chars[i] for i in ids)}")
    return summary("mingpt", args, losses, seconds, steady, "tokens", parameters=n_params,
                   sample_chars_per_s=round(args.sample_chars / sample_s, 1))


if __name__ == "__main__":
    main()
