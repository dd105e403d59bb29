"""Module conversion keeps Parameter identity, as it does for CUDA.

nn.Module._apply swaps `.data` into the existing Parameters only when
torch._has_compatible_shallow_copy_type(old, new) holds; otherwise it makes
new Parameters, which unties shared weights (a tied lm_head then gets its
own copy and its gradient no longer reaches the embedding) and orphans any
optimizer built before the move."""
import copy
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

import torch_tpu


class Tied(nn.Module):
    """An embedding whose matrix is also the output projection (GPT-2 style)."""

    def __init__(self, vocab=11, dim=6):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.mid = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, ids):
        return self.head(torch.tanh(self.mid(self.wte(ids))))


def _loss(model, ids, device):
    logits = model(ids.to(device))
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids.to(device).reshape(-1))


def test_shallow_copy_type_compatible_between_cpu_and_tpu():
    a = torch.ones(3)
    b = a.to("tpu")
    assert torch._has_compatible_shallow_copy_type(a, b)
    assert torch._has_compatible_shallow_copy_type(b, a)
    assert torch._has_compatible_shallow_copy_type(b, b.to(torch.float16))
    # A sparse tensor is not a dense one, as on CUDA.
    assert not torch._has_compatible_shallow_copy_type(a.to_sparse(), b)


def test_to_tpu_keeps_parameters_and_ties():
    model = Tied()
    params = list(model.parameters())
    wte = model.wte.weight
    assert model.to("tpu") is model
    assert model.head.weight is model.wte.weight is wte
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    assert len(list(model.parameters())) == 3
    assert all(p.device.type == "tpu" for p in model.parameters())
    model.cpu()
    assert model.head.weight is model.wte.weight is wte
    assert wte.device.type == "cpu"


def test_tied_gradients_match_cpu():
    torch.manual_seed(1)
    ref = Tied()
    dev = copy.deepcopy(ref).to("tpu")
    ids = torch.randint(0, 11, (4, 5))
    _loss(ref, ids, "cpu").backward()
    _loss(dev, ids, "tpu").backward()
    for (name, p_ref), (_, p_dev) in zip(ref.named_parameters(), dev.named_parameters()):
        torch.testing.assert_close(p_dev.grad.cpu(), p_ref.grad, rtol=1e-4, atol=1e-5, msg=name)
    # The tied matrix's gradient holds both uses: embedding and projection.
    assert dev.head.weight.grad is dev.wte.weight.grad


def test_parameter_shared_by_three_modules():
    shared = nn.Parameter(torch.randn(4, 4))
    mods = nn.ModuleList([nn.Linear(4, 4, bias=False) for _ in range(3)])
    for m in mods:
        m.weight = shared
    mods.to("tpu")
    assert all(m.weight is shared for m in mods)
    assert shared.device.type == "tpu"
    x = torch.randn(2, 4)
    out = x.to("tpu")
    for m in mods:
        out = m(out)
    out.sum().backward()
    ref = x
    w = shared.detach().cpu().requires_grad_()
    for _ in range(3):
        ref = ref @ w.t()
    ref.sum().backward()
    torch.testing.assert_close(shared.grad.cpu(), w.grad, rtol=1e-4, atol=1e-5)


def test_optimizer_built_before_to_updates_the_moved_parameters():
    torch.manual_seed(2)
    ref = Tied()
    dev = copy.deepcopy(ref)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt_dev = torch.optim.SGD(dev.parameters(), lr=0.1)  # built on CPU parameters
    dev.to("tpu")
    ids = torch.randint(0, 11, (3, 4))
    for _ in range(2):
        for model, opt, device in ((ref, opt_ref, "cpu"), (dev, opt_dev, "tpu")):
            opt.zero_grad()
            _loss(model, ids, device).backward()
            opt.step()
    for p_ref, p_dev in zip(ref.parameters(), dev.parameters()):
        torch.testing.assert_close(p_dev.detach().cpu(), p_ref.detach(), rtol=1e-4, atol=1e-5)


