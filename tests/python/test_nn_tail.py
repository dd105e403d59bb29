"""Long-tail nn / linalg ops: padding modes, upsampling, pooling variants,
losses, linalg helpers. Each compares with CPU and asserts no fallback."""
import pytest
import torch
import torch.nn.functional as F

from harness import check

A = torch.ops.aten


# ------------------------------------------------------------------ padding

@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape,pad", [((2, 5), (2, 1)), ((1, 2, 4, 5), (1, 2, 3, 0)),
                                       ((1, 1, 3, 4, 3), (1, 1, 2, 0, 1, 2))])
def test_pad_modes_grad(mode, shape, pad):
    check(lambda x: F.pad(x, pad, mode=mode), torch.randn(*shape), grad=True)


def test_pad_reflect_int_and_bf16():
    check(lambda x: F.pad(x, (2, 2), mode="reflect"), torch.arange(12).reshape(2, 6))
    check(lambda x: F.pad(x, (1, 1, 1, 1), mode="replicate"),
          torch.randn(1, 3, 3).to(torch.bfloat16))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_negative_grad(mode):
    check(lambda x: F.pad(x, (-1, 2, 1, -2), mode=mode), torch.randn(1, 2, 5, 4), grad=True)


def test_pad_circular():
    check(lambda x: F.pad(x, (1, 2, 2, 1), mode="circular"), torch.randn(1, 2, 3, 4), grad=True)


# ------------------------------------------------------------------ upsampling

@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("shape,kw", [((1, 2, 5), dict(size=7)),
                                      ((1, 2, 3, 4), dict(scale_factor=2)),
                                      ((2, 1, 5, 3), dict(size=(3, 7))),
                                      ((1, 1, 2, 3, 2), dict(scale_factor=(1.5, 2, 3)))])
def test_upsample_nearest_grad(mode, shape, kw):
    check(lambda x: F.interpolate(x, mode=mode, **kw), torch.randn(*shape), grad=True)


def test_upsample_nearest_uint8():
    check(lambda x: F.interpolate(x, scale_factor=3, mode="nearest"),
          torch.randint(0, 255, (1, 2, 3, 3), dtype=torch.uint8))


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("shape,mode,kw", [((1, 2, 5), "linear", dict(size=8)),
                                           ((1, 2, 4, 5), "bilinear", dict(scale_factor=2)),
                                           ((2, 1, 6, 5), "bilinear", dict(size=(3, 8))),
                                           ((1, 1, 2, 3, 4), "trilinear", dict(size=(3, 5, 2)))])
def test_upsample_linear_grad(align, shape, mode, kw):
    check(lambda x: F.interpolate(x, mode=mode, align_corners=align, **kw), torch.randn(*shape),
          grad=True)


def test_upsample_bilinear_scale_and_bf16():
    check(lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear"), torch.randn(1, 2, 5, 4))
    check(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
          torch.randn(1, 2, 3, 4).to(torch.bfloat16))


# ------------------------------------------------------------------ pooling

@pytest.mark.parametrize("shape,out", [((2, 3, 7, 5), (3, 2)), ((3, 6, 6), (4, 6)),
                                       ((1, 2, 5, 5), (1, 1))])
def test_adaptive_max_pool2d_grad(shape, out):
    check(lambda x: F.adaptive_max_pool2d(x, out, return_indices=True), torch.randn(*shape),
          grad=True)


def test_adaptive_max_pool1d_nan():
    x = torch.randn(2, 3, 9)
    x[0, 1, 4] = float("nan")
    check(lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), x)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), ceil_mode=True,
                                     count_include_pad=False),
                                dict(kernel_size=2, divisor_override=3)])
def test_avg_pool3d_grad(kw):
    check(lambda x: F.avg_pool3d(x, **kw), torch.randn(2, 2, 4, 5, 6), grad=True)


def test_avg_pool3d_unbatched_f64():
    check(lambda x: F.avg_pool3d(x, 2), torch.randn(2, 4, 4, 4, dtype=torch.float64), grad=True)


