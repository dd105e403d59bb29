"""The KV hand-off of prefill/decode disaggregation, as one safetensors blob.

A prefill server runs a request's prompt, samples its first token(s) and
packs what a decode server needs to go on as if it had run the prompt
itself:

- ``keys`` / ``values``: ``[layers, prompt tokens, kv_heads, head_dim]`` in
  the model's dtype, the prompt's keys and values per layer (token ``p`` at
  row ``p``; block layout is each server's own business);
- ``prompt``: the prompt's token ids (int64);
- per choice ``i`` (``n`` choices share the prompt): ``generator.i``, the
  state of its sampling ``torch.Generator`` after the first draw (so a
  seeded request continues exactly as on one server), and in the metadata
  its first token, that token's logprob and top alternatives;
- metadata ``torch_tpu.serve.kv``: JSON with the format tag, the choices and
  ``meta`` (the server puts the original request there: endpoint and body).

`unpack` checks everything it reads and raises `ValueError` with a message
naming what is wrong; `check_model` checks a payload against the model that
is to continue it.
"""
import dataclasses
import json

import torch

FORMAT = "torch_tpu.serve.kv/1"
_KEY = "torch_tpu.serve.kv"


@dataclasses.dataclass
class KVPayload:
    keys: torch.Tensor          # [layers, n, kv_heads, head_dim]
    values: torch.Tensor
    prompt: list                # token ids
    choices: list               # dicts: token, logprob, top [(token, logprob)], generator_state (uint8 tensor)
    meta: dict

    @property
    def num_tokens(self):
        return len(self.prompt)


def pack(keys, values, prompt, choices, meta=None):
    """Returns the payload as bytes. `choices`: dicts with token, logprob,
    top and generator_state (`torch.Generator.get_state()`)."""
    from safetensors.torch import save
    if keys.shape != values.shape or keys.dim() != 4 or keys.shape[1] != len(prompt):
        raise ValueError(f"kv_transfer.pack: keys {tuple(keys.shape)} / values {tuple(values.shape)} do not "
                         f"hold [layers, {len(prompt)} prompt tokens, kv_heads, head_dim]")
    if not choices:
        raise ValueError("kv_transfer.pack: at least one choice (first token) is needed")
    tensors = {"keys": keys.contiguous(), "values": values.contiguous(),
               "prompt": torch.tensor([int(t) for t in prompt], dtype=torch.int64)}
    info = []
    for i, c in enumerate(choices):
        tensors[f"generator.{i}"] = c["generator_state"].contiguous()
        info.append({"token": int(c["token"]), "logprob": float(c["logprob"]),
                     "top": [[int(t), float(v)] for t, v in c.get("top", ())]})
    md = {_KEY: json.dumps({"format": FORMAT, "choices": info, "meta": meta or {}})}
    return save(tensors, metadata=md)


def unpack(data):
    """bytes -> KVPayload; ValueError for anything that is not a whole payload."""
    from safetensors.torch import load
    if not isinstance(data, (bytes, bytearray)) or len(data) < 8:
        raise ValueError("the KV payload is empty or not bytes")
    try:
        tensors = load(bytes(data))
        # the metadata: safetensors' header is an 8-byte length and JSON
        n = int.from_bytes(bytes(data[:8]), "little")
        header = json.loads(bytes(data[8:8 + n]))
        info = json.loads(header["__metadata__"][_KEY])
    except Exception as e:  # safetensors' own error types vary by version
        raise ValueError(f"the KV payload is not a torch_tpu.serve safetensors payload: {e}") from None
    if info.get("format") != FORMAT:
        raise ValueError(f"the KV payload's format is {info.get('format')!r}; this server reads {FORMAT!r}")
    for name in ("keys", "values", "prompt"):
        if name not in tensors:
            raise ValueError(f"the KV payload has no '{name}' tensor")
    k, v, prompt = tensors["keys"], tensors["values"], tensors["prompt"]
    if k.dim() != 4 or k.shape != v.shape or prompt.dim() != 1 or k.shape[1] != prompt.numel():
        raise ValueError(f"the KV payload's shapes disagree: keys {tuple(k.shape)}, values {tuple(v.shape)}, "
                         f"prompt {tuple(prompt.shape)} (want [layers, prompt tokens, kv_heads, head_dim])")
    if prompt.numel() == 0:
        raise ValueError("the KV payload's prompt is empty")
    choices = []
    for i, c in enumerate(info.get("choices") or []):
        g = tensors.get(f"generator.{i}")
        if g is None:
            raise ValueError(f"the KV payload has no generator state for choice {i}")
        choices.append({"token": int(c["token"]), "logprob": float(c["logprob"]),
                        "top": [(int(t), float(x)) for t, x in c["top"]], "generator_state": g})
    if not choices:
        raise ValueError("the KV payload has no choices (first tokens)")
    return KVPayload(k, v, prompt.tolist(), choices, info.get("meta") or {})


def check_model(payload, num_layers, kv_heads, head_dim, dtype, vocab_size):
    """ValueError unless `payload` fits a model of this shape."""
    want = (num_layers, payload.num_tokens, kv_heads, head_dim)
    if tuple(payload.keys.shape) != want:
        raise ValueError(f"the KV payload holds keys {tuple(payload.keys.shape)}; this model needs {want} "
                         "(was it prefilled by a server running another model?)")
    if payload.keys.dtype != dtype:
        raise ValueError(f"the KV payload is {payload.keys.dtype}; this model runs {dtype} (same --dtype on "
                         "prefill and decode servers)")
    bad = [t for t in payload.prompt + [c["token"] for c in payload.choices] if not 0 <= t < vocab_size]
    if bad:
        raise ValueError(f"the KV payload's token id {bad[0]} is outside the vocabulary (size {vocab_size})")


def bytes_per_token(num_layers, kv_heads, head_dim, dtype):
    """Keys and values of one token across the layers: the payload's size per
    prompt token, less the fixed header and generator states."""
    return 2 * num_layers * kv_heads * head_dim * torch.tensor([], dtype=dtype).element_size()
