"""The common op list end to end through the public PyTorch API, across
families: each case runs natively (no CPU fallback) and matches CPU, forward
and backward. Complements the per-family files, which test each family in depth."""
import pytest
import torch
import torch.nn.functional as F

from harness import check


CASES = {
    "logsumexp": (lambda x: torch.logsumexp(x, dim=1), [torch.randn(4, 5)]),
    "rms_norm": (lambda x, w: F.rms_norm(x, (5,), w, eps=1e-6), [torch.randn(3, 5), torch.rand(5)]),
    "layer_norm_affine": (lambda x, w, b: F.layer_norm(x, (5,), w, b),
                          [torch.randn(3, 5), torch.rand(5), torch.randn(5)]),
    "cross_entropy_ignore_smoothing": (
        lambda x: F.cross_entropy(x, torch.tensor([1, -100, 3, 0]).to(x.device), ignore_index=-100,
                                  label_smoothing=0.1), [torch.randn(4, 6)]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [torch.randn(8)]),
    "silu": (lambda x: F.silu(x), [torch.randn(8)]),
    "softmax_log_softmax": (lambda x: (F.softmax(x, -1), F.log_softmax(x, 0)), [torch.randn(3, 4)]),
    "conv2d_groups": (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=1, groups=2),
                      [torch.randn(2, 4, 8, 8), torch.randn(6, 2, 3, 3), torch.randn(6)]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), [torch.randn(1, 2, 6, 6)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), [torch.randn(1, 2, 7, 7)]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (3, 2)), [torch.randn(1, 2, 7, 5)]),
    "embedding": (lambda w: F.embedding(torch.tensor([[1, 2], [0, 1]]).to(w.device), w),
                  [torch.randn(4, 3)]),
    "var_std": (lambda x: (x.var(1), x.std(0, unbiased=False)), [torch.randn(4, 5)]),
    "cumsum_prod": (lambda x: (x.cumsum(1), x.prod(1)), [torch.randn(3, 4)]),
    "max_argmax": (lambda x: (x.max(dim=1).values, x.argmax(0)), [torch.randn(3, 4)]),
    "matmul_bmm_baddbmm": (lambda a, b, c: (a @ b, torch.baddbmm(c, a, b, beta=0.5)),
                           [torch.randn(2, 3, 4), torch.randn(2, 4, 5), torch.randn(2, 3, 5)]),
    "pow_div_floor": (lambda x: (x.pow(2), x / 3, torch.div(x, 2, rounding_mode="floor")),
                      [torch.randn(6)]),
    "where_clamp_minmax": (lambda x, y: (torch.where(x > 0, x, y), x.clamp(-0.5, 0.5),
                                         torch.maximum(x, y)), [torch.randn(6), torch.randn(6)]),
    "index_ops": (lambda x: (x[torch.tensor([0, 2]).to(x.device)], x.index_select(1, torch.tensor([1, 0]).to(x.device)),
                             x.gather(1, torch.tensor([[0], [1], [0]]).to(x.device))),
                  [torch.randn(3, 4)]),
    "masked_fill_triu": (lambda x: (x.masked_fill(x > 0, 0.0), x.triu(1), x.tril()), [torch.randn(4, 4)]),
    "cat_stack": (lambda x, y: (torch.cat([x, y], 1), torch.stack([x, y])), [torch.randn(2, 3), torch.randn(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_native_forward_and_backward(name):
    fn, inputs = CASES[name]
    check(fn, *inputs, grad=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int32,
                                   torch.int64, torch.bool])
def test_dtypes_elementwise_and_reduce(dtype):
    x = (torch.randn(4, 5) * 4).to(dtype)
    if dtype == torch.bool:
        check(lambda t: (t & ~t.flip(0), t.any(1), t.sum()), x)
    else:
        check(lambda t: (t + t, t * 2, t.sum(1), t.max(), t.abs()), x)


def test_one_hot():
    check(lambda t: F.one_hot(t, 5), torch.tensor([0, 3, 1, 4]))
