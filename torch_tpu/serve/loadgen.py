"""python -m torch_tpu.serve.loadgen: a bounded load test over HTTP (loopback).

Saves a random-weight tiny Llama with a tokenizer trained on README.md into
a temp dir, starts servers (`python -m torch_tpu.serve`) and, with
`--router`, a router over two of them, then streams completions at each
concurrency and reports throughput (generated tokens/s), time to first token
and inter-token latency p50/p99, for a plain workload and a shared-prefix
one (prefix cache on vs off), beside the baseline of the same requests run
one after another through Hugging Face `generate` on CPU eager. Bounded: `--requests` per cell and a wall-clock
limit per cell.

`--disagg` runs instead a comparison of prefill/decode disaggregation: the
same streamed requests against one combined server, against a router over
that one server (the router's own cost), and against a router over a
`--role prefill` server and a `--role decode` server (the KV cache handed
over as a payload), and reports the payload's size per prompt token.
"""
import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER_ARGS = ["--block-size", "8", "--max-num-seqs", "32", "--max-model-len", "256",
               "--chunk-size", "32", "--min-batch-bucket", "8", "--min-ctx-blocks", "16"]
CHAT = ("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<s>assistant:{% endif %}")


def save_model(path):
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train([os.path.join(ROOT, "README.md")],
              trainers.BpeTrainer(vocab_size=512, special_tokens=["<unk>", "<s>", "</s>"]))
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                                         eos_token="</s>", chat_template=CHAT).save_pretrained(path)
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                                   bos_token_id=1, eos_token_id=2)
    transformers.LlamaForCausalLM(cfg).save_pretrained(path)


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cmd, url):
    import httpx
    env = dict(os.environ, PYTHONPATH=ROOT, HF_HUB_OFFLINE="1")
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise RuntimeError(f"{cmd} exited {p.returncode}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return p
        except httpx.HTTPError:
            time.sleep(0.3)
    p.kill()
    raise RuntimeError(f"{cmd} did not start")


def server(model, extra=()):
    port = _port()
    url = f"http://127.0.0.1:{port}"
    return _start([sys.executable, "-m", "torch_tpu.serve", "--model", model, "--port", str(port),
                   *SERVER_ARGS, *extra], url), url


async def _one(client, url, prompt, max_tokens):
    t0 = time.perf_counter()
    times = []
    async with client.stream("POST", url + "/v1/completions", json={
            "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True, "logprobs": 0,
            "ignore_eos": True}) as r:
        if r.status_code != 200:
            raise RuntimeError(f"HTTP {r.status_code}: {(await r.aread()).decode()[:300]}")
        async for line in r.aiter_lines():
            if line.startswith("data: {"):
                d = json.loads(line[6:])
                if "error" in d:
                    raise RuntimeError(d["error"]["message"])
                times.append(time.perf_counter())
    return t0, times


async def cell(url, prompts, concurrency, max_tokens, limit_s):
    import httpx
    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=120) as client:
        async def run(p):
            async with sem:
                return await _one(client, url, p, max_tokens)
        t = time.perf_counter()
        res = await asyncio.wait_for(asyncio.gather(*(run(p) for p in prompts)), limit_s)
        wall = time.perf_counter() - t
    ttft = [ts[0] - t0 for t0, ts in res if ts]
    itl = [b - a for _, ts in res for a, b in zip(ts, ts[1:])]
    tokens = sum(len(ts) for _, ts in res)   # one SSE chunk per token (logprobs=0 sends every token)

    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")
    return {"tok_s": tokens / wall, "ttft_p50": pct(ttft, .5), "ttft_p99": pct(ttft, .99),
            "itl_p50": pct(itl, .5), "itl_p99": pct(itl, .99), "requests": len(res),
            "mean_tokens": statistics.mean(len(ts) for _, ts in res)}


def _compiled(url):
    import httpx
    return httpx.get(url + "/v1/engine_stats", timeout=30).json()["programs_compiled"]


def _hit(url):
    import httpx
    return httpx.get(url + "/v1/engine_stats", timeout=30).json()["prefix_hit_rate"]


