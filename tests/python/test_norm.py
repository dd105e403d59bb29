"""Normalization (csrc/ops/nn_norm.c) against CPU: batch, layer, group and weight norm."""
import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from harness import check, assert_close


A = torch.ops.aten


def _routed_to_core(op):
    # PyTorch's CompositeExplicitAutograd kernel for these ops outranks the
    # backend fallback unless the boundary registers the op explicitly.
    table = torch._C._dispatch_dump_table("aten::" + op)
    line = next(l for l in table.splitlines() if l.startswith("PrivateUse1:"))
    return "CompositeExplicitAutograd" not in line


@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_grad(training):
    x = torch.randn(4, 3, 2, 2)
    w, b = torch.randn(3), torch.randn(3)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5

    def fn(x, w, b, rm, rv):
        out = A.native_batch_norm(x, w, b, rm.detach(), rv.detach(), training, 0.1, 1e-5)
        return out[0] if not training else out

    check(fn, x, w, b, rm, rv, grad=True)


def test_batch_norm_running_stats_updated():
    x = torch.randn(5, 3)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    trm, trv = rm.to("tpu"), rv.to("tpu")
    torch_tpu.debug.reset_fallback_report()
    out = A.native_batch_norm(x.to("tpu"), None, None, trm, trv, True, 0.3, 1e-5)
    exp = A.native_batch_norm(x, None, None, rm, rv, True, 0.3, 1e-5)
    assert not torch_tpu.debug.fallback_report()
    for a, e in zip(out, exp):
        assert_close(a, e)
    assert_close(trm, rm)
    assert_close(trv, rv)


def test_native_batch_norm_no_stats_bf16():
    check(lambda x: A.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5),
          torch.randn(3, 4, 5).bfloat16())


def test_native_batch_norm_legit():
    check(lambda x, w, b: A._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5),
          torch.randn(4, 3), torch.randn(3), torch.randn(3))


def test_layer_norm_forward():
    # on tpu F.layer_norm decomposes (math_native_layer_norm) into native_batch_norm
    # (lowered here) and addcmul (another family), so only the no-affine case is native
    check(lambda x: F.layer_norm(x, (4,)), torch.randn(2, 3, 4))


@pytest.mark.skipif(not _routed_to_core("native_layer_norm"),
                    reason="native_layer_norm runs PyTorch's composite kernel on tpu")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_native_layer_norm(dtype):
    check(lambda x, w, b: A.native_layer_norm(x, [3, 4], w, b, 1e-5),
          torch.randn(2, 3, 4).to(dtype), torch.randn(3, 4).to(dtype), torch.randn(3, 4).to(dtype),
          grad=True)


@pytest.mark.skipif(not _routed_to_core("native_group_norm"),
                    reason="native_group_norm runs PyTorch's composite kernel on tpu")
def test_native_group_norm():
    check(lambda x, w, b: A.native_group_norm(x, w, b, 2, 4, 6, 2, 1e-5)[0],
          torch.randn(2, 4, 2, 3), torch.randn(4), torch.randn(4), grad=True)
    check(lambda x: A.native_group_norm(x, None, None, 2, 4, 6, 2, 1e-5),
          torch.randn(2, 4, 2, 3).bfloat16())


@pytest.mark.parametrize("affine", [True, False])
def test_native_layer_norm_backward(affine):
    x = torch.randn(2, 3, 4)
    w, b = (torch.randn(4), torch.randn(4)) if affine else (None, None)
    _, mean, rstd = A.native_layer_norm(x, [4], w, b, 1e-5)
    go = torch.randn(2, 3, 4)
    check(lambda go, x, mean, rstd, *wb: A.native_layer_norm_backward(
        go, x, [4], mean, rstd, *(wb if affine else (None, None)), [True, affine, affine])[:1 + 2 * affine],
        go, x, mean, rstd, *((w, b) if affine else ()))


def test_native_group_norm_backward():
    x = torch.randn(2, 4, 3, 3)
    w, b = torch.randn(4), torch.randn(4)
    _, mean, rstd = A.native_group_norm(x, w, b, 2, 4, 9, 2, 1e-5)
    go = torch.randn_like(x)
    check(lambda go, x, mean, rstd, w: A.native_group_norm_backward(
        go, x, mean, rstd, w, 2, 4, 9, 2, [True, True, True]), go, x, mean, rstd, w)


@pytest.mark.parametrize("dim", [0, 2])
def test_weight_norm_interface_grad(dim):
    v = torch.randn(4, 3, 5)
    g = (torch.rand(v.shape[dim]) + 0.5).reshape([-1 if i == dim else 1 for i in range(3)])
    check(lambda v, g: torch._weight_norm(v, g, dim), v, g, grad=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_batch_norm_eval_halves(dtype):
    x, w, b = torch.randn(4, 5, 6).to(dtype), torch.randn(5).to(dtype), torch.randn(5).to(dtype)
    rm, rv = torch.randn(5).to(dtype), torch.rand(5).to(dtype)
    check(lambda *a: F.batch_norm(*a, training=False, eps=0.6), x, rm, rv, w, b)


def test_batch_norm_training_halves_falls_back():
    x, w, b = torch.randn(5, 5, 5).bfloat16(), torch.randn(5).bfloat16(), torch.randn(5).bfloat16()
    rm, rv = torch.randn(5).bfloat16(), torch.rand(5).bfloat16()
    check(lambda *a: F.batch_norm(*a, training=True, momentum=0.5, eps=0.6), x, rm, rv, w, b,
          native=False, atol=0, rtol=0)


def test_layer_norm_weight_shape_message():
    x = torch.randn(1, 2, 3).to("tpu")
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        A.native_layer_norm(x, [1, 2, 3], torch.randn(1, 2).to("tpu"), None, 1e-5)
