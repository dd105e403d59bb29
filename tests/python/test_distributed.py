"""The torch.distributed backend "tpu" with real processes (docs/distributed.md).

Two ranks on the CPU plugin, each owning `tpu:0` of its own PJRT client:
- every collective and dtype against the same computation on CPU, launched
  as plain processes with the device map "cpu:gloo,tpu:tpu";
- DDP and FSDP2 (fully_shard) training against one process on the whole batch, launched with
  `torchrun --nproc-per-node 2` and backend "tpu", as a user would.
The ranks run `dist_worker.py`, which records each check by name.
"""
import os
import subprocess
import sys

import pytest
import torch

from dist_spawn import child_env, free_port, read_results, run_ranks, start_ranks, wait_ranks

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "dist_worker.py")
WORLD = 2
TIMEOUT = 240  # seconds for a whole launch; a hang fails the test instead of blocking the suite

pytestmark = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch built without distributed")


@pytest.fixture(scope="module")
def collectives(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("dist"))
    run_ranks([WORKER, "collectives", out], WORLD, child_env(TT_DIST_BACKEND="cpu:gloo,tpu:tpu"), TIMEOUT)
    return read_results(out, "collectives", WORLD)


def failures(results, prefix=""):
    bad = {}
    for r, res in enumerate(results):
        for name, value in res.items():
            if name.startswith(prefix) and isinstance(value, str) and value != "ok" and not name.endswith("_error"):
                bad[f"rank {r} {name}"] = value
    return bad


DTYPE_NAMES = ["bfloat16", "float16", "float32", "int32", "int64", "bool"]
FAMILIES = ["all_reduce-sum", "all_reduce-avg", "all_reduce-min", "all_reduce-max", "all_reduce-product",
            "all_gather", "all_gather_into_tensor", "broadcast", "all_to_all_single_uneven",
            "reduce_scatter_tensor-sum", "reduce_scatter_tensor-avg", "reduce_scatter_tensor-max",
            "reduce_scatter", "send_recv"]


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_collectives_match_cpu(collectives, dtype):
    # each family ran for this dtype on both ranks and matched the CPU result exactly
    for family in FAMILIES:
        if dtype == "bool" and (family == "all_reduce-avg" or family.startswith("reduce_scatter")):
            continue  # AVG is not defined for bool; gloo has no bool reduce_scatter
        for r, res in enumerate(collectives):
            assert res.get(f"{family}-{dtype}") == "ok", \
                f"rank {r} {family}-{dtype}: {res.get(f'{family}-{dtype}', 'did not run')}"


@pytest.mark.parametrize("check", ["all_to_all_list-float32", "in_place_views", "fused_region_pending",
                                   "subgroup", "barrier_and_objects", "functional_collectives",
                                   "transport_report", "gather_scatter_reduce"])
def test_collective_behaviour(collectives, check):
    for r, res in enumerate(collectives):
        assert res.get(check) == "ok", f"rank {r} {check}: {res.get(check, 'did not run')}"


def test_mismatched_shapes_raise(collectives):
    # gloo itself aborts the process on a size mismatch; the backend's
    # fingerprint handshake makes every rank raise a RuntimeError naming the op
    for r, res in enumerate(collectives):
        assert res.get("mismatched_shapes_raise") == "ok", res.get("mismatched_shapes_raise")
        assert "all_reduce" in res["mismatch_error"] and "Float[4]" in res["mismatch_error"] \
            and "Float[5]" in res["mismatch_error"], res["mismatch_error"]


def test_mismatched_dtypes_raise(collectives):
    for r, res in enumerate(collectives):
        assert res.get("mismatched_dtypes_raise") == "ok", res.get("mismatched_dtypes_raise")


def test_unresponsive_then_exited_peer_raises(collectives):
    # rank 1 sleeps past group A's 5 s timeout, then exits without a word:
    # rank 0's all_reduce on A raises at the timeout, the next one on B when
    # gloo sees the closed connection (or at B's timeout); neither hangs
    res = collectives[0]
    assert res.get("peer_silent_then_exit_raises") == "ok", res.get("peer_silent_then_exit_raises")
    silent = float(res["silent_peer_error"].split("s:")[0])
    exited = float(res["exited_peer_error"].split("s:")[0])
    assert 4.0 <= silent < 30 and exited < 30, (res["silent_peer_error"], res["exited_peer_error"])


def test_transport_is_host(collectives):
    for r, res in enumerate(collectives):
        t = res["transport"]
        assert (t["transport"], t["backend"], t["inner"], t["rank"], t["world_size"]) == \
            ("host", "tpu", "gloo", r, WORLD), t
        assert "gloo" in t["reason"]


