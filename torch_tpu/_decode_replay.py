"""Replaying HF's static-cache decode step (used by torch_tpu.generation).

Like CUDA graphs for decode: a decode forward is recorded once as one region
program (`_graph.capture(replay_args=...)`, the machinery torch.compile's
backend uses, csrc/graph/replay.c); later decode steps with the same inputs'
layout launch that program directly with the new token, mask and the current
parameter and cache storages, skipping the Python forward and its per-op
dispatch (about 350 ops per token for a 4-layer Llama).

What the program reads is passed to every launch: the forward's tensor
arguments, every parameter and buffer of the model (the current objects,
collected each step) and the cache layers' key, value and length tensors;
the replay checks each one's dtype, sizes, strides, offset, storage size and
aliasing against the recorded call. Anything else that could make the
launch differ from running the forward falls back to the forward (recorded
again, which is a program-cache hit):

* a step is replayed only when the forward takes keyword arguments only,
  grad mode is off, no torch function/dispatch mode or global module hook is
  active, no module has a forward set on the instance (accelerate's hooks),
  no submodule has hooks or is in training mode, the autocast state
  and every non-tensor argument equal the recorded ones, and the cache is a
  `StaticCache` whose layers are all plain, initialized `StaticLayer`s (not
  offloaded; sliding-window layers keep a Python counter and are not
  replayed);
* the recorded step must have been one program whose outputs are the
  returned tensors (a `ModelOutput` of tensors and the cache);
* the same parameters and buffers (identity) at the same version counters
  (an in-place change re-records), and the same cache object;
* before the first replay, two steps are recorded and must give the same
  program with the same host values (Python numbers the forward passes to
  ops): a number that changes between steps is baked into a recorded launch
  and would be replayed stale, so such a forward is never replayed.

Not guarded: Python state the forward reads that is neither an argument nor
a module tensor (a config field changed between steps of one call, a CPU
tensor attribute changed in place). The model's own Python code is not run
on a replayed step, so side effects of it (counters, prints) do not happen.
"""
import threading
import weakref

import torch

from . import _C, _graph

_MAX_ENTRIES = 8
_stats_lock = threading.Lock()
_stats = {"replays": 0, "recorded": 0, "fallbacks": {}}


def stats(reset=False):
    """Counts of this process: replayed decode steps, recorded (eager) steps
    that made a replay handle, and why other steps were not replayed."""
    with _stats_lock:
        out = {"replays": _stats["replays"], "recorded": _stats["recorded"],
               "fallbacks": dict(_stats["fallbacks"])}
        if reset:
            _stats["replays"] = _stats["recorded"] = 0
            _stats["fallbacks"] = {}
    return out


def _note(reason):
    with _stats_lock:
        _stats["fallbacks"][reason] = _stats["fallbacks"].get(reason, 0) + 1


def _count(key):
    with _stats_lock:
        _stats[key] += 1


class _Entry:
    __slots__ = ("cache", "handle", "signature", "ready", "template", "tensors", "versions",
                 "dead")

    def __init__(self):
        self.cache = None          # weakref to the cache of the recorded step
        self.handle = None         # replay handle
        self.signature = None      # (program, host values) of the last record
        self.ready = False         # two records agreed: replays may run
        self.template = None       # how to rebuild the ModelOutput
        self.tensors = ()          # the module tensors of the recorded step
        self.versions = ()
        self.dead = ""             # why this key is never replayed


class _ModelReplays:
    def __init__(self):
        self.lock = threading.Lock()
        self.entries = {}


_models = weakref.WeakKeyDictionary()
_models_lock = threading.Lock()


def _replays_for(model):
    with _models_lock:
        r = _models.get(model)
        if r is None:
            r = _models[model] = _ModelReplays()
        return r


def forget(model):
    """Drops the kept replays of `model`."""
    with _models_lock:
        _models.pop(model, None)


_SCALARS = (type(None), bool, int, float, str)


def _static_cache_types():
    from transformers.cache_utils import StaticCache, StaticLayer
    return StaticCache, StaticLayer


def _module_tensors(model):
    """The parameters and buffers (deduplicated, in module order), or a
    reason why the model's state rules replays out. (A plain walk over
    `_modules`: `model.modules()` costs several times more per step.)"""
    tensors, seen, mods, stack = [], set(), set(), [model]
    while stack:
        m = stack.pop()
        if id(m) in mods:
            continue
        mods.add(id(m))
        d = m.__dict__
        if d["training"]:
            return "a module is in training mode"
        if m is not model and (d["_forward_hooks"] or d["_forward_pre_hooks"] or d["_backward_hooks"]
                               or d["_backward_pre_hooks"] or "forward" in d):
            return "a submodule has hooks"  # a forward set on the instance: accelerate's hooks
        for t in d["_parameters"].values():
            if t is not None and id(t) not in seen:
                seen.add(id(t))
                tensors.append(t)
        for t in d["_buffers"].values():
            if t is not None and id(t) not in seen:
                seen.add(id(t))
                tensors.append(t)
        stack.extend(c for c in reversed(d["_modules"].values()) if c is not None)
    return tensors