def test_dtype_conversion_on_tpu_keeps_parameters():
    model = Tied().to("tpu")
    wte = model.wte.weight
    model.to(torch.bfloat16)
    assert model.head.weight is model.wte.weight is wte
    assert wte.dtype == torch.bfloat16 and wte.device.type == "tpu"
    model.to("cpu", torch.float32)
    assert wte.dtype == torch.float32 and wte.device.type == "cpu"


def test_to_second_device_keeps_parameters():
    # A second device needs the CPU plugin started with two: run in a child
    # process when this one has a single device.
    if torch.tpu.device_count() < 2:
        env = dict(os.environ, TORCH_TPU_NUM_DEVICES="2")
        code = ("import torch, torch_tpu, sys; sys.path.insert(0, %r); "
                "import test_module_conversion as t; t.test_to_second_device_keeps_parameters(); "
                "print('ok')" % os.path.dirname(os.path.abspath(__file__)))
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]
        return
    model = Tied().to("tpu:0")
    wte = model.wte.weight
    model.to("tpu:1")
    assert model.head.weight is model.wte.weight is wte
    assert wte.device == torch.device("tpu:1")
    ids = torch.randint(0, 11, (2, 3))
    _loss(model, ids, "tpu:1").backward()
    assert wte.grad.device == torch.device("tpu:1")


def test_swap_setting_keeps_parameter_objects():
    # torch.__future__.set_swap_module_params_on_conversion(True) swaps the
    # contents of each Parameter (torch.utils.swap_tensors) instead of .data.
    model = Tied()
    wte = model.wte.weight
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        model.to("tpu")
    finally:
        torch.__future__.set_swap_module_params_on_conversion(False)
    assert model.head.weight is model.wte.weight is wte
    assert wte.device.type == "tpu"


def test_future_overwrite_setting_is_honoured():
    # torch.__future__.set_overwrite_module_params_on_conversion(True) asks
    # for new Parameters on every conversion, on CUDA and tpu alike.
    model = Tied()
    wte = model.wte.weight
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    try:
        model.to("tpu")
    finally:
        torch.__future__.set_overwrite_module_params_on_conversion(False)
    assert model.wte.weight is not wte
    assert model.wte.weight.device.type == "tpu"


# The audit's other paths where PyTorch treats an accelerator's tensors
# specially: pinned host memory and non_blocking copies. A copy to the CPU
# with non_blocking=True allocates its destination pinned whenever the
# source is on the current accelerator, so without a pinned allocator the
# plain `loss.to("cpu", non_blocking=True)` of training loops raised.
def test_pin_memory_and_is_pinned():
    x = torch.randn(5, 7)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.device.type == "cpu"
    assert torch.equal(p, x)
    assert not p[1:].clone().is_pinned()
    assert p[1:].is_pinned()  # a view of a pinned storage is pinned
    assert torch.empty(0).pin_memory().is_pinned() in (True, False)  # 0 bytes: no crash


def test_non_blocking_copies_both_ways():
    x = torch.randn(64, 33)
    on_tpu = x.to("tpu", non_blocking=True)
    on_tpu = on_tpu * 2
    back = on_tpu.to("cpu", non_blocking=True)
    torch.tpu.synchronize()
    assert back.is_pinned()
    torch.testing.assert_close(back, x * 2)
    pinned_src = x.pin_memory()
    torch.testing.assert_close(pinned_src.to("tpu", non_blocking=True).cpu(), x)


def test_dataloader_pin_memory():
    data = torch.utils.data.TensorDataset(torch.arange(24.0).reshape(8, 3))
    loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True)
    seen = []
    for (batch,) in loader:
        assert batch.is_pinned()
        seen.append(batch.to("tpu", non_blocking=True).sum().item())
    assert seen == [66.0, 210.0]