def test_ddp_and_fsdp2_under_torchrun(tmp_path):
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    cmd = [torchrun, "--nproc-per-node", str(WORLD), "--master-port", str(free_port()),
           WORKER, "ddp", str(tmp_path)]
    proc = subprocess.run(cmd, env=child_env(TT_DIST_BACKEND="tpu"), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout[-3000:]
    results = read_results(str(tmp_path), "ddp", WORLD)
    assert not failures(results), failures(results)
    for res in results:
        assert len(res["ddp_losses"]) == 4
        # float32; ATen and XLA:CPU sum in different orders (the worker allows 1e-5 relative)
        for a, b in zip(res["ddp_losses"], res["ref_losses"]):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (res["ddp_losses"], res["ref_losses"])
        assert res["ddp_matches_single_process"] == "ok"
        # FSDP2 fully_shard per Linear and at the root, over the host transport
        assert res["fsdp2_matches_single_process"] == "ok"
        for a, b in zip(res["fsdp2_losses"], res["ref_losses"]):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (res["fsdp2_losses"], res["ref_losses"])
        # FSDP2 with bf16 parameters, fp32 reduction, activation checkpointing;
        # tensor parallelism (ColwiseParallel, RowwiseParallel) on an MLP
        assert res["fsdp2_bf16_checkpointed"] == "ok"
        assert res["tensor_parallel"] == "ok"
        assert len(res["fsdp2_bf16_losses"]) == len(res["tp_losses"]) == 4
        assert res["reinit_after_destroy"] == "ok"
        # FSDP2 model + Adam state through torch.distributed.checkpoint, loaded
        # into fresh sharded ones: same parameters, the same next-step loss
        assert res["distributed_checkpoint"] == "ok"
        assert res["dcp_resume_losses"][0] == res["dcp_resume_losses"][1]
    # the 2-rank FSDP2 checkpoint loads into this one process (no process
    # group), into a plain tpu model: the same full parameters
    import torch.distributed.checkpoint as dcp
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4)).to("tpu")
    state = {"model": model.state_dict()}
    dcp.load(state, checkpoint_id=str(tmp_path / "ckpt"))
    model.load_state_dict(state["model"])
    full = torch.load(tmp_path / "ckpt_full.pt")
    for k, v in model.state_dict().items():
        assert torch.equal(v.cpu(), full[k]), k


@pytest.fixture(scope="module")
def checks_by_level(tmp_path_factory):
    # one 2-rank launch per TORCH_TPU_DIST_CHECKS level, the three at once
    out = str(tmp_path_factory.mktemp("checks"))
    runs = {}
    for level in (0, 1, 2):
        os.makedirs(os.path.join(out, str(level)))
        runs[level] = start_ranks([WORKER, "checks", os.path.join(out, str(level))], WORLD,
                                  child_env(TT_DIST_BACKEND="cpu:gloo,tpu:tpu", TORCH_TPU_DIST_CHECKS=level))
    results = {}
    for level, procs in runs.items():
        for r, (code, log) in enumerate(wait_ranks(procs, TIMEOUT)):
            assert code == 0, f"level {level} rank {r} exited with {code}:\n{log[-3000:]}"
        results[level] = read_results(os.path.join(out, str(level)), "checks", WORLD)
    return results


@pytest.mark.parametrize("level,checks", [(0, 0), (1, 1), (2, 3)])
def test_dist_checks_count(checks_by_level, level, checks):
    # three all_reduces of one signature: level 0 checks none, 1 the first, 2 each
    for res in checks_by_level[level]:
        assert res["level"] == level and res.get("counted") == "ok", res
        assert res["checks_for_3_calls"] == checks, res


@pytest.mark.parametrize("level", [1, 2])
def test_dist_checks_catch_first_call_mismatches(checks_by_level, level):
    # new signatures on both ranks: shapes, all_to_all_single's split sizes, a
    # send against a recv of another size: every rank raises naming the op,
    # at once (not at the 5 s timeout), and the group still works afterwards
    for r, res in enumerate(checks_by_level[level]):
        for name in ("first_call_shapes", "all_to_all_splits", "send_recv_sizes", "group_usable_after"):
            assert res.get(name) == "ok", f"level {level} rank {r} {name}: {res.get(name, 'did not run')}"
        for name in ("first_call_shapes", "all_to_all_splits", "send_recv_sizes"):
            assert float(res[name + "_error"].split("s:")[0]) < 3.0, res[name + "_error"]


@pytest.mark.parametrize("level", [1, 2])
def test_dist_checks_old_against_new_signature(checks_by_level, level):
    # rank 0 repeats an old signature, rank 1 calls a new one: level 2 names
    # both shapes at once; level 1 (rank 0 skips the check) raises on both
    # ranks at the group's 5 s timeout, rank 1 naming the op: no hang, no abort
    for r, res in enumerate(checks_by_level[level]):
        assert res.get("old_against_new") == "ok", f"level {level} rank {r}: {res.get('old_against_new')}"
        took = float(res["old_against_new_error"].split("s:")[0])
        assert (took < 3.0) if level == 2 else (4.0 <= took < 30), res["old_against_new_error"]


def test_kv_callbacks_over_c10d_store_and_cpu_keeps_host(tmp_path):
    # 2 processes: the core's PJRT key-value callbacks, called as a plugin
    # calls them, over the job's c10d TCPStore (values and timeouts); the
    # create options of a multi-process client per plugin kind; the CPU
    # plugin's client sees only its own devices, so the host transport, and
    # distributed_transport() says why
    run_ranks([WORKER, "kv", str(tmp_path)], WORLD, child_env(TT_DIST_BACKEND="tpu"), TIMEOUT)
    for r, res in enumerate(read_results(str(tmp_path), "kv", WORLD)):
        for name in ("kv_round_trip", "kv_timeout", "create_options", "cpu_keeps_host"):
            assert res.get(name) == "ok", f"rank {r} {name}: {res.get(name, 'did not run')}"
