"""Matrix products and linear algebra (csrc/ops/linalg*.c) against CPU."""
import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from harness import check, check_linalg_family as check_mine


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


def _spd(*shape):
    a = torch.randn(*shape)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1])


def _fp64_errors(fn, *xs):
    """Max |float32 result - float64 result| on CPU and on tpu."""
    ref = fn(*[x.double() for x in xs])
    cpu = fn(*xs)
    tpu = fn(*[x.to("tpu") for x in xs]).cpu()
    return (cpu.double() - ref).abs().max().item(), (tpu.double() - ref).abs().max().item()


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


@pytest.mark.parametrize("off,d1,d2", [(0, -2, -1), (1, 0, 2), (-2, 2, 0)])
def test_diag_embed_grad(off, d1, d2):
    check(lambda x: torch.diag_embed(x, off, d1, d2), torch.randn(2, 3), grad=True)


def test_diag_embed_bool():
    check(lambda x: torch.diag_embed(x), torch.rand(2, 3) > 0.5)


def test_baddbmm_int_float_scalars_truncate():
    a, b1, b2 = (torch.randint(-9, 9, s) for s in ((2, 2, 3), (2, 2, 4), (2, 4, 3)))
    check(lambda a, b1, b2: torch.baddbmm(a, b1, b2, beta=-1.7, alpha=2.9), a, b1, b2)
    check(lambda a, b1, b2: torch.addmm(a[0], b1[0], b2[0], beta=0.2, alpha=1.5), a, b1, b2)


def test_vdot():
    check(torch.vdot, torch.randn(7), torch.randn(7), grad=True)
    check(torch.vdot, torch.arange(5), torch.arange(5) * 3)
    check(lambda x, y: torch.linalg.vecdot(x, y), torch.randn(3, 4), torch.randn(3, 4))


def test_dot_error_messages():
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, "
                                           "but found Float and Half"):
        torch.dot(torch.randn(3).to("tpu"), torch.randn(3).half().to("tpu"))


@pytest.mark.parametrize("upper,transpose,unit", [(True, False, False), (False, True, False),
                                                  (True, True, True)])
def test_triangular_solve(upper, transpose, unit):
    a = torch.randn(2, 4, 4) + 4 * torch.eye(4)
    bm = torch.randn(2, 4, 3)
    check(lambda x, y: torch.triangular_solve(x, y, upper=upper, transpose=transpose,
                                              unitriangular=unit), bm, a, grad=True)


def test_kron_gradient_accuracy():
    # kron's backward sums 200 products per element of a (the mismatch the
    # report showed): within twice CPU's distance to the float64 gradient
    torch.manual_seed(0)
    a, b = torch.randn(5, 5), torch.randn(10, 20)
    g = torch.randn(50, 100)

    def grad_a(x, y, gg):
        x = x.clone().requires_grad_()
        return torch.autograd.grad(torch.kron(x, y), x, gg)[0]

    cpu_err, tpu_err = _fp64_errors(grad_a, a, b, g)
    assert tpu_err <= 2 * cpu_err, (cpu_err, tpu_err)
    check(torch.kron, a, b, grad=True)
