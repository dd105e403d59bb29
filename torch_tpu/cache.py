"""Inspect and clear the persistent compilation cache.

    python -m torch_tpu.cache stats [--dir DIR] [--json]
    python -m torch_tpu.cache ls    [--dir DIR] [--fingerprint FP] [--json]
    python -m torch_tpu.cache clear [--dir DIR] [--fingerprint FP]

The core does the work (csrc/cache/disk_cache_inspect.c, through torch_tpu._C):
the on-disk format (docs/persistent-cache.md), the default directory and the
size cap are the ones csrc/cache/disk_cache.c reads and writes, and the
settings are the registry's (TORCH_TPU_CACHE_DIR, TORCH_TPU_CACHE_MAX_BYTES).
This file only formats.
"""
import argparse
import datetime
import json
import os
import sys

from . import _C

_FORMAT = _C._disk_cache_format()
MAGIC = _FORMAT["magic"]
VERSION = _FORMAT["version"]
HEADER_SIZE = _FORMAT["header_size"]
SUFFIX = _FORMAT["suffix"]


def default_dir():
    """$TORCH_TPU_CACHE_DIR, else ~/.cache/torch_tpu (the core's rule)."""
    return _C._disk_cache_default_root()


def parse_size(text):
    """A TORCH_TPU_CACHE_MAX_BYTES value ('10G', '512M', '12345') -> bytes, by
    the core's parser; ValueError naming the variable if malformed."""
    return _C._parse_setting("TORCH_TPU_CACHE_MAX_BYTES", text)


def max_bytes():
    return _C._setting("TORCH_TPU_CACHE_MAX_BYTES")


def key_name(key):
    """The entry file name (without suffix) of a key: hex BLAKE2b-128."""
    return _C._disk_cache_key_name(bytes(key))


def fingerprint_dir_name(fingerprint):
    return key_name(fingerprint.encode())


def check_entry(path):
    """Returns (status, key, blob_len): status 'ok', 'misplaced' (valid, but
    not under its key's name: never returned by the C store), or why the
    entry is invalid (the C store removes such entries on their next read)."""
    return _C._disk_cache_check_entry(os.fspath(path))


def stats(root, fingerprint=None):
    fps = [{"dir": d["dir"], "fingerprint": d["fingerprint"], "entries": len(d["files"]),
            "bytes": d["bytes"], "temp_files": d["temp_files"]}
           for d in _C._disk_cache_list(os.fspath(root), fingerprint or "")]
    return {
        "dir": root,
        "max_bytes": max_bytes(),
        "fingerprints": fps,
        "entries": sum(f["entries"] for f in fps),
        "bytes": sum(f["bytes"] for f in fps),
    }


def ls(root, fingerprint=None):
    rows = []
    for d in _C._disk_cache_list(os.fspath(root), fingerprint or ""):
        for name, size, last_use in d["files"]:
            status, _key, blob_len = check_entry(os.path.join(root, d["dir"], name))
            rows.append({
                "fingerprint_dir": d["dir"],
                "entry": name,
                "bytes": size,
                "blob_bytes": blob_len,
                "last_use": last_use,
                "status": status,
            })
    return rows


def clear(root, fingerprint=None):
    """Deletes the entries (and temp files, FINGERPRINT and the directory) of
    every fingerprint, or of one; returns (entries removed, bytes freed).
    Files the cache does not own are left alone."""
    return _C._disk_cache_clear(os.fspath(root), fingerprint or "")


def _human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m torch_tpu.cache",
                                     description="Inspect or clear the persistent compilation cache.")
    parser.add_argument("command", choices=["stats", "ls", "clear"])
    parser.add_argument("--dir", default=None, help="cache directory (default: %(prog)s uses "
                        "$TORCH_TPU_CACHE_DIR, else ~/.cache/torch_tpu)")
    parser.add_argument("--fingerprint", default=None,
                        help="only this plugin fingerprint (directory name, a prefix of it, "
                             "or the full fingerprint text)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    try:
        root = args.dir or default_dir()
        if args.command == "stats":
            s = stats(root, args.fingerprint)
            if args.json:
                print(json.dumps(s, indent=1))
                return 0
            print(f"cache directory: {root}")
            for f in s["fingerprints"]:
                print(f"  {f['dir']}: {f['entries']} entries, {_human(f['bytes'])}"
                      f"{', %d temp files' % f['temp_files'] if f['temp_files'] else ''}"
                      f"  [{f['fingerprint'] or 'no FINGERPRINT file'}]")
            print(f"total: {len(s['fingerprints'])} fingerprints, {s['entries']} entries, "
                  f"{_human(s['bytes'])} of a {_human(s['max_bytes'])} cap")
        elif args.command == "ls":
            rows = ls(root, args.fingerprint)
            if args.json:
                print(json.dumps(rows, indent=1))
                return 0
            for r in rows:
                when = datetime.datetime.fromtimestamp(r["last_use"]).strftime("%Y-%m-%d %H:%M:%S")
                print(f"{r['fingerprint_dir'][:12]}  {r['entry']}  {r['bytes']:>10}  {when}  "
                      f"{r['status']}")
            bad = sum(r["status"] not in ("ok", "misplaced") for r in rows)
            print(f"{len(rows)} entries, {bad} invalid")
        else:
            removed, freed = clear(root, args.fingerprint)
            print(f"removed {removed} entries ({_human(freed)}) from {root}")
    except (OSError, ValueError, RuntimeError) as e:
        print(f"torch_tpu.cache: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
