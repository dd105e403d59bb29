"""Padding modes, upsampling and pixel shuffle (csrc/ops/nn_resample.c) against CPU."""
import pytest
import torch
import torch.nn.functional as F

from harness import check


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


def test_pixel_shuffle_grad():
    check(lambda x: F.pixel_shuffle(x, 2), torch.randn(2, 8, 3, 4), grad=True)
    check(lambda x: F.pixel_unshuffle(x, 2), torch.randn(3, 4, 6), grad=True)


def test_pixel_shuffle_int():
    check(lambda x: F.pixel_shuffle(x, 3), torch.arange(2 * 9 * 4).reshape(1, 18, 2, 2))


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(size=(3, 7)), dict(scale_factor=1.3)])
def test_upsample_bicubic_grad(align, kw):
    check(lambda x: F.interpolate(x, mode="bicubic", align_corners=align, **kw),
          torch.randn(1, 2, 5, 4), grad=True)
