"""Hugging Face `generate` on tpu without a compile per new token.

A decoder-only model's `generate` on tpu compiled new programs at every step:
HF's decode loop grows `input_ids`, `attention_mask` and `position_ids` by one
column per step (`torch.cat`) and builds the next step's inputs from them, so
every small program touching them had a new shape; with HF's default dynamic
cache the key/value length grows too, so the model's own forward had a new
shape every step. XLA compiles one program per shape.

What this module does, for a decoder-only model on tpu (installed when
`transformers.generation.utils` is imported; nothing happens to other
devices):

* **Static key/value cache by default.** When the caller chose no cache (no
  `cache_implementation`, in the call or in the model's `generation_config`,
  and no `cache`/`past_key_values` object), `generate` runs with HF's
  `cache_implementation="static"`, sized to a bucket of the generation's
  length (the next power of two, at least 64, at most the model's context),
  so the model's decode forward is one program for every step and calls of
  nearby lengths share it. Ask for `cache_implementation="dynamic"` to get
  HF's dynamic cache (which still works, compiling per step).
* **The decode loop's bookkeeping on the host.** The loop's growing tensors
  (`input_ids`, the 2-D attention mask, position ids), its logits processing,
  stopping criteria and the attention-mask construction run on CPU, as HF
  runs them for CPU inputs; only the model's forward runs on tpu, its tensor
  arguments uploaded by a forward pre-hook (one token, its position and the
  fixed-size mask per decode step). HF already moves each step's logits to
  the loop's device and reads a host value every step, so this adds one small
  upload per step and removes a compile per step. Greedy output is
  token-identical to CPU (the same logits, the same host code); sampling
  draws from the CPU generator, which `torch.manual_seed` seeds as well. The
  returned tensors are on the model's device, as before.
* **One program per forward.** In Fused eager the forward is recorded as one
  region (`torch_tpu._graph.capture()`): Fused eager's loop detection would
  cut it between identical layers (3 programs for a 4-layer Llama, each a
  compile of seconds on the first call).
* **Decode steps replayed** (torch_tpu/_decode_replay.py, like CUDA graphs
  for static-cache decode): once a decode forward has been recorded as one
  region program (two steps that agree), later steps with the same inputs'
  layout launch that program directly with the new token, position and mask
  and the current parameters and cache tensors, skipping HF's Python forward
  and the ~350 ops it dispatches per token. Guarded (see that module): grad
  mode, hooks, training mode, autocast, argument layouts, the same
  parameters at the same version counters, the same cache object, plain
  StaticCache layers; anything else runs the forward. Off:
  `configure(replay=False)`.
* **Short prompts prefilled as decode steps.** A plain causal prefill of at
  most 64 tokens into a fresh static cache runs token by token through the
  decode step's program, so a call compiles one forward program instead of
  two (the prefill program is seconds of XLA:CPU compile, most of a first
  call). Off: `configure(stepwise_prefill=False)`.

`torch_tpu.generation.configure(static_cache=False, host_loop=False,
replay=False, stepwise_prefill=False)` turns any of these off for the process
(all on by default); `replay_stats()` counts replayed steps and why others
were not.

Figures (benchmarks/hf_decode.py, the examples' 4-layer Llama, XLA:CPU on
the shared 2-core machine; ratios against CPU eager in the same run):
2026-12-06, two runs at load average 11-12 (2 cores shared): steady state,
32 new tokens per call: Fused eager with the static cache and replay 2.87x
and 2.90x CPU eager (on one thread, the faster CPU variant on the loaded
machine), 1.12x and 0.93x without replay; a first call of 256 new tokens in
a fresh process with an empty persistent cache: 4.45 s and 5.58 s, 0.52x and
0.34x CPU eager (0.31x/0.29x without the stepwise prefill, 0.23x/0.18x
without it and replay). The decode program's XLA:CPU compile (2.3-2.8 s) is
about three quarters of that first call; compiling at
`--xla_backend_optimization_level=0` halved it but made each step about 4x
slower (3.3 ms against 0.8 ms), so it is not used. 4 programs compiled by
the first call's process, of which one forward program (the decode step;
two with the prefill program) and a 3-op cache initialization, 0 for later
calls in the same bucket; greedy tokens identical to CPU.
"""
import functools
import importlib.abc
import sys
import threading

import torch

_settings = {"static_cache": True, "host_loop": True, "replay": True, "stepwise_prefill": True}
_lock = threading.Lock()
_TARGET = "transformers.generation.utils"
MIN_BUCKET = 64


