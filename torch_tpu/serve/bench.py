"""python -m torch_tpu.serve.bench: engine throughput against Hugging Face on
CPU eager (`make serve-bench`).

A random-weight Llama from a config (nothing downloaded). Reports decode
throughput at batch 1 and batch 8 (the engine on tpu after a warm-up wave,
HF `generate` on CPU eager), programs compiled during the measured waves,
and the prefix cache's hit rate and throughput on a shared-prefix workload.
"""
import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _programs():
    import torch_tpu
    s = torch_tpu.cache_stats()
    return sum(s["compiles_by_mode"].values()) + s["persistent"]["loads"]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m torch_tpu.serve.bench")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--device", default="tpu")
    a = ap.parse_args(argv)

    import torch
    import transformers
    import torch_tpu  # noqa: F401
    from .engine import Engine
    from .sampling import SamplingParams

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.hidden * 3,
                                   num_hidden_layers=a.layers, num_attention_heads=8, num_key_value_heads=4,
                                   max_position_embeddings=512)
    model = transformers.LlamaForCausalLM(cfg).eval()
    model.generation_config.eos_token_id = None
    g = torch.Generator().manual_seed(1)

    def prompts(n, length=a.prompt):
        return [torch.randint(3, a.vocab, (length,), generator=g).tolist() for _ in range(n)]

    rows = []

    # HF CPU eager: sequential batch-1 generate, and one batch-8 generate
    def hf(batch):
        ids = torch.tensor(prompts(batch))
        t = time.perf_counter()
        with torch.no_grad():
            model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=a.new,
                           min_new_tokens=a.new, do_sample=False, pad_token_id=0)
        return batch * a.new / (time.perf_counter() - t)
    hf(1)
    rows.append(("HF generate, CPU eager", 1, hf(1), "", ""))
    rows.append(("HF generate, CPU eager", 8, hf(8), "", ""))

    sp = SamplingParams(max_tokens=a.new, ignore_eos=True)
    for prefix in (False, True):
        eng = Engine(model, device=a.device, block_size=16, max_num_seqs=8, max_model_len=256,
                     chunk_size=64, prefix_cache=prefix, min_batch_bucket=8 if prefix else 1)
        for batch in (1, 8):
            if prefix and batch == 1:
                continue
            eng.generate(prompts(batch), sp)   # warm-up wave: compiles this batch's buckets
            c0 = _programs()
            t = time.perf_counter()
            eng.generate(prompts(batch), sp)
            tps = batch * a.new / (time.perf_counter() - t)
            if not prefix:
                rows.append((f"engine on {a.device}", batch, tps, _programs() - c0, ""))
        # shared-prefix workload: a 64-token prefix (a system prompt) + 16-token tails
        shared = prompts(1, 64)[0]
        eng.generate([shared + prompts(1, 16)[0]], sp)             # the prefix is seen once
        eng.generate([shared + p for p in prompts(8, 16)], sp)    # warm-up wave
        eng.blocks.lookup_tokens = eng.blocks.hit_tokens = 0
        c0 = _programs()
        t = time.perf_counter()
        eng.generate([shared + p for p in prompts(8, 16)], sp)
        tps = 8 * a.new / (time.perf_counter() - t)
        rows.append((f"engine on {a.device}, shared 64-token prefix, prefix cache {'on' if prefix else 'off'}",
                     8, tps, _programs() - c0, f"{eng.blocks.hit_rate():.2f}"))

    print(f"Llama hidden {a.hidden}, {a.layers} layers, vocab {a.vocab}; prompt {a.prompt}, "
          f"{a.new} new tokens per request, greedy")
    print("| run | concurrent requests | tokens/s | programs compiled while measured | prefix hit rate |")
    print("| --- | --- | --- | --- | --- |")
    for name, b, tps, comp, hit in rows:
        print(f"| {name} | {b} | {tps:.1f} | {comp} | {hit} |")


if __name__ == "__main__":
    main()
