"""python -m torch_tpu.serve.quant_eval: what `--quantization int8` costs in
perplexity and changes in speed (`make serve-bench`).

No trained causal LM is on this machine and nothing may be downloaded, so a
small byte-level Llama is trained here first, on CPU, on text already on the
machine (the GPL-3 text of Debian's common-licenses by default): the first
90% of the bytes train it, the last 10% measure it. Perplexity is that of
Hugging Face's forward on CPU with the checkpoint's weights and with every
weight the engine quantizes replaced by its int8 value times its channel's
scale (exactly the weights the engine's int8 forward multiplies with).
Speed: the serving engine on tpu, float32 weights against int8, greedy
decoding of a batch of requests, the two variants interleaved round by
round (medians), after a warm-up wave each.
"""
import argparse
import copy
import json
import math
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TEXT = "/usr/share/common-licenses/GPL-3"


def dequantized(model):
    """A copy of the HF model with the engine's int8 weights, dequantized."""
    import torch
    from .models import Int8Linear
    ref = copy.deepcopy(model)
    with torch.no_grad():
        for name, mod in ref.named_modules():
            if name.endswith(("_proj", "c_attn", "c_fc")) and hasattr(mod, "weight"):
                out_dim = 1 if type(mod).__name__ == "Conv1D" else 0
                q = Int8Linear(mod.weight, out_dim)
                shape = (-1, 1) if out_dim == 0 else (1, -1)
                mod.weight.copy_(q.q.float() * q.scale.float().view(shape))
    return ref


def perplexity(model, ids, window):
    import torch
    nll, count = 0.0, 0
    with torch.no_grad():
        for s in range(0, len(ids) - 1, window):
            chunk = torch.tensor([ids[s:s + window + 1]])
            if chunk.shape[1] < 2:
                break
            logits = model(chunk[:, :-1]).logits
            loss = torch.nn.functional.cross_entropy(logits[0], chunk[0, 1:], reduction="sum")
            nll += loss.item()
            count += chunk.shape[1] - 1
    return math.exp(nll / count)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m torch_tpu.serve.quant_eval")
    ap.add_argument("--text", default=TEXT)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    import torch
    import transformers
    import torch_tpu  # noqa: F401
    from .engine import Engine
    from .sampling import SamplingParams

    data = list(open(a.text, "rb").read())
    split = len(data) * 9 // 10
    train, held = data[:split], data[split:]
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=a.hidden, intermediate_size=a.hidden * 3,
                                   num_hidden_layers=a.layers, num_attention_heads=4,
                                   num_key_value_heads=2, max_position_embeddings=256,
                                   bos_token_id=1, eos_token_id=2)
    model = transformers.LlamaForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    t0 = time.time()
    g = torch.Generator().manual_seed(0)
    for step in range(a.steps):
        starts = torch.randint(0, len(train) - a.window - 1, (16,), generator=g).tolist()
        batch = torch.tensor([train[s:s + a.window + 1] for s in starts])
        loss = torch.nn.functional.cross_entropy(model(batch[:, :-1]).logits.reshape(-1, 256),
                                                 batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    train_s = time.time() - t0
    ppl = perplexity(model, held, a.window)
    ppl_q = perplexity(dequantized(model), held, a.window)

    prompts = [held[i * 50:i * 50 + 16] for i in range(a.batch)]
    params = SamplingParams(max_tokens=a.new, ignore_eos=True)
    engines = {"float32": Engine(model, block_size=16, max_num_seqs=a.batch, max_model_len=128),
               "int8": Engine(model, block_size=16, max_num_seqs=a.batch, max_model_len=128,
                              quantization="int8")}
    same, ref = None, None
    for e in engines.values():  # warm-up: compile every bucket
        e.generate(prompts, params)
    times = {k: [] for k in engines}
    for _ in range(a.rounds):
        for k, e in engines.items():
            t = time.perf_counter()
            out = e.generate(prompts, params)
            times[k].append(time.perf_counter() - t)
            if k == "float32":
                ref = out
            else:
                same = sum(x == y for r, o in zip(ref, out) for x, y in zip(r, o)) / sum(map(len, ref))
    tps = {k: a.batch * a.new / statistics.median(v) for k, v in times.items()}
    weights = {k: sum(w.nbytes() if hasattr(w, "nbytes") and callable(w.nbytes) else
                      w.numel() * w.element_size()
                      for layer in e.model.layers for w in layer.values() if w is not None)
               for k, e in engines.items()}
    res = {"text": a.text, "train_steps": a.steps, "train_seconds": round(train_s, 1),
           "perplexity_float32": round(ppl, 4), "perplexity_int8": round(ppl_q, 4),
           "perplexity_change_pct": round(100 * (ppl_q / ppl - 1), 3),
           "tokens_per_s": {k: round(v, 1) for k, v in tps.items()},
           "speed_ratio_int8_over_float32": round(tps["int8"] / tps["float32"], 3),
           "layer_weight_bytes": weights, "greedy_tokens_equal_fraction": round(same, 3)}
    print(json.dumps(res, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
