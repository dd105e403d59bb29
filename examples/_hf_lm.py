"""The Llama and Qwen3 examples' shared body: a Hugging Face causal LM built
from a small config (random weights), trained on on-machine text (Python's
standard-library source, byte-level tokens: vocabulary 256), then asked to
continue a prompt, greedily and by seeded sampling (the device RNG)."""
import os
import time

import torch

from _common import finish_args, parser, summary, train

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def load_text(max_chars):
    root = os.path.dirname(os.__file__)
    chunks, total = [], 0
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            with open(os.path.join(root, name), "rb") as f:
                chunks.append(f.read())
            total += len(chunks[-1])
            if total >= max_chars:
                break
    return b"".join(chunks)[:max_chars]


def build(arch, args):
    import transformers as T

    h = args.hidden
    common = dict(vocab_size=256, hidden_size=h, intermediate_size=(8 * h // 3 + 31) // 32 * 32,
                  num_hidden_layers=args.layers, num_attention_heads=args.heads,
                  num_key_value_heads=max(1, args.heads // 2),
                  max_position_embeddings=args.seq + args.new_tokens + 16,
                  pad_token_id=0, bos_token_id=1, eos_token_id=2)
    if arch == "llama":
        return T.LlamaForCausalLM(T.LlamaConfig(**common))
    if arch == "qwen3":
        # small Qwen3 checkpoints tie the output projection to the embeddings
        return T.Qwen3ForCausalLM(T.Qwen3Config(head_dim=h // args.heads, tie_word_embeddings=True,
                                                **common))
    raise ValueError(arch)


def main(arch, argv=None):
    name = {"llama": "Llama", "qwen3": "Qwen3"}[arch]
    p = parser(f"Train a small Hugging Face {name} on Python source bytes, then generate.",
               steps=300, batch=16, log_every=25)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64, help="training sequence length")
    p.add_argument("--new-tokens", type=int, default=32,
                   help="tokens to generate after training (a static, bucketed key/value cache by default on tpu: torch_tpu/generation.py)")
    args = finish_args(p, argv)
    if args.smoke:
        args.layers, args.hidden, args.seq, args.batch, args.new_tokens = 2, 64, 32, 4, 4
    lr = args.lr or 3e-3
    dev = torch.device(args.device)

    data = torch.frombuffer(bytearray(load_text(400_000)), dtype=torch.uint8).long()
    torch.manual_seed(args.seed)
    model = build(arch, args).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{name}: {args.layers} layers, hidden {args.hidden}, {n_params:,} parameters on {dev}; "
          f"text: {len(data):,} bytes of Python source")
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)

    def batch_fn(step):
        g = torch.Generator().manual_seed(args.seed * 100_003 + step)
        ix = torch.randint(len(data) - args.seq, (args.batch,), generator=g)
        return torch.stack([data[i:i + args.seq] for i in ix]).to(dev)

    def loss_fn(m, x):
        return m(input_ids=x, labels=x).loss

    losses, seconds, steady = train(model, opt, batch_fn, loss_fn, args, "tokens", lambda x: x.numel())

    model.eval()
    prompt_text = b"def __init__(self"
    prompt = torch.tensor([list(prompt_text)]).to(dev)
    kw = dict(attention_mask=torch.ones_like(prompt), max_new_tokens=args.new_tokens,
              min_new_tokens=args.new_tokens)
    t = time.time()
    greedy = model.generate(prompt, do_sample=False, **kw)[0, prompt.shape[1]:].cpu()
    greedy_s = time.time() - t
    torch.manual_seed(args.seed)
    t = time.time()
    sampled = model.generate(prompt, do_sample=True, top_k=40, **kw)[0, prompt.shape[1]:].cpu()
    sampled_s = time.time() - t
    show = lambda ids: (prompt_text + bytes(ids.tolist())).decode("utf-8", "replace")
    print(f"greedy ({args.new_tokens} tokens, {args.new_tokens / greedy_s:.1f} tokens/s):\n{show(greedy)}")
    print(f"sampled, top-k 40 ({args.new_tokens / sampled_s:.1f} tokens/s):\n{show(sampled)}")
    return summary(arch, args, losses, seconds, steady, "tokens", parameters=n_params,
                   greedy_tokens=greedy.tolist(), sampled_tokens=sampled.tolist(),
                   greedy_tokens_per_s=round(args.new_tokens / greedy_s, 1),
                   sampled_tokens_per_s=round(args.new_tokens / sampled_s, 1))
