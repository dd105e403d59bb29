"""Prefill/decode disaggregation (issue 17, deliverable 4): a prefill engine
runs the prompt and hands its keys and values (a safetensors payload) to a
decode engine that goes on from the first token.

In process: two engines against one plain engine and Hugging Face's greedy
decode on CPU (token-identical, seeded sampling identical, blocks back to
baseline, the payload's size and checks). Over HTTP: real processes (two
`--role prefill` servers, one `--role decode` server, the router with
`--prefill`/`--decode`) driven by the `openai` client: greedy output equals
the CPU reference, streaming too; blocks back to baseline on both sides; a
prefill backend killed mid-load is failed over (every request still
completes, correctly); the decode backend killed mid-load ends its requests
with a clear error, none hang."""
import concurrent.futures
import json
import os
import pathlib
import sys
import time

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

transformers = pytest.importorskip("transformers")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("safetensors")

import torch_tpu  # noqa: E402,F401
from torch_tpu.serve import Engine, SamplingParams  # noqa: E402
from torch_tpu.serve import kv_transfer  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_serve_server import (ROOT, free_port, save_tiny_model, start_server,  # noqa: E402
                               wait_healthy)

# test_serve_engine's engine shape: its programs are on disk for this file too
ENGINE = dict(block_size=8, max_num_seqs=4, max_model_len=64, chunk_size=16, min_batch_bucket=4)
NEW = 8


def _llama():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        bos_token_id=1, eos_token_id=2)
    return transformers.LlamaForCausalLM(cfg).eval()


def _hf_greedy(model, ids, n):
    saved = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = None
    try:
        out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             max_new_tokens=n, do_sample=False, pad_token_id=0)
    finally:
        model.generation_config.eos_token_id = saved
    return out[0, len(ids):].tolist()


def _prompts(lengths, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 128, (n,), generator=g).tolist() for n in lengths]


def _disagg(pre, dec, prompt, params_list):
    """Prefill on `pre`, payload bytes through kv_transfer, decode on `dec`:
    the tokens of each choice and the payload's size."""
    pre.add_prefill("p", prompt, params_list)
    out = None
    while pre.has_work():
        for o in pre.step():
            assert o.request_id == "p" and o.finished and o.finish_reason == "prefilled"
            out = o
    data = kv_transfer.pack(*out.kv, meta={"test": 1})
    payload = kv_transfer.unpack(data)
    assert payload.prompt == prompt and payload.meta == {"test": 1}
    toks = {}
    for i, p in enumerate(params_list):
        dec.add_imported(f"d{i}", payload, i, p)
        toks[f"d{i}"] = []
    while dec.has_work():
        for o in dec.step():
            toks[o.request_id].append(o.token)
    return [toks[f"d{i}"] for i in range(len(params_list))], len(data)


def test_engine_prefill_then_imported_decode_matches():
    model = _llama()
    plain = Engine(model, **ENGINE)
    pre = Engine(model, **ENGINE)
    dec = Engine(model, **ENGINE)
    greedy = SamplingParams(max_tokens=NEW, ignore_eos=True)
    # lengths: one token, a block exactly, chunked prefill (23, 40 > chunk 16)
    prompts = _prompts([1, 8, 23, 40])
    ref = plain.generate(prompts, greedy)
    for p, r in zip(prompts, ref):
        assert r == _hf_greedy(model, p, NEW)
        got, size = _disagg(pre, dec, p, [greedy])
        assert got == [r]
        # the payload: keys and values of every prompt token (2 x 2 layers x 2 heads x
        # 16 x 4 bytes) plus the header and the generator state
        per_tok = kv_transfer.bytes_per_token(2, 2, 16, torch.float32)
        assert per_tok == 512 and len(p) * per_tok < size < len(p) * per_tok + 8192
    # again: the decode engine's prefix tree now holds the prompts' full
    # blocks, so the import writes only the rest; tokens unchanged
    got, _ = _disagg(pre, dec, prompts[3], [greedy])
    assert got == [ref[3]]
    # seeded sampling with n=2 continues the generators exactly
    sp = [SamplingParams(max_tokens=10, temperature=1.3, top_k=40, top_p=0.9, seed=s, ignore_eos=True)
          for s in (11, 12)]
    got, _ = _disagg(pre, dec, prompts[2], sp)
    assert got == [plain.generate([prompts[2]], s)[0] for s in sp]
    assert got[0] != got[1]
    # a first token that already ends the request (max_tokens=1) never takes a block
    got, _ = _disagg(pre, dec, prompts[1], [SamplingParams(max_tokens=1, ignore_eos=True)])
    assert got == [ref[1][:1]]
    for eng in (plain, pre, dec):
        assert eng.blocks.num_used() == 0 and not eng.has_work()
        assert eng.blocks.num_used() + eng.blocks.num_cached() + len(eng.blocks.free) == eng.blocks.capacity


