"""`python -m torch_tpu <command>`: `doctor` (diagnose the setup, see
torch_tpu/doctor.py); `cache` (the persistent cache, as `python -m torch_tpu.cache`)."""
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "doctor":
        from . import doctor
        return doctor.main(rest)
    if cmd == "cache":
        from . import cache
        return cache.main(rest)
    print(f"unknown command {cmd!r}; expected doctor or cache", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
