"""`python -m torch_tpu doctor`: a healthy setup passes with exit status 0;
setups broken on purpose (in child processes) are diagnosed with the right
check, the fix to apply, and exit status 1."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_doctor(tmp_path, *args, **env_overrides):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
    env["PYTHONPATH"] = ROOT
    env["TORCH_TPU_CACHE_DIR"] = str(tmp_path / "cache")
    for k, v in env_overrides.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    p = subprocess.run([sys.executable, "-m", "torch_tpu", "doctor", "--json", *args],
                       capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    report = json.loads(p.stdout)
    return p.returncode, report


def find(report, section, check=None):
    rows = [c for c in report["checks"] if c["section"] == section
            and (check is None or c["check"] == check)]
    assert rows, f"no {section}/{check} in {report['checks']}"
    return rows[0]


def test_healthy_setup(tmp_path):
    rc, rep = run_doctor(tmp_path)
    assert rc == 0 and rep["ok"], rep
    plugin = find(rep, "plugin", "discovery")
    assert plugin["status"] == "ok" and os.path.isfile(plugin["data"]["path"])
    assert "TORCH_TPU_PJRT_PLUGIN is unset" in plugin["detail"]
    assert find(rep, "devices", "devices")["data"]["devices"]
    assert "matches CPU" in find(rep, "devices", "smoke op")["detail"]
    assert find(rep, "devices", "compile")["status"] == "ok"
    assert find(rep, "versions", "PJRT API")["detail"].split()[0].count(".") == 1
    assert find(rep, "versions", "torch")["detail"].startswith("2.")
    cache = find(rep, "cache", "directory")
    assert cache["status"] == "ok" and str(tmp_path / "cache") in cache["detail"]
    assert find(rep, "distributed", "gloo")["status"] == "ok"


def test_missing_plugin(tmp_path):
    missing = str(tmp_path / "nope" / "plugin.so")
    rc, rep = run_doctor(tmp_path, "--no-probe", TORCH_TPU_PJRT_PLUGIN=missing)
    assert rc == 1 and not rep["ok"]
    d = find(rep, "plugin", "discovery")
    assert d["status"] == "error" and missing in d["detail"]
    assert "TORCH_TPU_PJRT_PLUGIN" in d["fix"]
    # The alternative it would take without the variable is named in the fix.
    assert any("xla_cpu_pjrt.so" in a["path"] for a in d["data"]["alternatives"])


def test_plugin_variable_shadows_site_packages(tmp_path):
    # A valid plugin given by the variable: taken, and the site-packages one
    # is listed as not taken, with why.
    from torch_tpu import doctor
    chosen, _, _, _ = doctor.discover_plugin({}, [p for p in sys.path if p])
    rc, rep = run_doctor(tmp_path, "--no-probe", TORCH_TPU_PJRT_PLUGIN=chosen["path"])
    assert rc == 0, rep
    d = find(rep, "plugin", "discovery")
    assert "TORCH_TPU_PJRT_PLUGIN is set" in d["detail"]
    assert "takes precedence" in find(rep, "plugin", "not taken")["detail"]


def test_unwritable_cache_dir(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    rc, rep = run_doctor(tmp_path, "--no-probe", TORCH_TPU_CACHE_DIR=str(blocker / "cache"))
    assert rc == 1
    c = find(rep, "cache", "directory writable")
    assert c["status"] == "error" and "a file is in the way" in c["detail"]
    assert "TORCH_TPU_CACHE_DIR" in c["fix"] and str(blocker) in c["fix"]


def test_corrupt_cache_entry_is_reported(tmp_path):
    # Fill a cache with one real entry, then damage it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
    env.update(PYTHONPATH=ROOT, TORCH_TPU_CACHE_DIR=str(tmp_path / "cache"),
               TORCH_TPU_EAGER_MODE="strict")
    subprocess.run([sys.executable, "-c", "import torch, torch_tpu; "
                    "print((torch.ones(3, device='tpu') * 7).cpu())"],
                   env=env, check=True, timeout=300, capture_output=True)
    entries = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "cache") for f in fs
               if not f.startswith(("FINGERPRINT", "."))]
    assert entries
    with open(entries[0], "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0xFF]))
    rc, rep = run_doctor(tmp_path, "--no-probe")
    c = find(rep, "cache", "corrupt entries")
    assert c["status"] == "warning" and c["detail"].startswith("1 entries") and "clear" in c["fix"]
    assert rc == 0  # the store repairs itself: a warning, not broken


def test_bad_value_and_misspelled_variable(tmp_path):
    # (a typo test_settings.py allows in the sources)
    rc, rep = run_doctor(tmp_path, TORCH_TPU_CACHE="maybe", TORCH_TPU_LOG_COMPILE="1")
    assert rc == 1
    c = find(rep, "environment", "TORCH_TPU_CACHE")
    assert c["status"] == "error" and "expected a boolean" in c["detail"]
    assert "TORCH_TPU_CACHE" in c["fix"] and "unset it for the default (1)" in c["fix"]
    # The device probe is skipped (import torch_tpu would raise), and says so.
    assert "does not parse" in find(rep, "devices")["detail"]
    c = find(rep, "environment", "TORCH_TPU_LOG_COMPILE")
    assert c["status"] == "error" and "did you mean TORCH_TPU_LOG_COMPILES?" in c["detail"]
    assert "export TORCH_TPU_LOG_COMPILES='1'" in c["fix"]


def test_text_report_and_help(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
    env.update(PYTHONPATH=ROOT, TORCH_TPU_PJRT_PLUGIN=str(tmp_path / "missing.so"))
    p = subprocess.run([sys.executable, "-m", "torch_tpu", "doctor", "--no-probe"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 1
    assert "[FAIL] discovery" in p.stdout and "fix: point TORCH_TPU_PJRT_PLUGIN" in p.stdout
    assert p.stdout.strip().splitlines()[-1].startswith("BROKEN: 1 errors")
