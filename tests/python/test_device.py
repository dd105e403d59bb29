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


def test_two_devices_in_a_subprocess():
    import os
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = ("import torch, torch_tpu\n"
            "assert torch.tpu.device_count() == 2\n"
            "a = torch.randn(3, 4)\n"
            "x = a.to('tpu:1')\n"
            "y = (x * 2 + 1).sum(0)\n"
            "assert y.device == torch.device('tpu', 1)\n"
            "assert torch.allclose(y.cpu(), (a * 2 + 1).sum(0))\n"
            "z = x.to('tpu:0')\n"
            "assert z.device == torch.device('tpu', 0) and torch.equal(z.cpu(), a)\n"
            "with torch.tpu.device(1):\n"
            "    assert torch.ones(2, device='tpu').device.index == 1\n"
            "try:\n"
            "    x + z\n"
            "    raise SystemExit('mixing devices did not raise')\n"
            "except RuntimeError as e:\n"
            "    assert 'same device' in str(e)\n"
            "print('OK')\n")
    env = dict(os.environ, TORCH_TPU_NUM_DEVICES="2", PYTHONPATH=repo)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-2000:]
