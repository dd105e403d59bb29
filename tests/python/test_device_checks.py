"""Device-side checks (docs/reliability.md): out-of-range indices and integer
division by zero raise the exception PyTorch's CPU kernel raises, naming the
op, at the next host read (Fused, Strict) or at the op (Debug). Runs in
every eager mode: where the error surfaces is mode behaviour."""
import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from torch_tpu import _C

DEV = "tpu"


def _x():
    return torch.arange(10.0)


# (name, op(x, idx) on a device or CPU tensor, bad index, good index). The
# op name the message must contain is the aten op's prefix.
CASES = [
    ("index", lambda x, i: x[i], [3, 12], [3, -1]),
    ("index_put", lambda x, i: x.clone().index_put_((i,), torch.ones(2, device=x.device)), [3, 12], [3, -2]),
    ("index_put", lambda x, i: x.clone().index_put_((i,), torch.ones(2, device=x.device), accumulate=True),
     [3, -11], [3, -2]),
    ("take", lambda x, i: torch.take(x, i), [3, 12], [3, -1]),
    ("put", lambda x, i: x.clone().put_(i, torch.ones(2, device=x.device)), [3, 12], [3, -1]),
    ("index_select", lambda x, i: x.index_select(0, i), [3, 12], [3, 9]),
    ("index_select", lambda x, i: x.index_select(0, i), [-1, 2], [0, 9]),  # CPU does not wrap here
    ("index_select", lambda x, i: F.embedding(i, x.reshape(5, 2)), [1, 99], [1, 4]),
    ("gather", lambda x, i: x.gather(0, i), [3, 12], [3, 9]),
    ("scatter", lambda x, i: x.clone().scatter_(0, i, torch.ones(2, device=x.device)), [3, 12], [3, 9]),
    ("scatter_add", lambda x, i: x.clone().scatter_add_(0, i, torch.ones(2, device=x.device)), [3, 10], [3, 9]),
    ("scatter_reduce", lambda x, i: x.clone().scatter_reduce_(0, i, torch.ones(2, device=x.device), "amax"),
     [3, 12], [3, 9]),
    ("index_add", lambda x, i: x.clone().index_add_(0, i, torch.ones(2, device=x.device)), [3, 12], [3, 9]),
    ("index_copy", lambda x, i: x.clone().index_copy_(0, i, torch.ones(2, device=x.device)), [3, 12], [3, 9]),
    ("index_fill", lambda x, i: x.clone().index_fill_(0, i, 1.0), [3, 12], [3, -1]),
    ("nll_loss", lambda x, i: F.nll_loss(x.reshape(2, 5).log_softmax(1), i), [3, 5], [3, 4]),
    ("nll_loss", lambda x, i: F.cross_entropy(x.reshape(2, 5), i), [3, 7], [3, -100]),
    ("embedding_bag", lambda x, i: F.embedding_bag(i.reshape(1, 2), x.reshape(5, 2)), [1, 99], [1, 4]),
]


def _cpu_exception(fn, idx):
    try:
        fn(_x(), torch.tensor(idx))
    except Exception as e:  # noqa: BLE001 - the type and message are what we compare
        return e
    return None


def _cpu_error(fn, idx):
    e = _cpu_exception(fn, idx)
    return type(e) if e is not None else None


def _tpu(fn, idx):
    out = fn(_x().to(DEV), torch.tensor(idx, device=DEV))
    return out.cpu()  # the host read where the check surfaces


