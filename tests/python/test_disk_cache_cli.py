"""`python -m torch_tpu.cache` against entries written by the C store.

The C side is build/test_disk_cache (built by `make build`): `--fill DIR FP N`
writes entries "key-<i>" whose blobs follow make_blob below, `--get DIR FP K`
reads one back. Entries go both ways (C writes, Python reads and checks
every byte; Python writes per docs/persistent-cache.md, C reads), so a
format change on either side fails here."""
import hashlib
import json
import os
import struct
import subprocess
import sys

import pytest

from torch_tpu import _C, cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "build", "test_disk_cache")
FP = "xla_cpu_pjrt.so;size=1;fnv1a64x4=00;pjrt=0.81;xla=test"


@pytest.fixture(scope="module")
def tool():
    assert os.access(TOOL, os.X_OK), f"{TOOL} missing: run `make build` first"
    return TOOL


def make_blob(i):  # as tests/c/test_disk_cache.c
    return bytes((i + 7 * j) % 251 for j in range(100 + 37 * i))


def fill(tool, root, fp, n):
    out = subprocess.run([tool, "--fill", str(root), fp, str(n)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()  # the fingerprint directory


def c_get(tool, root, fp, key):
    out = subprocess.run([tool, "--get", str(root), fp, key], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip(), out.stderr


def write_entry(fp_dir, key, blob):
    """The format of docs/persistent-cache.md, written independently of C."""
    header = cache.MAGIC + struct.pack("<IIQQ", cache.VERSION, 0, len(key), len(blob))
    h = hashlib.blake2b(header + key + blob, digest_size=8).digest()
    path = os.path.join(fp_dir, hashlib.blake2b(key, digest_size=16).hexdigest() + ".ttc")
    with open(path, "wb") as f:
        f.write(header + h + key + blob)
    return path


def entry_path(fp_dir, key):
    return os.path.join(fp_dir, cache.key_name(key) + cache.SUFFIX)


def test_c_entries_parse_byte_for_byte(tool, tmp_path):
    fp_dir = fill(tool, tmp_path, FP, 6)
    assert os.path.basename(fp_dir) == cache.fingerprint_dir_name(FP)
    for i in range(6):
        key = b"key-%d" % i
        with open(entry_path(fp_dir, key), "rb") as f:
            data = f.read()
        blob = make_blob(i)
        assert data[:8] == cache.MAGIC
        assert struct.unpack_from("<IIQQ", data, 8) == (1, 0, len(key), len(blob))
        assert data[32:40] == hashlib.blake2b(data[:32] + key + blob, digest_size=8).digest()
        assert data[40:] == key + blob
        assert cache.check_entry(entry_path(fp_dir, key)) == ("ok", key, len(blob))

    s = cache.stats(str(tmp_path))
    assert s["entries"] == 6 and len(s["fingerprints"]) == 1
    assert s["fingerprints"][0]["fingerprint"] == FP
    assert s["bytes"] == sum(40 + len(b"key-%d" % i) + len(make_blob(i)) for i in range(6))
    rows = cache.ls(str(tmp_path))
    assert len(rows) == 6 and all(r["status"] == "ok" for r in rows)
    assert sorted(r["blob_bytes"] for r in rows) == sorted(len(make_blob(i)) for i in range(6))


def test_python_written_entry_is_read_by_c(tool, tmp_path):
    fp_dir = fill(tool, tmp_path, FP, 1)
    blob = os.urandom(5000)
    path = write_entry(fp_dir, b"from python", blob)
    out, _ = c_get(tool, tmp_path, FP, "from python")
    assert out == "hit %d %s" % (len(blob), hashlib.blake2b(blob, digest_size=8).hexdigest())
    assert c_get(tool, tmp_path, FP, "absent")[0] == "miss"
    # The same bytes under another key's name: a collision is a miss, the file stays.
    os.rename(path, entry_path(fp_dir, b"other key"))
    assert c_get(tool, tmp_path, FP, "other key")[0] == "miss"
    assert os.path.exists(entry_path(fp_dir, b"other key"))
    assert [r["status"] for r in cache.ls(str(tmp_path)) if r["entry"].startswith(
        cache.key_name(b"other key"))] == ["misplaced"]


def test_corrupt_and_truncated_entries(tool, tmp_path, capsys):
    fp_dir = fill(tool, tmp_path, FP, 4)
    flipped, cut = entry_path(fp_dir, b"key-1"), entry_path(fp_dir, b"key-2")
    with open(flipped, "r+b") as f:
        f.seek(60)
        byte = f.read(1)
        f.seek(60)
        f.write(bytes([byte[0] ^ 0x10]))
    os.truncate(cut, os.path.getsize(cut) - 7)
    status = {r["entry"]: r["status"] for r in cache.ls(str(tmp_path))}
    assert status[os.path.basename(flipped)] == "checksum mismatch"
    assert status[os.path.basename(cut)].startswith("truncated")
    assert sum(v == "ok" for v in status.values()) == 2
    assert cache.main(["ls", "--dir", str(tmp_path)]) == 0
    assert "4 entries, 2 invalid" in capsys.readouterr().out

    for key, path in (("key-1", flipped), ("key-2", cut)):
        out, err = c_get(tool, tmp_path, FP, key)
        assert out == "miss"
        assert f"torch_tpu: removed corrupt cache entry {path}" in err
        assert not os.path.exists(path)
    assert c_get(tool, tmp_path, FP, "key-3")[0].startswith("hit %d " % len(make_blob(3)))
    assert cache.stats(str(tmp_path))["entries"] == 2


def test_clear_all_or_one_fingerprint(tool, tmp_path, capsys):
    fill(tool, tmp_path, FP, 3)
    other = fill(tool, tmp_path, "another plugin", 2)
    keep = tmp_path / "notes.txt"  # not the cache's: never deleted
    keep.write_text("mine")
    assert cache.main(["clear", "--dir", str(tmp_path), "--fingerprint", FP]) == 0
    assert "removed 3 entries" in capsys.readouterr().out
    s = cache.stats(str(tmp_path))
    assert [f["dir"] for f in s["fingerprints"]] == [os.path.basename(other)]
    assert s["entries"] == 2
    assert cache.main(["clear", "--dir", str(tmp_path)]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert cache.stats(str(tmp_path))["entries"] == 0
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]


def test_cli_process_and_default_dir(tool, tmp_path):
    fill(tool, tmp_path, FP, 3)
    env = dict(os.environ, TORCH_TPU_CACHE_DIR=str(tmp_path), TORCH_TPU_CACHE_MAX_BYTES="1G",
               PYTHONPATH=ROOT)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "torch_tpu.cache", *args], env=env,
                              capture_output=True, text=True, timeout=120)

    out = run("stats", "--json")
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    assert s["dir"] == str(tmp_path) and s["entries"] == 3 and s["max_bytes"] == 1 << 30
    out = run("stats")
    assert out.returncode == 0 and "total: 1 fingerprints, 3 entries" in out.stdout
    assert FP in out.stdout
    out = run("ls")
    assert out.returncode == 0 and out.stdout.count(" ok\n") == 3
    env["TORCH_TPU_CACHE_MAX_BYTES"] = "lots"
    out = run("stats")  # torch_tpu refuses the value at import
    assert out.returncode == 1 and "TORCH_TPU_CACHE_MAX_BYTES='lots': expected a size" in out.stderr


def test_size_and_default_dir_rules(monkeypatch, request):
    # the core's rules (csrc/core/settings.c), seen through torch_tpu.cache
    assert cache.parse_size("10G") == cache.parse_size("10GiB") == 10 << 30
    assert cache.parse_size("512m") == 512 << 20 and cache.parse_size("12345") == 12345
    assert cache.parse_size("") == 10 << 30  # empty: the default
    for bad in ("0", "G", "10X", "-1", "10iB", "1 G"):
        with pytest.raises(ValueError, match="TORCH_TPU_CACHE_MAX_BYTES"):
            cache.parse_size(bad)
    _C._reset_settings()  # settings are read once: read them again, now and after
    request.addfinalizer(_C._reset_settings)
    monkeypatch.delenv("TORCH_TPU_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", "/home/someone")
    assert cache.default_dir() == "/home/someone/.cache/torch_tpu"
    monkeypatch.delenv("TORCH_TPU_CACHE_MAX_BYTES", raising=False)
    assert cache.max_bytes() == 10 << 30
