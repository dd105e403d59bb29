"""Views at new storage offsets reuse their programs: a nonzero offset is a
runtime value of the program, not part of its cache key. Reads and writes
through views at many offsets match CPU exactly, and the loops that used to
compile once per offset (printing, iterating over rows, per-position
writes) compile a bounded number of programs. Runs in every eager mode."""
import re
import time

import pytest
import torch

import torch_tpu

pytestmark = pytest.mark.filterwarnings("ignore:torch_tpu.*not lowered")


def compiles():
    return sum(torch_tpu.cache_stats()["compiles_by_mode"].values())


def count_compiles(fn):
    torch_tpu.sync()
    before = compiles()
    out = fn()
    torch_tpu.sync()
    return compiles() - before, out


# ------------------------------------------------------------ compile counts


@pytest.mark.parametrize("shape", [(1000,), (100, 100)])
def test_repr_compiles_few_programs_and_matches_cpu(shape):
    a = torch.randn(shape) * 7  # a fresh shape's first print counts everything
    x = a.to("tpu")
    n, text = count_compiles(lambda: repr(x))
    assert n <= 3, f"repr of a {shape} tensor compiled {n} programs"
    assert re.sub(r",\s*device='tpu:0'", "", text) == repr(a)
    assert "device='tpu:0'" in text
    warm = []
    for _ in range(3):
        t0 = time.perf_counter()
        repr(x)
        warm.append(time.perf_counter() - t0)
    assert min(warm) < 0.2, f"warm repr took {min(warm):.3f} s"


def test_reading_every_element_compiles_at_most_two():
    """What PyTorch's printing does: one read per element."""
    a = torch.randn(1001)
    x = a.to("tpu")
    n, vals = count_compiles(lambda: [x[i].item() for i in range(len(x))])
    assert n <= 2, f"{n} programs for 1001 element reads"
    assert vals == a.tolist()


def reduce_rows(rows):
    a = torch.randn(rows, 37)
    x = a.to("tpu")
    n, sums = count_compiles(lambda: [s.item() for s in [r.sum() for r in x]])
    torch.testing.assert_close(torch.tensor(sums), torch.stack([r.sum() for r in a]))
    return n


def test_reducing_each_row_compiles_the_same_for_any_number_of_rows():
    n16, n64 = reduce_rows(16), reduce_rows(64)
    assert n16 <= 2 and n64 <= 2, (n16, n64)


def test_writing_position_t_compiles_at_most_two():
    B, T, D = 2, 256, 8
    cache_cpu = torch.zeros(B, T, D)
    ks_cpu = torch.randn(T, B, D)
    cache, ks = cache_cpu.to("tpu"), ks_cpu.to("tpu")

    def write_all():
        for t in range(T):
            cache[:, t] = ks[t]

    n, _ = count_compiles(write_all)
    for t in range(T):
        cache_cpu[:, t] = ks_cpu[t]
    assert n <= 2, f"cache[:, t] = k compiled {n} programs for {T} positions"
    assert torch.equal(cache.cpu(), cache_cpu)


def test_writing_row_t_compiles_at_most_two():
    T, D = 256, 5
    rows_cpu = torch.randn(T, D)
    out_cpu = torch.zeros(T, D)
    out = out_cpu.to("tpu")
    rows = [r.to("tpu") for r in rows_cpu]  # uploads, not programs

    def write_all():
        for t in range(T):
            out[t] = rows[t]

    n, _ = count_compiles(write_all)
    for t in range(T):
        out_cpu[t] = rows_cpu[t]
    assert n <= 2, f"out[t] = row compiled {n} programs for {T} rows"
    assert torch.equal(out.cpu(), out_cpu)


# ------------------------------------------------------------ correctness