def test_engine_import_preempted_and_bad_payloads():
    model = _llama()
    pre = Engine(model, **ENGINE)
    # 10 blocks (9 usable) for 3 imported 30-token prompts decoding 16 tokens:
    # two are admitted (4 blocks each), then need 6 each, so one is preempted
    # and recomputed; tokens unchanged
    dec = Engine(model, **dict(ENGINE, num_blocks=10, prefix_cache=False))
    plain = Engine(model, **ENGINE)
    sp = SamplingParams(max_tokens=16, ignore_eos=True)
    prompts = _prompts([30, 30, 30], seed=3)
    ref = plain.generate(prompts, sp)
    payloads = []
    for i, p in enumerate(prompts):
        pre.add_prefill(f"p{i}", p, [sp])
        while pre.has_work():
            for o in pre.step():
                payloads.append(kv_transfer.unpack(kv_transfer.pack(*o.kv)))
    for i, pl in enumerate(payloads):
        dec.add_imported(f"d{i}", pl, 0, sp)
    toks = {f"d{i}": [] for i in range(3)}
    while dec.has_work():
        for o in dec.step():
            toks[o.request_id].append(o.token)
    assert [toks[f"d{i}"] for i in range(3)] == ref
    assert dec.num_preemptions > 0 and dec.blocks.num_used() == 0
    # bad payloads: clear ValueErrors
    with pytest.raises(ValueError, match="not a torch_tpu.serve safetensors payload"):
        kv_transfer.unpack(b"\x10\x00\x00\x00\x00\x00\x00\x00garbage-garbage-")
    with pytest.raises(ValueError, match="empty"):
        kv_transfer.unpack(b"")
    pl = payloads[0]
    other = kv_transfer.KVPayload(pl.keys[:1], pl.values[:1], pl.prompt, pl.choices, {})
    with pytest.raises(ValueError, match="another model"):
        dec.add_imported("x", other, 0, sp)
    with pytest.raises(ValueError, match="choice 3"):
        dec.add_imported("x", pl, 3, sp)
    assert not dec.has_work()


# ---- over HTTP: real processes ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    import subprocess
    d = tmp_path_factory.mktemp("tiny-llama-disagg")
    model, tok = save_tiny_model(d)
    procs = {}
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        futs = {name: pool.submit(start_server, d, ("--role", role))
                for name, role in (("P1", "prefill"), ("P2", "prefill"), ("D", "decode"))}
        for name, f in futs.items():
            procs[name] = f.result()
    urls = {k: v[1] for k, v in procs.items()}
    procs = {k: v[0] for k, v in procs.items()}
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    router = subprocess.Popen([sys.executable, "-m", "torch_tpu.serve.router", "--prefill", urls["P1"],
                               "--prefill", urls["P2"], "--decode", urls["D"], "--port", str(port),
                               "--health-interval", "0.2", "--read-timeout", "60"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rurl = f"http://127.0.0.1:{port}"
    wait_healthy(rurl, router, "router")
    client = openai.OpenAI(base_url=rurl + "/v1", api_key="none", max_retries=0, timeout=120)
    yield rurl, client, procs, urls, model, tok
    for p in [router, *procs.values()]:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def _metric(url, name):
    for line in httpx.get(url + "/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} not in {url}/metrics")


def test_http_disagg_greedy_matches_reference(cluster):
    url, client, procs, urls, model, tok = cluster
    kw = dict(model="tiny", temperature=0, extra_body={"ignore_eos": True})
    for text in ("the tpu device runs PyTorch", "install the wheel and run the tests",
                 "a tensor", "the cache " * 6):
        ids = tok.encode(text)
        ref = tok.decode(_hf_greedy(model, ids, 10), skip_special_tokens=True)
        r = client.completions.create(prompt=text, max_tokens=10, logprobs=1, **kw)
        assert r.choices[0].text == ref and r.choices[0].finish_reason == "length"
        assert r.usage.prompt_tokens == len(ids) and r.usage.completion_tokens == 10
        assert len(r.choices[0].logprobs.token_logprobs) == 10
        parts = [c.choices[0].text for c in client.completions.create(prompt=text, max_tokens=10, stream=True,
                                                                      **kw) if c.choices]
        assert "".join(parts) == ref and len(parts) > 1
    # chat through the template, streaming and not
    msgs = [{"role": "user", "content": "what is a tensor"}]
    ids = tok.encode(tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False),
                     add_special_tokens=False)
    ref = tok.decode(_hf_greedy(model, ids, 12), skip_special_tokens=True)
    chat = client.chat.completions.create(messages=msgs, max_tokens=12, **kw)
    assert chat.choices[0].message.content == ref
    text = "".join(c.choices[0].delta.content or "" for c in
                   client.chat.completions.create(messages=msgs, max_tokens=12, stream=True, **kw))
    assert text == ref
    # seeded n=2 sampling repeats through the hand-off
    skw = dict(model="tiny", prompt="the cache", max_tokens=8, temperature=1.0, seed=5, n=2,
               extra_body={"ignore_eos": True, "top_k": 40})
    a, b = client.completions.create(**skw), client.completions.create(**skw)
    assert [c.text for c in a.choices] == [c.text for c in b.choices]
    # bad input: the prefill server's 400 comes back through the router
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model="tiny", prompt="hello", max_tokens=-1)
    # roles: a prefill server refuses public completions and decode hand-offs, a decode server prefills
    r = httpx.post(urls["P1"] + "/v1/completions", json={"prompt": "x", "max_tokens": 2})
    assert r.status_code == 421 and "--role prefill" in r.json()["error"]["message"]
    r = httpx.post(urls["P1"] + "/internal/decode", content=b"x")
    assert r.status_code == 421 and "--role prefill" in r.json()["error"]["message"]
    r = httpx.post(urls["D"] + "/internal/prefill", json={"prompt": "x", "max_tokens": 2})
    assert r.status_code == 421 and "--role decode" in r.json()["error"]["message"]
    r = httpx.post(urls["D"] + "/internal/decode", content=b"not a payload")
    assert r.status_code == 400 and "payload" in r.json()["error"]["message"]
    # one at a time, every request ties on load and goes to the first prefill
    # server; the decode server received every payload it sent; every KV block
    # is back on every server
    sent = _metric(urls["P1"], "tpu_serve_kv_transfer_bytes_total")
    assert sent > 0 and _metric(urls["D"], "tpu_serve_kv_transfer_bytes_total") == sent
    for u in urls.values():
        assert _metric(u, "tpu_serve_kv_blocks_used") == 0 and _metric(u, "tpu_serve_running") == 0


