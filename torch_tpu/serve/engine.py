"""The serving engine: continuous batching over a paged KV cache.

Every `step()`:

1. takes new requests and aborts from the inbox (any thread may add);
2. schedules: running sequences first (a decode token each, or the next
   chunk of a prompt still being prefilled), then waiting ones join while
   there is room (`max_num_seqs`, the step's token budget, free blocks); a
   joining sequence first takes the longest cached prefix of its tokens from
   the prefix tree. When a running sequence needs a block and none is left,
   the most recently admitted other sequence is preempted: its blocks are
   released and it goes back to the head of the queue, to be recomputed
   (prompt plus the tokens generated so far) when it is admitted again;
3. runs one forward over the batch laid out `[B, L]`, padded to a batch
   bucket, a query-length bucket and a context-blocks bucket (powers of two),
   so a steady load runs a fixed, small set of programs;
4. samples on the host for sequences whose tokens are all computed, appends
   the token, finishes sequences (length, EOS, stop tokens) and frees their
   blocks; full blocks enter the prefix tree.

Prefill/decode disaggregation: `add_prefill` runs a prompt only (chunked
prefill as usual), samples the first token of each choice, and hands back
the prompt's keys and values (`StepOutput.kv`) instead of decoding on; its
blocks are released (full ones stay in the prefix tree). `add_imported`
takes such keys and values: when admitted, the sequence gets blocks, the
keys and values are written into them, and it decodes from the first token
on as any running sequence (preempted, it is recomputed like the others).
"""
import collections
import dataclasses
import itertools
import threading
import time

import torch

from . import kv_cache, kv_transfer
from .models import PagedCausalLM
from .sampling import SamplingParams, make_generator, sample


def _pow2_buckets(lo, hi):
    out, b = [], lo
    while b < hi:
        out.append(b)
        b *= 2
    out.append(hi)
    return out


def _bucket(n, buckets):
    for b in buckets:
        if b >= n:
            return b
    raise ValueError(f"{n} is over the largest bucket {buckets[-1]}")


@dataclasses.dataclass
class EngineConfig:
    block_size: int = 16
    num_blocks: int = 0              # 0: enough for max_num_seqs full-length sequences
    max_num_seqs: int = 8
    max_model_len: int = 0           # 0: the model's context, at most 2048
    chunk_size: int = 64             # prompt tokens per sequence per step
    max_num_batched_tokens: int = 256
    prefix_cache: bool = True
    device: str = "tpu"
    min_batch_bucket: int = 1        # smallest batch bucket (fewer programs, more padding)
    min_ctx_blocks: int = 16         # smallest context bucket, in blocks
    quantization: str = None         # "int8": weight-only int8 linear layers, per channel


@dataclasses.dataclass
class StepOutput:
    request_id: str
    token: int
    logprob: float
    top_logprobs: list        # [(token, logprob)] when asked for
    finished: bool
    finish_reason: str        # None, "length", "stop"
    num_prompt_tokens: int
    num_cached_tokens: int
    kv: object = None         # add_prefill's result: (keys, values, prompt, choices) for kv_transfer.pack


class Sequence:
    _ids = itertools.count()

    def __init__(self, request_id, prompt, params):
        self.request_id = request_id
        self.prompt_len = len(prompt)
        self.tokens = list(prompt)
        self.params = params
        self.generator = make_generator(params.seed)
        self.blocks = []
        self.num_computed = 0
        self.num_cached = 0
        self.order = next(self._ids)
        self.arrival = time.monotonic()
        self.prefill_choices = None   # add_prefill: [(params, generator)] sampled from the prompt's logits
        self.imported = None          # add_imported: (keys, values) still to be written

    @property
    def num_generated(self):
        return len(self.tokens) - self.prompt_len


