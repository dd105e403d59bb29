"""torch_tpu.serve's engine (issue 17): its own forward over the checkpoint's
weights on tpu, continuous batching over a paged KV cache, chunked prefill,
preemption by recompute, the prefix tree, and programs compiled per bucket.

References are Hugging Face transformers' own greedy generation on CPU for
small random-weight models built from configs (nothing is downloaded)."""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

import torch_tpu  # noqa: E402

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (requirements.txt installs it)")

from torch_tpu.serve import Engine, SamplingParams, InvalidParams  # noqa: E402
from torch_tpu.serve.kv_cache import BlockManager, OutOfBlocks  # noqa: E402

NEW = 8
# one engine shape for every test, so programs compiled by one test serve the next
# one engine shape for every test, so programs compiled by one test serve the
# next: batch always padded to 4, context to 8 blocks, queries 1 or 16 long
ENGINE = dict(block_size=8, max_num_seqs=4, max_model_len=64, chunk_size=16, min_batch_bucket=4)


def _programs():
    """Programs made ready to run: compiled (any mode) or loaded from disk."""
    s = torch_tpu.cache_stats()
    return sum(s["compiles_by_mode"].values()) + s["persistent"]["loads"]


def _model(arch):
    torch.manual_seed(0)
    if arch == "llama":
        cfg = transformers.LlamaConfig(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
            bos_token_id=1, eos_token_id=2)
        return transformers.LlamaForCausalLM(cfg).eval()
    if arch == "qwen3":
        cfg = transformers.Qwen3Config(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            max_position_embeddings=128, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
        return transformers.Qwen3ForCausalLM(cfg).eval()
    cfg = transformers.GPT2Config(vocab_size=128, n_positions=128, n_embd=64, n_layer=2, n_head=4,
                                  bos_token_id=1, eos_token_id=2)
    return transformers.GPT2LMHeadModel(cfg).eval()


def _hf_greedy(model, prompts, n=NEW):
    # no EOS: the engine's ignore_eos runs on past EOS; HF's min_new_tokens
    # would instead forbid EOS, changing the greedy tokens
    saved = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = None
    out = []
    try:
        for p in prompts:
            ids = model.generate(torch.tensor([p]), attention_mask=torch.ones(1, len(p), dtype=torch.long),
                                 max_new_tokens=n, do_sample=False, pad_token_id=0)
            out.append(ids[0, len(p):].tolist())
            assert len(out[-1]) == n
    finally:
        model.generation_config.eos_token_id = saved
    return out


def _prompts(lengths, seed=1, vocab=128):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, vocab, (n,), generator=g).tolist() for n in lengths]


GREEDY = SamplingParams(max_tokens=NEW, ignore_eos=True)


@pytest.fixture(scope="module")
def llama():
    return _model("llama")


