"""View semantics: views share storage, reads and writes through views give
exactly CPU's results, version counters bump."""
import pytest
import torch
import torch_tpu

VIEWS = {
    "t": lambda t: t.t(),
    "permute": lambda t: t.view(2, 2, 6).permute(2, 0, 1),
    "slice_step": lambda t: t[1:3, ::2],
    "select": lambda t: t[:, 3],
    "narrow": lambda t: t.narrow(1, 2, 3),
    "expand": lambda t: t[:1].expand(5, 6),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "squeeze": lambda t: t[:1].squeeze(0),
    "diagonal": lambda t: t.diagonal(),
    "unfold": lambda t: t.unfold(1, 3, 2),
    "as_strided": lambda t: t.as_strided((3, 3), (2, 5), 1),
    "reshape_of_transpose": lambda t: t.t().reshape(24),
    "unflatten": lambda t: t.unflatten(1, (2, 3)),
    "view": lambda t: t.view(3, 8),
    "split_column_block": lambda t: t.split(2, dim=1)[1],
    "chunk_heads": lambda t: t.view(2, 2, 6).chunk(3, dim=2)[2].reshape(2, 2, 1, 2).transpose(1, 2),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_read_view(name):
    a = torch.randn(4, 6)
    x = a.to("tpu")
    assert torch.equal(VIEWS[name](x).cpu(), VIEWS[name](a))


def test_column_block_is_read_as_a_slice_not_a_shifted_copy(tmp_path, monkeypatch, request):
    """q/k/v = qkv.split(C, dim=-1) starts k and v at a storage offset
    inside a row; the read must slice the storage in place rather than pad
    and shift a copy of all of it (a full extra pass per attention layer)."""
    monkeypatch.setenv("TORCH_TPU_DUMP_DIR", str(tmp_path))
    torch_tpu._C._reset_settings()  # settings are read once: read them again, now and after
    request.addfinalizer(torch_tpu._C._reset_settings)
    a = torch.randn(5, 7, 3 * 11)
    q, k, v = a.to("tpu").split(11, dim=-1)
    got = (v.reshape(5, 7, 1, 11).transpose(1, 2) * 3).cpu()
    assert torch.equal(got, a.split(11, dim=-1)[2].reshape(5, 7, 1, 11).transpose(1, 2) * 3)
    programs = [f.read_text() for f in tmp_path.iterdir() if f.suffix != ".pb"]  # .pb: the binary optimized HLO
    assert programs, "no program was compiled, so nothing was checked"
    assert not any("stablehlo.pad" in p for p in programs)


def test_views_share_storage_without_copy():
    x = torch.randn(4, 6).to("tpu")
    base = torch.tpu.memory_allocated()
    v = x.t()[1:3]
    assert torch.tpu.memory_allocated() == base
    assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


WRITES = {
    "setitem_column": lambda t: t.__setitem__((slice(None), 1), 0),
    "transpose_inplace": lambda t: t.t_(),
    "strided_mul_": lambda t: t[::2].mul_(2),
    "diagonal_add_": lambda t: t.diagonal().add_(1),
    "column_copy_": lambda t: t[:, 2].copy_(torch.arange(4.0)),
    "row_fill_": lambda t: t[1].fill_(7),
    "block_zero_": lambda t: t[1:3, 2:5].zero_(),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_write_through_view(name):
    a = torch.randn(4, 6)
    x = a.to("tpu")
    WRITES[name](a)
    WRITES[name](x)
    assert x.shape == a.shape and x.stride() == a.stride()
    assert torch.equal(x.cpu(), a)


def test_write_to_view_seen_by_other_views():
    a = torch.zeros(3, 4)
    x = a.to("tpu")
    row, col = x[1], x[:, 2]
    row.fill_(5)
    a[1].fill_(5)
    assert torch.equal(col.cpu(), a[:, 2])


def test_out_variant_resizes_empty_out():
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    out = torch.empty(0, device="tpu")
    torch.add(a.to("tpu"), b.to("tpu"), out=out)
    assert out.shape == (2, 3)
    assert torch.equal(out.cpu(), a + b)


def test_out_variant_into_view():
    a, b = torch.randn(3), torch.randn(3)
    big = torch.zeros(2, 3)
    bt = big.to("tpu")
    torch.mul(a.to("tpu"), b.to("tpu"), out=bt[1])
    torch.mul(a, b, out=big[1])
    assert torch.equal(bt.cpu(), big)


def test_version_counter_rejects_illegal_inplace():
    w = torch.randn(3, device="tpu", requires_grad=True)
    z = w * 2
    s = z * z
    v = z._version
    z.add_(1)
    assert z._version == v + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.backward(torch.ones(3, device="tpu"))


def test_inplace_on_expanded_tensor_raises():
    x = torch.zeros(1, 3).to("tpu").expand(4, 3)
    with pytest.raises(RuntimeError, match="more than one element"):
        x.add_(1)


# clone / .contiguous(memory_format=...) / .to(memory_format=...) give CPU's
# strides (they were contiguous whatever the requested layout), with the same
# values; found by PyTorch's test_view_ops (test_memory_format_resize_as).
@pytest.mark.parametrize("case", ["channels_last", "channels_last_3d", "preserve_transposed",
                                  "preserve_permuted", "preserve_sliced", "contiguous_of_cl"])
def test_clone_memory_format_strides_match_cpu(case):
    torch.manual_seed(0)
    if case == "channels_last_3d":
        x = torch.randn(2, 3, 4, 5, 6)
    else:
        x = torch.randn(2, 3, 4, 5)

    def make(t):
        if case == "channels_last":
            return t.contiguous(memory_format=torch.channels_last)
        if case == "channels_last_3d":
            return t.clone(memory_format=torch.channels_last_3d)
        if case == "preserve_transposed":
            return t.transpose(1, 3).clone()
        if case == "preserve_permuted":
            return t.permute(0, 2, 3, 1).clone(memory_format=torch.preserve_format)
        if case == "preserve_sliced":
            return t[:, :, ::2].clone()
        return t.contiguous(memory_format=torch.channels_last).clone(
            memory_format=torch.contiguous_format)

    want = make(x)
    got = make(x.to("tpu"))
    assert got.stride() == want.stride()
    assert got.is_contiguous() == want.is_contiguous()
    assert torch.equal(got.cpu(), want)


def test_resize_as_preserve_format_follows_channels_last_source():
    src = torch.randn(2, 3, 4, 5).to("tpu").contiguous(memory_format=torch.channels_last)
    flat = torch.randn(src.numel(), device="tpu")
    flat.resize_as_(src, memory_format=torch.preserve_format)
    assert flat.is_contiguous(memory_format=torch.channels_last)
    assert flat.stride() == (60, 1, 15, 3)
