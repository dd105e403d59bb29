"""Regression tests for bugs PyTorch's own test_torch.py found on tpu
(make pytorch-tests, docs/pytorch-tests.md), each compared with CPU PyTorch.
Mode-independent: runs once (RUN_ONCE).
"""
import re

import pytest
import torch

import torch_tpu  # noqa: F401

DEV = "tpu"


def _overlapping_copies(dev):
    # (destination, source) pairs sharing one storage with partly
    # overlapping elements: a shifted slice and a transpose of itself
    d = torch.arange(18.0, device=dev)
    yield d[0:9], d[1:10]
    d = torch.arange(18.0, device=dev)
    sq = d[:9].view(3, 3)
    yield sq.t(), sq


def test_copy_partial_overlap_raises_like_cpu():
    # CPU's copy_ refuses a source that partly overlaps its destination;
    # tpu computed the copy (test_torch's test_copy_mem_overlap)
    for (dst_c, src_c), (dst_t, src_t) in zip(_overlapping_copies("cpu"),
                                              _overlapping_copies(DEV)):
        with pytest.raises(RuntimeError) as cpu_err:
            dst_c.copy_(src_c)
        with pytest.raises(RuntimeError, match=re.escape(str(cpu_err.value))):
            dst_t.copy_(src_t)


def test_copy_without_partial_overlap_still_copies():
    # the check leaves these alone: disjoint slices of one storage, a tensor
    # copied onto itself, and the same elements through another view
    want = torch.arange(18.0)
    got = want.to(DEV)
    want[0:9].copy_(want[9:18])
    got[0:9].copy_(got[9:18])
    want.copy_(want)
    got.copy_(got)
    want[:4].copy_(want[:4].view(2, 2).view(4))
    got[:4].copy_(got[:4].view(2, 2).view(4))
    torch.testing.assert_close(got.cpu(), want)
