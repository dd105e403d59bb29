"""Shape ops (csrc/ops/shape_ops.c) against CPU: cat, flip, roll, repeat, pads,
tril/triu, masked fills, *_scatter, unfold, histc."""
import pytest
import torch
import torch.nn.functional as F

from harness import check


T = torch.tensor


def test_cat_dims_promotion_and_legacy_empty():
    check(lambda a, b: torch.cat([a, b], 1), torch.randn(2, 3), torch.randn(2, 2), grad=True)
    check(lambda a, b, e: torch.cat([a, e, b]), torch.arange(4).view(2, 2),
          torch.randn(1, 2, dtype=torch.float64), torch.tensor([]))
    check(lambda a, b: torch.cat([a, b], -1), torch.rand(2, 2) > 0.5, torch.rand(2, 1) > 0.5)


def test_cat_out():
    def f(a, b):
        out = torch.empty(0, device=a.device)
        torch.cat([a, b], dim=0, out=out)
        return out
    check(f, torch.randn(2, 3), torch.randn(1, 3))


def test_stack_grad():
    check(lambda a, b: torch.stack([a, b], 1), torch.randn(2, 3), torch.randn(2, 3), grad=True)


def test_masked_fill_scalar_tensor_broadcast():
    m = T([True, False, True])
    check(lambda x, m: x.masked_fill(m, -1.5), torch.randn(2, 3), m, grad=True)
    check(lambda x, m: x.masked_fill(m, torch.tensor(3)), torch.arange(6).view(2, 3), m)
    check(lambda x, m, v: x.clone().masked_fill_(m, v), torch.randn(2, 3), m, torch.tensor(2.5))


def test_triu_tril():
    check(lambda x: x.triu(1), torch.randn(2, 3, 4), grad=True)
    check(lambda x: x.tril(-1), torch.randn(4, 3), grad=True)
    check(lambda x: torch.tril(x), torch.arange(9).view(3, 3))


def test_flip_roll_grad():
    check(lambda x: x.flip(0, -1), torch.randn(2, 3, 4), grad=True)
    check(lambda x: x.roll((1, -3), (1, 0)), torch.randn(2, 3), grad=True)
    check(lambda x: x.roll(4), torch.arange(6).view(2, 3))


def test_repeat():
    check(lambda x: x.repeat(2, 1, 3), torch.randn(2, 3))
    # backward is sum.dim_IntList (reduction family): compare values only
    check(lambda x: x.repeat(1, 2), torch.randn(2, 3), grad=True, native=False)


def test_constant_pad_grad():
    check(lambda x: F.pad(x, (1, -1, 2, 0), value=0.5), torch.randn(2, 3), grad=True)
    check(lambda x: F.pad(x, (0, 2)), torch.arange(3))


def test_slice_select_diagonal_backward():
    check(lambda x: x[1:4:2], torch.randn(5, 3), grad=True)
    check(lambda x: x[:, 0], torch.randn(5, 3), grad=True)
    check(lambda x: x.diagonal(1), torch.randn(3, 3), grad=True)


def test_narrow_copy_and_scatters():
    check(lambda x: torch.narrow_copy(x, 1, 1, 2), torch.randn(2, 4))
    check(lambda x, s: torch.slice_scatter(x, s, 0, 1, None, 2), torch.randn(5, 3), torch.randn(2, 3),
          grad=True)
    check(lambda x, s: torch.select_scatter(x, s, 0, 2), torch.randn(3, 2), torch.randn(2), grad=True)
    check(lambda x, s: torch.select_scatter(x, s, 1, -1), torch.arange(6).view(3, 2), T([7, 8, 9]))


def test_diagonal_scatter():
    check(lambda x, s: torch.diagonal_scatter(x, s, 1), torch.randn(3, 4), torch.randn(3), grad=True)
    check(lambda x, s: torch.diagonal_scatter(x, s, -1, 0, 2), torch.randn(3, 2, 4), torch.randn(2, 2))


def test_masked_scatter():
    m = T([[True, False, True], [False, True, True]])
    check(lambda x, m, s: x.masked_scatter(m, s), torch.randn(2, 3), m, torch.randn(5))
    check(lambda x, m, s: x.clone().masked_scatter_(m, s), torch.arange(6).view(2, 3), T([False, True, True]),
          torch.arange(10, 20).view(2, 5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_histc(dtype):
    x = torch.tensor([-1.0, 0.0, 0.25, 0.5, 0.99, 1.0, 2.0, 0.3]).to(dtype)
    check(lambda a: torch.histc(a, bins=4, min=0, max=1), x)


def test_histc_data_range():
    check(lambda a: torch.histc(a, bins=5), torch.randn(20))
    check(lambda a: torch.histc(a, bins=3), torch.full((4,), 2.0))


def test_unfold_backward():
    check(lambda x: x.unfold(1, 3, 2), torch.randn(2, 9, 2), grad=True)
    check(lambda x: x.unfold(0, 2, 3), torch.randn(8), grad=True)


def test_channel_shuffle():
    check(lambda t: F.channel_shuffle(t, 3), torch.randn(2, 6, 4, 4))
    check(lambda t: F.channel_shuffle(t, 2), torch.arange(48).reshape(1, 4, 3, 4))


def test_roll_without_shifts():
    with pytest.raises(RuntimeError, match="`shifts` required"):
        torch.roll(torch.randn(5).to("tpu"), [])


@pytest.mark.parametrize("shape,kw", [((2, 3, 7, 6), dict(kernel_size=3)),
                                      ((1, 2, 8, 9), dict(kernel_size=(2, 3), dilation=(2, 1),
                                                          padding=(1, 2), stride=(2, 3))),
                                      ((0, 1, 5, 5), dict(kernel_size=2))])
def test_unfold(shape, kw):
    check(lambda x: F.unfold(x, **kw), torch.randn(*shape))
    if shape[0]:
        check(lambda x: F.unfold(x, **kw), torch.randn(*shape[1:]))  # unbatched


def test_histc_non_finite_data_range_raises():
    """A data-derived range (min == max) that is not finite raises CPU's error
    (issue 20); finite data stays native, histc.out included."""
    for data in ([1.0, float("inf")], [float("-inf"), 0.0], [1.0, float("nan")]):
        for dt in (torch.float32, torch.float64):
            with pytest.raises(RuntimeError, match=r"torch.histc: range of \[.*\] is not finite"):
                torch.histc(torch.tensor(data, dtype=dt, device="tpu"), bins=4)
            with pytest.raises(RuntimeError, match=r"torch.histc: range of \[.*\] is not finite"):
                torch.histc(torch.tensor(data, dtype=dt, device="tpu"), bins=4, min=2, max=2,
                            out=torch.empty(4, dtype=dt, device="tpu"))
    x = torch.tensor([1.0, 2.0, 2.5, 3.0, 3.0])
    check(lambda a: (torch.histc(a, bins=3), torch.histc(a, 4, 3, 3, out=torch.empty(4, device=a.device))), x)