def _prompts(n, shared, seed):
    import random
    rnd = random.Random(seed)
    words = open(os.path.join(ROOT, "README.md")).read().split()
    head = " ".join(words[:24]) + " " if shared else ""
    out = []
    for _ in range(n):
        i = rnd.randrange(len(words) - 20)
        out.append(head + " ".join(words[i:i + (6 if shared else 20)]))
    return out


def hf_baseline(model_dir, prompts, max_tokens):
    """Sequential Hugging Face `generate` on CPU eager, greedy, one request
    after another (the baseline of issue 17): a logits processor stamps the
    time of each decoding step, so TTFT and ITL are measured the same way as
    the server's streamed tokens."""
    import torch
    import transformers
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir).eval()
    stamps = []

    class Stamp(transformers.LogitsProcessor):
        def __call__(self, input_ids, scores):
            stamps.append(time.perf_counter())
            return scores

    def run(p):
        ids = tok(p, return_tensors="pt")
        del stamps[:]
        t0 = time.perf_counter()
        with torch.no_grad():
            model.generate(**ids, max_new_tokens=max_tokens, min_new_tokens=max_tokens, do_sample=False,
                           logits_processor=transformers.LogitsProcessorList([Stamp()]))
        return t0, list(stamps)

    run(prompts[0])  # warm-up
    t = time.perf_counter()
    res = [run(p) for p in prompts]
    wall = time.perf_counter() - t
    ttft = [ts[0] - t0 for t0, ts in res if ts]
    itl = [b - a for _, ts in res for a, b in zip(ts, ts[1:])]

    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")
    return {"tok_s": sum(len(ts) for _, ts in res) / wall, "ttft_p50": pct(ttft, .5),
            "ttft_p99": pct(ttft, .99), "itl_p50": pct(itl, .5), "itl_p99": pct(itl, .99),
            "requests": len(res), "compiled": "-", "hit": float("nan")}


def _payload_size(prefill_url, prompts):
    """Bytes of /internal/prefill payloads per prompt token, and the keys and
    values alone per token (from the model's shape)."""
    import httpx
    total = toks = 0
    for p in prompts:
        r = httpx.post(prefill_url + "/internal/prefill", json={"prompt": p, "max_tokens": 4, "temperature": 0},
                       timeout=60)
        r.raise_for_status()
        total += len(r.content)
        toks += int(r.headers["x-prompt-tokens"])
    return total / toks, toks / len(prompts), total / len(prompts)