class Engine:
    def __init__(self, hf_model, config=None, **kw):
        self.config = cfg = dataclasses.replace(config or EngineConfig(), **kw)
        self.model = PagedCausalLM(hf_model, cfg.device, quantization=cfg.quantization)
        ctx = self.model.max_positions or 2048
        if not cfg.max_model_len:
            cfg.max_model_len = min(ctx, 2048)
        if cfg.max_model_len > ctx:
            raise ValueError(f"max_model_len {cfg.max_model_len} is over the model's context {ctx}")
        bs = cfg.block_size
        self.max_blocks_per_seq = -(-cfg.max_model_len // bs)
        if not cfg.num_blocks:
            cfg.num_blocks = cfg.max_num_seqs * self.max_blocks_per_seq + 1
        if cfg.num_blocks - 1 < self.max_blocks_per_seq:
            raise ValueError(f"num_blocks {cfg.num_blocks} cannot hold one sequence of "
                             f"max_model_len {cfg.max_model_len} ({self.max_blocks_per_seq} blocks + scratch)")
        cfg.chunk_size = min(cfg.chunk_size, cfg.max_num_batched_tokens)
        self.batch_buckets = _pow2_buckets(min(cfg.min_batch_bucket, cfg.max_num_seqs), cfg.max_num_seqs)
        self.len_buckets = [1] + _pow2_buckets(min(16, cfg.chunk_size), cfg.chunk_size)
        self.ctx_buckets = _pow2_buckets(min(cfg.min_ctx_blocks, self.max_blocks_per_seq),
                                         self.max_blocks_per_seq)
        self.blocks = kv_cache.BlockManager(cfg.num_blocks, bs, cfg.prefix_cache)
        self.cache = self.model.new_cache(cfg.num_blocks * bs)
        gen = getattr(hf_model, "generation_config", None)
        eos = getattr(gen, "eos_token_id", None) if gen is not None else None
        if eos is None:
            eos = getattr(self.model.config, "eos_token_id", None)
        self.eos_ids = set(eos if isinstance(eos, (list, tuple)) else ([eos] if eos is not None else []))
        self.waiting = collections.deque()
        self.running = []
        self.inbox = collections.deque()
        self.pending = []      # outputs known before any step (an imported sequence's first token)
        self._lock = threading.Lock()
        self.shapes = collections.Counter()   # (B, L, NB) -> steps run
        self.num_steps = 0
        self.num_preemptions = 0
        self.tokens_generated = 0
        self.prompt_tokens_computed = 0

    # ---- requests --------------------------------------------------------------
    def add_request(self, request_id, prompt_ids, params=None):
        params = params or SamplingParams()
        params.validate()
        prompt = self._check_prompt(prompt_ids)
        with self._lock:
            self.inbox.append(("add", Sequence(request_id, prompt, params)))

    def add_prefill(self, request_id, prompt_ids, params_list):
        """Prefill only: computes the prompt, samples the first token of each
        choice (`params_list[i]` with its own generator), and finishes with
        `StepOutput.kv` = (keys, values, prompt, choices) for
        `kv_transfer.pack`; the sequence's blocks are then released."""
        params_list = [p or SamplingParams() for p in params_list]
        if not params_list:
            raise ValueError("add_prefill needs the sampling parameters of at least one choice")
        for p in params_list:
            p.validate()
        prompt = self._check_prompt(prompt_ids)
        seq = Sequence(request_id, prompt, params_list[0])
        seq.prefill_choices = [(p, make_generator(p.seed)) for p in params_list]
        with self._lock:
            self.inbox.append(("add", seq))

    def add_imported(self, request_id, payload, choice, params):
        """Continues choice `choice` of a `kv_transfer.KVPayload` prefilled
        elsewhere: its first token is emitted at once, and decoding goes on
        from it over the imported keys and values with `params` and the
        choice's generator state."""
        params.validate()
        m = self.model
        kv_transfer.check_model(payload, m.n_layers, m.n_kv, m.head_dim, m.dtype, m.vocab_size)
        prompt = self._check_prompt(payload.prompt)
        if not 0 <= choice < len(payload.choices):
            raise ValueError(f"the KV payload has {len(payload.choices)} choices; choice {choice} was asked for")
        c = payload.choices[choice]
        seq = Sequence(request_id, prompt, params)
        try:
            seq.generator.set_state(c["generator_state"])
        except RuntimeError as e:
            raise ValueError(f"the KV payload's generator state for choice {choice} is not valid: {e}") from None
        seq.tokens.append(c["token"])
        seq.imported = (payload.keys, payload.values)
        reason = self._finish_reason(seq, c["token"])
        out = StepOutput(request_id, c["token"], c["logprob"], list(c["top"]), reason is not None, reason,
                         seq.prompt_len, 0)
        with self._lock:
            self.inbox.append(("import", (seq, out)))

    def _check_prompt(self, prompt_ids):
        prompt = [int(t) for t in prompt_ids]
        if not prompt:
            raise ValueError("the prompt is empty")
        bad = [t for t in prompt if not 0 <= t < self.model.vocab_size]
        if bad:
            raise ValueError(f"token id {bad[0]} is outside the vocabulary (size {self.model.vocab_size})")
        if len(prompt) >= self.config.max_model_len:
            raise ValueError(f"the prompt has {len(prompt)} tokens; this model's context is "
                             f"{self.config.max_model_len} tokens (prompt plus at least one new token)")
        return prompt

    def abort(self, request_id):
        with self._lock:
            self.inbox.append(("abort", request_id))

    def has_work(self):
        return bool(self.waiting or self.running or self.inbox or self.pending)

    def num_waiting(self):
        with self._lock:  # other threads read this (metrics) while requests arrive
            queued = sum(1 for k, _ in self.inbox if k != "abort")
        return len(self.waiting) + queued

    def _drain_inbox(self):
        with self._lock:
            items = list(self.inbox)
            self.inbox.clear()
        for kind, x in items:
            if kind == "add":
                self.waiting.append(x)
            elif kind == "import":
                seq, out = x
                self.pending.append(out)
                if not out.finished:
                    self.waiting.append(seq)
            else:
                self._abort(x)

    def _abort(self, request_id):
        for seq in list(self.running):
            if seq.request_id == request_id:
                self._free(seq)
                self.running.remove(seq)
        for seq in list(self.waiting):
            if seq.request_id == request_id:
                self.waiting.remove(seq)

    # ---- blocks -----------------------------------------------------------------
    def _free(self, seq):
        self.blocks.release(seq.blocks)
        seq.blocks = []

    def _grow(self, seq, upto):
        """Blocks for positions [0, upto); False when none is left."""
        need = -(-upto // self.config.block_size)
        while len(seq.blocks) < need:
            try:
                seq.blocks.append(self.blocks.allocate())
            except kv_cache.OutOfBlocks:
                return False
        return True

    def _preempt(self, seq):
        self._free(seq)
        seq.num_computed = 0
        self.running.remove(seq)
        self.waiting.appendleft(seq)
        self.num_preemptions += 1

    # ---- scheduling -----------------------------------------------------------------
    def _schedule(self):
        cfg = self.config
        budget = cfg.max_num_batched_tokens
        batch = []  # [seq, n]
        for seq in list(self.running):
            if seq not in self.running:
                continue  # preempted below for an earlier sequence
            n = min(len(seq.tokens) - seq.num_computed, cfg.chunk_size, budget)
            if n <= 0:
                continue
            while not self._grow(seq, seq.num_computed + n):
                # the youngest running sequence gives way, the needing one
                # included: the oldest always progresses (two sequences
                # preempting each other in turn would livelock)
                victim = max(self.running, key=lambda s: s.order)
                for item in batch:
                    if item[0] is victim:
                        budget += item[1]
                        batch.remove(item)
                        break
                self._preempt(victim)
                if victim is seq:
                    break
            if seq in self.running:
                batch.append([seq, n])
                budget -= n
        while self.waiting and len(self.running) < cfg.max_num_seqs and budget > 0:
            seq = self.waiting[0]
            bs = cfg.block_size
            if seq.imported is not None:
                if not self._admit_imported(seq):
                    break
                batch.append([seq, 1])
                budget -= 1
                continue
            cached = self.blocks.match(seq.tokens, (len(seq.tokens) - 1) // bs)
            n = min(len(seq.tokens) - len(cached) * bs, cfg.chunk_size, budget)
            need = -(-(len(cached) * bs + n) // bs) - len(cached)
            if need > self.blocks.num_available():
                self.blocks.release(cached)
                break
            self.waiting.popleft()
            if seq.num_generated == 0:
                self.blocks.count_lookup(len(seq.tokens), len(cached) * bs)
            seq.blocks = cached
            seq.num_computed = len(cached) * bs
            seq.num_cached = seq.num_computed
            ok = self._grow(seq, seq.num_computed + n)
            assert ok, "blocks were counted available"
            self.running.append(seq)
            batch.append([seq, n])
            budget -= n
        return batch

    def _admit_imported(self, seq):
        """Blocks for an imported prompt plus its first token; the imported
        keys and values written into those not already in the prefix tree."""
        bs = self.config.block_size
        P = seq.prompt_len
        cached = self.blocks.match(seq.tokens, P // bs)
        if -(-(P + 1) // bs) - len(cached) > self.blocks.num_available():
            self.blocks.release(cached)
            return False
        self.waiting.popleft()
        first = len(cached)
        seq.blocks = cached
        ok = self._grow(seq, P + 1)
        assert ok, "blocks were counted available"
        keys, values = seq.imported
        seq.imported = None
        self._write_blocks(seq.blocks[first:-(-P // bs)], keys[:, first * bs:], values[:, first * bs:])
        seq.num_computed = P
        seq.num_cached = first * bs
        self.running.append(seq)
        return True

    # ---- KV export / import (bucketed like the step: a steady load compiles nothing new) ----
    def _block_index(self, blocks):
        nb = _bucket(max(1, len(blocks)), self.ctx_buckets)
        idx = torch.zeros(nb, dtype=torch.long)   # padding: the scratch block 0
        idx[:len(blocks)] = torch.tensor(blocks, dtype=torch.long)
        return idx

    def _gather_blocks(self, blocks, n):
        """The keys and values of tokens [0, n) held in `blocks`, on the CPU:
        [layers, n, kv_heads, head_dim] each."""
        from .. import _graph
        bs = self.config.block_size
        ks, vs = self.cache
        shape = (-1, bs) + tuple(ks[0].shape[1:])
        idx = self._block_index(blocks).to(self.model.device)

        def body():
            return (torch.stack([k.view(shape)[idx] for k in ks]),
                    torch.stack([v.view(shape)[idx] for v in vs]))
        if self.model.device.type == "tpu":
            with _graph.capture():
                k, v = body()
        else:
            k, v = body()
        k, v = k.cpu(), v.cpu()
        L = k.shape[0]
        return (k.reshape(L, -1, *k.shape[3:])[:, :n].contiguous(),
                v.reshape(L, -1, *v.shape[3:])[:, :n].contiguous())

    def _write_blocks(self, blocks, keys, values):
        """Writes keys/values [layers, m, kv_heads, head_dim] (m <= len(blocks)
        * block_size, token i into blocks[i // bs]) into the cache."""
        if not blocks:
            return
        from .. import _graph
        bs = self.config.block_size
        idx = self._block_index(blocks)
        S = idx.numel() * bs
        slots = (idx[:, None] * bs + torch.arange(bs)).reshape(-1)
        m = keys.shape[1]
        kp = torch.zeros((keys.shape[0], S) + tuple(keys.shape[2:]), dtype=keys.dtype)
        vp = torch.zeros_like(kp)
        kp[:, :m] = keys
        vp[:, :m] = values
        dev = self.model.device
        slots, kp, vp = slots.to(dev), kp.to(dev), vp.to(dev)
        ks, vs = self.cache

        def body():
            for i in range(len(ks)):
                ks[i].index_copy_(0, slots, kp[i])
                vs[i].index_copy_(0, slots, vp[i])
        if dev.type == "tpu":
            with _graph.capture():
                body()
        else:
            body()

    # ---- the step ----------------------------------------------------------------------
    def step(self):
        """One engine iteration; returns the StepOutputs of this step."""
        self._drain_inbox()
        outs, self.pending = self.pending, []
        batch = self._schedule()
        if not batch:
            return outs
        cfg = self.config
        bs = cfg.block_size
        B = _bucket(len(batch), self.batch_buckets)
        L = _bucket(max(n for _, n in batch), self.len_buckets)
        NB = _bucket(max(len(s.blocks) for s, _ in batch), self.ctx_buckets)
        ids = torch.zeros(B, L, dtype=torch.long)
        pos = torch.zeros(B, L, dtype=torch.long)
        slots = torch.zeros(B, L, dtype=torch.long)
        tables = torch.zeros(B, NB, dtype=torch.long)
        last = torch.zeros(B, dtype=torch.long)
        for r, (seq, n) in enumerate(batch):
            s0 = seq.num_computed
            ids[r, :n] = torch.tensor(seq.tokens[s0:s0 + n])
            p = torch.arange(s0, s0 + n)
            pos[r, :n] = p
            blk = torch.tensor(seq.blocks, dtype=torch.long)
            slots[r, :n] = blk[p // bs] * bs + p % bs
            tables[r, :len(seq.blocks)] = blk
            last[r] = n - 1
        self.shapes[(B, L, NB)] += 1
        logits = self._forward(ids, pos, slots, tables, last)
        self.num_steps += 1
        for r, (seq, n) in enumerate(batch):
            if seq.num_generated == 0:
                self.prompt_tokens_computed += n
            seq.num_computed += n
            self.blocks.insert(seq.tokens[:seq.num_computed], seq.blocks)
            if seq.num_computed < len(seq.tokens):
                continue  # a prompt chunk; the prompt's last chunk samples
            if seq.prefill_choices is not None:
                outs.append(self._export(seq, logits[r]))
            else:
                outs.append(self._append(seq, logits[r]))
        return outs

    def _forward(self, ids, pos, slots, tables, last):
        from .. import _graph
        dev = self.model.device
        args = [t.to(dev) for t in (ids, pos, slots, tables, last)]
        if dev.type == "tpu":
            with _graph.capture():
                out = self.model.forward(self.cache, *args, self.config.block_size)
        else:
            out = self.model.forward(self.cache, *args, self.config.block_size)
        return out.cpu()

    def _finish_reason(self, seq, tok):
        p = seq.params
        if not p.ignore_eos and tok in self.eos_ids:
            return "stop"
        if tok in p.stop_token_ids:
            return "stop"
        if seq.num_generated >= p.max_tokens or len(seq.tokens) >= self.config.max_model_len:
            return "length"
        return None

    def _export(self, seq, logits):
        """add_prefill's end: first tokens sampled, keys and values copied out,
        blocks released."""
        choices = []
        for p, g in seq.prefill_choices:
            tok, lp, top = sample(logits, p, g)
            choices.append({"token": tok, "logprob": lp, "top": top, "generator_state": g.get_state()})
        keys, values = self._gather_blocks(seq.blocks, seq.prompt_len)
        self.tokens_generated += len(choices)
        self._free(seq)
        self.running.remove(seq)
        c = choices[0]
        return StepOutput(seq.request_id, c["token"], c["logprob"], c["top"], True, "prefilled",
                          seq.prompt_len, seq.num_cached, kv=(keys, values, list(seq.tokens), choices))

    def _append(self, seq, logits):
        p = seq.params
        tok, lp, top = sample(logits, p, seq.generator)
        seq.tokens.append(tok)
        self.tokens_generated += 1
        reason = self._finish_reason(seq, tok)
        if reason is not None:
            self._free(seq)
            self.running.remove(seq)
        return StepOutput(seq.request_id, tok, lp, top, reason is not None, reason,
                          seq.prompt_len, seq.num_cached)

    # ---- helpers -------------------------------------------------------------------------
    def generate(self, prompts, params=None):
        """Runs prompts (lists of token ids) to completion; returns the new
        token ids per prompt, in order."""
        if isinstance(params, SamplingParams) or params is None:
            params = [params or SamplingParams()] * len(prompts)
        ids = [f"gen-{next(Sequence._ids)}-{i}" for i in range(len(prompts))]
        for rid, prompt, sp in zip(ids, prompts, params):
            self.add_request(rid, prompt, dataclasses.replace(sp))
        out = {rid: [] for rid in ids}
        while self.has_work():
            for o in self.step():
                if o.request_id in out:
                    out[o.request_id].append(o.token)
        return [out[r] for r in ids]

    def stats(self):
        b = self.blocks
        return {
            "steps": self.num_steps,
            "programs_shapes": len(self.shapes),
            "running": len(self.running),
            "waiting": self.num_waiting(),
            "kv_blocks_total": b.capacity,
            "kv_blocks_used": b.num_used(),
            "kv_blocks_cached": b.num_cached(),
            "kv_blocks_free": len(b.free),
            "prefix_hit_rate": b.hit_rate(),
            "prefix_hit_tokens": b.hit_tokens,
            "prefix_lookup_tokens": b.lookup_tokens,
            "prefix_evictions": b.evictions,
            "preemptions": self.num_preemptions,
            "tokens_generated": self.tokens_generated,
        }
