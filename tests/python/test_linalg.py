"""Matrix products, convolution and 2-d pooling on tpu vs CPU."""
import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from harness import check

# Ops this family lowers; the tests assert none of them fell back. Other
# families' ops (sum for broadcast gradients...) may still fall back until
# they are lowered, so the tests don't require those to be native.
MINE = {"mm", "bmm", "addmm", "addmm_", "baddbmm", "baddbmm_", "addbmm", "addbmm_", "dot", "mv",
        "addmv", "addmv_", "convolution", "convolution_backward", "convolution_overrideable",
        "convolution_backward_overrideable", "max_pool2d_with_indices",
        "max_pool2d_with_indices_backward", "avg_pool2d", "avg_pool2d_backward",
        "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward"}


def check_mine(fn, *inputs, **kw):
    out = check(fn, *inputs, native=False, **kw)
    mine = {k: v for k, v in torch_tpu.debug.fallback_report().items() if k.split(".")[0] in MINE}
    assert not mine, f"linalg ops fell back to CPU: {mine}"
    return out


def _conv_native():
    """convolution reaches the boxed fallback only if csrc/torch registers it
    for PrivateUse1 (CompositeExplicitAutograd kernels otherwise win)."""
    try:
        F.conv1d(torch.ones(1, 1, 3, device="tpu"), torch.ones(1, 1, 1, device="tpu"))
        return True
    except NotImplementedError:
        return False
    except Exception:  # registered but broken: run the tests so they show it
        return True


needs_conv = pytest.mark.skipif(not _conv_native(),
                                reason="aten::convolution has no PrivateUse1 registration")


# ---------------------------------------------------------------- products

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_mm(dtype):
    check_mine(torch.mm, torch.randn(5, 7).to(dtype), torch.randn(7, 3).to(dtype), grad=True)


def test_mm_int_and_out():
    check_mine(torch.mm, torch.randint(-5, 5, (3, 4)), torch.randint(-5, 5, (4, 2)))
    check_mine(lambda a, b, o: torch.mm(a, b, out=o), torch.randn(3, 4), torch.randn(4, 2),
               torch.empty(0))


def test_mm_shape_error():
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.mm(torch.randn(2, 3, device="tpu"), torch.randn(4, 2, device="tpu"))


def test_bmm_grad():
    check_mine(torch.bmm, torch.randn(2, 3, 4), torch.randn(2, 4, 5), grad=True)


def test_addmm_scalars_and_nan_beta0():
    check_mine(lambda s, a, b: torch.addmm(s, a, b, beta=0.5, alpha=2), torch.randn(3),
               torch.randn(2, 4), torch.randn(4, 3), grad=True)
    nan = torch.full((2, 3), float("nan"))
    check_mine(lambda s, a, b: torch.addmm(s, a, b, beta=0), nan, torch.randn(2, 4),
               torch.randn(4, 3))
    check_mine(lambda s, a, b: s.addmm_(a, b, alpha=3), torch.randn(2, 3), torch.randn(2, 4),
               torch.randn(4, 3))


def test_baddbmm_addbmm():
    check_mine(lambda s, a, b: torch.baddbmm(s, a, b, beta=2, alpha=0.5), torch.randn(3, 5),
               torch.randn(2, 3, 4), torch.randn(2, 4, 5), grad=True)
    check_mine(lambda s, a, b: torch.addbmm(s, a, b, alpha=2), torch.randn(3, 5),
               torch.randn(2, 3, 4), torch.randn(2, 4, 5))


def test_dot_mv_addmv():
    check_mine(torch.dot, torch.randn(6), torch.randn(6), grad=True)
    check_mine(torch.mv, torch.randn(3, 6), torch.randn(6), grad=True)
    check_mine(lambda s, m, v: torch.addmv(s, m, v, beta=0.5, alpha=2), torch.randn(3),
               torch.randn(3, 6), torch.randn(6))
    check_mine(torch.dot, torch.randn(6).bfloat16(), torch.randn(6).bfloat16())


