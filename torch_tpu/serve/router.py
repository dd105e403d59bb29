"""python -m torch_tpu.serve.router --backend URL [--backend URL ...]: one
OpenAI-compatible endpoint in front of several `torch_tpu.serve` processes.

Routing: the router remembers, per backend, the prompt prefixes it sent
there (chained hashes of fixed-size chunks of the prompt text, LRU-bounded),
so a request goes to the healthy backend holding the longest prefix of its
prompt (where that backend's prefix cache most likely has the KV blocks);
ties, and prompts seen nowhere, go to the backend with the fewest requests
in flight.

Health: every backend's `/health` is polled; one that refuses connections
(or fails 3 checks in a row) is taken out until it answers again. A request whose backend cannot be reached before
anything was sent is retried on another; a backend that dies mid-request
ends that request with a clear error (a 502 OpenAI-style body, or an SSE
`error` event followed by `[DONE]` when streaming), never a hang.

Prefill/decode disaggregation (`--prefill URL ... --decode URL ...`, servers
started with `--role prefill` / `--role decode`): a completion goes to a
prefill server (chosen by prefix, then load, as above) at
`/internal/prefill`, which answers with the prompt's keys and values and
the first token (a `kv_transfer` payload); the payload goes to the decode
server with the fewest requests in flight at `/internal/decode`, whose
OpenAI response or stream is relayed back. Nothing reaches the client
before the decode server answers, so a prefill server that fails (refused,
or dies mid-prefill) is taken out and the prefill retried on another; a
decode server that refuses is taken out and the payload sent to another;
one that dies mid-request ends the request with the clear error above.
"""
import argparse
import asyncio
import collections
import hashlib
import json
import time

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse

CHUNK = 64  # characters per prefix chunk


def prefix_keys(text):
    """Chained hashes of the prompt's full CHUNK-character chunks."""
    keys, h = [], b""
    for i in range(0, len(text) - CHUNK + 1, CHUNK):
        h = hashlib.blake2b(h + text[i:i + CHUNK].encode(), digest_size=12).digest()
        keys.append(h)
    return keys


def prompt_text(path, body):
    if path.endswith("chat/completions"):
        msgs = body.get("messages") or []
        return "".join(f"{m.get('role')}:{m.get('content')}\n" for m in msgs if isinstance(m, dict))
    p = body.get("prompt")
    return p if isinstance(p, str) else json.dumps(p)


class Backend:
    def __init__(self, url, max_keys, role="both"):
        self.url = url.rstrip("/")
        self.role = role
        self.healthy = True
        self.in_flight = 0
        self.keys = collections.OrderedDict()
        self.max_keys = max_keys
        self.served = 0
        self.failures = 0
        self.bad_checks = 0

    def match(self, keys):
        n = 0
        for k in keys:
            if k not in self.keys:
                break
            n += 1
        return n

    def remember(self, keys):
        for k in keys:
            self.keys[k] = True
            self.keys.move_to_end(k)
        while len(self.keys) > self.max_keys:
            self.keys.popitem(last=False)


def _error(status, message, type_="server_error"):
    return JSONResponse(status_code=status, content={"error": {"message": message, "type": type_,
                                                               "param": None, "code": None}})


