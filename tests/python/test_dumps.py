"""TORCH_TPU_DUMP_DIR: per-compile dumps and manifest.json, for a Strict op,
a Fused step and a torch.compile graph (each in a child process with a
fresh persistent cache, so every program is really compiled)."""
import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(tmp_path, code, mode, dump=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
    env.update(PYTHONPATH=ROOT, TORCH_TPU_CACHE_DIR=str(tmp_path / "cache"),
               TORCH_TPU_EAGER_MODE=mode)
    if dump:
        env["TORCH_TPU_DUMP_DIR"] = str(tmp_path / "dump")
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(code))
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def manifest(tmp_path):
    with open(tmp_path / "dump" / "manifest.json") as f:
        m = json.load(f)
    for e in m["entries"]:
        for name in e["files"]:
            assert (tmp_path / "dump" / name).is_file(), name
    return m["entries"]


def read(tmp_path, name):
    return (tmp_path / "dump" / name).read_text()


def optimized(tmp_path, e, ops):
    """The entry's optimized HLO: a non-empty HloModuleProto beside the
    module, whose listing (ours, from graph/hlo_listing.c) names fusions and
    each of ops; the listing is what decoding the .pb again gives."""
    pb = [f for f in e["files"] if f.endswith(".optimized.hlo.pb")]
    txt = [f for f in e["files"] if f.endswith(".optimized.txt")]
    assert len(pb) == 1 and len(txt) == 1, e["files"]
    assert pb[0] == e["files"][0][:-len(".mlir")] + ".optimized.hlo.pb"
    proto = (tmp_path / "dump" / pb[0]).read_bytes()
    assert len(proto) > 0
    listing = read(tmp_path, txt[0])
    assert listing.startswith("HloModule ") and "(entry):" in listing, listing[:500]
    for op in ops:
        assert f" {op}(" in listing, (op, listing)
    from torch_tpu import _C
    again, n_comp, n_instr, n_fusions = _C._hlo_listing(proto)
    assert again == listing
    assert n_comp >= 1 and n_instr >= 1
    return listing, n_fusions


def test_strict_op(tmp_path):
    run(tmp_path, """
        import torch, torch_tpu
        x = torch.ones(4, 8, device="tpu")
        y = torch.mm(x, x.t())   # LINE_MM
        print(y.cpu())
    """, "strict")
    entries = manifest(tmp_path)
    assert [e["seq"] for e in entries] == list(range(len(entries)))
    times = [e["time"] for e in entries]
    assert times == sorted(times)
    mm = [e for e in entries if e["kind"] == "op" and e["name"].startswith("mm")]
    assert len(mm) == 1, entries
    e = mm[0]
    assert "user_script.py:4" in e["source"] and "LINE_MM" in e["source"]
    mlir, opts, key = e["files"][:3]
    assert mlir.endswith(".mlir") and "stablehlo.dot_general" in read(tmp_path, mlir)
    assert "func.func public @main" in read(tmp_path, mlir)
    assert "optimization_level:" in read(tmp_path, opts) and "mode: strict" in read(tmp_path, opts)
    k = read(tmp_path, key)
    # x and its transposed view x.t(): shapes and strides are in the key
    assert "op: mm" in k and "float32[4,8]; float32[8,4] strides(1,8)" in k
    listing, _ = optimized(tmp_path, e, ["dot"])
    assert "f32[4,4]" in listing  # the result's shape


def test_strict_elementwise_fuses(tmp_path):
    run(tmp_path, """
        import torch, torch_tpu
        x = torch.ones(64, device="tpu")
        print(torch.addcmul(x, x, x, value=2.0).cpu()[:2])
    """, "strict")
    e = [e for e in manifest(tmp_path) if e["kind"] == "op" and e["name"].startswith("addcmul")]
    assert len(e) == 1
    listing, n_fusions = optimized(tmp_path, e[0], ["fusion", "multiply", "add"])
    assert n_fusions >= 1 and "(fusion):" in listing and ", kind=k" in listing