# ------------------------------------------------------------------ losses

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_soft_margin_loss_grad(reduction):
    t = torch.randint(0, 2, (4, 5)).float() * 2 - 1
    check(lambda x: F.soft_margin_loss(x, t.to(x.device), reduction=reduction), torch.randn(4, 5),
          grad=True)


def test_soft_margin_loss_half_rounds_per_op():
    x = torch.tensor([-8.5, -1.75, 4.3, 12.0, -11.0]).half()
    t = torch.tensor([3.6, -8.0, -0.5, -1.0, 1.0]).half()
    check(lambda x: F.soft_margin_loss(x, t.to(x.device)), x, grad=True)
    check(lambda x: F.soft_margin_loss(x, t.to(x.device), reduction="none"), x, grad=True)


# ------------------------------------------------------------------ weight norm

@pytest.mark.parametrize("dim", [0, 2])
def test_weight_norm_interface_grad(dim):
    v = torch.randn(4, 3, 5)
    g = (torch.rand(v.shape[dim]) + 0.5).reshape([-1 if i == dim else 1 for i in range(3)])
    check(lambda v, g: torch._weight_norm(v, g, dim), v, g, grad=True)


# ------------------------------------------------------------------ linalg

def test_trace_and_int():
    # trace_backward (CompositeImplicit) needs index_fill_.int_Tensor (indexing family)
    check(torch.trace, torch.randn(4, 3))
    check(torch.trace, torch.randn(5, 5).to(torch.bfloat16))
    check(torch.trace, torch.arange(12, dtype=torch.int32).reshape(3, 4))


@pytest.mark.parametrize("dim", [-1, 0])
def test_linalg_cross_grad(dim):
    a = torch.randn(3, 4, 3) if dim == -1 else torch.randn(3, 4)
    b = torch.randn(1, 4, 3) if dim == -1 else torch.randn(3, 4)
    check(lambda a, b: torch.linalg.cross(a, b, dim=dim), a, b, grad=True)


def test_cross_int():
    check(lambda a, b: torch.cross(a, b, dim=1), torch.randint(-5, 5, (2, 3)),
          torch.randint(-5, 5, (2, 3)))


def test_max_pool3d_int():
    check(lambda x: F.max_pool3d(x, 2, padding=1), torch.randint(-9, 9, (1, 2, 3, 4, 4)))


def test_avg_pool3d_long():
    check(lambda x: F.avg_pool3d(x, 2, padding=1, count_include_pad=False),
          torch.randint(-9, 9, (1, 2, 3, 4, 4)))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), ceil_mode=True),
                                dict(kernel_size=2, dilation=2, padding=1)])
def test_max_pool3d_grad(kw):
    check(lambda x: F.max_pool3d(x, return_indices=True, **kw), torch.randn(2, 2, 5, 5, 6),
          grad=True)


def _spd(*shape):
    a = torch.randn(*shape)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1])


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_grad(upper):
    check(lambda a: torch.linalg.cholesky(a, upper=upper), _spd(2, 4, 4), grad=True)


def test_cholesky_ex_not_pd_info():
    a = _spd(3, 3)
    a[1, 1] = -5.0
    r = torch.linalg.cholesky_ex(a.to("tpu"))
    assert r.info.item() == torch.linalg.cholesky_ex(a).info.item()


@pytest.mark.parametrize("upper,left,unit", [(False, True, False), (True, True, False),
                                             (False, False, True), (True, False, False)])
def test_solve_triangular_grad(upper, left, unit):
    a = torch.randn(2, 3, 3) + 4 * torch.eye(3)
    b = torch.randn(2, 3, 4) if left else torch.randn(4, 3)
    check(lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, left=left,
                                                     unitriangular=unit), a, b, grad=True,
          atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("shape,out", [((2, 2, 5, 6, 7), (2, 3, 4)), ((3, 4, 4, 4), (1, 1, 1)),
                                       ((1, 2, 3, 5, 4), (3, 5, 4))])
def test_adaptive_avg_pool3d_grad(shape, out):
    check(lambda x: F.adaptive_avg_pool3d(x, out), torch.randn(*shape), grad=True)


