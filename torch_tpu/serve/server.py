"""OpenAI-compatible HTTP server over the engine (FastAPI + uvicorn).

The engine runs on its own thread (`AsyncEngine`): it steps while there is
work and hands each step's outputs to the asyncio loop, one queue per
request. HTTP handlers tokenize, submit, and turn outputs into OpenAI
responses or server-sent events; a client that goes away aborts its
requests, which frees their blocks.

Roles (prefill/decode disaggregation, `--role`): `both` (the default) serves
everything; `prefill` serves only `POST /internal/prefill` (an OpenAI
completions or chat body -> the prompt's keys and values plus the first
token, a `kv_transfer` payload); `decode` serves only `POST /internal/decode`
(that payload -> the usual OpenAI response or stream). Each refuses the
other's work with a 421 OpenAI-style error. The router pairs them.
"""
import asyncio
import dataclasses
import itertools
import json
import threading
import time
import uuid

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
import prometheus_client as prom

from . import kv_transfer
from .sampling import InvalidParams, SamplingParams

ROLES = ("both", "prefill", "decode")


class ApiError(Exception):
    def __init__(self, status, message, type_="invalid_request_error", param=None, code=None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type_, param, code

    def response(self):
        return JSONResponse(status_code=self.status, content={"error": {
            "message": self.message, "type": self.type, "param": self.param, "code": self.code}})


class Metrics:
    def __init__(self, engine):
        r = self.registry = prom.CollectorRegistry()
        self.requests = prom.Counter("tpu_serve_requests", "HTTP requests served",
                                     ["endpoint", "status"], registry=r)
        self.prompt_tokens = prom.Counter("tpu_serve_prompt_tokens", "prompt tokens received", registry=r)
        self.generation_tokens = prom.Counter("tpu_serve_generation_tokens", "tokens generated", registry=r)
        self.ttft = prom.Histogram("tpu_serve_time_to_first_token_seconds", "time to first token",
                                   registry=r, buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30))
        self.itl = prom.Histogram("tpu_serve_inter_token_latency_seconds", "time between tokens",
                                  registry=r, buckets=(.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5))
        gauges = {
            "tpu_serve_queue_depth": ("requests waiting for the engine", lambda: engine.num_waiting()),
            "tpu_serve_running": ("sequences running", lambda: len(engine.running)),
            "tpu_serve_kv_blocks_used": ("KV blocks held by sequences", lambda: engine.blocks.num_used()),
            "tpu_serve_kv_blocks_cached": ("KV blocks in the prefix tree", lambda: engine.blocks.num_cached()),
            "tpu_serve_kv_blocks_total": ("KV blocks in the cache", lambda: engine.blocks.capacity),
            "tpu_serve_prefix_cache_hit_rate": ("prompt tokens served from the prefix cache / prompt tokens",
                                                lambda: engine.blocks.hit_rate()),
            "tpu_serve_engine_steps": ("engine steps run", lambda: engine.num_steps),
            "tpu_serve_step_shapes": ("distinct (batch, length, context) buckets run", lambda: len(engine.shapes)),
            "tpu_serve_preemptions": ("sequences preempted (recomputed later)", lambda: engine.num_preemptions),
        }
        self.kv_bytes = prom.Counter("tpu_serve_kv_transfer_bytes", "KV payload bytes sent (prefill) "
                                     "or received (decode)", registry=r)
        self.kv_tokens = prom.Counter("tpu_serve_kv_transfer_tokens", "prompt tokens in KV payloads", registry=r)
        for name, (doc, fn) in gauges.items():
            prom.Gauge(name, doc, registry=r).set_function(fn)

    def render(self):
        return prom.generate_latest(self.registry)


