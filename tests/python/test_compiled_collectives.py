"""Compiled collectives with ranks as threads of one process (csrc/dist/).

One child process per world size (TORCH_TPU_NUM_DEVICES=N must be set before
the plugin loads), one thread per rank on its own `tpu:r`: all_reduce (sum,
avg, max, min, product), all_gather, reduce_scatter (sum, max), all_to_all and
collective_permute, each in float32, bfloat16, int32 and int64, compared
exactly with the same computation on CPU (inputs are halves of small
integers, so sums and products are exact in bfloat16); a shape mismatch
between ranks and a rank that never arrives raise on the other ranks.
The same transport through torch.distributed: each rank thread's own
ProcessGroup (`CompiledGroup.process_group`) serves dist.all_reduce,
all_gather(_into_tensor), reduce_scatter_tensor, all_to_all_single,
broadcast and barrier. Also groups whose ranks sit on the devices in
reverse order, and (at 4) a subgroup of two devices. And
`init_process_group("tpu")` in each rank thread's own world (PyTorch's
threaded process-group world): the backend sees every member in this
process and picks the compiled transport; all_reduce, broadcast,
functional collectives, all_gather_object, DDP gradients (against the
average of CPU gradients) and FSDP2 training losses (against one CPU
process on the whole batch) run on it. The checks run in `coll_threads_worker.py`, which
records each by name.
"""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "coll_threads_worker.py")


def run_worker(n, tmp_path, *extra):
    out = str(tmp_path / f"coll-{n}.json")
    env = dict(os.environ, TORCH_TPU_NUM_DEVICES=str(n), OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, WORKER, str(n), out, *extra], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    with open(out) as f:
        return json.load(f)


@pytest.mark.parametrize("n", [2, 4])
def test_collectives_as_threads(n, tmp_path):
    res = run_worker(n, tmp_path)
    failed = {k: v["detail"] for k, v in res.items() if not v["ok"]}
    assert not failed, json.dumps(failed, indent=1)
    # every collective family and dtype, and each failure check, ran
    for kind in ["all_reduce/sum", "all_reduce/avg", "all_reduce/max", "all_reduce/min",
                 "all_reduce/product", "all_gather/-", "reduce_scatter/sum", "reduce_scatter/max",
                 "all_to_all/-"]:
        for dt in ["float32", "bfloat16", "int32", "int64"]:
            assert f"{kind}/{dt}" in res, f"{kind}/{dt} missing"
    for dt in ["float32", "int64"]:  # through torch.distributed on each rank's ProcessGroup
        for name in ["all_reduce/sum", "all_reduce/avg", "all_reduce/max", "all_gather_into_tensor",
                     "all_gather", "reduce_scatter_tensor", "all_to_all_single", "broadcast"]:
            assert f"c10d/{name}/{dt}" in res, f"c10d/{name}/{dt} missing"
    for dt in ["float32", "bfloat16", "int32", "int64"]:
        assert f"collective_permute/-/{dt}/{n}pairs" in res
        assert f"collective_permute/-/{dt}/1pairs" in res
    for name in ["mismatch/raises", "timeout/raises", "after-errors/all_reduce",
                 "all_reduce/transposed", "all_reduce/0-dim", "all_reduce_/in-place",
                 "transport/compiled", "threads/finished", "c10d/transport",
                 f"devices{list(range(n))[::-1]}", "world/transport", "world/all_reduce/avg",
                 "world/broadcast", "world/funcol/all_reduce", "world/funcol/all_gather_tensor",
                 "world/scatter", "world/gather", "world/reduce",
                 "world/all_gather_object", "world/ddp", "world/fsdp2", "world/finished"] + ([f"devices{[n - 1, 1]}"] if n > 2 else []):
        assert name in res, name
