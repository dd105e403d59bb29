"""The settings registry (csrc/core/settings.c): one declaration, one parser
and one default per TORCH_TPU_* variable, read by C, C++ and Python alike;
bad values and unknown names; the README's table generated from it."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest
import torch

import torch_tpu
from torch_tpu import _C, cache, modes

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETTINGS = {s["name"]: s for s in _C._settings()}


def run_python(code, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
    full.update({"TORCH_TPU_CACHE": "0"}, **env, PYTHONPATH=REPO)  # never the user's cache
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def fresh_settings(request):
    """Tests that change the environment: settings are read once, so forget
    them now and again after the test (after monkeypatch restores)."""
    _C._reset_settings()
    request.addfinalizer(_C._reset_settings)


def test_table_is_complete_and_well_formed():
    assert len(SETTINGS) == len(_C._settings())  # no duplicate names
    for s in SETTINGS.values():
        assert s["name"].startswith("TORCH_TPU_"), s
        assert s["type"] in ("bool", "int", "size", "enum", "path"), s
        assert s["stability"] in ("stable", "experimental", "deprecated"), s
        assert s["description"] and "\n" not in s["description"], s
        if s["type"] == "enum":
            assert s["default"] in s["values"]
        if s["type"] != "path":  # every default parses as its own type
            _C._parse_setting(s["name"], s["default"])
    assert SETTINGS["TORCH_TPU_LAUNCH_BLOCKING"]["stability"] == "deprecated"


def test_every_variable_in_the_sources_is_declared():
    used = set()
    for folder in ("csrc", "torch_tpu", "tools", "benchmarks", "examples", "tests"):
        for dirpath, _dirs, files in os.walk(os.path.join(REPO, folder)):
            for name in files:
                if name.endswith((".c", ".h", ".cpp", ".py", ".md")):
                    with open(os.path.join(dirpath, name), errors="replace") as f:
                        used |= set(re.findall(r"\bTORCH_TPU_[A-Z0-9_]*[A-Z0-9]\b", f.read()))
    used -= {"TORCH_TPU_EAGER_MOD", "TORCH_TPU_LOG_COMPILE", "TORCH_TPU_NOT_A_SETTING"}  # typos here
    assert used <= set(SETTINGS), used - set(SETTINGS)


def test_no_direct_environment_reads():
    """C, C++ and Python read TORCH_TPU_* variables only through the registry."""
    pattern = re.compile(r"getenv\(\s*\"TORCH_TPU_|environ(?:\.get)?[\[(]\s*[\"']TORCH_TPU_")
    offenders = []
    for folder in ("csrc", "torch_tpu"):
        for dirpath, _dirs, files in os.walk(os.path.join(REPO, folder)):
            for name in files:
                path = os.path.join(dirpath, name)
                if name.endswith((".c", ".h", ".cpp", ".py")) and name != "settings.c":
                    with open(path) as f:
                        offenders += [f"{path}: {m.group(0)}" for m in pattern.finditer(f.read())]
    assert not offenders


@pytest.mark.parametrize("text,value", [
    ("1", True), ("0", False), ("true", True), ("FALSE", False), ("Yes", True), ("no", False),
    ("on", True), (" OFF ", False), ("", False)])
def test_bool_spellings(text, value):
    assert _C._parse_setting("TORCH_TPU_LOG_COMPILES", text) is value


def test_empty_is_the_default_for_every_type():
    assert _C._parse_setting("TORCH_TPU_CPU_FALLBACK", "") is True
    assert _C._parse_setting("TORCH_TPU_NUM_DEVICES", "  ") == 1
    assert _C._parse_setting("TORCH_TPU_CACHE_MAX_BYTES", "") == 10 << 30
    assert _C._parse_setting("TORCH_TPU_EAGER_MODE", "") == "fused"


def test_sizes_ints_and_enums():
    size = "TORCH_TPU_CACHE_MAX_BYTES"
    assert _C._parse_setting(size, "10G") == _C._parse_setting(size, "10GiB") == 10 << 30
    assert _C._parse_setting(size, "10gb") == 10 << 30
    assert _C._parse_setting(size, "512m") == 512 << 20
    assert _C._parse_setting(size, "12345") == 12345 and _C._parse_setting(size, "1K") == 1024
    assert _C._parse_setting("TORCH_TPU_NUM_DEVICES", " 64 ") == 64
    assert _C._parse_setting("TORCH_TPU_FUSED_MAX_OPS", "100") == 100
    assert _C._parse_setting("TORCH_TPU_EAGER_MODE", " Strict ") == "strict"
    assert _C._parse_setting("TORCH_TPU_DEBUG_CHECK", "cpu") == "cpu"


@pytest.mark.parametrize("name,text,accepted", [
    ("TORCH_TPU_LOG_COMPILES", "maybe", "1/0, true/false, yes/no or on/off"),
    ("TORCH_TPU_CPU_FALLBACK", "2", "1/0, true/false, yes/no or on/off"),
    ("TORCH_TPU_NUM_DEVICES", "0", "[1, 64]"),
    ("TORCH_TPU_NUM_DEVICES", "two", "[1, 64]"),
    ("TORCH_TPU_FUSED_MAX_OPS", "-5", "integer"),
    ("TORCH_TPU_CACHE_MAX_BYTES", "lots", "10G"),
    ("TORCH_TPU_CACHE_MAX_BYTES", "0", "at least 1 byte(s)"),
    ("TORCH_TPU_CACHE_MAX_BYTES", "99999999999999999999", "10G"),
    ("TORCH_TPU_CACHE_MAX_BYTES", "1 G", "10G"),
    ("TORCH_TPU_EAGER_MODE", "fast", "strict, fused, debug"),
    ("TORCH_TPU_DEBUG_CHECK", "gpu", "off, cpu"),
])
def test_bad_values_name_the_variable_and_what_it_accepts(name, text, accepted):
    with pytest.raises(ValueError) as info:
        _C._parse_setting(name, text)
    assert f"{name}='{text}'" in str(info.value) and accepted in str(info.value)


def test_unknown_name_is_a_key_error():
    with pytest.raises(KeyError):
        _C._setting("TORCH_TPU_NOT_A_SETTING")


def test_read_once_until_reset(monkeypatch, fresh_settings):
    monkeypatch.setenv("TORCH_TPU_FUSED_MAX_OPS", "77")
    assert _C._setting("TORCH_TPU_FUSED_MAX_OPS") == 77
    monkeypatch.setenv("TORCH_TPU_FUSED_MAX_OPS", "78")
    assert _C._setting("TORCH_TPU_FUSED_MAX_OPS") == 77  # read once
    _C._reset_settings()
    assert _C._setting("TORCH_TPU_FUSED_MAX_OPS") == 78
    monkeypatch.setenv("TORCH_TPU_DEBUG_NAN", "sometimes")
    _C._reset_settings()
    with pytest.raises(ValueError, match="TORCH_TPU_DEBUG_NAN='sometimes'"):
        _C._check_settings()
    with pytest.raises(ValueError, match="TORCH_TPU_DEBUG_NAN='sometimes'"):
        _C._setting("TORCH_TPU_DEBUG_NAN")


def test_paths_expand_home(monkeypatch, fresh_settings):
    monkeypatch.delenv("TORCH_TPU_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", "/home/someone")
    assert _C._setting("TORCH_TPU_CACHE_DIR") == "/home/someone/.cache/torch_tpu"
    assert cache.default_dir() == "/home/someone/.cache/torch_tpu"
    monkeypatch.setenv("TORCH_TPU_CACHE_DIR", "~/elsewhere")
    _C._reset_settings()
    assert cache.default_dir() == "/home/someone/elsewhere"
    assert _C._setting("TORCH_TPU_DUMP_DIR") == ""  # no default


def test_typo_guard_in_process(monkeypatch):
    monkeypatch.setenv("TORCH_TPU_LOG_COMPILE", "1")
    with pytest.warns(RuntimeWarning) as record:
        torch_tpu._check_environment()
    messages = [str(w.message) for w in record if "TORCH_TPU_LOG_COMPILE " in str(w.message)]
    assert messages == ["TORCH_TPU_LOG_COMPILE is not a torch_tpu setting and is ignored; "
                        "did you mean TORCH_TPU_LOG_COMPILES?"]


def test_defaults_agree_between_c_and_python():
    unset = {name for name, s in SETTINGS.items() if not s["set"]}
    for name in unset:
        s = SETTINGS[name]
        if s["type"] != "path":
            assert _C._setting(name) == _C._parse_setting(name, s["default"]), name
    if "TORCH_TPU_EAGER_MODE" in unset:
        assert _C._default_eager_mode() == SETTINGS["TORCH_TPU_EAGER_MODE"]["default"] == "fused"
    # Python's mode names are C's, in tt_exec_mode's order
    assert modes.MODES == tuple(SETTINGS["TORCH_TPU_EAGER_MODE"]["values"])
    assert modes.MODES[_C._current_mode()] == torch_tpu.get_eager_mode()
    with torch_tpu.eager_mode("strict"):
        assert modes.MODES[_C._current_mode()] == "strict"
    if "TORCH_TPU_CACHE_MAX_BYTES" in unset:
        assert cache.max_bytes() == 10 << 30
    assert set(torch_tpu.cache_stats()["compiles_by_mode"]) == set(modes.MODES)


PROBE = """
import sys, torch, torch_tpu
from torch_tpu import _C
x = torch.arange(6.0, device="tpu")
print((x * 3 + 1).sum().item())
print("mode", torch_tpu.get_eager_mode(), _C._current_mode())
print("log", _C._setting("TORCH_TPU_LOG_COMPILES"))
"""


def test_log_compiles_empty_is_off_everywhere():
    """TORCH_TPU_LOG_COMPILES="" used to be off in C and on in Python."""
    runs = {v: run_python(PROBE, TORCH_TPU_LOG_COMPILES=v, TORCH_TPU_EAGER_MODE="strict")
            for v in ("", "1")}
    for v, out in runs.items():
        assert out.returncode == 0, out.stderr
        assert "51.0" in out.stdout and "mode strict 0" in out.stdout
    assert "log False" in runs[""].stdout and "torch_tpu: compiled" not in runs[""].stderr
    assert "log True" in runs["1"].stdout and "torch_tpu: compiled" in runs["1"].stderr


def test_bad_value_and_typo_at_import():
    out = run_python("import torch_tpu", TORCH_TPU_CACHE_MAX_BYTES="lots", TORCH_TPU_CPU_FALLBACK="nah")
    assert out.returncode != 0
    assert "ValueError: TORCH_TPU_CPU_FALLBACK='nah': expected a boolean" in out.stderr
    assert "TORCH_TPU_CACHE_MAX_BYTES='lots': expected a size" in out.stderr  # every bad one
    out = run_python(PROBE, TORCH_TPU_EAGER_MOD="strict")
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("TORCH_TPU_EAGER_MOD is not a torch_tpu setting") == 1
    assert "did you mean TORCH_TPU_EAGER_MODE?" in out.stderr
    assert "mode fused 1" in out.stdout  # the typo changed nothing


def test_deprecated_aliases_choose_the_mode():
    code = "import torch_tpu; print(torch_tpu.get_eager_mode())"
    assert run_python(code, TORCH_TPU_LAUNCH_BLOCKING="1").stdout.split() == ["debug"]
    assert run_python(code, TORCH_TPU_LAUNCH_BLOCKING="1",
                      TORCH_TPU_EAGER_MODE="strict").stdout.split() == ["strict"]


def test_readme_table_is_generated_from_the_registry():
    spec = importlib.util.spec_from_file_location("gen_env_docs",
                                                  os.path.join(REPO, "tools", "gen_env_docs.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(REPO, "README.md")) as f:
        readme = f.read()
    assert gen.render(readme, _C._settings()) == readme, "README.md is stale: run `make docs`"
    for name in SETTINGS:
        assert f"| `{name}` |" in readme
    # the check can fail: a changed description makes the README stale
    changed = [dict(s, description=s["description"] + " (changed)") for s in _C._settings()]
    assert gen.render(readme, changed) != readme