def _plan(model, args, kwargs):
    """(key, argument list, cache, module tensors) for a replayable call, or
    a str saying why the call is not replayable."""
    if args:
        return "positional arguments"
    if torch.is_grad_enabled():
        return "grad mode is on"
    if torch._C._is_torch_function_mode_enabled() or torch._C._len_torch_dispatch_stack():
        return "a torch function or dispatch mode is active"
    mm = torch.nn.modules.module
    if (mm._global_forward_hooks or mm._global_forward_pre_hooks or mm._global_backward_hooks
            or mm._global_backward_pre_hooks):
        return "global module hooks"
    StaticCache, StaticLayer = _static_cache_types()
    cache, inputs, key = None, [], []
    for name in sorted(kwargs):
        v = kwargs[name]
        if isinstance(v, torch.Tensor):
            if v.device.type != "tpu":
                return "a tensor argument is not on tpu"
            inputs.append(v)
            key.append((name, "tensor"))
        elif isinstance(v, StaticCache) and type(v) is StaticCache and cache is None:
            cache = v
            key.append((name, "cache"))
        elif isinstance(v, _SCALARS):
            key.append((name, type(v), v))
        else:
            return f"argument {name!r} is {type(v).__name__}"
    if cache is None:
        return "no static cache"
    if getattr(cache, "offloading", False):
        return "the cache offloads"
    cache_tensors = []
    for layer in cache.layers:
        if type(layer) is not StaticLayer:
            return f"a cache layer is {type(layer).__name__}"
        if not layer.is_initialized:
            return "the cache is not initialized (prefill)"
        cache_tensors += [layer.keys, layer.values, layer.cumulative_length]
    tensors = _module_tensors(model)
    if isinstance(tensors, str):
        return tensors
    key.append(len(tensors))
    key.append(len(cache.layers))
    key.append((torch.is_autocast_enabled("tpu"), torch.get_autocast_dtype("tpu")))
    cfg = getattr(model, "config", None)
    key.append(tuple(getattr(cfg, k, None) for k in
                     ("output_attentions", "output_hidden_states")))
    return tuple(key), inputs + tensors + cache_tensors, cache, tensors


def _template(out, cache):
    """(output class, ((field, tensor index or None for the cache), ...)) and
    the output tensors, or None when the output is not a ModelOutput of tpu
    tensors and the cache."""
    if not (hasattr(out, "keys") and hasattr(out, "to_tuple")):
        return None
    fields, tensors = [], []
    for k in out.keys():
        v = out[k]
        if v is cache:
            fields.append((k, None))
        elif isinstance(v, torch.Tensor) and v.device.type == "tpu" and not v.requires_grad:
            fields.append((k, len(tensors)))
            tensors.append(v)
        else:
            return None
    return (type(out), tuple(fields)), tensors


def _rebuild(template, outs, cache):
    cls, fields = template
    return cls(**{k: (cache if i is None else outs[i]) for k, i in fields})


def _same(a, b):
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _record(replays, entry, forward, kwargs, arglist, cache, tensors):
    versions = tuple(t._version for t in tensors)
    with _graph.capture(replay_args=arglist) as cap:
        out = forward(**kwargs)
        made = _template(out, cache)
        cap.outputs = made[1] if made is not None else None
    if made is None:
        entry.dead = "the output is not a ModelOutput of tpu tensors and the cache"
    elif cap.replay is None:
        entry.dead = cap.replay_why_not or "no replay"
    else:
        sig = _C._replay_signature(cap.replay)
        if versions != tuple(t._version for t in tensors):
            entry.ready = False  # the forward changed a module tensor: not replayable
            entry.dead = "the forward modifies a parameter or buffer in place"
        else:
            with replays.lock:
                entry.ready = entry.signature == sig
                entry.signature = sig
                entry.handle = cap.replay
                entry.template = made[0]
                entry.cache = weakref.ref(cache)
                entry.tensors = tuple(tensors)
                entry.versions = versions
            _count("recorded")
    if entry.dead:
        _note(entry.dead)
    return out


PREFILL_STEPWISE_MAX = 64  # prompts up to this length are prefilled token by token