def build_router(urls, health_interval=1.0, read_timeout=120.0, max_keys=100_000, prefill=(), decode=()):
    if bool(prefill) != bool(decode):
        raise ValueError("prefill/decode disaggregation needs at least one --prefill and one --decode backend")
    if prefill and urls:
        raise ValueError("--backend and --prefill/--decode are separate modes; give one or the other")
    if not urls and not prefill:
        raise ValueError("no backend: give --backend URL ..., or --prefill URL ... --decode URL ...")
    backends = [Backend(u, max_keys) for u in urls]
    prefill_pool = [Backend(u, max_keys, "prefill") for u in prefill]
    decode_pool = [Backend(u, max_keys, "decode") for u in decode]
    every = backends + prefill_pool + decode_pool
    app = FastAPI(title="torch_tpu.serve.router")
    client = httpx.AsyncClient(timeout=httpx.Timeout(connect=2.0, read=read_timeout, write=10.0, pool=10.0))
    stats = collections.Counter()
    app.state.backends = every

    async def check(b):
        # refused connections take a backend out at once; slow or failing
        # answers after 3 checks in a row (a busy machine is not a dead one)
        try:
            r = await client.get(b.url + "/health", timeout=2.0)
            ok = r.status_code == 200
        except httpx.ConnectError:
            b.healthy, b.bad_checks = False, 3
            return
        except httpx.HTTPError:
            ok = False
        b.bad_checks = 0 if ok else b.bad_checks + 1
        b.healthy = b.bad_checks < 3

    async def health_loop():
        while True:
            await asyncio.gather(*(check(b) for b in every))
            await asyncio.sleep(health_interval)

    @app.on_event("startup")
    async def _start():
        app.state.health_task = asyncio.create_task(health_loop())

    @app.on_event("shutdown")
    async def _stop():
        app.state.health_task.cancel()
        await client.aclose()

    def choose(keys, exclude, pool=backends):
        live = [b for b in pool if b.healthy and b not in exclude]
        if not live:
            return None, 0
        best = max(live, key=lambda b: (b.match(keys), -b.in_flight))
        return best, best.match(keys)

    async def open_stream(pool, keys, path, content, content_type, what, count_routing):
        """POSTs to the best backend of `pool` and opens its streamed answer,
        failing over to the next one on a refused connection (nothing has
        reached the client yet). Returns (backend, response), or (None, an
        error response for the client)."""
        tried = []
        while True:
            b, matched = choose(keys, tried, pool)
            if b is None:
                stats["no_backend"] += 1
                return None, _error(503, f"no healthy {what} is available"
                                    + (f" (tried {', '.join(t.url for t in tried)})" if tried else ""))
            tried.append(b)
            if count_routing:
                stats["prefix_routed" if matched else "load_routed"] += 1
            req = client.build_request("POST", b.url + path, content=content,
                                       headers={"content-type": content_type})
            b.in_flight += 1
            try:
                return b, await client.send(req, stream=True)
            except httpx.HTTPError as e:
                b.in_flight -= 1
                b.healthy = False
                b.failures += 1
                if not isinstance(e, (httpx.ConnectError, httpx.ConnectTimeout)):
                    return None, _error(502, f"backend {b.url} failed: {type(e).__name__}: {e}")
                stats["failovers"] += 1

    async def proxy(request: Request, path):
        raw = await request.body()
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError as e:
            return _error(400, f"the request body is not a valid JSON object: {e}", "invalid_request_error")
        keys = prefix_keys(prompt_text(path, body))
        stream = bool(body.get("stream"))
        if prefill_pool:
            return await disaggregated(path, raw, keys, stream)
        b, resp = await open_stream(backends, keys, path, raw, "application/json", "backend", True)
        if b is None:
            return resp
        b.remember(keys)
        b.served += 1
        return await relay_response(b, resp, stream)

    async def disaggregated(path, raw, keys, stream):
        endpoint = "chat" if path.endswith("chat/completions") else "completions"
        tried, errors = [], []
        while True:   # prefill: nothing has reached the client, so any failure retries elsewhere
            b, matched = choose(keys, tried, prefill_pool)
            if b is None:
                stats["no_backend"] += 1
                return _error(503, "no healthy prefill backend is available"
                              + (f" ({'; '.join(errors)})" if errors else ""))
            tried.append(b)
            stats["prefix_routed" if matched else "load_routed"] += 1
            b.in_flight += 1
            try:
                r = await client.post(b.url + "/internal/prefill", params={"endpoint": endpoint}, content=raw,
                                      headers={"content-type": "application/json"})
            except httpx.HTTPError as e:
                b.healthy = False
                b.failures += 1
                stats["failovers"] += 1
                errors.append(f"prefill backend {b.url} failed: {type(e).__name__}: {e}")
                continue
            finally:
                b.in_flight -= 1
            break
        if r.status_code != 200:   # the request's own error (4xx): relayed as it is
            return PlainTextResponse(r.content, status_code=r.status_code,
                                     media_type=r.headers.get("content-type", "application/json"))
        b.remember(keys)
        b.served += 1
        payload = r.content
        stats["kv_transfer_bytes"] += len(payload)
        d, resp = await open_stream(decode_pool, [], "/internal/decode", payload,
                                    "application/octet-stream", "decode backend", False)   # by load
        if d is None:
            return resp
        d.served += 1
        return await relay_response(d, resp, stream)

    async def relay_response(b, resp, stream):
        """The backend's answer to the client; `b.in_flight` drops when done."""
        if not stream or resp.status_code != 200:
            try:
                data = await resp.aread()
            except httpx.HTTPError as e:
                b.healthy = False
                b.failures += 1
                return _error(502, f"backend {b.url} failed mid-request: {type(e).__name__}: {e}")
            finally:
                b.in_flight -= 1
                await resp.aclose()
            return PlainTextResponse(data, status_code=resp.status_code,
                                     media_type=resp.headers.get("content-type", "application/json"))

        async def relay():
            try:
                async for chunk in resp.aiter_raw():
                    yield chunk
            except httpx.HTTPError as e:
                b.healthy = False
                b.failures += 1
                msg = {"error": {"message": f"backend {b.url} failed mid-stream: {type(e).__name__}: {e}",
                                 "type": "server_error"}}
                yield f"\n\ndata: {json.dumps(msg)}\n\ndata: [DONE]\n\n".encode()
            finally:
                b.in_flight -= 1
                await resp.aclose()
        return StreamingResponse(relay(), media_type="text/event-stream")

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await proxy(request, "/v1/completions")

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        return await proxy(request, "/v1/chat/completions")

    @app.get("/v1/models")
    async def models():
        for b in backends + decode_pool + prefill_pool:
            if b.healthy:
                try:
                    r = await client.get(b.url + "/v1/models", timeout=2.0)
                    return JSONResponse(r.json(), status_code=r.status_code)
                except httpx.HTTPError:
                    b.healthy = False
        return _error(503, "no healthy backend is available")

    @app.get("/health")
    async def health():
        if prefill_pool:
            live = min(sum(b.healthy for b in prefill_pool), sum(b.healthy for b in decode_pool))
        else:
            live = sum(b.healthy for b in backends)
        return JSONResponse({"status": "ok" if live else "no healthy backend", "healthy_backends": live,
                             "backends": [{"url": b.url, "role": b.role, "healthy": b.healthy,
                                           "in_flight": b.in_flight, "served": b.served, "failures": b.failures}
                                          for b in every]},
                            status_code=200 if live else 503)

    @app.get("/metrics")
    async def metrics():
        lines = []
        for k in ("prefix_routed", "load_routed", "failovers", "no_backend", "kv_transfer_bytes"):
            lines.append(f"tpu_router_{k}_total {stats[k]}")
        for b in every:
            lab = f'backend="{b.url}",role="{b.role}"'
            lines.append(f'tpu_router_backend_healthy{{{lab}}} {int(b.healthy)}')
            lines.append(f'tpu_router_backend_in_flight{{{lab}}} {b.in_flight}')
            lines.append(f'tpu_router_backend_served_total{{{lab}}} {b.served}')
        return PlainTextResponse("\n".join(lines) + "\n")

    app.state.started = time.time()
    return app


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m torch_tpu.serve.router", description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", action="append", default=[], help="a torch_tpu.serve URL (repeat)")
    ap.add_argument("--prefill", action="append", default=[],
                    help="disaggregation: a `--role prefill` server URL (repeat; needs --decode)")
    ap.add_argument("--decode", action="append", default=[],
                    help="disaggregation: a `--role decode` server URL (repeat; needs --prefill)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--health-interval", type=float, default=1.0)
    ap.add_argument("--read-timeout", type=float, default=120.0)
    ap.add_argument("--log-level", default="warning")
    a = ap.parse_args(argv)
    import uvicorn
    try:
        app = build_router(a.backend, a.health_interval, a.read_timeout, prefill=a.prefill, decode=a.decode)
    except ValueError as e:
        ap.error(str(e))
    what = (f"{len(a.prefill)} prefill + {len(a.decode)} decode backends" if a.prefill
            else f"{len(a.backend)} backends")
    print(f"torch_tpu.serve.router: {what}, http://{a.host}:{a.port}/v1", flush=True)
    uvicorn.run(app, host=a.host, port=a.port, log_level=a.log_level)


if __name__ == "__main__":
    main()
