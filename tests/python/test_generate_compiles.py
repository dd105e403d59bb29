"""Programs compiled per Hugging Face `generate` call on tpu (issue 19 part 6).

Greedy decoding of a tiny random-weight Llama must be token-identical to CPU,
and the number of programs a call compiles must not grow with the number of
new tokens.

Why each decode step used to compile (TORCH_TPU_EXPLAIN_RECOMPILES=1): HF's
loop grows `input_ids`, `attention_mask` and `position_ids` by one column per
step (`torch.cat`) and reads the next step's inputs from them; every small
program touching them had a new shape (a view's storage size and the stride
of its size-1 dim are in the key), and with the dynamic cache the key/value
length grows too, so the model's forward was a new program per step.
`torch_tpu/generation.py` now runs that bookkeeping on the host and gives tpu
models a static cache sized to a power-of-two bucket by default: a call
compiles its prefill and its decode forward (2 programs under torch.compile;
in Fused eager a short prompt is prefilled as decode steps, so 1 forward
program), and calls in the same bucket compile nothing. The dynamic cache,
when asked for, still compiles one program per new length.

The second half tests the replay of the recorded decode step
(torch_tpu/_decode_replay.py): output token-identical to CPU with replay on
and off, sampling reproducible under a seed, and the guard's fallbacks (a
parameter changed in place or replaced between calls, a new cache per call,
the dynamic cache, a hook on a submodule), each still equal to CPU."""
import copy
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

import torch_tpu  # noqa: E402
import torch_tpu.debug  # noqa: E402
import torch_tpu.generation  # noqa: E402

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (requirements.txt installs it)")

PROMPT_LEN = 6


def _programs():
    """Programs made ready to run: compiled (any mode) or loaded from disk."""
    s = torch_tpu.cache_stats()
    return sum(s["compiles_by_mode"].values()) + s["persistent"]["loads"]


@pytest.fixture(scope="module")
def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=128, pad_token_id=0, bos_token_id=1,
                      eos_token_id=2)
    cpu = LlamaForCausalLM(cfg).eval()
    dev = copy.deepcopy(cpu).to("tpu")
    prompt = torch.randint(3, cfg.vocab_size, (1, PROMPT_LEN))
    return cpu, dev, prompt


def _generate(cpu, dev, prompt, n, cache_len=None, dynamic=False):
    kw = dict(max_new_tokens=n, min_new_tokens=n, do_sample=False)
    if dynamic:
        kw["cache_implementation"] = "dynamic"

    def extra():  # a fresh cache per call: CPU and tpu must not share one
        return {} if cache_len is None else {"past_key_values": _static_cache(dev, cache_len)}

    want = cpu.generate(prompt, attention_mask=torch.ones_like(prompt), **kw, **extra())
    torch_tpu.debug.reset_fallback_report()
    before = _programs()
    got = dev.generate(prompt.to("tpu"), attention_mask=torch.ones_like(prompt).to("tpu"), **kw,
                       **extra())
    assert got.device.type == "tpu"
    got = got.cpu()
    compiled = _programs() - before
    assert got.shape == want.shape == (1, PROMPT_LEN + n)
    assert torch.equal(got, want), f"tpu {got.tolist()} != cpu {want.tolist()}"
    assert {k: v for k, v in torch_tpu.debug.fallback_report().items() if v} == {}
    return compiled


def _static_cache(dev, length):
    from transformers import StaticCache

    return StaticCache(config=dev.config, max_cache_len=length)


def test_user_static_cache_compiles_bounded(llama):
    cpu, dev, prompt = llama
    c8 = _generate(cpu, dev, prompt, 8, cache_len=56)
    c32 = _generate(cpu, dev, prompt, 32, cache_len=56)
    print(f"user static cache: {c8} programs for 8 new tokens, then {c32} for 32")
    assert c8 <= 10
    assert c32 == 0, f"{c32} programs compiled for 32 new tokens after {c8} for 8"


def test_default_cache_compiles_bounded(llama):
    cpu, dev, prompt = llama
    # prompt 6 + 8 and 6 + 32 share the 64-position bucket; 6 + 64 takes the
    # 128 one (the model's context): a new bucket compiles the same programs
    c8 = _generate(cpu, dev, prompt, 8)
    c32 = _generate(cpu, dev, prompt, 32)
    c64 = _generate(cpu, dev, prompt, 64)
    print(f"default (static, bucketed) cache: {c8}, {c32}, {c64} programs for 8, 32, 64 new tokens")
    assert c8 <= 10 and c64 <= 10
    assert c64 <= c8, "a new bucket must compile no more than the first call did"
    assert c32 == 0, f"{c32} programs compiled for 32 new tokens in the bucket of 8"


