"""Pairwise distances (csrc/ops/distance.c) against CPU: cdist, pdist."""
import pytest
import torch
import torch.nn.functional as F

from harness import check


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
def test_cdist(p):
    check(lambda a, b: torch.cdist(a, b, p=p), torch.randn(3, 5, 4), torch.randn(3, 6, 4))
    check(lambda a, b: torch.cdist(a, b, p=p, compute_mode="donot_use_mm_for_euclid_dist"),
          torch.randn(7, 3), torch.randn(4, 3))


def test_cdist_matrix_product_form():
    # p = 2 with more than 25 rows: CPU's [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T form
    a, b = torch.randn(30, 8), torch.randn(27, 8)
    check(lambda x, y: torch.cdist(x, y), a, b)
    check(lambda x, y: torch.cdist(x, y, compute_mode="use_mm_for_euclid_dist"), a[:5], b[:4])


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 1.5, float("inf")])
def test_pdist(p):
    check(lambda a: F.pdist(a, p=p), torch.randn(6, 5))
    check(lambda a: F.pdist(a, p=p), torch.randn(1, 5))