def _stream(url, prompt, max_tokens, started=None):
    """(text, error message or None) of one streamed completion; `started`
    (a threading.Event) is set at its first token."""
    text, err = "", None
    with httpx.stream("POST", url + "/v1/completions", timeout=60, json={
            "prompt": prompt, "max_tokens": max_tokens, "stream": True, "temperature": 0,
            "ignore_eos": True}) as r:
        if r.status_code != 200:
            return text, json.loads(r.read())["error"]["message"]
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            d = json.loads(line[6:])
            if "error" in d:
                err = d["error"]["message"]
            else:
                text += d["choices"][0]["text"]
                if started is not None:
                    started.set()
    return text, err


def _router_backends(url):
    return {b["url"]: b for b in httpx.get(url + "/health", timeout=10).json()["backends"]}


def test_prefill_backend_killed_mid_load_fails_over(cluster):
    url, client, procs, urls, model, tok = cluster
    prompts = [f"request {i}: the tpu device runs " + "the cache " * (i % 4) for i in range(12)]
    refs = [tok.decode(_hf_greedy(model, tok.encode(p), 6), skip_special_tokens=True) for p in prompts]
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        futs = [pool.submit(_stream, url, p, 6) for p in prompts]
        deadline = time.monotonic() + 20   # kill P1 once it has served some prefills
        while time.monotonic() < deadline and _router_backends(url)[urls["P1"]]["served"] < 2:
            time.sleep(0.02)
        procs["P1"].kill()
        results = [f.result(timeout=60) for f in futs]     # none hangs
    assert time.monotonic() - t0 < 60
    # a prefill that died with P1 is retried on P2: every request completes, correctly
    assert [r[1] for r in results] == [None] * len(prompts), results
    assert [r[0] for r in results] == refs
    b = _router_backends(url)
    assert not b[urls["P1"]]["healthy"] and b[urls["P2"]]["healthy"]
    # new requests go to P2
    served = b[urls["P2"]]["served"]
    assert _stream(url, prompts[0], 4)[1] is None
    assert _router_backends(url)[urls["P2"]]["served"] == served + 1
    for u in (urls["P2"], urls["D"]):
        assert _metric(u, "tpu_serve_kv_blocks_used") == 0


def test_decode_backend_killed_mid_load_ends_clearly(cluster):
    url, client, procs, urls, model, tok = cluster
    import threading
    prompts = [f"{i} the" for i in range(6)]
    started = threading.Event()
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        # 48 tokens each (the context is 64), 4 decoding at a time: D is killed
        # at the first streamed token, with most of the load still to come
        futs = [pool.submit(_stream, url, p, 48, started) for p in prompts]
        assert started.wait(30)
        procs["D"].kill()
        results = [f.result(timeout=60) for f in futs]     # none hangs
    assert time.monotonic() - t0 < 60
    errors = [e for _, e in results if e is not None]
    assert errors, results
    for e in errors:   # clear: names the decode backend, or says none is left
        assert f"backend {urls['D']} failed" in e or "no healthy decode backend" in e, e
    # no decode backend left: a clear 503, not a hang
    r = httpx.post(url + "/v1/completions", json={"prompt": "x", "max_tokens": 2}, timeout=30)
    assert r.status_code == 503 and "decode" in r.json()["error"]["message"]
    assert _metric(urls["P2"], "tpu_serve_kv_blocks_used") == 0
