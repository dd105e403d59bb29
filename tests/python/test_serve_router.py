"""`python -m torch_tpu.serve.router` (issue 17): prefix-aware routing with load
as the tie-breaker, health checks, and failover when a backend is killed
mid-load (in-flight requests end with a clear error; none hang).

The backends here are small stand-in HTTP servers that speak the same
endpoints and say which backend answered, so the router's decisions are
visible and the test stays within its time budget; the real server's
endpoints are tested in test_serve_server.py."""
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_serve_server import ROOT, free_port, wait_healthy  # noqa: E402

FAKE = r'''
import asyncio, json, sys
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
import uvicorn
name, port = sys.argv[1], int(sys.argv[2])
app = FastAPI()
@app.get("/health")
async def health():
    return {"status": "ok"}
@app.post("/v1/completions")
async def completions(request: Request):
    body = await request.json()
    n = int(body.get("max_tokens", 4))
    if not body.get("stream"):
        await asyncio.sleep(0.05 * n)
        return {"object": "text_completion", "choices": [{"index": 0, "text": name, "finish_reason": "length"}]}
    async def gen():
        for i in range(n):
            await asyncio.sleep(0.05)
            yield "data: " + json.dumps({"choices": [{"index": 0, "text": name}]}) + "\n\n"
        yield "data: [DONE]\n\n"
    return StreamingResponse(gen(), media_type="text/event-stream")
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
'''


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # one cluster for the file: the failover test (last) kills its backends
    script = tmp_path_factory.mktemp("router") / "fake_backend.py"
    script.write_text(FAKE)
    procs, urls = {}, {}
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name in ("A", "B"):
        port = free_port()
        procs[name] = subprocess.Popen([sys.executable, str(script), name, str(port)], env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        urls[name] = f"http://127.0.0.1:{port}"
    for name in procs:
        wait_healthy(urls[name], procs[name], f"backend {name}")
    port = free_port()
    router = subprocess.Popen([sys.executable, "-m", "torch_tpu.serve.router", "--backend", urls["A"],
                               "--backend", urls["B"], "--port", str(port), "--health-interval", "0.2",
                               "--read-timeout", "30"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rurl = f"http://127.0.0.1:{port}"
    wait_healthy(rurl, router, "router")
    yield rurl, procs, urls
    for p in [router, *procs.values()]:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def _complete(url, prompt, max_tokens=2):
    r = httpx.post(url + "/v1/completions", json={"prompt": prompt, "max_tokens": max_tokens}, timeout=30)
    return r.status_code, r.json()


def _stream(url, prompt, max_tokens):
    """(backend names seen, error message or None) of one streamed request."""
    names, err = [], None
    with httpx.stream("POST", url + "/v1/completions", timeout=30,
                      json={"prompt": prompt, "max_tokens": max_tokens, "stream": True}) as r:
        if r.status_code != 200:   # failed before streaming began: an OpenAI error body
            return names, json.loads(r.read())["error"]["message"]
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            d = json.loads(line[6:])
            if "error" in d:
                err = d["error"]["message"]
            else:
                names.append(d["choices"][0]["text"])
    return names, err


P1 = "You are a helpful assistant for the torch_tpu project. Answer briefly and precisely. " * 2
P2 = "Translate the following technical sentences from English into French, keeping the terms. " * 2


def test_prefix_routing_with_load_tie_break(cluster):
    url, _, _ = cluster
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        long = pool.submit(_stream, url, P1 + "first", 30)     # holds backend A for ~1.5 s
        time.sleep(0.4)
        # an unseen prompt while A is busy: the least-loaded backend
        assert _complete(url, P2 + "first")[1]["choices"][0]["text"] == "B"
        # a prompt sharing P1's prefix goes where P1 went, though A is busier
        assert _complete(url, P1 + "second")[1]["choices"][0]["text"] == "A"
        names, err = long.result(timeout=30)
        assert err is None and set(names) == {"A"}
    assert _complete(url, P2 + "second")[1]["choices"][0]["text"] == "B"
    m = httpx.get(url + "/metrics").text
    assert "tpu_router_prefix_routed_total 2" in m
    bad = httpx.post(url + "/v1/completions", content=b"{oops")
    assert bad.status_code == 400 and "error" in bad.json()


def test_failover_when_a_backend_is_killed_mid_load(cluster):
    url, procs, urls = cluster
    assert all(b["healthy"] for b in httpx.get(url + "/health").json()["backends"])
    prompts = [f"request {i}: " + ("x" * 70) for i in range(8)]
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futs = [pool.submit(_stream, url, p, 40) for p in prompts]   # ~2 s each
        # kill A once it has streams in flight (polling: this machine may be slow)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            inflight = {b["url"]: b["in_flight"] for b in httpx.get(url + "/health").json()["backends"]}
            if inflight[urls["A"]] >= 2 and inflight[urls["B"]] >= 2:
                break
            time.sleep(0.05)
        time.sleep(0.3)  # a few tokens streamed
        procs["A"].kill()
        results = [f.result(timeout=30) for f in futs]               # none hangs
    assert time.monotonic() - t0 < 20
    failed = [(n, e) for n, e in results if e is not None]
    done = [(n, e) for n, e in results if e is None]
    assert failed and done, results
    # requests in flight on A end with a clear error naming the backend
    for names, err in failed:
        assert f"backend {urls['A']} failed" in err and set(names) <= {"A"}
    # requests on B finish normally
    for names, err in done:
        assert names == ["B"] * 40
    # A is out: new requests go to B, even those with A's prefixes
    for p in prompts[:3]:
        code, body = _complete(url, p)
        assert code == 200 and body["choices"][0]["text"] == "B"
    h = httpx.get(url + "/health").json()
    assert {b["url"]: b["healthy"] for b in h["backends"]} == {urls["A"]: False, urls["B"]: True}
    # with no backend left, a clear 503, not a hang
    procs["B"].kill()
    procs["B"].wait(10)
    code, body = _complete(url, "anything")
    assert code in (502, 503) and body["error"]["message"]