@pytest.mark.parametrize("sa,sb", [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((3, 4), (4, 2)),
                                   ((2, 3, 4), (4, 2)), ((4,), (2, 4, 3)),
                                   ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul_broadcast(sa, sb):
    check_mine(torch.matmul, torch.randn(*sa), torch.randn(*sb), grad=True)


@pytest.mark.parametrize("bias", [False, True])
def test_linear(bias):
    b = torch.randn(3) if bias else None
    check_mine(lambda x, w, b: F.linear(x, w, b), torch.randn(2, 4, 5), torch.randn(3, 5), b,
               grad=True)


# ---------------------------------------------------------------- convolution

@needs_conv
@pytest.mark.parametrize("nd,kw", [
    (1, dict(stride=2, padding=1)),
    (2, dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2))),
    (2, dict(groups=2, padding=1)),
    (3, dict(stride=2, padding=1)),
])
def test_conv_grad(nd, kw):
    conv = [None, F.conv1d, F.conv2d, F.conv3d][nd]
    sp = [7, 6, 5][nd - 1]
    g = kw.get("groups", 1)
    x = torch.randn(2, 4, *([sp] * nd))
    w = torch.randn(6, 4 // g, *([3] * nd))
    check_mine(lambda x, w, b: conv(x, w, b, **kw), x, w, torch.randn(6), grad=True,
               atol=1e-4, rtol=1e-4)


@needs_conv
def test_conv_no_bias_bf16():
    check_mine(lambda x, w: F.conv2d(x, w, padding=1), torch.randn(1, 3, 5, 5).bfloat16(),
               torch.randn(4, 3, 3, 3).bfloat16(), grad=True, atol=5e-2, rtol=2e-2)


@needs_conv
@pytest.mark.parametrize("kw", [dict(stride=2, padding=1, output_padding=1),
                                dict(stride=2, groups=2, dilation=2)])
def test_conv_transpose2d_grad(kw):
    g = kw.get("groups", 1)
    check_mine(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), torch.randn(2, 4, 4, 5),
               torch.randn(4, 6 // g, 3, 3), torch.randn(6), grad=True, atol=1e-4, rtol=1e-4)


# ---------------------------------------------------------------- pooling

@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, ceil_mode=True),
                                dict(kernel_size=(2, 3), stride=1, dilation=(2, 1), padding=1)])
def test_max_pool2d_grad(kw):
    check_mine(lambda x: F.max_pool2d(x, return_indices=True, **kw), torch.randn(2, 3, 7, 8),
               grad=True)


def test_max_pool2d_unbatched_ties_int():
    check_mine(lambda x: F.max_pool2d(x, 2, return_indices=True), torch.randn(3, 6, 6))
    check_mine(lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True),
               torch.randint(-3, 3, (1, 2, 5, 5)))
    x = torch.randn(1, 1, 4, 4)
    x[0, 0, 1, 1] = float("nan")
    check_mine(lambda x: F.max_pool2d(x, 2, return_indices=True), x)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=3, stride=2, ceil_mode=True, padding=1),
                                dict(kernel_size=(3, 2), stride=(1, 2), divisor_override=5)])
def test_avg_pool2d_grad(kw):
    check_mine(lambda x: F.avg_pool2d(x, **kw), torch.randn(2, 3, 7, 8), grad=True)


def test_avg_pool2d_bf16_int():
    check_mine(lambda x: F.avg_pool2d(x, 2), torch.randn(1, 2, 6, 6).bfloat16(), grad=True)
    check_mine(lambda x: F.avg_pool2d(x, 3, 2, 1), torch.randint(-9, 9, (1, 2, 6, 6)))


@pytest.mark.parametrize("shape,out", [((2, 3, 8, 6), (4, 3)), ((2, 3, 7, 5), (3, 2)),
                                        ((3, 9, 10), (4, 7)), ((1, 2, 5, 5), 1)])
def test_adaptive_avg_pool2d_grad(shape, out):
    check_mine(lambda x: F.adaptive_avg_pool2d(x, out), torch.randn(*shape), grad=True)