def test_adaptive_avg_pool3d_inf_stays_local():
    x = torch.randn(1, 1, 4, 4, 4)
    x[0, 0, 0, 0, 0] = float("inf")
    check(lambda x: F.adaptive_avg_pool3d(x, 2), x)


# ------------------------------------------------------------------ pixel shuffle

def test_pixel_shuffle_grad():
    check(lambda x: F.pixel_shuffle(x, 2), torch.randn(2, 8, 3, 4), grad=True)
    check(lambda x: F.pixel_unshuffle(x, 2), torch.randn(3, 4, 6), grad=True)


def test_pixel_shuffle_int():
    check(lambda x: F.pixel_shuffle(x, 3), torch.arange(2 * 9 * 4).reshape(1, 18, 2, 2))


# ------------------------------------------------------------------ embedding bag

@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag_grad(mode, last):
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offs = torch.tensor([0, 4, 4, 8] if last else [0, 4, 4])
    check(lambda w: F.embedding_bag(idx.to(w.device), w, offs.to(w.device), mode=mode,
                                    include_last_offset=last), torch.randn(10, 3), grad=True)


def test_embedding_bag_padding_idx_grad():
    idx, offs = torch.tensor([1, 2, 4, 4, 3, 4]), torch.tensor([0, 3, 4])
    for mode in ("sum", "mean"):
        check(lambda w: F.embedding_bag(idx.to(w.device), w, offs.to(w.device), mode=mode,
                                        padding_idx=4), torch.randn(6, 3), grad=True)


def test_embedding_bag_per_sample_weights_grad():
    idx, offs = torch.tensor([1, 2, 0, 3, 3]), torch.tensor([0, 2])
    check(lambda w, p: F.embedding_bag(idx.to(w.device), w, offs.to(w.device),
                                       per_sample_weights=p, mode="sum"),
          torch.randn(4, 3), torch.rand(5), grad=True)


def test_embedding_bag_2d_and_weights():
    idx = torch.tensor([[0, 2, 3], [3, 1, 1]])
    check(lambda w: F.embedding_bag(idx.to(w.device), w, mode="mean"), torch.randn(5, 4), grad=True)
    flat, offs, psw = torch.tensor([1, 2, 0, 3]), torch.tensor([0, 1]), torch.rand(4)
    check(lambda w, p: F.embedding_bag(flat.to(w.device), w, offs.to(w.device),
                                       per_sample_weights=p, mode="sum"), torch.randn(4, 3), psw)


@pytest.mark.parametrize("off,d1,d2", [(0, -2, -1), (1, 0, 2), (-2, 2, 0)])
def test_diag_embed_grad(off, d1, d2):
    check(lambda x: torch.diag_embed(x, off, d1, d2), torch.randn(2, 3), grad=True)


def test_diag_embed_bool():
    check(lambda x: torch.diag_embed(x), torch.rand(2, 3) > 0.5)


def test_baddbmm_int_float_scalars_truncate():
    a, b1, b2 = (torch.randint(-9, 9, s) for s in ((2, 2, 3), (2, 2, 4), (2, 4, 3)))
    check(lambda a, b1, b2: torch.baddbmm(a, b1, b2, beta=-1.7, alpha=2.9), a, b1, b2)
    check(lambda a, b1, b2: torch.addmm(a[0], b1[0], b2[0], beta=0.2, alpha=1.5), a, b1, b2)


def test_adaptive_avg_pool2d_inf_stays_local():
    x = torch.randn(1, 2, 4, 5)
    x[0, 0, 0, 0] = float("inf")
    check(lambda x: F.adaptive_avg_pool2d(x, (3, 3)), x)
    check(lambda x: F.adaptive_avg_pool2d(x, (2, 4)), torch.randn(3, 5, 7), grad=True)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(size=(3, 7)), dict(scale_factor=1.3)])
def test_upsample_bicubic_grad(align, kw):
    check(lambda x: F.interpolate(x, mode="bicubic", align_corners=align, **kw),
          torch.randn(1, 2, 5, 4), grad=True)
