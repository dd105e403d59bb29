"""Sampling parameters and host-side sampling from one row of logits."""
import dataclasses
import math

import torch


class InvalidParams(ValueError):
    pass


@dataclasses.dataclass
class SamplingParams:
    max_tokens: int = 16
    temperature: float = 0.0       # 0: greedy
    top_p: float = 1.0
    top_k: int = 0                 # 0: off
    seed: int = None
    logprobs: int = 0              # top alternatives to report (0..20); the chosen token's is always kept
    stop_token_ids: tuple = ()
    ignore_eos: bool = False

    def validate(self):
        if not isinstance(self.max_tokens, int) or isinstance(self.max_tokens, bool) or self.max_tokens < 1:
            raise InvalidParams(f"max_tokens must be a positive integer, got {self.max_tokens!r}")
        t = self.temperature
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t) or t < 0:
            raise InvalidParams(f"temperature must be a finite number >= 0, got {t!r}")
        p = self.top_p
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 < p <= 1:
            raise InvalidParams(f"top_p must be in (0, 1], got {p!r}")
        if not isinstance(self.top_k, int) or isinstance(self.top_k, bool) or self.top_k < 0:
            raise InvalidParams(f"top_k must be an integer >= 0, got {self.top_k!r}")
        if not isinstance(self.logprobs, int) or isinstance(self.logprobs, bool) or not 0 <= self.logprobs <= 20:
            raise InvalidParams(f"logprobs must be an integer in [0, 20], got {self.logprobs!r}")
        if self.seed is not None and (not isinstance(self.seed, int) or isinstance(self.seed, bool)):
            raise InvalidParams(f"seed must be an integer, got {self.seed!r}")
        self.stop_token_ids = tuple(int(t) for t in self.stop_token_ids)


def make_generator(seed):
    g = torch.Generator()
    if seed is None:
        g.seed()
    else:
        g.manual_seed(int(seed) & 0xFFFF_FFFF_FFFF_FFFF)
    return g


def sample(logits, params, generator):
    """logits: float32 [V] on CPU. Returns (token, its logprob, top list)."""
    logp = torch.log_softmax(logits, dim=-1)
    if params.temperature == 0:
        tok = int(torch.argmax(logits))
    else:
        x = logits / params.temperature
        if params.top_k and params.top_k < x.numel():
            kth = torch.topk(x, params.top_k).values[-1]
            x = x.masked_fill(x < kth, float("-inf"))
        if params.top_p < 1.0:
            sx, si = torch.sort(x, descending=True)
            probs = torch.softmax(sx, dim=-1)
            before = torch.cumsum(probs, dim=-1) - probs
            drop = before >= params.top_p  # keeps the smallest set reaching top_p (at least one)
            x = x.clone()
            x[si[drop]] = float("-inf")
        probs = torch.softmax(x, dim=-1)
        tok = int(torch.multinomial(probs, 1, generator=generator))
    top = []
    if params.logprobs:
        v, i = torch.topk(logp, params.logprobs)
        top = [(int(a), float(b)) for a, b in zip(i, v)]
    return tok, float(logp[tok]), top