def disagg_rows(d, a, conc):
    """(rows, payload figures): combined server, router over it, router over prefill + decode servers."""
    procs, rows = [], []
    try:
        both, ub = server(d)
        pre, up = server(d, ("--role", "prefill"))
        dec, ud = server(d, ("--role", "decode"))
        procs += [both, pre, dec]
        r1, r2 = _port(), _port()
        u1, u2 = f"http://127.0.0.1:{r1}", f"http://127.0.0.1:{r2}"
        procs.append(_start([sys.executable, "-m", "torch_tpu.serve.router", "--backend", ub, "--port", str(r1)],
                            u1))
        procs.append(_start([sys.executable, "-m", "torch_tpu.serve.router", "--prefill", up, "--decode", ud,
                             "--port", str(r2)], u2))
        setups = [("plain, one combined server (--role both)", ub, [ub]),
                  ("plain, router over the combined server", u1, [ub]),
                  ("plain, router over prefill server + decode server", u2, [up, ud])]
        for name, url, servers in setups:
            warm = _prompts(8, False, 0)
            asyncio.run(cell(url, warm[:4], 1, a.max_tokens, a.limit_s))
            for c in conc:
                asyncio.run(cell(url, _prompts(a.requests, False, 1000 + c), c, a.max_tokens, a.limit_s))
                c0 = sum(_compiled(u) for u in servers)
                r = asyncio.run(cell(url, _prompts(a.requests, False, c), c, a.max_tokens, a.limit_s))
                r["compiled"] = sum(_compiled(u) for u in servers) - c0
                r["hit"] = _hit(servers[0])
                rows.append((name, c, r))
        size = _payload_size(up, _prompts(8, False, 7))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return rows, size


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m torch_tpu.serve.loadgen")
    ap.add_argument("--concurrency", default="1,8,32")
    ap.add_argument("--requests", type=int, default=32, help="requests per cell")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--limit-s", type=float, default=300, help="wall-clock limit per cell")
    ap.add_argument("--router", action="store_true", help="also through a router over 2 backends")
    ap.add_argument("--disagg", action="store_true",
                    help="only: combined server vs prefill/decode disaggregation through the router")
    a = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    conc = [int(c) for c in a.concurrency.split(",")]
    d = tempfile.mkdtemp(prefix="serve-load-")
    save_model(d)
    if a.disagg:
        rows, (per_tok, mean_tokens, mean_bytes) = disagg_rows(d, a, conc)
        _table(a, rows)
        print(f"KV payload: {per_tok:.0f} bytes per prompt token over 8 prompts of {mean_tokens:.1f} tokens on "
              f"average ({mean_bytes:.0f} bytes each); keys and values alone: 2 x 2 layers x 2 KV heads x 32 x "
              "4 bytes = 1024 bytes per token")
        return
    rows = []
    procs = []
    for shared in (False, True):
        rows.append((f"{'shared prefix' if shared else 'plain'}: HF generate on CPU eager, sequential "
                     "(baseline)", 1, hf_baseline(d, _prompts(a.requests, shared, 1), a.max_tokens)))
    try:
        for prefix_cache in (True, False):
            p, url = server(d, () if prefix_cache else ("--no-prefix-cache",))
            procs.append(p)
            warm = _prompts(8, True, 0) + _prompts(8, False, 0)   # warm-up: the buckets both loads use
            asyncio.run(cell(url, warm[6:10], 1, a.max_tokens, a.limit_s))
            asyncio.run(cell(url, warm, 8, a.max_tokens, a.limit_s))
            asyncio.run(cell(url, warm + warm, 32, a.max_tokens, a.limit_s))
            for shared in (False, True):
                if not prefix_cache and not shared:
                    continue
                for c in conc:
                    # a warm-up pass of the same cell (other prompts), then the measured one
                    asyncio.run(cell(url, _prompts(a.requests, shared, 1000 + c), c, a.max_tokens, a.limit_s))
                    c0 = _compiled(url)
                    r = asyncio.run(cell(url, _prompts(a.requests, shared, c), c, a.max_tokens, a.limit_s))
                    r["compiled"] = _compiled(url) - c0
                    r["hit"] = _hit(url)
                    rows.append((f"{'shared prefix' if shared else 'plain'}, prefix cache "
                                 f"{'on' if prefix_cache else 'off'}", c, r))
            p.terminate()
            p.wait(30)
        if a.router:
            b1, u1 = server(d)
            b2, u2 = server(d)
            procs += [b1, b2]
            port = _port()
            rurl = f"http://127.0.0.1:{port}"
            procs.append(_start([sys.executable, "-m", "torch_tpu.serve.router", "--backend", u1,
                                 "--backend", u2, "--port", str(port)], rurl))
            asyncio.run(cell(rurl, _prompts(16, True, 0), 8, a.max_tokens, a.limit_s))  # warm-up
            for c in conc:
                asyncio.run(cell(rurl, _prompts(a.requests, True, 1000 + c), c, a.max_tokens, a.limit_s))
                c0 = _compiled(u1) + _compiled(u2)
                r = asyncio.run(cell(rurl, _prompts(a.requests, True, c), c, a.max_tokens, a.limit_s))
                r["compiled"] = _compiled(u1) + _compiled(u2) - c0
                r["hit"] = (_hit(u1) + _hit(u2)) / 2
                rows.append(("shared prefix, router over 2 backends", c, r))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    _table(a, rows)


def _table(a, rows):
    print(f"tiny Llama (hidden 128, 2 layers, vocab 512), {a.requests} streamed requests per cell, "
          f"{a.max_tokens} tokens each, greedy")
    print("| workload | concurrency | tokens/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | "
          "programs compiled | prefix hit rate (server, cumulative) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, c, r in rows:
        print(f"| {name} | {c} | {r['tok_s']:.1f} | {r['ttft_p50']:.0f} | {r['ttft_p99']:.0f} | "
              f"{r['itl_p50']:.1f} | {r['itl_p99']:.1f} | {r['compiled']} | {'-' if r['hit'] != r['hit'] else format(r['hit'], '.2f')} |")


if __name__ == "__main__":
    main()
