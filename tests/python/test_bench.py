"""python -m torch_tpu.bench on a user's workload (module:function): two
variants interleaved, the JSON's figures consistent with the rounds, FLOPs
equal to a Linear layer's training step counted by hand, and the chart
written. Runs in a child process (the harness switches eager modes)."""
import json
import os
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
B, I, O = 8, 32, 16


def tiny(device):
    """The workload: one Linear layer trained with SGD."""
    torch.manual_seed(0)
    m = torch.nn.Linear(I, O, bias=False).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(B, I).to(device)

    def step():
        loss = m(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return {"step": step, "items": B, "unit": "samples"}


def test_bench_user_workload(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
    env.update(PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "tests", "python")]),
               TORCH_TPU_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-m", "torch_tpu.bench", "test_bench:tiny",
                        "--variants", "fused,strict", "--rounds", "3", "--steps", "2",
                        "--warmup", "1", "--out", str(tmp_path / "out"),
                        "--chart", str(tmp_path / "chart.png")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    (js,) = [f for f in os.listdir(tmp_path / "out") if f.endswith(".json")]
    assert os.path.getsize(tmp_path / "out" / js.replace(".json", ".png")) > 1000
    assert os.path.getsize(tmp_path / "chart.png") > 1000
    r = json.loads((tmp_path / "out" / js).read_text())
    # forward x @ W.T, backward grad_W (grad_x is not needed: x is a leaf
    # without grad): 2 matmuls of 2*B*I*O FLOPs
    assert r["flops_per_step"] == 2 * (2 * B * I * O)
    assert r["unit"] == "samples" and r["items_per_step"] == B
    assert r["peak_flops"]["tpu"] > 1e8 and "measured" in r["peak_flops_source"]["tpu"]
    assert list(r["variants"]) == ["fused", "strict"]
    for name, v in r["variants"].items():
        ts = v["step_s_rounds"]
        assert len(ts) == 3 and all(t > 0 for t in ts)
        assert v["step_s_min"] == min(ts) <= v["step_s_median"] <= v["step_s_max"] == max(ts)
        assert abs(v["throughput"] - B / v["step_s_median"]) < 1e-6 * v["throughput"]
        assert abs(v["mfu"] - r["flops_per_step"] / v["step_s_median"] / r["peak_flops"]["tpu"]) < 1e-12
        assert v["first_step_s"] > 0 and v["compiles_warmup"] >= 1
        assert v["compiles_after_warmup"] == 0  # same shapes every step: nothing recompiles
        assert v["peak_allocated_bytes"] >= 4 * (B * I + I * O)  # x and W at least
    assert r["variants"]["fused"]["ratio_to_fused_median"] == 1.0
    assert "fused" in p.stdout and "MFU" in p.stdout
