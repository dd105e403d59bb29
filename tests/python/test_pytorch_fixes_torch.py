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


def _inplace_overlap_cases(dev):
    y = torch.arange(6.0, device=dev)
    ind = torch.tensor([2, 1, 0], device=dev)
    return [
        lambda: y.index_copy_(0, ind, y[:3]),
        lambda: ind.index_copy_(0, ind, ind.clone()),
        lambda: ind.index_copy_(0, ind.clone(), ind),
        lambda: y.index_add_(0, ind, y[3:]),
        lambda: ind.index_add_(0, ind, ind.clone()),
        lambda: ind.index_fill_(0, ind, 1),
        lambda: y.scatter_(0, ind, y[3:]),
        lambda: y.scatter_add_(0, ind, y[3:]),
        lambda: y.index_put_((ind,), y[0]),
        lambda: ind.index_put_((ind,), ind),
        lambda: y.index_put_((ind,), y[:3]),
        lambda: y.put_(ind[0], y[0]),
        lambda: ind.put_(ind, ind.clone()),
        lambda: y.put_(ind, y[:3]),
    ]


def test_inplace_index_ops_refuse_overlap_like_cpu():
    # index_copy_/index_add_/index_fill_/index_put_/put_ with self overlapping
    # the source or the index: CPU raises "unsupported operation"; tpu
    # computed (for
    # y.index_copy_(0, ind, y[3:]) after an in-place op, wrong values) --
    # test_torch's test_index_copy_mem_overlap. The check was never reached:
    # the fallback's out_variant flag was read uninitialized.
    for cpu_case, tpu_case in zip(_inplace_overlap_cases("cpu"), _inplace_overlap_cases(DEV)):
        with pytest.raises(RuntimeError) as cpu_err:
            cpu_case()
        with pytest.raises(RuntimeError, match=re.escape(str(cpu_err.value))):
            tpu_case()
    # self overlapping itself: refused too (the view write's message)
    x = torch.rand((1,), device=DEV).expand((6,))
    with pytest.raises(RuntimeError, match="unsupported operation: more than one element"):
        x.index_copy_(0, torch.tensor([2, 1, 0], device=DEV), torch.ones(3, device=DEV))


def test_inplace_index_ops_without_overlap_match_cpu():
    def run(dev):
        y = torch.arange(6.0, device=dev)
        ind = torch.tensor([2, 1, 0], device=dev)
        y.sigmoid_()
        y.index_copy_(0, ind, y[3:].clone())
        y.index_add_(0, ind, torch.ones(3, device=dev), alpha=2)
        y.index_fill_(0, ind[:1], -1.0)
        y.scatter_add_(0, ind, torch.full((3,), 0.5, device=dev))
        y.index_put_((ind[1:],), torch.tensor([7.0, 8.0], device=dev), accumulate=True)
        return y.cpu()

    torch.testing.assert_close(run(DEV), run("cpu"))


def _set_to_pairs(dev):
    t1 = torch.empty(3, 4, 9, 10, device=dev)
    t2 = torch.empty(3, 4, 9, 10, device=dev)
    t3 = torch.tensor([], device=dev).set_(t1)
    t4 = t3.clone().resize_(12, 90)
    b = torch.tensor([True, True], device=dev)
    return [(t1, t2), (t1, t3), (t3, t1), (t1, t4), (t1, t1[:]), (t1, t1[1:]),
            (t1, t1.view(12, 90)), (b, torch.tensor([False], device=dev).set_(b))]


def test_is_set_to_matches_cpu():
    # is_set_to ran on CPU copies of its arguments, so a tensor set_() to
    # another compared false (test_torch's test_is_set_to): a silent wrong
    # answer. It is metadata only and now runs on the tpu tensors.
    want = [a.is_set_to(b) for a, b in _set_to_pairs("cpu")]
    got = [a.is_set_to(b) for a, b in _set_to_pairs(DEV)]
    assert got == want
    assert want[1] and want[2] and want[4] and want[7]


