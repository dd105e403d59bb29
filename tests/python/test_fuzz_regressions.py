"""Regressions of the op fuzzer's findings (tools/fuzz/corpus/): each case
is the finding's program, reduced, compared against CPU PyTorch."""
import pytest
import torch

import torch_tpu  # noqa: F401
from harness import assert_close

A = torch.ops.aten


def _every_other(t, dim):
    """(CPU view, tpu view): t's values, every other element of a larger
    storage at offset 1 (the fuzzer's non-contiguous layout), on each device
    (to("tpu") would copy a view into a contiguous tensor)."""
    big = torch.repeat_interleave(t, 2, dim=dim)
    idx = tuple([slice(None)] * dim + [slice(1, None, 2)])
    return big[idx], big.to("tpu")[idx]


# seeds 1084926497519, 1094495875429, 558803948276: CPU raises on an input
# not contiguous in its memory format; tpu computed a result.
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_native_group_norm_noncontiguous_input_raises_like_cpu(dtype):
    x, xt = _every_other(torch.randn(2, 6, 3, dtype=dtype), 1)
    assert not x.is_contiguous() and xt.stride() == x.stride()
    w, b = torch.randn(6, dtype=dtype), torch.randn(6, dtype=dtype)
    with pytest.raises(RuntimeError, match="is_contiguous"):
        A.native_group_norm(x, w, b, 2, 6, 3, 2, 0.5)
    with pytest.raises(RuntimeError, match="is_contiguous"):
        A.native_group_norm(xt, w.to("tpu"), b.to("tpu"), 2, 6, 3, 2, 0.5)[0].cpu()


def test_native_group_norm_contiguous_and_channels_last_match_cpu():
    x = torch.randn(2, 6, 3, 4)
    w, b = torch.randn(6), torch.randn(6)
    for xx in (x, x.contiguous(memory_format=torch.channels_last)):
        want = A.native_group_norm(xx, w, b, 2, 6, 12, 3, 0.5)
        got = A.native_group_norm(xx.to("tpu"), w.to("tpu"), b.to("tpu"), 2, 6, 12, 3, 0.5)
        for g, c in zip(got, want):
            assert_close(g, c, atol=1e-5, rtol=1e-5)


def test_native_group_norm_strided_weight_matches_group_norm():
    # seed 302886729750: CPU's native_group_norm reads weight/bias through
    # data_ptr, ignoring their strides (garbage for a strided view), so the
    # reference is CPU on contiguous copies; tpu honours the strides.
    x = torch.randn(1, 6, 3)
    w, wt = _every_other(torch.randn(6), 0)
    b = torch.randn(1).expand(6)
    want = A.native_group_norm(x, w.contiguous(), b.contiguous(), 1, 6, 3, 2, 0.5)[0]
    got = A.native_group_norm(x.to("tpu"), wt, b.to("tpu"), 1, 6, 3, 2, 0.5)[0]
    assert_close(got, want, atol=1e-5, rtol=1.3e-6)


def test_sdpa_bf16_causal_strided_matches_cpu():
    # seed 904592177625 (dropout_p=0.5, so random on both sides: the fuzzer now
    # draws it deterministic); the same layouts without dropout match CPU.
    F = torch.nn.functional
    torch.manual_seed(0)
    q1 = torch.randn(4, 3, 1, dtype=torch.bfloat16)
    kb = torch.randn(4, 8, 6, dtype=torch.bfloat16)
    vb = torch.randn(4, 6, 16, dtype=torch.bfloat16)
    # the finding's layouts, built on each device: stride-0 q, transposed k,
    # every other element of v
    q, qt = q1.expand(4, 3, 8), q1.to("tpu").expand(4, 3, 8)
    k, kt = kb.transpose(1, 2), kb.to("tpu").transpose(1, 2)
    v, vt = vb[:, :, 1::2], vb.to("tpu")[:, :, 1::2]
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    got = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
    assert_close(got, want, atol=1e-5, rtol=0.016)


