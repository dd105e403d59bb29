import torch

from harness import check


def test_add_broadcast_and_alpha():
    check(lambda x, y: torch.add(x, y, alpha=2), torch.randn(3, 4), torch.randn(4))


def test_python_scalar_keeps_tensor_dtype():
    check(lambda x: x * 2.5 - 1, torch.randn(5).to(torch.bfloat16))


def test_int_tensor_times_float_scalar_promotes():
    check(lambda x: x * 2.5, torch.arange(6))


def test_mul_grad():
    check(lambda x, y: x * y, torch.randn(2, 3), torch.randn(2, 3), grad=True)