# Views of a [6, 10] tensor at (mostly) nonzero offsets.
VIEWS = {
    "narrow_rows": lambda t: t.narrow(0, 2, 3),
    "narrow_cols": lambda t: t.narrow(1, 3, 4),
    "select_row": lambda t: t[4],
    "select_col": lambda t: t[:, 7],
    "element": lambda t: t[3, 9],
    "split_block": lambda t: t.split(4, dim=1)[1],
    "chunk_last": lambda t: t.chunk(3, dim=1)[2],
    "heads": lambda t: t.view(6, 2, 5)[:, 1].reshape(3, 2, 5).transpose(0, 1),
    "transposed_block": lambda t: t[1:5, 2:8].t(),
    "step_slice": lambda t: t[1::2, 3::3],
    "as_strided_grid": lambda t: t.as_strided((3, 4), (10, 2), 13),
    "as_strided_overlap": lambda t: t.as_strided((4, 5), (3, 1), 7),  # a gather
    "as_strided_nonnesting": lambda t: t.as_strided((3, 3), (4, 3), 2),  # a gather
    "expanded": lambda t: t[2, 3:4].expand(4, 1, 6),
    "unfold": lambda t: t[1].unfold(0, 4, 3),
    "diagonal_shifted": lambda t: t.diagonal(offset=2),
    "last_element": lambda t: t.view(-1)[59:],
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_read_views_at_offsets(name):
    a = torch.randn(6, 10)
    x = a.to("tpu")
    view = VIEWS[name]
    assert torch.equal(view(x).cpu(), view(a))
    torch.testing.assert_close((view(x) * 3 - 1).cpu(), view(a) * 3 - 1)
    torch.testing.assert_close(view(x).sum().cpu(), view(a).sum())


def test_one_program_reads_each_offset_it_is_given():
    """Same layout at other offsets: the cached program must read the new
    offset, not the one it was built for."""
    a = torch.randn(12, 16)
    x = a.to("tpu")
    for r in range(1, 12):
        assert torch.equal((x[r] + 1).cpu(), a[r] + 1)
        assert torch.equal((x[:, r] * 2).cpu(), a[:, r] * 2)
        assert torch.equal(x[r - 1:r + 1, r:r + 4].cpu(), a[r - 1:r + 1, r:r + 4])


def test_two_views_of_one_storage_in_one_op():
    a = torch.randn(40)
    x = a.to("tpu")
    m, mc = x.view(4, 10), a.view(4, 10)
    for i, j in [(2, 20), (20, 2), (5, 9), (9, 5), (0, 13), (13, 0), (7, 7)]:
        assert torch.equal((x[i:i + 8] - x[j:j + 8]).cpu(), a[i:i + 8] - a[j:j + 8])
        got = torch.cat([m[i % 4], m[:, j % 10]]).cpu()
        assert torch.equal(got, torch.cat([mc[i % 4], mc[:, j % 10]]))


WRITES = {
    "add_row": lambda t, i: t[i % 6].add_(1.5),
    "add_col": lambda t, i: t[:, i].add_(t[:, 9 - i]),
    "copy_block": lambda t, i: t[1:4, i:i + 3].copy_(t[2:5, 0:3]),
    "fill_step": lambda t, i: t[i % 2::2, i].fill_(-3.0),
    "mul_transposed": lambda t, i: t[:, i:i + 2].t().mul_(2.0),
    "setitem_elem": lambda t, i: t.__setitem__((i % 6, i), 7.0),
    "index_fill_view": lambda t, i: t[:, i].index_fill_(0, torch.tensor([1, 4], device=t.device), 9.0),
    "index_put_view": lambda t, i: t[i % 6].index_put_((torch.tensor([0, 3], device=t.device),),
                                                       torch.tensor([5.0, 6.0], device=t.device)),
    "index_add_view": lambda t, i: t[2:5, i:i + 2].index_add_(
        0, torch.tensor([0, 2], device=t.device), torch.ones(2, 2, device=t.device)),
    "as_strided_write": lambda t, i: t.as_strided((2, 3), (10, 2), 11 + i).sub_(4.0),
    "zero_narrow": lambda t, i: t.narrow(0, i % 5, 2).zero_(),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_write_views_at_offsets(name):
    a = torch.randn(6, 10)
    x = a.clone().to("tpu")
    for i in (1, 4, 7, 2):
        WRITES[name](a, i)
        WRITES[name](x, i)
        assert torch.equal(x.cpu(), a), f"after position {i}"


def test_disjoint_views_add_each_other():
    a = torch.randn(30)
    x = a.to("tpu")
    for i, j in [(2, 14), (14, 2), (20, 5), (5, 20)]:
        x[i:i + 6].add_(x[j:j + 6])
        a[i:i + 6].add_(a[j:j + 6])
        assert torch.equal(x.cpu(), a)


def test_views_of_a_view_at_offsets():
    a = torch.arange(240.0).reshape(4, 6, 10)
    x = a.to("tpu")
    for b in range(4):
        for s in range(0, 6, 2):
            got = x[b, s:s + 2, 1:9:3].clone().cpu()
            assert torch.equal(got, a[b, s:s + 2, 1:9:3])
    y = x[1:3]
    y[:, 2, 4:7] = torch.tensor([-1.0, -2.0, -3.0], device="tpu")
    a[1:3][:, 2, 4:7] = torch.tensor([-1.0, -2.0, -3.0])
    assert torch.equal(x.cpu(), a)


def test_integer_and_bool_views_at_offsets():
    a = torch.arange(50, dtype=torch.int64).reshape(5, 10)
    x = a.to("tpu")
    for r in range(5):
        assert torch.equal((x[r, 3:] * 2).cpu(), a[r, 3:] * 2)
    m = (a % 3 == 0)
    xm = m.to("tpu")
    for r in range(1, 5):
        assert torch.equal(xm[r].logical_not().cpu(), m[r].logical_not())


def test_explanations_name_runtime_offsets():
    from torch_tpu import _explain
    x = torch.randn(9, 16).to("tpu")
    _explain.explain_recompiles(True)
    try:
        with torch_tpu.eager_mode("strict"):
            n0 = len(_explain.explanations())
            (x[:, 3:7] * 2).cpu()  # a runtime offset
            (x[:, 0:4] * 2).cpu()  # offset 0: its own program, explained
            new = _explain.explanations()[n0:]
            (x[:, 9:13] * 2).cpu()  # another runtime offset: no compile, no explanation
            assert _explain.explanations()[n0 + len(new):] == []
    finally:
        _explain.explain_recompiles(False)
    assert any("offset runtime" in m and "offset 0" in m for m in new), new
