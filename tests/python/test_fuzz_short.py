"""A short, seeded run of the differential op-program fuzzer
(tools/fuzz/fuzz.py; `make fuzz` runs it for minutes): 6 programs, 2 per
eager mode, each run on tpu and CPU in a worker process and compared. Fails
on a crash, a hang, a mismatch or an error of another type than CPU's that
is not already recorded in tools/fuzz/corpus/."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_fuzz_short_seeded_run(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO, TT_FUZZ_CACHE_DIR=str(tmp_path))
    env.pop("TORCH_TPU_EAGER_MODE", None)  # the fuzzer sets each worker's mode
    p = subprocess.run([sys.executable, os.path.join(REPO, "tools", "fuzz", "fuzz.py"), "--seed", "7",
                        "--programs", "6", "--block", "2", "--timeout", "90"],
                       capture_output=True, text=True, timeout=240, env=env)
    summary = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    assert p.returncode == 0, f"fuzzer findings:\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}"
    assert '"programs": 6' in summary, p.stdout[-2000:]
