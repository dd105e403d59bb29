"""pytest plugin loaded into each child that runs one PyTorch test file on tpu.

The runner (tools/pytorch_tests/run.py) starts
`python -m pytest -p tpu_pytest_plugin <file>` with this folder on PYTHONPATH
and these settings in the environment:

  PTT_RESULTS   file to append one JSON line per finished test to
  PTT_CURRENT   file holding the id (and start time) of the test now running;
                written before each test, so when the child dies by a signal
                the runner knows which test killed it
  PTT_SKIP      optional file of test ids to deselect (those already run
                before a crash), so a restarted child goes on after them
  PTT_TIMEOUT   per-test limit in seconds; past it the test is recorded as a
                hang and the child exits (code HANG_EXIT), the runner restarts
  PTT_LIMITS    optional JSON file {test id: seconds}: a longer limit for the
                slow tests listed in slow.txt

Importing torch_tpu here, before pytest imports the test module, registers
the PrivateUse1 device, so that common_device_type's test bases (computed
when that module is first imported) include PrivateUse1TestBase and
instantiate_device_type_tests makes the <Class>PRIVATEUSE1 classes.
"""
import faulthandler
import json
import os
import sys
import threading
import time

os.environ.setdefault("PYTORCH_TESTING_DEVICE_ONLY_FOR", "privateuse1")

import pytest  # noqa: E402
import torch  # noqa: E402
import torch_tpu  # noqa: E402,F401


def _testing_compat():
    # The stored test_binary_ufuncs.py (docs/pytorch-tests.md) imports
    # `binary_ufuncs_and_refs`, a list torch 2.13 folded into `binary_ufuncs`
    # (which now holds the _refs OpInfos too). Name the same list under the
    # old name so that the file imports unchanged; nothing else is altered.
    from torch.testing._internal import common_methods_invocations as cmi
    if not hasattr(cmi, "binary_ufuncs_and_refs") and hasattr(cmi, "binary_ufuncs"):
        cmi.binary_ufuncs_and_refs = cmi.binary_ufuncs
    # The stored test_torch.py imports two names torch 2.13 renamed or
    # dropped: `skipIfMps` (now `skipIfMPS`) and common_cuda's
    # `tf32_is_not_fp32` (True only on an Ampere CUDA device: False here).
    from torch.testing._internal import common_utils as cu
    from torch.testing._internal import common_cuda as cc
    if not hasattr(cu, "skipIfMps") and hasattr(cu, "skipIfMPS"):
        cu.skipIfMps = cu.skipIfMPS
    if not hasattr(cc, "tf32_is_not_fp32"):
        cc.tf32_is_not_fp32 = lambda: False
    # The stored test_nn.py (a PyTorch 2.4-based copy, docs/pytorch-tests.md)
    # imports common_nn's `new_module_tests` list, which torch 2.13 builds on
    # demand (`get_new_module_tests()`), and common_mkldnn's
    # `bf32_on_and_off(precision)` decorator (gone; it only switched oneDNN's
    # bf32 mode on CPU, so here it leaves the test as it is).
    from torch.testing._internal import common_nn as cn
    from torch.testing._internal import common_mkldnn as cm
    if not hasattr(cn, "new_module_tests") and hasattr(cn, "get_new_module_tests"):
        cn.new_module_tests = cn.get_new_module_tests()
    if not hasattr(cm, "bf32_on_and_off"):
        cm.bf32_on_and_off = lambda *args, **kwargs: (lambda fn: fn)


_testing_compat()

HANG_EXIT = 87
_MESSAGE_LIMIT = 400

_results_path = os.environ.get("PTT_RESULTS")
_current_path = os.environ.get("PTT_CURRENT")
_timeout = float(os.environ.get("PTT_TIMEOUT", "300"))
_limits = {}
if os.environ.get("PTT_LIMITS") and os.path.exists(os.environ["PTT_LIMITS"]):
    with open(os.environ["PTT_LIMITS"]) as _f:
        _limits = {k: max(float(v), _timeout) for k, v in json.load(_f).items()}

# The real stderr, kept before pytest captures fd 2: a hang's stacks must reach
# the child's log even though the test's output is being captured.
_real_stderr = os.fdopen(os.dup(2), "w")

_lock = threading.Lock()
_reports = {}      # nodeid -> list of (when, outcome, message, wasxfail)
_timer = None
_running = None


