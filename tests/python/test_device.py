"""The tpu device module and tensor placement."""
import torch

import torch_tpu


def test_device_module_basics():
    assert torch.tpu.is_available()
    assert torch.tpu.device_count() >= 1
    assert torch.tpu.current_device() == 0
    assert isinstance(torch.tpu.get_device_name(), str) and torch.tpu.get_device_name()
    torch.tpu.set_device(0)
    torch.tpu.synchronize()


def test_tensor_placement_and_round_trip():
    a = torch.randn(3, 5)
    x = a.to("tpu")
    assert x.device == torch.device("tpu", 0)
    assert x.is_tpu and not a.is_tpu
    assert torch.equal(x.cpu(), a)
    assert torch.equal(a.tpu().cpu(), a)


def test_dtypes_round_trip():
    for dt in (torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64,
               torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool):
        a = (torch.randn(4, 3) * 10).to(dt)
        assert torch.equal(a.to("tpu").cpu(), a), dt


def test_module_to_tpu():
    m = torch.nn.Linear(4, 3)
    m.to("tpu")
    assert m.weight.device.type == "tpu" and m.bias.device.type == "tpu"
    assert isinstance(m.weight, torch.nn.Parameter)


def test_scalar_reads():
    x = torch.tensor([1.5, -2.0, 3.25]).to("tpu")
    assert x[1].item() == -2.0
    assert x.tolist() == [1.5, -2.0, 3.25]
    assert float(x[2]) == 3.25


def test_manual_seed_reproducible():
    torch.manual_seed(123)
    a = torch.tpu.initial_seed()
    assert a == 123


def test_save_and_load(tmp_path):
    sd = {"w": torch.randn(3, 4).to("tpu"), "b": torch.arange(5).to("tpu")}
    path = tmp_path / "ckpt.pt"
    torch.save(sd, path)
    back = torch.load(path, map_location="cpu")
    assert torch.equal(back["w"], sd["w"].cpu()) and torch.equal(back["b"], sd["b"].cpu())
    on_tpu = torch.load(path)
    assert on_tpu["w"].device.type == "tpu"
    assert torch.equal(on_tpu["w"].cpu(), sd["w"].cpu())