def configure(*, static_cache=None, host_loop=None, replay=None, stepwise_prefill=None):
    """Turn the tpu generate defaults on or off for the process; returns the
    previous settings as a dict."""
    with _lock:
        before = dict(_settings)
        if static_cache is not None:
            _settings["static_cache"] = bool(static_cache)
        if host_loop is not None:
            _settings["host_loop"] = bool(host_loop)
        if replay is not None:
            _settings["replay"] = bool(replay)
        if stepwise_prefill is not None:
            _settings["stepwise_prefill"] = bool(stepwise_prefill)
    return before


def replay_stats(reset=False):
    """Decode steps replayed, steps recorded for a replay, and why other
    forwards were not replayed (reason -> count), in this process."""
    from . import _decode_replay
    return _decode_replay.stats(reset)


def cache_bucket(length, context=None):
    """The static cache length used for a generation of `length` positions:
    the next power of two, at least MIN_BUCKET, capped at the model's context
    (never below `length`)."""
    b = MIN_BUCKET
    while b < length:
        b *= 2
    if context is not None and context >= length:
        b = min(b, context)
    return max(b, length)


def _is_tpu(t):
    return isinstance(t, torch.Tensor) and t.device.type == "tpu"


def _to(obj, device):
    # tensors, and tensors inside dicts/lists/tuples (hybrid models pass a dict
    # of masks); anything else (the cache object, flags) as it is
    if isinstance(obj, torch.Tensor):
        return obj.to(device) if obj.device != device else obj
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_to(v, device) for v in obj)
    return obj


def _generation_length(model, input_ids, generation_config, kwargs):
    """Prompt plus new tokens as generate will run it, or None if unknown."""
    cfg = generation_config if generation_config is not None else model.generation_config
    new = kwargs.get("max_new_tokens", getattr(cfg, "max_new_tokens", None))
    if new is not None:
        return input_ids.shape[-1] + int(new)
    if "max_length" in kwargs:
        return int(kwargs["max_length"])
    return None


def _context(model):
    cfg = model.config.get_text_config(decoder=True) if hasattr(model.config, "get_text_config") \
        else model.config
    return getattr(cfg, "max_position_embeddings", None)


def _applies(model, input_ids, generation_config, kwargs):
    if not _settings["host_loop"] or not _is_tpu(input_ids):
        return False
    if getattr(model.config, "is_encoder_decoder", False):
        return False  # the encoder runs inside generate, outside the hooked forward
    if input_ids.dim() != 2 or input_ids.dtype not in (torch.long, torch.int):
        return False
    # assisted/speculative decoding, embeddings as inputs, custom prefix functions:
    # left to HF as they are
    for k in ("inputs_embeds", "assistant_model", "prompt_lookup_num_tokens", "synced_gpus"):
        if kwargs.get(k) is not None:
            return False
    return model.device.type == "tpu"


def _wants_default_cache(model, generation_config, kwargs):
    if not _settings["static_cache"]:
        return False
    if kwargs.get("cache") is not None or kwargs.get("past_key_values") is not None:
        return False
    if kwargs.get("use_cache") is False or kwargs.get("cache_implementation") is not None:
        return False
    for cfg in (generation_config, model.generation_config):
        if cfg is None:
            continue
        if getattr(cfg, "cache_implementation", None) is not None or getattr(cfg, "use_cache", True) is False:
            return False
    supports = getattr(model, "_supports_default_dynamic_cache", None)
    return bool(supports()) if callable(supports) else False


def _to_device_hook(device):
    def hook(module, args, kwargs):
        return _to(args, device), _to(kwargs, device)
    return hook


_local = threading.local()
_installed = {}  # id(model) -> [generate calls inside, had an instance forward, that forward]


def _active():
    # the models whose generate runs on this thread (generate runs the forward on its thread)
    if not hasattr(_local, "active"):
        _local.active = {}
    return _local.active


