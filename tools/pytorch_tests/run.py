"""Run PyTorch's own device-generic test files against tpu (`make pytorch-tests`).

The test files come from a PyTorch source checkout named by PYTORCH_TESTS_DIR
(its test/ folder); our repository holds only this harness and the
expectations file. See docs/pytorch-tests.md.

Each file runs in its own child process (pytest with tpu_pytest_plugin.py).
When a child dies by a signal, the test it was running is counted as a crash
and the file restarts after that test; a test over the per-test limit is
counted as a hang, likewise. The outcome of every test is compared with
expectations.txt (every test that does not pass on tpu, with its category and
reason); the run fails on a new failure, on an expected failure that now
passes, on a crash and on a hang.

    python tools/pytorch_tests/run.py                       # DEFAULT_FILES
    python tools/pytorch_tests/run.py --files test_indexing  # a subset
    python tools/pytorch_tests/run.py --files test_indexing -k index_put
    python tools/pytorch_tests/run.py --update-expectations # rewrite (review by hand)
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import expectations as exp  # noqa: E402

DEFAULT_FILES = [
    "test_view_ops", "test_indexing", "test_shape_ops", "test_reductions",
    "test_type_promotion", "test_binary_ufuncs", "test_unary_ufuncs",
    "test_torch", "test_nn",
]
# The part of a file that runs on tpu when no -k is given. test_nn.py's
# device-independent classes (TestNN's 975 module tests...) build CPU modules
# only: the run keeps its device-generic class (TestNNDeviceTypePRIVATEUSE1).
FILE_SELECT = {"test_nn": "PRIVATEUSE1"}
HANG_EXIT = 87          # tpu_pytest_plugin.HANG_EXIT
MAX_RESTARTS = 200
SLOW_PATH = os.path.join(HERE, "slow.txt")
COUNTED = ("passed", "failed", "skipped", "xfailed", "xpassed", "crash", "hang")

HOW_TO_GET = """\
make pytorch-tests: PYTORCH_TESTS_DIR is not set, nothing to run.

The test files are PyTorch's own and stay outside this repository. Get them
from the PyTorch release matching the torch in constraints.txt, e.g.:

    git clone --depth 1 -b v2.13.0 https://github.com/pytorch/pytorch /path/to/pytorch
    make pytorch-tests PYTORCH_TESTS_DIR=/path/to/pytorch/test
    make pytorch-tests PYTORCH_TESTS_DIR=/path/to/pytorch/test FILES=test_indexing

See docs/pytorch-tests.md.
"""


def _read_results(path):
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue              # a line cut short by a crash
                out[rec["nodeid"]] = rec
    return out


def _read_current(path):
    try:
        with open(path) as f:
            return json.loads(f.read() or "null")
    except (OSError, ValueError):
        return None


def load_slow(path=SLOW_PATH):
    """slow.txt: `<file.py>::<Class>::<test> | <seconds> | <reason>` per line,
    tests that pass but need more than the per-test limit (many shapes, a
    program compiled for each); they run with that limit instead."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [p.strip() for p in line.split(" | ", 2)]
            if len(parts) != 3:
                raise ValueError(f"{path}:{n}: expected <test> | <seconds> | <reason>")
            out[parts[0]] = float(parts[1])
    return out


