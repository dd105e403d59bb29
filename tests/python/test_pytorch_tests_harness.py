"""The `make pytorch-tests` harness (tools/pytorch_tests) on a small
device-generic test file of our own: the tpu class is made, a crash (SIGSEGV)
and a hang are counted and the file goes on after them, outcomes are compared
with an expectations file, and --update-expectations writes one."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(REPO, "tools", "pytorch_tests", "run.py")

TEST_FILE = '''
import os, signal, time
import torch
from torch.testing._internal.common_utils import TestCase, run_tests
from torch.testing._internal.common_device_type import instantiate_device_type_tests

class TestHarnessProbe(TestCase):
    def test_a_passes(self, device):
        self.assertEqual(torch.ones(3, device=device).sum().item(), 3.0)
    def test_b_fails(self, device):
        self.assertEqual(torch.ones(3, device=device).sum().item(), 4.0)
    def test_c_crashes(self, device):
        os.kill(os.getpid(), signal.SIGSEGV)
    def test_d_hangs(self, device):
        time.sleep(600)
    def test_e_after(self, device):
        self.assertEqual(str(torch.ones(1, device=device).device), "tpu:0")

instantiate_device_type_tests(TestHarnessProbe, globals())
'''


def _run(tmp_path, *extra):
    tests_dir = tmp_path / "test"
    tests_dir.mkdir(exist_ok=True)
    (tests_dir / "test_probe.py").write_text(TEST_FILE)
    report = tmp_path / "report.json"
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, RUN, "--tests-dir", str(tests_dir), "--files", "test_probe",
                           "--timeout", "8", "--report", str(report), *extra],
                          capture_output=True, text=True, env=env, timeout=600)
    return proc, (json.loads(report.read_text()) if report.exists() else None)


def test_crash_and_hang_are_counted_and_the_file_goes_on(tmp_path):
    exp = tmp_path / "expectations.txt"
    exp.write_text("")
    proc, report = _run(tmp_path, "--expectations", str(exp))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    f = report["files"]["test_probe"]
    assert f["counts"]["passed"] == 2  # test_a and test_e, run after the crash and the hang
    assert f["counts"]["failed"] == 1 and f["counts"]["crash"] == 1 and f["counts"]["hang"] == 1
    tests = f["tests"]
    crash = [k for k, v in tests.items() if v["outcome"] == "crash"]
    hang = [k for k, v in tests.items() if v["outcome"] == "hang"]
    assert crash == ["test_probe.py::TestHarnessProbePRIVATEUSE1::test_c_crashes_tpu"], tests
    assert hang == ["test_probe.py::TestHarnessProbePRIVATEUSE1::test_d_hangs_tpu"], tests
    assert "SIGSEGV" in tests[crash[0]]["message"]
    assert "NEW FAILURE" in proc.stdout and "CRASH" in proc.stdout and "HANG" in proc.stdout


def test_update_then_compare(tmp_path):
    exp = tmp_path / "expectations.txt"
    exp.write_text("")
    proc, _ = _run(tmp_path, "--expectations", str(exp), "--update-expectations", "-k", "not crashes and not hangs")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = exp.read_text()
    assert "test_probe.py::TestHarnessProbePRIVATEUSE1::test_b_fails_tpu | failed | unclassified |" in text
    proc, report = _run(tmp_path, "--expectations", str(exp), "-k", "not crashes and not hangs")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK, every outcome as expected" in proc.stdout


def test_without_a_tests_dir_it_says_how_to_get_them():
    env = {k: v for k, v in os.environ.items() if k != "PYTORCH_TESTS_DIR"}
    proc = subprocess.run([sys.executable, RUN], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0
    assert "git clone --depth 1 -b v2.13.0 https://github.com/pytorch/pytorch" in proc.stdout