def test_logcumsumexp_out_dtype_checked_like_cpu():
    # CPU's logcumsumexp refuses an out= of another dtype; tpu cast into it
    # (test_torch's test_logcumsumexp)
    b = torch.randn(5, 2, dtype=torch.float64)
    with pytest.raises(RuntimeError) as cpu_err:
        torch.logcumsumexp(b, 1, out=torch.zeros(5, 2, dtype=torch.float32))
    with pytest.raises(RuntimeError, match=re.escape(str(cpu_err.value))):
        torch.logcumsumexp(b.to(DEV), 1, out=torch.zeros(5, 2, dtype=torch.float32, device=DEV))
    out = torch.zeros(5, 2, dtype=torch.float64, device=DEV)
    torch.logcumsumexp(b.to(DEV), 1, out=out)
    torch.testing.assert_close(out.cpu(), torch.logcumsumexp(b, 1))


def test_storage_slice_refused_not_misread():
    # UntypedStorage[a:b] of a tpu storage makes a storage whose DataPtr
    # context is the parent StorageImpl; it was read as a tpu storage handle
    # ("found at least two devices, tpu:0 and tpu:3", test_torch's
    # test_storage). Now a clear NotImplementedError; whole storages work.
    v = torch.arange(15.0).view(3, 5)
    t = v.to(DEV)
    with pytest.raises(NotImplementedError, match="slice of a tpu storage"):
        t.untyped_storage()[0:4][0]
    assert t.untyped_storage().tolist() == v.untyped_storage().tolist()
    assert t.untyped_storage()[4] == v.untyped_storage()[4]


def test_cpu_tensor_with_tpu_indices_refused_like_cuda():
    # x[tpu_index] with x on CPU: CUDA and CPU refuse a device index for a
    # CPU tensor; tpu uploaded x and returned a tpu result (test_torch's
    # test_advancedindex_mixed_devices_error). CPU indices into a tpu tensor
    # still work.
    x = torch.randn(3, 4, 4, 4, 3)
    ib = torch.tensor([0, 2, 1])
    msg = re.escape("indices should be either on cpu or on the same device as the indexed tensor (cpu)")
    with pytest.raises(RuntimeError, match=msg):
        x[ib.to(DEV)]
    with pytest.raises(RuntimeError, match=msg):
        x[:, ib.to(DEV), None, ib, 0]
    with pytest.raises(RuntimeError, match=msg):
        x.index_put_((ib.to(DEV),), torch.zeros(3, 4, 4, 3))
    y = x.to(DEV)
    torch.testing.assert_close(y[ib].cpu(), x[ib])
    torch.testing.assert_close(y[ib.to(DEV)].cpu(), x[ib])


def test_fill_and_zero_into_expanded_tensor_like_cpu():
    # CPU lets fill_(Scalar) and zero_ write through a stride-0 (expanded)
    # view, each memory location once; tpu refused every write through such
    # a view (test_torch's test_deterministic_resize: empty_strided((10,),
    # (0,)).fill_(0)). Other in-place ops keep CPU's refusal.
    for dev in ("cpu", DEV):
        base = torch.zeros(1, device=dev)
        base.expand(10).fill_(3)
        assert base.cpu().tolist() == [3.0]
        base.expand(4, 5).zero_()
        assert base.cpu().tolist() == [0.0]
    t_c, t_t = torch.zeros(2, 3), torch.zeros(2, 3, device=DEV)
    t_c[:, :1].expand(2, 3).fill_(5)
    t_t[:, :1].expand(2, 3).fill_(5)
    assert torch.equal(t_t.cpu(), t_c)
    s = torch.empty_strided((2, 3, 4), (1, 0, 1), device=DEV).fill_(7)
    assert s.shape == (2, 3, 4) and (s.cpu() == 7).all()
    for op in (lambda a: a.add_(1), lambda a: a.fill_(torch.tensor(2.0, device=a.device))):
        for dev in ("cpu", DEV):
            with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
                op(torch.zeros(1, device=dev).expand(10))


def test_lazy_clone_leaves_source_usable():
    # t._lazy_clone() made t's storage copy-on-write too, a DataPtr the core
    # cannot read: every later op on t raised NotImplementedError ("storage
    # was not allocated by tpu"; test_torch's test_lazy_clone_*). tpu has no
    # copy-on-write storages: the lazy clone is an eager copy, values as CPU's
    out = []
    for dev in ("cpu", DEV):
        t = torch.tensor([[0.0, 1.0], [2.0, 3.0]], device=dev)
        c = t._lazy_clone()
        v = t.view([4])
        v += torch.ones(1, device=dev)
        out.append((t.cpu(), c.cpu(), (c * 2).cpu()))
    for a, b in zip(*out):
        assert torch.equal(a, b)