def _stepwise_prefill(model, kwargs):
    """(cache, prompt ids on the host) when the call is a prefill that can
    run as single-token decode steps, else None.

    Prefilling a short prompt one token at a time with the decode step's
    program saves compiling a second forward program (seconds on XLA:CPU,
    most of a first `generate` call) for a few decode steps' time. Only a
    plain causal prefill qualifies: `input_ids` of 2 to PREFILL_STEPWISE_MAX
    tokens with positions 0, 1, ... (no padding: HF passes no mask then), a
    fresh (never written) StaticCache of plain layers, only the last
    position's logits wanted (`logits_to_keep=1`, as generate asks), outside
    autocast and grad mode."""
    names = {k for k, v in kwargs.items() if v is not None}
    cache_key = "cache" if "cache" in names else "past_key_values"
    if names - {"input_ids", cache_key, "position_ids", "logits_to_keep", "use_cache", "return_dict"} \
            or not {"input_ids", "position_ids"} <= names:
        return None
    ids, pos = kwargs["input_ids"], kwargs["position_ids"]
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or not 1 < ids.shape[1] <= PREFILL_STEPWISE_MAX:
        return None
    if not isinstance(pos, torch.Tensor) or pos.shape != ids.shape or pos.device != ids.device:
        return None
    if ids.device.type != "tpu" or kwargs.get("logits_to_keep") != 1 or type(kwargs["logits_to_keep"]) is not int:
        return None
    if kwargs.get("use_cache") is False or kwargs.get("return_dict") is False:
        return None
    if torch.is_grad_enabled() or torch.is_autocast_enabled("tpu"):
        return None
    # the step mask built below is sdpa's (boolean, True: attend); models
    # whose keys and values differ in head size are left to the prefill
    cfg = _text_config(model)
    if getattr(cfg, "_attn_implementation", None) != "sdpa":
        return None
    if any(getattr(cfg, k, None) is not None for k in ("v_head_dim", "kv_lora_rank", "qk_nope_head_dim")):
        return None
    StaticCache, StaticLayer = _static_cache_types()
    cache = kwargs.get(cache_key)
    if type(cache) is not StaticCache or getattr(cache, "offloading", False):
        return None
    if not all(type(layer) is StaticLayer and not layer.is_initialized for layer in cache.layers):
        return None
    ids_host, pos_host = ids.cpu(), pos.cpu()
    if not torch.equal(pos_host, torch.arange(ids.shape[1]).expand_as(pos_host)):
        return None
    return cache, ids_host


def _text_config(model):
    cfg = model.config
    return cfg.get_text_config(decoder=True) if hasattr(cfg, "get_text_config") else cfg


def _uninitialize(cache):
    for layer in cache.layers:  # as StaticLayer.__init__ leaves it
        for name in ("keys", "values"):
            layer.__dict__.pop(name, None)
        layer.cumulative_length = torch.tensor(0, dtype=int)
        layer.is_initialized = False


def _prefill_by_steps(model, kwargs, plan, step, forward):
    cache, ids = plan
    device = kwargs["input_ids"].device
    cfg = _text_config(model)
    heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    batch, n = ids.shape
    cache.early_initialization(batch, heads, head_dim, model.dtype, device)
    length = cache.layers[0].max_cache_len
    positions = torch.arange(length)
    out = None
    for i in range(n):
        # the inputs HF gives the decode step at position i
        call = dict(kwargs)
        call["input_ids"] = torch.empty((batch, 1), dtype=ids.dtype).copy_(ids[:, i:i + 1]).to(device)
        call["position_ids"] = torch.full((batch, 1), i, dtype=kwargs["position_ids"].dtype).to(device)
        mask = (positions <= i).view(1, 1, 1, length).expand(batch, 1, 1, length).contiguous()
        call["attention_mask"] = mask.to(device)
        if i:
            out = step(**call)
            continue
        try:
            out = step(**call)
        except Exception:  # noqa: BLE001 - the cache's guessed layout did not fit this model
            _uninitialize(cache)
            _note("the stepwise prefill failed; prefilled as one forward")
            with _graph.capture():
                return forward(**kwargs)
    return out  # the last position's logits (logits_to_keep=1) and the cache


def replaying_forward(model, forward):
    """`forward` (the model's bound forward) with decode steps replayed."""
    replays = _replays_for(model)

    def run(*args, **kwargs):
        from .generation import _settings
        if not args and _settings["stepwise_prefill"]:
            prefill = _stepwise_prefill(model, kwargs)
            if prefill is not None:
                return _prefill_by_steps(model, kwargs, prefill, run, forward)
        plan = _plan(model, args, kwargs)
        if isinstance(plan, str):
            _note(plan)
            with _graph.capture():
                return forward(*args, **kwargs)
        key, arglist, cache, tensors = plan
        with replays.lock:
            entry = replays.entries.get(key)
            if entry is None:
                if len(replays.entries) >= _MAX_ENTRIES:
                    replays.entries.pop(next(iter(replays.entries)))
                entry = replays.entries[key] = _Entry()
        if entry.dead:
            _note(entry.dead)
            with _graph.capture():
                return forward(**kwargs)
        why = None
        if not entry.ready:
            why = "recording (the first steps of a layout)"
        elif not _same(entry.tensors, tensors):
            why = "a parameter or buffer was replaced"
        elif entry.versions != tuple(t._version for t in tensors):
            why = "a parameter or buffer was modified in place"
        elif entry.cache() is not cache:
            why = "another cache object"
        else:
            outs = _graph.replay(entry.handle, arglist)
            if outs is not None:
                _count("replays")
                return _rebuild(entry.template, outs, cache)
            why = "the replay refused the arguments' layout"
        _note(why)
        return _record(replays, entry, forward, kwargs, arglist, cache, tensors)

    return run
