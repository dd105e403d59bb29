"""`python -m torch_tpu.serve` as a real server process, driven by the official
`openai` client (issue 17): completions, chat (the tokenizer's chat
template), streaming, sampling options, metrics, and bad input.

The model is a random-weight tiny Llama saved to a temp dir with a BPE
tokenizer trained at run time on this repository's README (nothing is
downloaded)."""
import json
import os
import pathlib
import socket
import subprocess
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

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHAT_TEMPLATE = ("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<s>assistant:{% endif %}")
# the engine tests' shape: programs they compiled are on disk for this process too
SERVER_ARGS = ["--block-size", "8", "--max-num-seqs", "4", "--max-model-len", "64",
               "--chunk-size", "16", "--min-batch-bucket", "4"]


def save_tiny_model(path, vocab=128):
    """A random-weight tiny Llama and a BPE tokenizer trained on README.md."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<unk>", "<s>", "</s>"],
                                  limit_alphabet=60)
    tok.train([str(ROOT / "README.md")], trainer)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                                                eos_token="</s>", chat_template=CHAT_TEMPLATE)
    fast.save_pretrained(path)
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        bos_token_id=1, eos_token_id=2)
    model = transformers.LlamaForCausalLM(cfg).eval()
    model.save_pretrained(path)
    return model, fast


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model_dir, extra=(), env=None):
    port = free_port()
    e = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    e.update(env or {})
    proc = subprocess.Popen([sys.executable, "-m", "torch_tpu.serve", "--model", str(model_dir),
                             "--served-model-name", "tiny", "--port", str(port), *SERVER_ARGS, *extra],
                            env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc, "server")
    return proc, url


def wait_healthy(url, proc, what, timeout=120):
    """Waits until `url`/health answers 200; raises (with the process's output)
    if the process exits first, and kills it after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited {proc.returncode}:\n{proc.stdout.read()}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"{what} did not become healthy in {timeout} s")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-llama")
    model, tok = save_tiny_model(d)
    proc, url = start_server(d)
    client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=120)
    yield proc, url, client, model, tok
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def _hf_greedy(model, ids, n):
    model.generation_config.eos_token_id = None
    out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                         max_new_tokens=n, do_sample=False, pad_token_id=0)
    return out[0, len(ids):].tolist()


def test_completion_greedy_matches_hf(server):
    _, _, client, model, tok = server
    ids = tok.encode("the tpu device runs PyTorch")
    ref = _hf_greedy(model, ids, 10)
    r = client.completions.create(model="tiny", prompt=ids, max_tokens=10, temperature=0,
                                  extra_body={"ignore_eos": True}, logprobs=2)
    c = r.choices[0]
    assert c.text == tok.decode(ref, skip_special_tokens=True)
    assert c.finish_reason == "length"
    assert r.usage.prompt_tokens == len(ids) and r.usage.completion_tokens == 10
    # logprobs: the chosen (greedy) token is the top alternative, values are log-probabilities
    assert len(c.logprobs.token_logprobs) == 10
    for lp, top in zip(c.logprobs.token_logprobs, c.logprobs.top_logprobs):
        assert lp <= 0 and max(top.values()) == pytest.approx(lp)


def test_streaming_equals_non_streaming(server):
    _, _, client, _, _ = server
    kw = dict(model="tiny", max_tokens=12, temperature=0, extra_body={"ignore_eos": True})
    full = client.completions.create(prompt="install the wheel", **kw).choices[0].text
    parts = [ch.choices[0].text for ch in client.completions.create(prompt="install the wheel", stream=True, **kw)
             if ch.choices]
    assert "".join(parts) == full and len(parts) > 1
    msgs = [{"role": "user", "content": "what is a tensor"}]
    chat = client.chat.completions.create(messages=msgs, **kw)
    assert chat.choices[0].message.role == "assistant"
    stream = client.chat.completions.create(messages=msgs, stream=True, **kw)
    text, reasons = "", []
    for ch in stream:
        text += ch.choices[0].delta.content or ""
        reasons.append(ch.choices[0].finish_reason)
    assert text == chat.choices[0].message.content
    assert reasons[-1] == "length"


def test_sampling_seed_n_stop(server):
    _, _, client, _, _ = server
    kw = dict(model="tiny", prompt="the cache", max_tokens=10, temperature=1.0, top_p=0.9,
              extra_body={"top_k": 40, "ignore_eos": True})
    a = client.completions.create(seed=7, n=2, **kw)
    b = client.completions.create(seed=7, n=2, **kw)
    assert [c.text for c in a.choices] == [c.text for c in b.choices]
    assert len(a.choices) == 2
    # a stop string cuts the text before it and ends the choice
    greedy = client.completions.create(model="tiny", prompt="the cache", max_tokens=10, temperature=0,
                                       extra_body={"ignore_eos": True}).choices[0].text
    assert len(greedy) > 3
    stop = greedy[2:4]
    r = client.completions.create(model="tiny", prompt="the cache", max_tokens=10, temperature=0,
                                  stop=[stop], extra_body={"ignore_eos": True}).choices[0]
    assert r.finish_reason == "stop" and r.text == greedy[:greedy.find(stop)]


def test_models_health_metrics(server):
    _, url, client, _, _ = server
    assert [m.id for m in client.models.list().data] == ["tiny"]
    assert httpx.get(url + "/health").json()["status"] == "ok"
    text = httpx.get(url + "/metrics").text
    for name in ("tpu_serve_requests_total", "tpu_serve_generation_tokens_total", "tpu_serve_queue_depth",
                 "tpu_serve_kv_blocks_used", "tpu_serve_prefix_cache_hit_rate",
                 "tpu_serve_time_to_first_token_seconds_bucket", "tpu_serve_inter_token_latency_seconds_count"):
        assert name in text, name
    gen = [ln for ln in text.splitlines() if ln.startswith("tpu_serve_generation_tokens_total")]
    assert float(gen[0].split()[-1]) > 0
    # everything finished: no block is held
    assert httpx.get(url + "/v1/engine_stats").json()["kv_blocks_used"] == 0


def test_bad_input_gets_openai_errors(server):
    proc, url, client, _, _ = server
    r = httpx.post(url + "/v1/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "JSON" in r.json()["error"]["message"]
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="other", prompt="x", max_tokens=2)
    for bad in (dict(max_tokens=-1), dict(max_tokens=10 ** 9), dict(temperature=-2.0), dict(top_p=3.0),
                dict(prompt="word " * 200)):
        kw = dict(model="tiny", prompt="hello", max_tokens=2)
        kw.update(bad)
        with pytest.raises(openai.BadRequestError) as e:
            client.completions.create(**kw)
        assert e.value.body["message"], bad
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="tiny", messages=[{"role": "user"}], max_tokens=2)
    # a client that leaves mid-stream frees its blocks; the server keeps serving
    with httpx.stream("POST", url + "/v1/completions", json={
            "model": "tiny", "prompt": "the", "max_tokens": 50, "stream": True, "ignore_eos": True}) as s:
        for line in s.iter_lines():
            if line.startswith("data: {"):
                json.loads(line[6:])
                break
    deadline = time.monotonic() + 20
    while httpx.get(url + "/v1/engine_stats").json()["kv_blocks_used"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert httpx.get(url + "/v1/engine_stats").json()["kv_blocks_used"] == 0
    assert client.completions.create(model="tiny", prompt="ok", max_tokens=2).choices[0].text is not None
    assert proc.poll() is None