class AsyncEngine:
    """Runs `engine.step()` on a thread; outputs go to per-request asyncio queues."""

    def __init__(self, engine):
        self.engine = engine
        self.queues = {}
        self.wake = threading.Event()
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name="torch_tpu.serve.engine", daemon=True)
        self.thread.start()

    def submit(self, loop, prompt, params, add=None):
        """`add(rid)` enqueues on the engine (default: add_request)."""
        rid = uuid.uuid4().hex
        q = asyncio.Queue()
        self.queues[rid] = (loop, q)
        try:
            if add is None:
                self.engine.add_request(rid, prompt, params)
            else:
                add(rid)
        except Exception:
            self.queues.pop(rid, None)
            raise
        self.wake.set()
        return rid, q

    def abort(self, rid):
        if self.queues.pop(rid, None) is not None:
            self.engine.abort(rid)
            self.wake.set()

    def _run(self):
        while not self.stopped:
            if not self.engine.has_work():
                self.wake.wait(0.05)
                self.wake.clear()
                continue
            try:
                outs = self.engine.step()
            except Exception as e:  # the engine is left consistent; fail what ran
                for rid in list(self.queues):
                    loop, q = self.queues.pop(rid)
                    self.engine.abort(rid)
                    loop.call_soon_threadsafe(q.put_nowait, e)
                continue
            for o in outs:
                entry = self.queues.get(o.request_id)
                if entry is None:
                    continue
                if o.finished:
                    self.queues.pop(o.request_id, None)
                entry[0].call_soon_threadsafe(entry[1].put_nowait, o)

    def stop(self):
        self.stopped = True
        self.wake.set()


class _Choice:
    """One generated sequence: incremental detokenization, stop strings, logprobs."""

    def __init__(self, tokenizer, stop, want_logprobs):
        self.tok = tokenizer
        self.stop = stop
        self.ids = []
        self.text = ""          # text released so far
        self.finish = None
        self.want = want_logprobs
        self.lp = []            # (token text, logprob, [(alt text, logprob)])
        self.offsets = []

    def _decode(self, ids):
        return self.tok.decode(ids, skip_special_tokens=True)

    def add(self, out):
        """Returns the new text to release."""
        self.ids.append(out.token)
        full = self._decode(self.ids)
        if self.want is not None:
            self.offsets.append(len(self.text))
            self.lp.append((self.tok.decode([out.token]), out.logprob,
                            [(self.tok.decode([t]), v) for t, v in out.top_logprobs]))
        if out.finished:
            self.finish = out.finish_reason
        for s in self.stop:
            i = full.find(s)
            if i >= 0:
                full = full[:i]
                self.finish = "stop"
        if self.finish is None and full.endswith("\ufffd"):
            return ""  # half a character: wait for the rest
        if self.finish is None:
            # hold back what could be the start of a stop string
            hold = max((k for s in self.stop for k in range(1, len(s)) if full.endswith(s[:k])), default=0)
            full_out = full[:len(full) - hold]
        else:
            full_out = full
        new = full_out[len(self.text):] if full_out.startswith(self.text) else ""
        self.text = self.text + new
        return new


def _int(body, name, default, lo=None, hi=None):
    v = body.get(name, default)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool):
        raise ApiError(400, f"'{name}' must be an integer, got {v!r}", param=name)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ApiError(400, f"'{name}' must be in [{lo}, {hi}], got {v}", param=name)
    return v


def _num(body, name, default):
    v = body.get(name, default)
    if v is None:
        return default
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise ApiError(400, f"'{name}' must be a number, got {v!r}", param=name)
    return float(v)