def test_fused_step(tmp_path):
    run(tmp_path, """
        import torch, torch_tpu
        w = torch.randn(8, 8, device="tpu", requires_grad=True)
        x = torch.randn(4, 8, device="tpu")
        loss = (x @ w).relu().sum()
        loss.backward()
        torch_tpu.sync()   # LINE_SYNC
        print(w.grad.sum().item())
    """, "fused")
    entries = manifest(tmp_path)
    regions = [e for e in entries if e["kind"] == "region"]
    assert regions, entries
    assert not [e for e in entries if e["kind"] == "op"]  # Fused compiles regions only
    r = regions[0]
    text = read(tmp_path, r["files"][0])
    assert "stablehlo.dot_general" in text
    key = read(tmp_path, r["files"][2])
    n_ops = int(r["name"].split("ops_")[0])
    assert r["name"].endswith("ops_sync")  # flushed by torch_tpu.sync()
    assert key.startswith(f"fused region of {n_ops} ops")
    assert len([ln for ln in key.splitlines()[1:] if ln]) == n_ops
    assert "mode: fused" in read(tmp_path, r["files"][1])
    assert all("user_script.py" in e["source"] for e in regions), regions
    listing, n_fusions = optimized(tmp_path, r, ["fusion", "dot"])
    assert n_fusions >= 1


def test_compiled_graph(tmp_path):
    run(tmp_path, """
        import torch, torch_tpu
        m = torch.nn.Linear(8, 4).to("tpu")
        f = torch.compile(m, backend="tpu")
        x = torch.randn(2, 8, device="tpu", requires_grad=True)
        f(x).sum().backward()   # LINE_CALL
        torch_tpu.sync()
    """, "fused")
    entries = manifest(tmp_path)
    kinds = [e["kind"] for e in entries]
    assert "fx_dynamo" in kinds and "fx_aot_forward" in kinds and "fx_aot_backward" in kinds
    assert kinds.index("fx_dynamo") < kinds.index("fx_aot_forward") < kinds.index("fx_aot_backward")
    # The captured graphs' programs: regions flushed at the capture's end.
    graphs = [e for e in entries if e["kind"] == "region" and e["name"].endswith("_capture")]
    assert any("stablehlo.dot_general" in read(tmp_path, e["files"][0]) for e in graphs), entries
    assert all("flush reason: capture" in read(tmp_path, e["files"][1]) for e in graphs)
    listings = [optimized(tmp_path, e, [])[0] for e in graphs]
    assert any(" fusion(" in t for t in listings) and any(" dot(" in t for t in listings)
    before = read(tmp_path, entries[kinds.index("fx_dynamo")]["files"][0])
    after = read(tmp_path, entries[kinds.index("fx_aot_forward")]["files"][0])
    assert "# input 0:" in before and "torch.ops.aten" in after
    assert "LINE_CALL" in entries[kinds.index("fx_dynamo")]["source"]


def test_no_dump_dir_writes_nothing(tmp_path):
    run(tmp_path, """
        import torch, torch_tpu
        print((torch.ones(3, device="tpu") + 1).cpu())
    """, "strict", dump=False)
    assert not (tmp_path / "dump").exists()


def test_listing_rejects_malformed_bytes():
    """The decoder bounds every read: truncations, lengths past the end,
    bad wire types and random bytes raise with a message, never crash."""
    import random
    import pytest
    from torch_tpu import _C
    good_comp = b"\x0a\x04main" + b"\x12\x0e" + b"\x0a\x01x\x12\x09parameter"
    module = b"\x0a\x01m" + b"\x1a" + bytes([len(good_comp)]) + good_comp
    text, n_comp, n_instr, n_fusions = _C._hlo_listing(module)
    assert "computation main" in text and "%x = parameter(0)" in text
    assert (n_comp, n_instr, n_fusions) == (1, 1, 0)
    bad = [
        b"", b"\x0a", b"\x0a\x05ab",  # truncated key / string
        b"\x1a\xff\xff\xff\xff\x0f",  # a length far past the end
        b"\x0b\x00",  # wire type 3 (a group)
        b"\x00\x01",  # field number 0
        b"\x08" + b"\xff" * 11,  # a varint over 10 bytes
        module[:-3],  # cut inside an instruction
    ]
    for b in bad:
        with pytest.raises(RuntimeError, match="HloModuleProto|NULL"):
            _C._hlo_listing(b)
    rng = random.Random(0)
    for _ in range(2000):  # random and mutated inputs: an error or a listing, no crash
        b = bytearray(module)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        for cand in (bytes(b), bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))):
            try:
                _C._hlo_listing(cand)
            except RuntimeError as e:
                assert "HloModuleProto" in str(e)