@pytest.mark.parametrize("arch", ["llama", "qwen3", "gpt2"])
def test_greedy_matches_hf_cpu(arch):
    model = _model(arch)
    # lengths: one token, a chunk and a half (chunked prefill), several blocks
    prompts = _prompts([1, 23, 11, 40])
    ref = _hf_greedy(model, prompts)
    eng = Engine(model, **ENGINE)
    assert eng.generate(prompts, GREEDY) == ref
    # continuous batching: the 4 prompts shared steps (fewer steps than run one by one)
    assert eng.num_steps < sum(-(-len(p) // 16) + NEW - 1 for p in prompts)
    assert eng.blocks.num_used() == 0


def test_batching_off_and_on_agree(llama):
    prompts = _prompts([5, 17, 30], seed=2)
    ref = _hf_greedy(llama, prompts)
    eng = Engine(llama, **dict(ENGINE, prefix_cache=False))
    # batching off: one request at a time, each step runs one sequence
    alone = [eng.generate([p], GREEDY)[0] for p in prompts]
    steps = eng.num_steps
    assert alone == ref
    # batching on: the three share steps
    assert eng.generate(prompts, GREEDY) == ref
    assert eng.num_steps - steps < steps


def test_second_wave_compiles_nothing(llama):
    eng = Engine(llama, **dict(ENGINE, prefix_cache=False))
    lengths = [3, 20, 9, 14, 31, 6]
    eng.generate(_prompts(lengths, seed=3), GREEDY)
    first = set(eng.shapes)
    before = _programs()
    # new prompts (other tokens, same length mix, other order): same buckets
    eng.generate(_prompts(lengths[::-1], seed=4), GREEDY)
    assert _programs() - before == 0, f"shapes {set(eng.shapes) - first}"
    assert set(eng.shapes) == first
    # two programs (prefill chunk, decode) for the whole load, not one per step
    assert len(first) == 2 < eng.num_steps


def test_prefix_cache_hits_and_keeps_outputs(llama):
    shared = _prompts([24], seed=5)[0]          # three full blocks of 8
    tails = _prompts([3, 7, 12], seed=6)
    prompts = [shared + t for t in tails]
    ref = _hf_greedy(llama, prompts)
    eng = Engine(llama, **ENGINE)
    got = [eng.generate([prompts[0]], GREEDY)[0]]   # fills the tree
    assert eng.blocks.hit_tokens == 0
    got += eng.generate(prompts[1:], GREEDY)
    assert got == ref
    # each later prompt found the 3 shared blocks
    assert eng.blocks.hit_tokens == 2 * 24
    assert eng.stats()["prefix_hit_rate"] == pytest.approx(48 / sum(len(p) for p in prompts))
    assert eng.blocks.num_used() == 0 and eng.blocks.num_cached() > 0
    off = Engine(llama, **dict(ENGINE, prefix_cache=False))
    assert off.generate(prompts, GREEDY) == ref
    assert off.blocks.hit_tokens == 0


def test_preemption_by_recompute(llama):
    # 4 sequences of 12 + 20 tokens need 4 blocks each; 9 blocks hold 2 of them
    prompts = _prompts([12, 12, 12, 12], seed=7)
    ref = _hf_greedy(llama, prompts, n=20)
    eng = Engine(llama, **dict(ENGINE, num_blocks=10, prefix_cache=False))
    got = eng.generate(prompts, SamplingParams(max_tokens=20, ignore_eos=True))
    assert got == ref
    assert eng.num_preemptions > 0
    assert eng.blocks.num_used() == 0 and len(eng.blocks.free) == 9


def test_bad_requests_raise(llama):
    eng = Engine(llama, **ENGINE)
    with pytest.raises(ValueError, match="context"):
        eng.add_request("a", list(range(3, 67)))
    with pytest.raises(ValueError, match="vocabulary"):
        eng.add_request("b", [500])
    for bad in (dict(max_tokens=0), dict(temperature=-1.0), dict(top_p=0.0), dict(top_k=-2),
                dict(logprobs=99), dict(max_tokens=True)):
        with pytest.raises(InvalidParams):
            eng.add_request("c", [5, 6], SamplingParams(**bad))
    assert not eng.has_work()


def test_sampling_seeded_and_abort(llama):
    eng = Engine(llama, **ENGINE)
    p = _prompts([9], seed=8)
    sp = SamplingParams(max_tokens=12, temperature=1.5, top_k=50, top_p=0.9, seed=1234, ignore_eos=True)
    a = eng.generate(p, sp)
    b = eng.generate(p, sp)
    c = eng.generate(p, SamplingParams(max_tokens=12, temperature=1.5, top_k=50, top_p=0.9, seed=99,
                                       ignore_eos=True))
    assert a == b and a != c
    # top_k=1 is greedy whatever the temperature
    assert eng.generate(p, SamplingParams(max_tokens=NEW, temperature=3.0, top_k=1, ignore_eos=True)) \
        == _hf_greedy(llama, p)
    # an aborted request frees its blocks
    eng.add_request("x", p[0], SamplingParams(max_tokens=30, ignore_eos=True))
    eng.step()
    eng.step()
    assert eng.blocks.num_used() > 0
    eng.abort("x")
    eng.step()
    assert not eng.has_work() and eng.blocks.num_used() == 0


def test_block_manager_refcounts_and_lru():
    bm = BlockManager(num_blocks=5, block_size=2)
    a = [bm.allocate(), bm.allocate()]
    bm.insert([1, 2, 3, 4], a)
    bm.release(a)                     # cached, evictable, not free
    assert bm.num_used() == 0 and bm.num_cached() == 2 and len(bm.free) == 2
    hit = bm.match([1, 2, 3, 4, 5], max_blocks=2)
    assert hit == a and bm.num_used() == 2
    bm.release(hit)
    b = [bm.allocate(), bm.allocate()]
    bm.insert([7, 8], b[:1])
    bm.release(b)
    assert bm.allocate() == b[1] and bm.evictions == 0   # the one free block
    # free list empty now: the next allocations evict least recently used leaves first
    x = bm.allocate()
    assert x == a[1] and bm.evictions == 1      # leaf [3,4] is older than leaf [7,8]
    assert bm.peek([1, 2, 3, 4]) == 1
    y = bm.allocate()
    assert y == a[0]                            # [1,2], a leaf now, was used before [7,8]
    assert bm.allocate() == b[0] and bm.num_cached() == 0
    with pytest.raises(OutOfBlocks):
        bm.allocate()
    with pytest.raises(RuntimeError, match="released"):
        bm.release([b[1], b[1]])


def test_mixed_load_returns_every_block(llama):
    # 40 mixed requests (shared prefixes, sampling, aborts mid-flight, tight
    # blocks so preemption happens): afterwards no block is held and every
    # block is free or cached
    import random
    rnd = random.Random(0)
    eng = Engine(llama, **dict(ENGINE, num_blocks=13))
    shared = _prompts([16], seed=9)[0]
    pending = set()
    for i in range(40):
        p = _prompts([rnd.randint(1, 30)], seed=100 + i)[0]
        if rnd.random() < 0.5:
            p = shared + p[:rnd.randint(1, 20)]
        sp = SamplingParams(max_tokens=rnd.randint(1, 12), temperature=rnd.choice([0.0, 0.8]), seed=i)
        eng.add_request(f"r{i}", p, sp)
        pending.add(f"r{i}")
        for o in eng.step():
            if o.finished:
                pending.discard(o.request_id)
        if rnd.random() < 0.15 and pending:
            victim = rnd.choice(sorted(pending))
            eng.abort(victim)
            pending.discard(victim)
    while eng.has_work():
        eng.step()
    b = eng.blocks
    assert b.num_used() == 0 and all(r == 0 for r in b.ref)
    assert len(b.free) + b.num_cached() == b.capacity
    assert b.hit_tokens > 0


def _dequantized_copy(model):
    """The HF model with the engine's int8 weights, dequantized: the CPU
    reference for --quantization int8 (the same helper quant_eval uses)."""
    from torch_tpu.serve.quant_eval import dequantized
    return dequantized(model)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_int8_weight_only_quantization(arch):
    # weight-only int8 per output channel: the engine's greedy tokens equal
    # HF's greedy on CPU over the dequantized weights; the linear weights sit
    # on the device as int8 (a quarter of float32's bytes)
    from torch_tpu.serve.models import Int8Linear
    model = _model(arch)
    prompts = _prompts([5, 11, 3])
    eng = Engine(model, **ENGINE, quantization="int8")
    layer = eng.model.layers[0]
    qw = [w for w in layer.values() if isinstance(w, Int8Linear)]
    assert len(qw) == (7 if arch == "llama" else 4)
    assert all(w.q.dtype == torch.int8 and w.q.device.type == "tpu" for w in qw)
    assert eng.generate(prompts, GREEDY) == _hf_greedy(_dequantized_copy(model), prompts)
    # the quantization itself: each weight within half a step of its channel's scale
    w = model.get_submodule("model.layers.0.mlp.down_proj" if arch == "llama"
                            else "transformer.h.0.mlp.c_proj").weight.detach()
    q = Int8Linear(w, 0 if arch == "llama" else 1)
    shape = (-1, 1) if arch == "llama" else (1, -1)
    err = (q.q.float() * q.scale.float().view(shape) - w).abs()
    assert bool((err <= q.scale.float().view(shape) / 2 + 1e-7).all())
    with pytest.raises(ValueError, match="quantization 'int4' is not supported"):
        Engine(model, **ENGINE, quantization="int4")