def build_app(engine, tokenizer, model_name, role="both"):
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    app = FastAPI(title="torch_tpu.serve")
    aengine = AsyncEngine(engine)
    metrics = Metrics(engine)
    app.state.engine = aengine
    counter = itertools.count()
    max_len = engine.config.max_model_len

    @app.exception_handler(ApiError)
    async def _api_error(request, exc):
        metrics.requests.labels(request.url.path, str(exc.status)).inc()
        return exc.response()

    @app.on_event("shutdown")
    def _stop():
        aengine.stop()

    async def _body(request):
        try:
            body = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError) as e:
            raise ApiError(400, f"the request body is not valid JSON: {e}")
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        m = body.get("model")
        if m is not None and m != model_name:
            raise ApiError(404, f"The model '{m}' does not exist (this server serves '{model_name}')",
                           type_="invalid_request_error", param="model", code="model_not_found")
        return body

    def _params(body, prompt_len, chat):
        max_tokens = body.get("max_completion_tokens") if chat else None
        if max_tokens is None:
            max_tokens = body.get("max_tokens")
        room = max_len - prompt_len
        if room < 1:
            raise ApiError(400, f"This model's maximum context length is {max_len} tokens; the prompt "
                           f"has {prompt_len} tokens", param="messages" if chat else "prompt",
                           code="context_length_exceeded")
        if max_tokens is None:
            max_tokens = room
        mt = _int({"max_tokens": max_tokens}, "max_tokens", room, lo=1)
        if mt > room:
            raise ApiError(400, f"max_tokens {mt} plus the prompt's {prompt_len} tokens is over this "
                           f"model's maximum context length of {max_len} tokens", param="max_tokens",
                           code="context_length_exceeded")
        if chat:
            lp = 0
            if body.get("logprobs"):
                lp = _int(body, "top_logprobs", 0, 0, 20)
            want = True if body.get("logprobs") else None
        else:
            lp = _int(body, "logprobs", None, 0, 20)
            want = lp
            lp = lp or 0
        stop = body.get("stop") or []
        if isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop) or len(stop) > 4:
            raise ApiError(400, "'stop' must be a string or a list of at most 4 non-empty strings", param="stop")
        p = SamplingParams(max_tokens=mt, temperature=_num(body, "temperature", 1.0),
                           top_p=_num(body, "top_p", 1.0), top_k=_int(body, "top_k", 0),
                           seed=_int(body, "seed", None), logprobs=lp,
                           ignore_eos=bool(body.get("ignore_eos", False)))
        try:
            p.validate()
        except InvalidParams as e:
            raise ApiError(400, str(e))
        return p, stop, want

    def _prompt_ids(body):
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1:
            prompt = prompt[0]
        if isinstance(prompt, str):
            ids = tokenizer.encode(prompt)
        elif isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool)
                                                           for t in prompt):
            ids = prompt
        else:
            raise ApiError(400, "'prompt' must be a non-empty string or a list of token ids", param="prompt")
        if not ids:
            raise ApiError(400, "the prompt is empty", param="prompt")
        if any(not 0 <= t < engine.model.vocab_size for t in ids):
            raise ApiError(400, "a prompt token id is outside the vocabulary", param="prompt")
        return list(ids)

    def _chat_ids(body):
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                for m in msgs):
            raise ApiError(400, "'messages' must be a non-empty list of {role, content} objects", param="messages")
        try:
            text = tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        except Exception as e:
            raise ApiError(400, f"the chat template failed on these messages: {e}", param="messages")
        return list(tokenizer.encode(text, add_special_tokens=False))

    def _choice_params(params, n):
        return [dataclasses.replace(params, seed=None if params.seed is None else params.seed + i)
                for i in range(n)]

    def _submit(loop, ids, params, n, payload=None):
        subs = []
        try:
            for i, p in enumerate(_choice_params(params, n)):
                add = None
                if payload is not None:
                    def add(rid, i=i, p=p):
                        engine.add_imported(rid, payload, i, p)
                subs.append(aengine.submit(loop, ids, p, add))
        except ValueError as e:
            for rid, _ in subs:
                aengine.abort(rid)
            raise ApiError(400, str(e))
        metrics.prompt_tokens.inc(len(ids) * n)
        return subs

    async def _events(subs, tokenizer_stop, want):
        """Yields (index, new text, output, choice) across the n sequences."""
        merged = asyncio.Queue()
        choices = [_Choice(tokenizer, tokenizer_stop, want) for _ in subs]
        start = time.monotonic()
        last = [None] * len(subs)

        async def pump(i, rid, q):
            while True:
                o = await q.get()
                await merged.put((i, o))
                if isinstance(o, Exception) or o.finished:
                    return
        tasks = [asyncio.create_task(pump(i, rid, q)) for i, (rid, q) in enumerate(subs)]
        live = len(subs)
        try:
            while live:
                i, o = await merged.get()
                if isinstance(o, Exception):
                    raise ApiError(500, f"the engine failed: {o}", type_="server_error")
                now = time.monotonic()
                if last[i] is None:
                    metrics.ttft.observe(now - start)
                else:
                    metrics.itl.observe(now - last[i])
                last[i] = now
                metrics.generation_tokens.inc()
                c = choices[i]
                if c.finish is not None:
                    continue
                new = c.add(o)
                if c.finish is not None:
                    live -= 1
                    if not o.finished:
                        aengine.abort(subs[i][0])  # a stop string ended it early
                yield i, new, o, c
        finally:
            for t in tasks:
                t.cancel()
            for rid, _ in subs:
                aengine.abort(rid)

    def _usage(ids, choices, n):
        comp = sum(len(c.ids) for c in choices)
        return {"prompt_tokens": len(ids) * n, "completion_tokens": comp, "total_tokens": len(ids) * n + comp}

    def _completion_logprobs(c):
        if c.want is None:
            return None
        return {"tokens": [t for t, _, _ in c.lp], "token_logprobs": [v for _, v, _ in c.lp],
                "top_logprobs": [dict(alts) for _, _, alts in c.lp], "text_offset": c.offsets}

    def _chat_logprobs(c):
        if c.want is None:
            return None
        return {"content": [{"token": t, "logprob": v, "bytes": list(t.encode()),
                             "top_logprobs": [{"token": a, "logprob": b, "bytes": list(a.encode())}
                                              for a, b in alts]} for t, v, alts in c.lp]}

    def _require(*roles):
        if role not in roles:
            what = {"prefill": "prefills prompts for a decode server (POST /internal/prefill)",
                    "decode": "continues requests prefilled elsewhere (POST /internal/decode)"}[role]
            raise ApiError(421, f"this server runs --role {role}: it only {what}; send completions to the "
                           "router (python -m torch_tpu.serve.router --prefill URL --decode URL)",
                           code="wrong_server_role")

    def _prepare(body, chat, ids=None):
        if ids is None:
            ids = _chat_ids(body) if chat else _prompt_ids(body)
        params, stop, want = _params(body, len(ids), chat)
        return ids, params, stop, want, _int(body, "n", 1, 1, 16)

    async def _run(request, chat):
        _require("both")
        body = await _body(request)
        ids, params, stop, want, n = _prepare(body, chat)
        subs = _submit(asyncio.get_running_loop(), ids, params, n)
        return await _respond(request.url.path, body, chat, ids, stop, want, n, subs)

    async def _respond(endpoint, body, chat, ids, stop, want, n, subs):
        stream = bool(body.get("stream", False))
        rid = ("chatcmpl-" if chat else "cmpl-") + f"{next(counter)}-{uuid.uuid4().hex[:12]}"
        created = int(time.time())
        obj = "chat.completion" if chat else "text_completion"
        if not stream:
            choices = [None] * n
            async for i, _, _, c in _events(subs, stop, want):
                choices[i] = c
            out = []
            for i, c in enumerate(choices):
                if chat:
                    out.append({"index": i, "message": {"role": "assistant", "content": c.text},
                                "logprobs": _chat_logprobs(c), "finish_reason": c.finish})
                else:
                    out.append({"index": i, "text": c.text, "logprobs": _completion_logprobs(c),
                                "finish_reason": c.finish})
            metrics.requests.labels(endpoint, "200").inc()
            return JSONResponse({"id": rid, "object": obj, "created": created, "model": model_name,
                                 "choices": out, "usage": _usage(ids, choices, n)})

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def sse():
            chunk_obj = "chat.completion.chunk" if chat else "text_completion"
            seen = [None] * n

            def chunk(choices, usage=None):
                d = {"id": rid, "object": chunk_obj, "created": created, "model": model_name, "choices": choices}
                if usage is not None:
                    d["usage"] = usage
                return f"data: {json.dumps(d)}\n\n"
            try:
                if chat:
                    yield chunk([{"index": i, "delta": {"role": "assistant", "content": ""},
                                  "logprobs": None, "finish_reason": None} for i in range(n)])
                async for i, new, o, c in _events(subs, stop, want):
                    seen[i] = c
                    if chat:
                        lp = None
                        if want is not None:
                            lp = _chat_logprobs(c)
                            lp = {"content": lp["content"][-1:]}
                        ch = {"index": i, "delta": {"content": new} if new else {}, "logprobs": lp,
                              "finish_reason": c.finish}
                    else:
                        lp = None
                        if want is not None:
                            t, v, alts = c.lp[-1]
                            lp = {"tokens": [t], "token_logprobs": [v], "top_logprobs": [dict(alts)],
                                  "text_offset": c.offsets[-1:]}
                        ch = {"index": i, "text": new, "logprobs": lp, "finish_reason": c.finish}
                    if new or c.finish is not None or lp is not None:
                        yield chunk([ch])
                if include_usage:
                    yield chunk([], _usage(ids, [c for c in seen if c is not None], n))
                yield "data: [DONE]\n\n"
                metrics.requests.labels(endpoint, "200").inc()
            except ApiError as e:
                yield f"data: {json.dumps({'error': {'message': e.message, 'type': e.type}})}\n\n"
                metrics.requests.labels(endpoint, str(e.status)).inc()
        return StreamingResponse(sse(), media_type="text/event-stream")

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await _run(request, chat=False)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        return await _run(request, chat=True)

    @app.post("/internal/prefill")
    async def internal_prefill(request: Request, endpoint: str = "completions"):
        """An OpenAI body (`endpoint`: completions or chat) -> a kv_transfer
        payload: the prompt's keys and values and each choice's first token."""
        _require("both", "prefill")
        if endpoint not in ("completions", "chat"):
            raise ApiError(400, f"endpoint must be 'completions' or 'chat', got {endpoint!r}", param="endpoint")
        chat = endpoint == "chat"
        body = await _body(request)
        ids, params, stop, want, n = _prepare(body, chat)
        loop = asyncio.get_running_loop()
        try:
            rid, q = aengine.submit(loop, ids, params,
                                    lambda r: engine.add_prefill(r, ids, _choice_params(params, n)))
        except ValueError as e:
            raise ApiError(400, str(e))
        metrics.prompt_tokens.inc(len(ids))
        try:
            out = await q.get()
        finally:
            aengine.abort(rid)   # a client gone mid-prefill frees the blocks
        if isinstance(out, Exception):
            raise ApiError(500, f"the engine failed: {out}", type_="server_error")
        data = await asyncio.to_thread(kv_transfer.pack, *out.kv, {"endpoint": endpoint, "body": body})
        metrics.kv_bytes.inc(len(data))
        metrics.kv_tokens.inc(len(ids))
        metrics.requests.labels("/internal/prefill", "200").inc()
        return Response(data, media_type="application/octet-stream",
                        headers={"x-prompt-tokens": str(len(ids)), "x-cached-tokens": str(out.num_cached_tokens)})

    @app.post("/internal/decode")
    async def internal_decode(request: Request):
        """A kv_transfer payload from a prefill server -> the OpenAI response
        (or stream) of the request it carries, decoded here."""
        _require("both", "decode")
        data = await request.body()
        try:
            payload = await asyncio.to_thread(kv_transfer.unpack, data)
        except ValueError as e:
            raise ApiError(400, str(e), param="payload")
        endpoint = payload.meta.get("endpoint")
        body = payload.meta.get("body")
        if endpoint not in ("completions", "chat") or not isinstance(body, dict):
            raise ApiError(400, "the KV payload does not carry its request (endpoint and body)", param="payload")
        m = body.get("model")
        if m is not None and m != model_name:
            raise ApiError(404, f"The model '{m}' does not exist (this server serves '{model_name}')",
                           param="model", code="model_not_found")
        chat = endpoint == "chat"
        ids, params, stop, want, n = _prepare(body, chat, ids=payload.prompt)
        if n != len(payload.choices):
            raise ApiError(400, f"the KV payload has {len(payload.choices)} choices; its request asks for n={n}",
                           param="payload")
        metrics.kv_bytes.inc(len(data))
        metrics.kv_tokens.inc(len(ids))
        subs = _submit(asyncio.get_running_loop(), ids, params, n, payload=payload)
        return await _respond("/v1/chat/completions" if chat else "/v1/completions", body, chat, ids, stop, want, n,
                        subs)

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": model_name, "object": "model", "created": 0,
                                            "owned_by": "torch_tpu", "max_model_len": max_len}]}

    @app.get("/health")
    async def health():
        if not aengine.thread.is_alive():
            return JSONResponse({"status": "engine thread stopped"}, status_code=503)
        s = engine.stats()
        return {"status": "ok", "role": role, "running": s["running"], "waiting": s["waiting"],
                "kv_blocks_used": s["kv_blocks_used"], "prefix_hit_rate": s["prefix_hit_rate"]}

    @app.get("/metrics")
    async def prom_metrics():
        return PlainTextResponse(metrics.render(), media_type=prom.CONTENT_TYPE_LATEST)

    @app.get("/v1/engine_stats")
    async def engine_stats():
        import torch_tpu
        s = engine.stats()
        cs = torch_tpu.cache_stats()
        s["programs_compiled"] = sum(cs["compiles_by_mode"].values()) + cs["persistent"]["loads"]
        s["shapes"] = [list(k) + [v] for k, v in engine.shapes.items()]
        return s

    return app