def test_batch_norm_with_update_bf16_strided_params_matches_cpu():
    # seed 821375813011: parameters longer than a narrowed input's channel
    # count; CPU's output shape then depends on their layout (undefined), so
    # the fuzzer keeps them contiguous. Valid sizes, strided, match CPU.
    torch.manual_seed(0)
    x = torch.randn(5, 3, 5, dtype=torch.bfloat16)
    views = [_every_other(torch.randn(3, dtype=torch.bfloat16), 0) for _ in range(3)]
    rv, rvt = _every_other(torch.rand(3, dtype=torch.bfloat16) + 0.5, 0)
    (b, bt), (rm, rmt) = views[1], views[2]
    w = views[0][0].contiguous()
    want = A._batch_norm_with_update(x, w, b, rm, rv, 0.5, 0.6)
    got = A._batch_norm_with_update(x.to("tpu"), w.to("tpu"), bt, rmt, rvt, 0.5, 0.6)
    assert_close(got[0], want[0], atol=1e-5, rtol=0.016)
    assert_close(rmt, rm, atol=1e-5, rtol=0.016, what="running_mean")
    assert_close(rvt, rv, atol=1e-5, rtol=0.016, what="running_var")


def test_native_batch_norm_bf16_is_float32_rounded_once():
    # seed 297304847666: bfloat16 training batch norm on a stride-0 input.
    # tpu (the CPU kernel via the fallback, on a contiguous copy: the lowering
    # declines bf16 training with bf16 weight/bias) lands within one bf16
    # rounding of the float32 result; CPU's kernel on the stride-0 view itself
    # is 0.11 from it there (on a contiguous copy 0.024 = one rounding), so
    # the reference is CPU in float32, rounded to bfloat16.
    torch.manual_seed(0)
    x1 = torch.randn(1, 5, 5, dtype=torch.bfloat16)
    w, b = torch.randn(5, dtype=torch.bfloat16), torch.randn(5, dtype=torch.bfloat16)
    rm, rv = torch.randn(5, dtype=torch.bfloat16), torch.rand(5, dtype=torch.bfloat16) + 0.5
    x2 = torch.randn(4, 5, 5, dtype=torch.bfloat16)
    for x, xt in ((x1.expand(5, 5, 5), x1.to("tpu").expand(5, 5, 5)),
                  (x2, x2.to("tpu"))):
        want = A.native_batch_norm(x.float(), w.float(), b.float(), rm.float(), rv.float(),
                                   True, 0.5, 0.6)[0].bfloat16()
        got = A.native_batch_norm(xt, w.to("tpu"), b.to("tpu"), rm.to("tpu"), rv.to("tpu"),
                                  True, 0.5, 0.6)[0]
        # one bfloat16 rounding each side of the float32 value: within 1 ulp
        assert_close(got, want, atol=1e-5, rtol=2 ** -7)


def test_hfft2_float32_within_fft_rounding():
    # seed 592388916991: 1.5e-5 apart from CPU against an atol of 1e-5. Both
    # are within float32 FFT rounding of the float64 transform, which scales
    # with max|output| * log2(numel) (the fuzzer's FFT tolerance).
    import math
    torch.manual_seed(0)
    flat = torch.randn(1 + 5 * 6 * 7) * 3
    x, xt = flat[1:].view(5, 6, 7), flat.to("tpu")[1:].view(5, 6, 7)
    ref = torch.fft.hfft2(x.double(), dim=(-3, -2, -1))
    got = torch.fft.hfft2(xt, dim=(-3, -2, -1))
    bound = torch.finfo(torch.float32).eps * ref.abs().max().item() * math.log2(ref.numel())
    assert (got.cpu().double() - ref).abs().max().item() <= bound
    assert_close(got, torch.fft.hfft2(x, dim=(-3, -2, -1)), atol=bound, rtol=1.3e-6)
