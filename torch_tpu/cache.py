"""Inspect and clear the persistent compilation cache.

    python -m torch_tpu.cache stats [--dir DIR] [--json]
    python -m torch_tpu.cache ls    [--dir DIR] [--fingerprint FP] [--json]
    python -m torch_tpu.cache clear [--dir DIR] [--fingerprint FP]

Reads the on-disk format directly (docs/persistent-cache.md), the same one
csrc/cache/disk_cache.c writes: <dir>/<fingerprint hex>/<key hex>.ttc, each
entry a 40-byte header, the key and the blob, checked by a BLAKE2b-64.
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import struct
import sys

MAGIC = b"TTPUDC\r\n"
VERSION = 1
HEADER_SIZE = 40
SUFFIX = ".ttc"
TMP_PREFIX = ".tmp-"
FINGERPRINT_FILE = "FINGERPRINT"
DEFAULT_MAX_BYTES = 10 << 30
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE_RE = re.compile(r"(\d+)(?:([kmgtKMGT])(?:[iI][bB]|[bB])?|[bB])?")


def default_dir():
    """$TORCH_TPU_CACHE_DIR, else ~/.cache/torch_tpu (as the C core)."""
    d = os.environ.get("TORCH_TPU_CACHE_DIR")
    return d if d else os.path.join(os.path.expanduser("~"), ".cache", "torch_tpu")


def parse_size(text):
    """'10737418240', '512M', '10G', '10GiB' (powers of 1024) -> bytes, as the
    C core parses TORCH_TPU_CACHE_MAX_BYTES; ValueError if malformed."""
    m = _SIZE_RE.fullmatch(text.strip(" "))
    if not m or int(m.group(1)) == 0:
        raise ValueError(f"bad cache size {text!r}: expected a positive byte count such as 10G")
    return int(m.group(1)) * _SIZE_UNITS[(m.group(2) or "").upper()]


def max_bytes():
    env = os.environ.get("TORCH_TPU_CACHE_MAX_BYTES")
    return parse_size(env) if env else DEFAULT_MAX_BYTES


def key_name(key):
    """The entry file name (without suffix) of a key: hex BLAKE2b-128."""
    return hashlib.blake2b(key, digest_size=16).hexdigest()


def fingerprint_dir_name(fingerprint):
    return key_name(fingerprint.encode())


def _is_hex32(name):
    return len(name) == 32 and all(c in "0123456789abcdef" for c in name)


def check_entry(path):
    """Returns (status, key, blob_len): status 'ok', 'misplaced' (valid, but
    not under its key's name: never returned by the C store), or why the
    entry is invalid (the C store removes such entries on their next read)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return f"unreadable: {e.strerror}", None, 0
    if len(data) < HEADER_SIZE:
        return f"truncated: {len(data)} bytes, shorter than the header", None, 0
    if data[:8] != MAGIC:
        return "not a torch_tpu cache entry (bad magic)", None, 0
    version, _reserved, key_len, blob_len = struct.unpack_from("<IIQQ", data, 8)
    if version != VERSION:
        return f"format version {version}, expected {VERSION}", None, 0
    if key_len > len(data) - HEADER_SIZE or blob_len != len(data) - HEADER_SIZE - key_len:
        return (f"truncated: {len(data)} bytes, header says "
                f"{HEADER_SIZE} + {key_len} + {blob_len}"), None, 0
    h = hashlib.blake2b(digest_size=8)
    h.update(data[:32])
    h.update(data[HEADER_SIZE:])
    if h.digest() != data[32:40]:
        return "checksum mismatch", None, 0
    key = data[HEADER_SIZE:HEADER_SIZE + key_len]
    name = os.path.basename(path)
    if name != key_name(key) + SUFFIX:
        return "misplaced", key, blob_len
    return "ok", key, blob_len


def _fingerprint_dirs(root, only=None):
    """[(dir name, path, fingerprint text)] under root; `only` selects by dir
    name (or a prefix of it) or by the full fingerprint text."""
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        path = os.path.join(root, name)
        if not _is_hex32(name) or not os.path.isdir(path):
            continue
        try:
            with open(os.path.join(path, FINGERPRINT_FILE)) as f:
                text = f.read().strip()
        except OSError:
            text = ""
        if only and not (name.startswith(only) or text == only):
            continue
        out.append((name, path, text))
    return out


def _entries(path):
    """[(file name, stat)] of the entries in one fingerprint directory."""
    out = []
    for name in sorted(os.listdir(path)):
        if name.endswith(SUFFIX) and _is_hex32(name[:-len(SUFFIX)]):
            try:
                out.append((name, os.stat(os.path.join(path, name))))
            except FileNotFoundError:  # evicted by a running process meanwhile
                pass
    return out


def _temp_files(path):
    return [n for n in os.listdir(path) if n.startswith(TMP_PREFIX)]


def stats(root, fingerprint=None):
    fps = []
    for name, path, text in _fingerprint_dirs(root, fingerprint):
        entries = _entries(path)
        fps.append({
            "dir": name,
            "fingerprint": text,
            "entries": len(entries),
            "bytes": sum(st.st_size for _, st in entries),
            "temp_files": len(_temp_files(path)),
        })
    return {
        "dir": root,
        "max_bytes": max_bytes(),
        "fingerprints": fps,
        "entries": sum(f["entries"] for f in fps),
        "bytes": sum(f["bytes"] for f in fps),
    }


def ls(root, fingerprint=None):
    rows = []
    for name, path, _text in _fingerprint_dirs(root, fingerprint):
        for entry, st in _entries(path):
            status, _key, blob_len = check_entry(os.path.join(path, entry))
            rows.append({
                "fingerprint_dir": name,
                "entry": entry,
                "bytes": st.st_size,
                "blob_bytes": blob_len,
                "last_use": st.st_mtime,
                "status": status,
            })
    return rows


def clear(root, fingerprint=None):
    """Deletes the entries (and temp files, FINGERPRINT and the directory) of
    every fingerprint, or of one; returns (entries removed, bytes freed).
    Files the cache does not own are left alone."""
    removed = freed = 0
    for _name, path, _text in _fingerprint_dirs(root, fingerprint):
        for entry, st in _entries(path):
            try:
                os.unlink(os.path.join(path, entry))
                removed += 1
                freed += st.st_size
            except FileNotFoundError:
                pass
        for tmp in _temp_files(path):
            try:
                os.unlink(os.path.join(path, tmp))
            except FileNotFoundError:
                pass
        try:
            os.unlink(os.path.join(path, FINGERPRINT_FILE))
            os.rmdir(path)
        except OSError:  # other files inside, or a process just wrote one: keep it
            pass
    return removed, freed


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
    root = args.dir or default_dir()
    try:
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
    except (OSError, ValueError) as e:
        print(f"torch_tpu.cache: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
