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