def test_compiled_forward_static_cache_no_recompiles(llama):
    cpu, dev, prompt = llama
    model = copy.deepcopy(dev)
    model.forward = torch.compile(model.forward, backend="tpu")
    torch._dynamo.reset()
    c8 = _generate(cpu, model, prompt, 8, cache_len=56)
    c32 = _generate(cpu, model, prompt, 32, cache_len=56)
    print(f"torch.compile(backend='tpu'), static cache: {c8} programs for 8 new tokens, "
          f"then {c32} for 32")
    assert c8 <= 10
    assert c32 == 0, f"{c32} programs compiled for 32 new tokens after {c8} for 8"


def test_dynamic_cache_still_works(llama):
    cpu, dev, prompt = llama
    c2 = _generate(cpu, dev, prompt, 2, dynamic=True)
    c5 = _generate(cpu, dev, prompt, 5, dynamic=True)
    print(f"dynamic cache: {c2} programs for 2 new tokens, then {c5} for 5")
    # each new key/value length is a new forward program: at most one per step
    assert c5 <= (5 - 2) + 3


def test_host_loop_off_still_matches_cpu(llama):
    cpu, dev, prompt = llama
    before = torch_tpu.generation.configure(static_cache=False, host_loop=False)
    try:
        _generate(cpu, dev, prompt, 3)
    finally:
        torch_tpu.generation.configure(**before)


# --- replay of the recorded decode step (torch_tpu/_decode_replay.py) ---

def _greedy(model, prompt, n, **extra):
    kw = dict(max_new_tokens=n, min_new_tokens=n, do_sample=False)
    if prompt.device.type == "tpu":
        extra.setdefault("attention_mask", torch.ones_like(prompt))
    else:
        extra.setdefault("attention_mask", torch.ones_like(prompt))
    return model.generate(prompt, **kw, **extra).cpu()


def test_replay_on_off_token_identical_to_cpu(llama):
    cpu, dev, prompt = llama
    want = _greedy(cpu, prompt, 24)
    got = {}
    for replay in (True, False):
        before = torch_tpu.generation.configure(replay=replay)
        torch_tpu.generation.replay_stats(reset=True)
        try:
            got[replay] = _greedy(dev, prompt.to("tpu"), 24)
        finally:
            torch_tpu.generation.configure(**before)
        stats = torch_tpu.generation.replay_stats()
        print(f"replay={replay}: {stats}")
        if replay:
            # the prompt is prefilled as decode steps; all but the two recorded steps replay
            assert stats["replays"] >= 24 + PROMPT_LEN - 1 - 2, stats
        else:
            assert stats["replays"] == 0 and stats["recorded"] == 0, stats
    assert torch.equal(got[True], want), f"replay on {got[True].tolist()} != cpu {want.tolist()}"
    assert torch.equal(got[False], want), f"replay off {got[False].tolist()} != cpu {want.tolist()}"


def test_replay_sampling_reproducible_under_seed(llama):
    _, dev, prompt = llama
    kw = dict(max_new_tokens=16, min_new_tokens=16, do_sample=True, top_k=0, temperature=1.0)
    p = prompt.to("tpu")
    runs = []
    for replay in (True, True, False):
        before = torch_tpu.generation.configure(replay=replay)
        try:
            torch.manual_seed(1234)
            runs.append(dev.generate(p, attention_mask=torch.ones_like(p), **kw).cpu())
        finally:
            torch_tpu.generation.configure(**before)
    assert torch.equal(runs[0], runs[1]), "sampling under the same seed differs between calls"
    assert torch.equal(runs[0], runs[2]), "sampling differs with replay on and off"