@pytest.mark.parametrize("name,fn,bad,good", CASES, ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_out_of_range_raises_like_cpu(name, fn, bad, good):
    want = _cpu_error(fn, bad)
    assert want is not None, "CPU should raise for this case"
    with pytest.raises(want) as info:
        _tpu(fn, bad)
    assert name in str(info.value)
    assert "device-side check" in str(info.value)
    # the device keeps working: the in-range call right after is correct
    torch.testing.assert_close(_tpu(fn, good), fn(_x(), torch.tensor(good)))


@pytest.mark.parametrize("name,fn,bad,good", CASES, ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_message_has_cpu_wording_value_and_position(name, fn, bad, good):
    # CPU's message (with the offending value where CPU names it) is part of
    # ours; the value and the first offending element's position are named.
    cpu = _cpu_exception(fn, bad)
    with pytest.raises(type(cpu)) as info:
        _tpu(fn, bad)
    msg = str(info.value)
    assert str(cpu).splitlines()[0] in msg, (str(cpu), msg)
    value, pos = next((v, k) for k, v in enumerate(bad) if v not in good)
    assert str(value) in msg
    assert (f"element {pos}" in msg) or (f"Index {pos} of input" in msg), msg


def test_exact_messages():
    x = _x().to(DEV)
    with pytest.raises(IndexError) as info:
        x[torch.tensor([3, 4, 12, 13], device=DEV)].cpu()
    assert "index.Tensor: index 12 is out of bounds for dimension 0 with size 10 (element 2 of the index)" \
        in str(info.value)
    with pytest.raises(IndexError) as info:  # a 2-d index names coordinates
        x.reshape(2, 5)[torch.tensor([[0, 1], [1, 1]], device=DEV), torch.tensor([[1, 2], [7, 3]], device=DEV)].cpu()
    assert "index 7 is out of bounds for dimension 1 with size 5 (element [1, 0] of the index)" in str(info.value)
    with pytest.raises(IndexError) as info:  # embedding: CPU's words plus the id, flat position
        F.embedding(torch.tensor([[1, 2], [99, 3]], device=DEV), x.reshape(5, 2)).cpu()
    assert "index out of range in self: index 99 for dimension 0 with size 5 (element 2 of the index)" \
        in str(info.value)
    with pytest.raises(IndexError) as info:
        F.cross_entropy(x.reshape(2, 5), torch.tensor([-100, 7], device=DEV)).cpu()
    assert "Target 7 is out of bounds. (target element 1" in str(info.value)
    with pytest.raises(RuntimeError) as info:
        (torch.tensor([1, 2, 3], device=DEV) // torch.tensor([1, 0, 0], device=DEV)).cpu()
    assert "ZeroDivisionError (the divisor is 0 at element 1" in str(info.value)


def test_first_failing_check_of_a_region_wins():
    # two failing ops before one wait: the first one recorded is raised
    x = _x().to(DEV)
    with pytest.raises(IndexError) as info:
        a = x[torch.tensor([0, 21], device=DEV)]
        b = x.index_select(0, torch.tensor([30], device=DEV))
        (a.sum() + b.sum()).item()
    assert "index 21 is out of bounds" in str(info.value)


def test_many_pending_words_read_without_waiting():
    # more launches than the pending bound: early words are read as they are
    # done, and a failure among them is still raised at the next wait
    with torch_tpu.eager_mode("strict"):
        x = _x().to(DEV)
        ok = torch.tensor([1], device=DEV)
        if _process_debug():  # raised at the op
            with pytest.raises(IndexError, match="index 15 is out of bounds"):
                x[torch.tensor([15], device=DEV)]
        else:
            x[torch.tensor([15], device=DEV)]
            for _ in range(150):
                x[ok]
            with pytest.raises(IndexError, match="index 15 is out of bounds"):
                torch.tpu.synchronize()
        assert _C._device_checks_pending() == 0
        assert x[ok].item() == 1.0


def test_backward_names_forward_op_and_line():
    # a checked op on autograd's backward thread names the forward op and
    # the line that recorded it (the index changed behind autograd's back)
    x = torch.arange(10.0, device=DEV, requires_grad=True)
    idx = torch.tensor([1, 3], device=DEV)
    z = x.gather(0, idx)  # the forward line named
    line = __import__("inspect").currentframe().f_lineno - 1
    idx.data.copy_(torch.tensor([1, 12]))
    with pytest.raises(RuntimeError) as info:
        z.sum().backward()
        torch.tpu.synchronize()
    msg = str(info.value)
    assert "index 12 is out of bounds for dimension 0 with size 10" in msg
    assert "in the backward of aten::gather" in msg
    assert f"test_device_checks.py:{line} in test_backward_names_forward_op_and_line" in msg


def test_source_line_named():
    x = _x().to(DEV)
    with pytest.raises(IndexError) as info:
        y = x[torch.tensor([12], device=DEV)]  # the line the message names
        y.cpu()
    assert "test_device_checks.py" in str(info.value)


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod", "div_trunc"])
def test_integer_division_by_zero(op):
    f = {
        "floor_divide": lambda a, b: a // b,
        "remainder": lambda a, b: a % b,
        "fmod": torch.fmod,
        "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    }[op]
    a, b = torch.tensor([7, -7, 5]), torch.tensor([2, 3, 0])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f(a.to(DEV), b.to(DEV)).cpu()
    good = torch.tensor([2, 3, -4])
    torch.testing.assert_close(f(a.to(DEV), good.to(DEV)).cpu(), f(a, good))
    # float division by zero stays IEEE, unchecked
    torch.testing.assert_close(f(a.float().to(DEV), b.float().to(DEV)).cpu(), f(a.float(), b.float()),
                               equal_nan=True)  # x % 0.0 is NaN on CPU too


def test_checks_off_no_raise():
    _C._set_device_checks(0)
    try:
        x = _x().to(DEV)
        x[torch.tensor([3, 12], device=DEV)].cpu()  # clamped, no error
        (torch.tensor([4], device=DEV) // torch.tensor([0], device=DEV)).cpu()
    finally:
        _C._set_device_checks(-1)
    assert _C._device_checks_enabled()


def _process_debug():
    # a process in debug mode waits after every op, even inside
    # eager_mode("fused"): the error then surfaces at the op
    from torch_tpu import modes
    return modes._default_mode == "debug"


def test_fused_surfaces_at_host_read():
    with torch_tpu.eager_mode("fused"):
        x = _x().to(DEV)
        if _process_debug():
            with pytest.raises(IndexError, match="index"):
                x[torch.tensor([3, 12], device=DEV)]
        else:
            y = x[torch.tensor([3, 12], device=DEV)]
            z = (y * 2).sum()  # still recorded: nothing waited yet
            with pytest.raises(IndexError, match="index"):
                z.item()
        # the next region is fine
        assert x[torch.tensor([3, 4], device=DEV)].sum().item() == 7.0


def test_fused_surfaces_at_synchronize():
    with torch_tpu.eager_mode("fused"):
        x = _x().to(DEV)
        with pytest.raises(IndexError, match="index_select"):
            y = x.index_select(0, torch.tensor([11], device=DEV))  # noqa: F841
            if not _process_debug():
                torch.tpu.synchronize()
        torch.tpu.synchronize()  # reported once


def test_debug_raises_at_op():
    with torch_tpu.eager_mode("debug"):
        x = _x().to(DEV)
        with pytest.raises(IndexError, match="index_select") as info:
            x.index_select(0, torch.tensor([11], device=DEV))  # no host read
        assert "index 11 for dimension 0 with size 10 (element 0 of the index)" in str(info.value)
        assert _C._device_checks_pending() == 0
        assert x.index_select(0, torch.tensor([2], device=DEV)).item() == 2.0
        with pytest.raises(IndexError, match="Target 9 is out of bounds"):
            F.nll_loss(x.reshape(2, 5), torch.tensor([0, 9], device=DEV))


def test_training_step_with_error_then_recovers():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 4).to(DEV)
    opt = torch.optim.SGD(emb.parameters(), lr=0.1)
    bad = torch.tensor([[1, 2, 10]], device=DEV)
    with pytest.raises(IndexError):
        emb(bad).sum().backward()
        opt.step()
        torch.tpu.synchronize()
    opt.zero_grad()
    loss = emb(torch.tensor([[1, 2, 9]], device=DEV)).sum()
    loss.backward()
    opt.step()
    assert torch.isfinite(loss.detach().cpu())


def test_compiled_graph_checks():
    def f(x, i):
        return x[i] * 2

    g = torch.compile(f, backend="tpu")
    x = _x().to(DEV)
    torch.testing.assert_close(g(x, torch.tensor([1, 2], device=DEV)).cpu(), torch.tensor([2.0, 4.0]))
    with pytest.raises(IndexError):
        g(x, torch.tensor([1, 12], device=DEV)).cpu()
    torch.testing.assert_close(g(x, torch.tensor([3, 4], device=DEV)).cpu(), torch.tensor([6.0, 8.0]))


_CHILD = r"""
import torch, torch_tpu
x = torch.arange(10., device="tpu")
emb = torch.nn.Embedding(10, 4).to("tpu")
ok = emb(torch.tensor([1, 2], device="tpu")).sum() + x[torch.tensor([3], device="tpu")].sum()
ok.item()
try:
    (emb(torch.tensor([1, 12], device="tpu")).sum() + x[torch.tensor([3], device="tpu")].sum()).item()
except IndexError as e:
    print("RAISED", "index_select" in str(e), torch_tpu.cache_stats()["fused"]["disk_loads"] > 0)
"""


@pytest.mark.skipif(__import__("os").environ.get("TORCH_TPU_EAGER_MODE", "fused") != "fused",
                    reason="runs Fused children itself; once is enough")
def test_region_from_persistent_cache_keeps_checks(tmp_path):
    # A region program loaded from disk carries its error word: the number of
    # checks comes from the recorded ops, not from the stored plan.
    import os
    import subprocess
    import sys
    env = dict(os.environ, TORCH_TPU_CACHE_DIR=str(tmp_path), TORCH_TPU_EAGER_MODE="fused")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root
    outs = [subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                           timeout=120).stdout for _ in range(2)]
    assert "RAISED True" in outs[0], outs[0]
    assert "RAISED True True" in outs[1], outs[1]


@pytest.mark.parametrize("case", ["histc_inf_data", "histc_nan_max", "multinomial_neg", "multinomial_nan",
                                  "multinomial_zero"])
def test_host_checked_ops_raise_like_cpu(case):
    # histc and multinomial keep PyTorch's own checks (they read their input
    # on the host first); on tpu they raise CPU's type and message too
    inf, nan = float("inf"), float("nan")
    fn, data = {
        "histc_inf_data": (lambda t: torch.histc(t, bins=4), [1.0, inf]),
        "histc_nan_max": (lambda t: torch.histc(t, bins=4, min=0, max=nan), [1.0, 2.0]),
        "multinomial_neg": (lambda t: torch.multinomial(t, 1), [0.5, -0.1]),
        "multinomial_nan": (lambda t: torch.multinomial(t, 1), [0.5, nan]),
        "multinomial_zero": (lambda t: torch.multinomial(t, 1), [0.0, 0.0]),
    }[case]
    with pytest.raises(RuntimeError) as cpu:
        fn(torch.tensor(data))
    with pytest.raises(RuntimeError) as tpu:
        fn(torch.tensor(data, device=DEV)).cpu()
    assert str(cpu.value).splitlines()[0] in str(tpu.value)
