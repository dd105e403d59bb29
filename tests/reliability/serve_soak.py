"""1,000 mixed requests against a real `python -m torch_tpu.serve` process
(`make serve-soak`; issue 17, bad input and faults): completions and chat,
streamed and not, clients that disconnect mid-stream, and bad requests
(malformed JSON, an unknown model, a prompt longer than the context, a
negative or huge max_tokens, invalid sampling values), 8 at a time.

Asserts: every good request gets 200 and text; every bad one a 4xx with an
OpenAI-style error body; the server stays healthy; afterwards no KV block is
in use by a request (kv_blocks_used returns to its baseline of 0; blocks the
prefix tree keeps for reuse are reported apart, as kv_blocks_cached).
Prints a JSON summary."""
import concurrent.futures as cf
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import httpx  # noqa: E402

from test_serve_server import save_tiny_model, start_server  # noqa: E402

N = int(os.environ.get("SERVE_SOAK_REQUESTS", "1000"))
WORDS = "the tpu runs every program the server compiled once for its bucket".split()


def prompt(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def one(url, i):
    rng = random.Random(i)
    kind = rng.choices(["complete", "stream", "chat", "disconnect", "bad"], [40, 20, 15, 10, 15])[0]
    body = {"model": "tiny", "prompt": prompt(rng, rng.randint(1, 12)), "max_tokens": rng.randint(1, 12),
            "temperature": rng.choice([0.0, 0.7, 1.0]), "seed": i}
    with httpx.Client(timeout=120) as c:
        if kind == "complete":
            r = c.post(url + "/v1/completions", json=body)
            return kind, r.status_code == 200 and "text" in r.json()["choices"][0]
        if kind == "chat":
            r = c.post(url + "/v1/chat/completions", json={
                # short: the chat template adds tokens, and the tiny model's
                # context is 64 (a longer one gets 400 context_length_exceeded)
                "model": "tiny", "messages": [{"role": "user", "content": prompt(rng, rng.randint(1, 4))}],
                "max_tokens": rng.randint(1, 8)})
            return kind, r.status_code == 200 and r.json()["choices"][0]["message"]["role"] == "assistant"
        if kind in ("stream", "disconnect"):
            body.update(stream=True, max_tokens=rng.randint(4, 20))
            got = 0
            with c.stream("POST", url + "/v1/completions", json=body) as r:
                if r.status_code != 200:
                    return kind, False
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        got += 1
                        if kind == "disconnect" and got == 2:
                            return kind, True  # leaves mid-stream: the server must free its blocks
                        if line == "data: [DONE]":
                            break
            return kind, got >= 2
        bad = rng.choice(["json", "model", "long", "negative", "huge", "temperature", "top_p"])
        if bad == "json":
            r = c.post(url + "/v1/completions", content=b'{"model": "tiny", "prompt": ',
                       headers={"content-type": "application/json"})
        else:
            b = dict(body)
            if bad == "model":
                b["model"] = "no-such-model"
            elif bad == "long":
                b["prompt"] = prompt(rng, 400)
            elif bad == "negative":
                b["max_tokens"] = -3
            elif bad == "huge":
                b["max_tokens"] = 10 ** 9
            elif bad == "temperature":
                b["temperature"] = -1
            else:
                b["top_p"] = 7
            r = c.post(url + "/v1/completions", json=b)
        ok = 400 <= r.status_code < 500 and "message" in r.json().get("error", {})
        return "bad:" + bad, ok


def main():
    d = tempfile.mkdtemp()
    save_tiny_model(d)
    proc, url = start_server(d)
    t0 = time.time()
    try:
        base = httpx.get(url + "/v1/engine_stats").json()
        results = {}
        with cf.ThreadPoolExecutor(8) as ex:
            for kind, ok in ex.map(lambda i: one(url, i), range(N)):
                good, total = results.get(kind, (0, 0))
                results[kind] = (good + ok, total + 1)
        time.sleep(1.0)  # disconnected streams are noticed at their next token
        after = httpx.get(url + "/v1/engine_stats").json()
        health = httpx.get(url + "/health").status_code
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    summary = {"requests": N, "seconds": round(time.time() - t0, 1),
               "by_kind": {k: {"ok": g, "total": t} for k, (g, t) in sorted(results.items())},
               "kv_blocks_used_before": base["kv_blocks_used"], "kv_blocks_used_after": after["kv_blocks_used"],
               "kv_blocks_cached_after": after["kv_blocks_cached"], "running_after": after["running"],
               "waiting_after": after["waiting"], "health_after": health}
    print(json.dumps(summary, indent=1))
    bad = {k: v for k, v in results.items() if v[0] != v[1]}
    assert not bad, f"requests that did not get the expected answer: {bad}"
    assert health == 200
    assert after["kv_blocks_used"] == base["kv_blocks_used"] == 0, summary
    assert after["running"] == 0 and after["waiting"] == 0, summary


if __name__ == "__main__":
    main()
