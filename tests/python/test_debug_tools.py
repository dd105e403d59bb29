"""Debugging tools: the perf map of XLA's generated kernels."""
import pytest
import torch

import torch_tpu


def test_perf_map_names_the_generated_kernels(tmp_path):
    if torch_tpu._C._platform_name() != "cpu":
        pytest.skip("only XLA's CPU backend JIT-loads kernels into this process")
    x = torch.randn(29, 31, device="tpu")  # a shape no other test compiles
    expected = (x.cpu().exp() * 3).sum(0)
    torch.testing.assert_close((x.exp() * 3).sum(0).cpu(), expected)
    path, n = torch_tpu.debug.write_perf_map(str(tmp_path / "perf.map"))
    rows = [line.split(" ", 2) for line in open(path).read().splitlines()]
    assert n == len(rows) > 0
    starts = []
    for addr, size, name in rows:
        starts.append(int(addr, 16))
        assert int(size, 16) > 0 and name.strip()
    assert starts == sorted(starts)
    # XLA names kernels after the fused or wrapped HLO they compute
    assert any("fusion" in name or "wrapped" in name for _, _, name in rows), rows[:5]