def run_file(name, args, workdir, log, not_run=()):
    """Runs one test file to the end, restarting after crashes and hangs.

    not_run: test ids deselected from the start (expectations `not-run`).
    Returns (results: nodeid -> record, minutes, note)."""
    path = os.path.join(args.tests_dir, name + ".py")
    results_path = os.path.join(workdir, name + ".results.jsonl")
    current_path = os.path.join(workdir, name + ".current.json")
    skip_path = os.path.join(workdir, name + ".skip.txt")
    for p in (results_path, current_path, skip_path):
        if os.path.exists(p):
            os.remove(p)
    not_run = sorted(not_run)
    if not_run:
        with open(skip_path, "w") as f:
            f.write("\n".join(not_run) + "\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [HERE, REPO] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = "privateuse1"
    env["PTT_RESULTS"] = results_path
    env["PTT_CURRENT"] = current_path
    env["PTT_SKIP"] = skip_path
    env["PTT_TIMEOUT"] = str(args.timeout)
    # slow.txt ids are "file.py::Class::test"; pytest's are relative to rootdir
    rel = os.path.relpath(path, args.tests_dir)
    limits = {rel + "::" + k.split("::", 1)[1]: v for k, v in load_slow().items()
              if k.startswith(name + ".py::")}
    limits_path = os.path.join(workdir, name + ".limits.json")
    with open(limits_path, "w") as f:
        json.dump(limits, f)
    env["PTT_LIMITS"] = limits_path
    env["PYTORCH_PRINT_REPRO_ON_FAILURE"] = "0"
    env.setdefault("TORCH_TPU_CACHE_DIR", os.path.join(workdir, "cache"))
    cmd = [sys.executable, "-m", "pytest", "-p", "tpu_pytest_plugin", "-p", "no:cacheprovider",
           "--noconftest", "-c", os.path.join(HERE, "pytest.ini"), "--rootdir", args.tests_dir,
           "-q", "-rN", "--tb=short", path]
    select = " and ".join(f"({k})" for k in (FILE_SELECT.get(name), args.k) if k)
    if select:
        cmd += ["-k", select]
    if args.shard:
        env["PTT_SHARD"] = args.shard
    start = time.time()
    note = ""
    for attempt in range(MAX_RESTARTS + 1):
        left = args.file_timeout - (time.time() - start)
        if left <= 0:
            note = "file time limit reached"
            break
        log.write(f"\n===== {name} (start {attempt}) {' '.join(cmd)}\n")
        log.flush()
        proc = subprocess.Popen(cmd, cwd=args.tests_dir, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = False
        try:
            rc = proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
            timed_out = True
        results = _read_results(results_path)
        current = _read_current(current_path)
        stuck = current and current["nodeid"] not in results
        if stuck:
            nodeid = current["nodeid"]
            ran = time.time() - current["started"]
            if timed_out:
                outcome, why = "hang", "still running when the file time limit was reached"
            elif rc < 0:
                outcome, why = "crash", f"child died by signal {signal.Signals(-rc).name}"
            elif ran >= max(args.timeout, limits.get(nodeid, 0)):
                outcome, why = "hang", ("exceeded the per-test limit of "
                                        f"{max(args.timeout, limits.get(nodeid, 0)):.0f} s")
            else:
                outcome, why = "crash", f"child exited with code {rc} during the test"
            with open(results_path, "a") as f:
                f.write(json.dumps({"nodeid": nodeid, "outcome": outcome, "message": why,
                                    "seconds": round(ran, 2)}) + "\n")
            results = _read_results(results_path)
        if timed_out:
            note = "file time limit reached"
            break
        restart = stuck or rc == HANG_EXIT or rc < 0
        if not restart:
            if rc not in (0, 1, 5):          # 5: nothing collected (e.g. -k matched none)
                note = f"pytest exited with code {rc} (see the log)"
            break
        with open(skip_path, "w") as f:
            f.write("\n".join(list(results) + not_run) + "\n")
    else:
        note = f"gave up after {MAX_RESTARTS} restarts"
    return _read_results(results_path), (time.time() - start) / 60.0, note


def _cpu_nodeid(nodeid):
    """The CPU twin of a tpu test id: ClassPRIVATEUSE1/ClassTPU -> ClassCPU, _tpu -> _cpu."""
    parts = nodeid.split("::")
    if len(parts) < 3:
        return None
    cls = re.sub(r"(PRIVATEUSE1|TPU)$", "CPU", parts[-2])
    test = re.sub(r"_tpu(?=_|$)", "_cpu", parts[-1])
    return "::".join(parts[:-2] + [cls, test])


def cpu_baseline(name, args, workdir, log, results):
    """Runs the CPU twins of the tests that failed on tpu; records their outcome
    as results[nodeid]["cpu"]. A test failing on CPU too is not a tpu problem
    (a test written for another torch version, or for CUDA)."""
    failed = {n: _cpu_nodeid(n) for n, r in results.items() if r["outcome"] in ("failed", "hang")}
    failed = {n: c for n, c in failed.items() if c}
    if not failed:
        return
    path = os.path.join(workdir, name + ".cpu.results.jsonl")
    if os.path.exists(path):
        os.remove(path)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [HERE, REPO] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(PYTORCH_TESTING_DEVICE_ONLY_FOR="cpu", PTT_RESULTS=path,
               PTT_CURRENT=os.path.join(workdir, name + ".cpu.current.json"),
               PTT_TIMEOUT=str(args.timeout), PYTORCH_PRINT_REPRO_ON_FAILURE="0")
    env.pop("PTT_SKIP", None)
    cmd = [sys.executable, "-m", "pytest", "-p", "tpu_pytest_plugin", "-p", "no:cacheprovider",
           "--noconftest", "-c", os.path.join(HERE, "pytest.ini"), "--rootdir", args.tests_dir,
           "-q", "-rN", "--tb=no"] + sorted(set(failed.values()))
    log.write(f"\n===== {name} CPU baseline of {len(failed)} tests\n")
    log.flush()
    try:
        subprocess.run(cmd, cwd=args.tests_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                       timeout=args.file_timeout)
    except subprocess.TimeoutExpired:
        pass
    cpu = _read_results(path)
    for n, c in failed.items():
        if c in cpu:
            results[n]["cpu"] = cpu[c]["outcome"]
            results[n]["cpu_message"] = cpu[c].get("message", "")


def _test_key(name, nodeid):
    # nodeid is "<path relative to rootdir>::Class::test"; keep "file.py::Class::test".
    parts = nodeid.split("::")
    return "::".join([name + ".py"] + parts[1:])


def compare(name, results, expected, ran_whole_file):
    """Differences between this run and the expectations for one file."""
    diffs = []
    prefix = name + ".py::"
    for nodeid, rec in sorted(results.items()):
        key = _test_key(name, nodeid)
        outcome = rec["outcome"]
        want = expected.get(key)
        if outcome in ("crash", "hang"):
            diffs.append(f"{outcome.upper()}: {key}: {rec.get('message', '')}")
        elif outcome in ("failed", "xpassed"):
            if want is None:
                diffs.append(f"NEW FAILURE: {key}: {rec.get('message', '')}")
            elif want.outcome != outcome:
                diffs.append(f"CHANGED ({want.outcome} -> {outcome}): {key}")
        elif want is not None:
            diffs.append(f"NOW {outcome.upper()} (expected {want.outcome}): {key}")
    if ran_whole_file:
        seen = {_test_key(name, n) for n in results}
        for key in sorted(k for k, e in expected.items()
                          if k.startswith(prefix) and k not in seen and e.outcome != "not-run"):
            diffs.append(f"NOT RUN (listed in expectations): {key}")
    return diffs


def _revision(tests_dir):
    for cmd in (["git", "-C", tests_dir, "rev-parse", "HEAD"],):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            if out.returncode == 0:
                return out.stdout.strip()
        except OSError:
            pass
    rev = os.path.join(tests_dir, "REVISION")
    if os.path.exists(rev):
        return "; ".join(line.strip() for line in open(rev) if line.strip())
    return "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tests-dir", default=os.environ.get("PYTORCH_TESTS_DIR", ""),
                    help="PyTorch's test/ folder (default: $PYTORCH_TESTS_DIR)")
    ap.add_argument("--files", default=os.environ.get("FILES", ""),
                    help="comma/space separated file names (test_indexing or test_indexing.py)")
    ap.add_argument("-k", default="", help="pytest -k expression, for a subset of tests")
    ap.add_argument("--shard", default="",
                    help="i/n: run the i-th of n interleaved parts of each file (0-based), to "
                         "split a long file over processes run side by side (a subset, like -k)")
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("PTT_TIMEOUT", 300)),
                    help="per-test limit in seconds (default 300)")
    ap.add_argument("--file-timeout", type=float, default=60 * 60,
                    help="per-file limit in seconds (default 3600)")
    ap.add_argument("--expectations", default=exp.DEFAULT_PATH)
    ap.add_argument("--report", default=os.path.join(REPO, "build", "pytorch-tests", "report.json"))
    ap.add_argument("--update-expectations", action="store_true",
                    help="rewrite the expectations of the files run from this run (review by hand)")
    ap.add_argument("--cpu-baseline", action="store_true",
                    help="also run the CPU twin of every test that fails on tpu (its outcome goes "
                         "into the report; --update-expectations files those failing on CPU too "
                         "as test-env)")
    ap.add_argument("--from-report", nargs="+", default=[],
                    help="with --update-expectations: take the outcomes from saved report.json "
                         "files instead of running")
    args = ap.parse_args(argv)

    if args.from_report:
        expected = exp.load(args.expectations)
        for path in args.from_report:
            with open(path) as f:
                saved = json.load(f)
            for name, data in saved["files"].items():
                whole = not data.get("subset") and not data.get("note")
                expected = exp.updated(expected, name, data["tests"], whole_file=whole)
        exp.save(args.expectations, expected)
        print(f"pytorch-tests: wrote {args.expectations} from {len(args.from_report)} report(s)")
        return 0

    if not args.tests_dir:
        print(HOW_TO_GET)
        return 0
    args.tests_dir = os.path.abspath(args.tests_dir)
    files = [f[:-3] if f.endswith(".py") else f
             for f in args.files.replace(",", " ").split()] or DEFAULT_FILES
    missing = [f for f in files if not os.path.exists(os.path.join(args.tests_dir, f + ".py"))]
    if missing:
        print(f"pytorch-tests: not in {args.tests_dir}: {', '.join(m + '.py' for m in missing)}")
        return 2

    expected = exp.load(args.expectations)
    args.report = os.path.abspath(args.report)  # the children run in the tests folder
    report_dir = os.path.dirname(args.report)
    os.makedirs(report_dir, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="run-", dir=report_dir)
    report = {"tests_dir": args.tests_dir, "revision": _revision(args.tests_dir),
              "torch": _torch_version(), "timeout_s": args.timeout,
              "eager_mode": os.environ.get("TORCH_TPU_EAGER_MODE", "fused"), "files": {}}
    all_diffs = []
    print(f"pytorch-tests: {args.tests_dir} (revision {report['revision']}), "
          f"per-test limit {args.timeout:.0f} s, logs in {workdir}")
    for name in files:
        not_run = [k for k, e in expected.items()
                   if e.outcome == "not-run" and k.startswith(name + ".py::")]
        with open(os.path.join(workdir, name + ".log"), "w") as log:
            results, minutes, note = run_file(name, args, workdir, log, not_run)
            if args.cpu_baseline:
                cpu_baseline(name, args, workdir, log, results)
        counts = {k: 0 for k in COUNTED}
        for rec in results.values():
            counts[rec["outcome"]] = counts.get(rec["outcome"], 0) + 1
        diffs = compare(name, results, expected,
                        ran_whole_file=not args.k and not args.shard and not note)
        if note:
            diffs.append(f"INCOMPLETE: {name}.py: {note}")
        all_diffs += diffs
        report["files"][name] = {
            "counts": counts, "minutes": round(minutes, 2), "note": note, "differences": diffs,
            "subset": " ".join(x for x in (args.k, args.shard and "shard " + args.shard) if x),
            "tests": {_test_key(name, n): r for n, r in sorted(results.items())
                      if r["outcome"] != "passed"},
        }
        counts["not-run"] = len(not_run)
        print(f"{name + '.py':28s} " + " ".join(f"{k}={counts[k]}" for k in COUNTED + ("not-run",))
              + f"  {minutes:.1f} min" + (f"  [{note}]" if note else ""), flush=True)
        for d in diffs[:50]:
            print("    " + d[:240])
        if len(diffs) > 50:
            print(f"    ... {len(diffs) - 50} more in {args.report}")
        if args.update_expectations:
            expected = exp.updated(expected, name, {_test_key(name, n): r for n, r in results.items()},
                                   whole_file=not args.k and not args.shard)
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
    if args.update_expectations:
        exp.save(args.expectations, expected)
        print(f"pytorch-tests: wrote {args.expectations}; review the new entries' categories")
        return 0
    print(f"pytorch-tests: report in {args.report}")
    if all_diffs:
        print(f"pytorch-tests: FAILED, {len(all_diffs)} difference(s) from {args.expectations}")
        return 1
    print("pytorch-tests: OK, every outcome as expected")
    return 0


def _torch_version():
    try:
        import torch
        return torch.__version__
    except ImportError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