def test_replay_falls_back_after_in_place_parameter_change(llama):
    cpu0, dev0, prompt = llama
    cpu, dev = copy.deepcopy(cpu0), copy.deepcopy(dev0)
    assert torch.equal(_greedy(dev, prompt.to("tpu"), 12), _greedy(cpu, prompt, 12))
    with torch.no_grad():  # the same change on both: the next call must see it
        for model in (cpu, dev):
            model.model.layers[0].mlp.down_proj.weight.mul_(-3.0)
            model.lm_head.weight.add_(0.05)
    torch_tpu.generation.replay_stats(reset=True)
    want = _greedy(cpu, prompt, 12)
    got = _greedy(dev, prompt.to("tpu"), 12)
    stats = torch_tpu.generation.replay_stats()
    print(f"after an in-place change: {stats}")
    assert torch.equal(got, want), f"tpu {got.tolist()} != cpu {want.tolist()}"
    assert stats["fallbacks"].get("a parameter or buffer was modified in place", 0) >= 1, stats
    # a parameter replaced by another object (same shape)
    with torch.no_grad():
        w = cpu.lm_head.weight.detach().clone() * 0.5
    cpu.lm_head.weight = torch.nn.Parameter(w)
    dev.lm_head.weight = torch.nn.Parameter(w.to("tpu"))
    torch_tpu.generation.replay_stats(reset=True)
    want = _greedy(cpu, prompt, 12)
    got = _greedy(dev, prompt.to("tpu"), 12)
    stats = torch_tpu.generation.replay_stats()
    assert torch.equal(got, want), f"tpu {got.tolist()} != cpu {want.tolist()}"
    assert stats["fallbacks"].get("a parameter or buffer was replaced", 0) >= 1, stats


def test_replay_with_a_different_cache_each_call(llama):
    cpu, dev, prompt = llama
    torch_tpu.generation.replay_stats(reset=True)
    for n in (10, 20):
        want = cpu.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=n,
                            min_new_tokens=n, do_sample=False,
                            past_key_values=_static_cache(cpu, 48))
        p = prompt.to("tpu")
        got = dev.generate(p, attention_mask=torch.ones_like(p), max_new_tokens=n, min_new_tokens=n,
                           do_sample=False, past_key_values=_static_cache(dev, 48),
                           disable_compile=True).cpu()
        assert torch.equal(got, want), f"tpu {got.tolist()} != cpu {want.tolist()}"
    stats = torch_tpu.generation.replay_stats()
    print(f"a new cache per call: {stats}")
    assert stats["replays"] > 0, stats
    assert stats["fallbacks"].get("another cache object", 0) >= 1, stats


def test_replay_skipped_for_dynamic_cache_and_hooks(llama):
    cpu, dev, prompt = llama
    torch_tpu.generation.replay_stats(reset=True)
    got = _greedy(dev, prompt.to("tpu"), 4, cache_implementation="dynamic")
    assert torch.equal(got, _greedy(cpu, prompt, 4))
    stats = torch_tpu.generation.replay_stats()
    assert stats["replays"] == 0 and stats["fallbacks"].get("argument 'cache' is DynamicCache", 0) >= 4, stats
    # a hook on a submodule must run at every step: no replay while it is there
    seen = []
    h = dev.model.layers[1].register_forward_hook(lambda m, a, o: seen.append(1))
    try:
        torch_tpu.generation.replay_stats(reset=True)
        got = _greedy(dev, prompt.to("tpu"), 8)
    finally:
        h.remove()
    assert torch.equal(got, _greedy(cpu, prompt, 8))
    assert len(seen) == 8 + PROMPT_LEN - 1, len(seen)
    assert torch_tpu.generation.replay_stats()["replays"] == 0


def test_stepwise_prefill_falls_back_when_the_cache_layout_is_wrong(llama, monkeypatch):
    # a model whose key/value head size the stepwise prefill guesses wrong:
    # the first step fails, the cache is put back and the prompt is prefilled
    # by one forward, with the same tokens as CPU
    from torch_tpu import _decode_replay

    cpu, dev, prompt = llama
    real = _decode_replay._text_config

    def wrong(model):
        cfg = copy.copy(real(model))
        cfg.head_dim = 2 * (cfg.hidden_size // cfg.num_attention_heads)
        return cfg

    monkeypatch.setattr(_decode_replay, "_text_config", wrong)
    torch_tpu.generation.replay_stats(reset=True)
    got = _greedy(dev, prompt.to("tpu"), 6)
    assert torch.equal(got, _greedy(cpu, prompt, 6))
    stats = torch_tpu.generation.replay_stats()
    assert stats["fallbacks"].get("the stepwise prefill failed; prefilled as one forward") == 1, stats