def _append_result(record):
    if not _results_path:
        return
    with _lock:
        with open(_results_path, "a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()


def _on_hang(nodeid, started, limit):
    # Runs on a timer thread: the test is still running. Record it as a hang,
    # show where it is, and leave; the runner restarts after this test.
    _append_result({"nodeid": nodeid, "outcome": "hang",
                    "message": f"exceeded the per-test limit of {limit:.0f} s",
                    "seconds": round(time.time() - started, 2)})
    _real_stderr.write(f"\n[pytorch-tests] HANG: {nodeid} ran over {limit:.0f} s\n")
    _real_stderr.flush()
    faulthandler.dump_traceback(file=_real_stderr, all_threads=True)
    _real_stderr.flush()
    os._exit(HANG_EXIT)


def pytest_collection_modifyitems(session, config, items):
    shard = os.environ.get("PTT_SHARD")      # "i/n": keep every n-th test from the i-th
    if shard:
        i, n = (int(x) for x in shard.split("/"))
        drop = [item for k, item in enumerate(items) if k % n != i]
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = [item for k, item in enumerate(items) if k % n == i]
    skip_path = os.environ.get("PTT_SKIP")
    if not skip_path or not os.path.exists(skip_path):
        return
    with open(skip_path) as f:
        done = {line.strip() for line in f if line.strip()}
    keep, drop = [], []
    for item in items:
        (drop if item.nodeid in done else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_logstart(nodeid, location):
    global _timer, _running
    started = time.time()
    _running = (nodeid, started)
    _reports[nodeid] = []
    if _current_path:
        with open(_current_path, "w") as f:
            f.write(json.dumps({"nodeid": nodeid, "started": started}))
            f.flush()
    limit = _limits.get(nodeid, _timeout)
    _timer = threading.Timer(limit, _on_hang, args=(nodeid, started, limit))
    _timer.daemon = True
    _timer.start()
    # Backstop for a hang that holds the GIL (the timer thread cannot run):
    # faulthandler's own C thread dumps the stacks and exits the child; the
    # runner then finds the test started without a result after the limit.
    faulthandler.dump_traceback_later(limit + 60, exit=True, file=_real_stderr)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    # A device-side check (an index out of range in a scatter...) is raised
    # at the next point the host waits, as CUDA's device asserts are; wait
    # at the end of the test, so that such an error fails the test whose op
    # it checks instead of the next test that reads a value.
    try:
        result = yield
    except BaseException:
        try:
            torch.tpu.synchronize()      # the test failed already: drop it
        except Exception:
            pass
        raise
    torch.tpu.synchronize()
    return result


def _message(report):
    text = _raw_message(report)
    return " / ".join(line.strip() for line in text.splitlines() if line.strip())[:_MESSAGE_LIMIT]


def _raw_message(report):
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:   # skip: (file, line, reason)
        return str(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        return crash.message
    text = str(longrepr).strip()
    return text.splitlines()[-1] if text else ""


def pytest_runtest_logreport(report):
    entry = _reports.setdefault(report.nodeid, [])
    entry.append((report.when, report.outcome, _message(report),
                  hasattr(report, "wasxfail")))


def _final_outcome(reports):
    """One outcome per test from its setup/call/teardown (and subtest) reports."""
    failed = [r for r in reports if r[1] == "failed"]
    if failed:
        if any(r[3] for r in failed):
            return "xpassed", failed[0][2]           # strict xfail that passed
        return "failed", failed[0][2]
    skipped = [r for r in reports if r[1] == "skipped"]
    if skipped:
        if any(r[3] for r in skipped):
            return "xfailed", skipped[0][2]
        return "skipped", skipped[0][2]
    if any(r[3] for r in reports):
        return "xpassed", ""
    return "passed", ""


def pytest_runtest_logfinish(nodeid, location):
    global _timer, _running
    faulthandler.cancel_dump_traceback_later()
    if _timer is not None:
        _timer.cancel()
        _timer = None
    started = _running[1] if _running and _running[0] == nodeid else time.time()
    _running = None
    outcome, message = _final_outcome(_reports.pop(nodeid, []))
    _append_result({"nodeid": nodeid, "outcome": outcome, "message": message,
                    "seconds": round(time.time() - started, 2)})