def _install_forward(model):
    """Makes the model's forward, while one of its generate calls runs on
    this thread, run as one Fused region (`_graph.capture()`: Fused loop
    detection would cut it between identical layers) and replay recorded
    decode steps (torch_tpu/_decode_replay.py) unless replay is off."""
    from . import _decode_replay, _graph

    with _lock:
        rec = _installed.get(id(model))
        if rec is not None:
            rec[0] += 1
            return
        had = "forward" in model.__dict__
        inner = model.forward
        replaying = _decode_replay.replaying_forward(model, inner)

        def forward(*args, **kwargs):
            mode = _active().get(id(model))
            if mode is None or torch.compiler.is_compiling():
                # another thread, outside generate, or traced by Dynamo (HF
                # compiles the forward for a user's static cache)
                return inner(*args, **kwargs)
            if mode and not had:  # a forward set on the instance (accelerate's hooks) always runs
                return replaying(*args, **kwargs)
            with _graph.capture():
                return inner(*args, **kwargs)

        functools.update_wrapper(forward, inner)  # HF inspects the forward's signature
        _installed[id(model)] = [1, had, model.__dict__.get("forward")]
        object.__setattr__(model, "forward", forward)


def _uninstall_forward(model):
    with _lock:
        rec = _installed[id(model)]
        rec[0] -= 1
        if rec[0]:
            return
        del _installed[id(model)]
        if rec[1]:
            object.__setattr__(model, "forward", rec[2])
        else:
            object.__delattr__(model, "forward")


def _whole_forward(model):
    """Record the forward as one Fused region (graph capture): in Fused eager
    only, and not when the user compiled the forward (Dynamo's graphs are
    already one program each)."""
    from . import modes
    if modes.get_eager_mode() != "fused":
        return False
    return not hasattr(model.forward, "_torchdynamo_orig_callable")


def _move_result(out, device):
    if isinstance(out, torch.Tensor):
        return out.to(device)
    if hasattr(out, "keys") and hasattr(out, "__setitem__"):  # ModelOutput
        for k in list(out.keys()):
            v = out[k]
            if isinstance(v, (torch.Tensor, tuple, list)):
                out[k] = _to(v, device)
        return out
    return out


def _wrap(generate):
    @functools.wraps(generate)
    def tpu_generate(self, inputs=None, generation_config=None, *args, **kwargs):
        input_ids = inputs if inputs is not None else kwargs.get("input_ids")
        if args or not _applies(self, input_ids, generation_config, kwargs):
            return generate(self, inputs, generation_config, *args, **kwargs)
        device = input_ids.device
        if _wants_default_cache(self, generation_config, kwargs):
            length = _generation_length(self, input_ids, generation_config, kwargs)
            if length is not None:
                kwargs["cache_implementation"] = "static"
                kwargs["max_cache_len"] = cache_bucket(length, _context(self))
                # HF would torch.compile the forward with Inductor for a static
                # cache on tpu; the forward runs in the current tpu mode instead
                # (a user's compile_config is kept)
                cfg = generation_config if generation_config is not None else self.generation_config
                if getattr(cfg, "compile_config", None) is None and "disable_compile" not in kwargs:
                    kwargs["disable_compile"] = True
        cpu = torch.device("cpu")
        if inputs is not None:
            inputs = inputs.to(cpu)
        kwargs = {k: (_to(v, cpu) if k not in ("cache", "past_key_values") else v)
                  for k, v in kwargs.items()}
        whole = _whole_forward(self)
        handle = self.register_forward_pre_hook(_to_device_hook(device), with_kwargs=True)
        active = _active()
        nested = id(self) in active
        if whole:
            _install_forward(self)
            previous = active.get(id(self))
            active[id(self)] = _settings["replay"]
        try:
            import warnings
            with warnings.catch_warnings():
                # HF warns that the inputs are not on the model's device: intended here
                warnings.filterwarnings("ignore", message=".*device type different than your model.*")
                warnings.filterwarnings("ignore", message=".*is on .*, whereas the model is on.*")
                out = generate(self, inputs, generation_config, **kwargs)
        finally:
            handle.remove()
            if whole:
                if nested:
                    active[id(self)] = previous
                else:
                    active.pop(id(self), None)
                _uninstall_forward(self)
        return _move_result(out, device)

    tpu_generate._torch_tpu_wrapped = True
    return tpu_generate


def _patch(module):
    mixin = getattr(module, "GenerationMixin", None)
    if mixin is None or getattr(mixin.generate, "_torch_tpu_wrapped", False):
        return
    mixin.generate = _wrap(mixin.generate)


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Patches `GenerationMixin.generate` when HF's generation module is first
    imported (importing transformers at `import torch_tpu` would cost seconds)."""

    def find_spec(self, name, path, target=None):
        if name != _TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)

        loader.exec_module = exec_module
        return spec


def install():
    if _TARGET in sys.modules:
        _patch(sys.modules[_TARGET])
    elif not any(isinstance(f, _PatchAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchAfterImport())
