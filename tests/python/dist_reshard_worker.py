"""One rank of tests/python/test_dist_reshard.py, launched by torchrun.

    dist_reshard_worker.py save OUT    # N ranks: FSDP2 + Adam, 2 steps, dcp.save, then a 3rd step
    dist_reshard_worker.py load OUT    # M ranks: fresh FSDP2 + Adam, dcp.load (resharded), the 3rd step

Both phases use the same model, the same global batches (each rank its
slice) and the same mean loss over the global batch, so the loaded run's
step 3 must equal the saving run's step 3 up to float32 rounding. Rank 0
writes OUT/<phase>.json.
"""
import datetime
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh

import torch_tpu  # noqa: F401
from dist_spawn import fsdp2_mlp, mean_loss_step

BATCH = 8  # global rows: divisible by 4 and 2 ranks


def model_on(mesh, seed):
    return fsdp2_mlp(mesh, seed, [8, 16, 12, 4])


def data(step):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(BATCH, 8, generator=g), torch.randn(BATCH, 4, generator=g)


def step(model, opt, i, rank, world):
    x, y = data(i)
    rows = BATCH // world
    return mean_loss_step(model, opt, x[rank * rows:(rank + 1) * rows].to("tpu"),
                          y[rank * rows:(rank + 1) * rows].to("tpu"))


def main():
    phase, out = sys.argv[1], sys.argv[2]
    dist.init_process_group("tpu", timeout=datetime.timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("tpu", (world,))
    ckpt = os.path.join(out, "ckpt")
    res = {"world": world}
    if phase == "save":
        model = model_on(mesh, 0)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        res["losses"] = [step(model, opt, i, rank, world) for i in range(2)]
        msd, osd = get_state_dict(model, opt)
        dcp.save({"model": msd, "optim": osd}, checkpoint_id=ckpt)
        res["full"] = {k: v.full_tensor().cpu().tolist() for k, v in model.state_dict().items()}
        res["shard_rows"] = model[0].weight.to_local().shape[0]
        res["next_loss"] = step(model, opt, 2, rank, world)
    else:
        model = model_on(mesh, 1)  # other weights, and Adam state of another step
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        step(model, opt, 7, rank, world)
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd}
        dcp.load(state, checkpoint_id=ckpt)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        res["full"] = {k: v.full_tensor().cpu().tolist() for k, v in model.state_dict().items()}
        res["shard_rows"] = model[0].weight.to_local().shape[0]
        res["adam_steps"] = [float(s["step"]) for s in opt.state_dict()["state"].values()]
        res["next_loss"] = step(model, opt, 2, rank, world)
    if rank == 0:
        with open(os.path.join(out, f"{phase}.json"), "w") as f:
            json.dump(res, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
