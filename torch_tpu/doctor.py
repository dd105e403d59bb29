"""`python -m torch_tpu doctor`: the setup and diagnostics assistant.

Checks, in order: the `TORCH_TPU_*` variables set (values parsed by the
settings registry, unknown names matched to the nearest known one), which
PJRT plugin is loaded and why (and the candidates not taken), versions
(Python, torch, PJRT API, XLA and plugin package), the devices, a smoke op
with its time and a compile (both in a child process, so a plugin that
crashes or hangs is diagnosed instead of taking the doctor down), the
persistent cache directory's health, and readiness for distributed runs.
Every problem comes with the fix to apply. Exit status 1 when anything is
broken (an "error"), 0 otherwise (warnings included); `--json` prints one
JSON object instead of the report.
"""
import argparse
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time

from . import _C

# The discovery rule is csrc/pjrt/runtime.c's (tt_runtime_find_plugin): the
# variable if set; else the candidates _C._plugin_candidates lists, in its
# order, first found wins. Here only: which package ships each plugin.
PLUGIN_VAR = "TORCH_TPU_PJRT_PLUGIN"
PLUGIN_PACKAGES = {
    "libtpu/libtpu.so": ("libtpu", ("libtpu", "libtpu-nightly")),
    "xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so": ("xla-cpu-pjrt", ("xla-cpu-pjrt",)),
}
PROBE_TIMEOUT_S = 180


class Report:
    def __init__(self):
        self.checks = []

    def add(self, section, name, status, detail, fix=None, **data):
        assert status in ("ok", "info", "warning", "error")
        self.checks.append({"section": section, "check": name, "status": status,
                            "detail": detail, "fix": fix, **({"data": data} if data else {})})

    @property
    def broken(self):
        return any(c["status"] == "error" for c in self.checks)


# ------------------------------------------------------------- variables

def check_variables(rep, environ):
    known = {s["name"]: s for s in _C._settings()}
    set_vars = sorted(k for k in environ if k.startswith("TORCH_TPU_"))
    if not set_vars:
        rep.add("environment", "TORCH_TPU_* variables", "ok", "none set (all defaults)")
    unknown = dict(_C._unknown_settings())
    for name in set_vars:
        value = environ[name]
        if name not in known:
            near = unknown.get(name)
            rep.add("environment", name, "error",
                    f"{name}={value!r} is not a torch_tpu setting and is ignored"
                    + (f"; did you mean {near}?" if near else ""),
                    fix=(f"rename it: export {near}={value!r}; unset {name}" if near
                         else f"unset {name} (see `torch_tpu._C._settings()` for the known ones)"))
            continue
        try:
            parsed = _C._parse_setting(name, value)
        except ValueError as e:
            s = known[name]
            accepted = ("one of " + ", ".join(s["values"]) if s.get("values")
                        else "valid " + s["type"])
            rep.add("environment", name, "error", str(e),
                    fix=f"set {name} to {accepted}, or unset it for the default "
                        f"({s['default'] or 'unset'}); `import torch_tpu` raises until then")
            continue
        note = " (deprecated)" if known[name]["stability"] == "deprecated" else ""
        rep.add("environment", name, "warning" if note else "ok",
                f"{name}={value!r} -> {parsed!r}{note}",
                fix=(f"{name} is deprecated: use TORCH_TPU_EAGER_MODE instead" if note else None))


# --------------------------------------------------------------- plugin

def _package_version(names):
    for n in names:
        try:
            return n, importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None, None


def _readable_file(path):
    return os.path.isfile(path) and os.access(path, os.R_OK)


def discover_plugin(environ, search_dirs):
    """The plugin the core will load, why, and the candidates not taken."""
    found = []
    for rel, p in _C._plugin_candidates([d for d in search_dirs if d]):
        label, pkgs = PLUGIN_PACKAGES.get(rel, (rel, ()))
        pkg, ver = _package_version(pkgs)
        found.append({"name": label, "path": p, "package": pkg, "version": ver})
    env = environ.get(PLUGIN_VAR, "")
    if env:
        ok = _readable_file(env)
        chosen = {"name": "from " + PLUGIN_VAR, "path": env, "package": None, "version": None}
        why = f"{PLUGIN_VAR} is set"
        alternatives = [dict(f, why_not=f"{PLUGIN_VAR} takes precedence") for f in found]
        return chosen if ok else None, why, alternatives, env
    if not found:
        return None, "nothing found", [], None
    chosen = found[0]
    why = (f"{PLUGIN_VAR} is unset; {chosen['name']} is the first match of the search order "
           "(libtpu/libtpu.so, then xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so, under each sys.path entry)")
    alternatives = []
    for f in found[1:]:
        if f["name"] == chosen["name"]:
            reason = "a later sys.path entry holds the same plugin (the first one wins)"
        else:
            reason = f"{chosen['name']} comes first in the search order"
        alternatives.append(dict(f, why_not=reason))
    return chosen, why, alternatives, None


def check_plugin(rep, environ):
    chosen, why, alternatives, env = discover_plugin(environ, [p for p in sys.path if p])
    if chosen is None and env:
        rep.add("plugin", "discovery", "error",
                f"{PLUGIN_VAR}={env}: no readable plugin file there",
                fix=f"point {PLUGIN_VAR} at an existing PJRT plugin .so, or unset it to use "
                    "libtpu / xla-cpu-pjrt from site-packages"
                    + (f" (found: {alternatives[0]['path']})" if alternatives else ""),
                alternatives=alternatives)
        return None
    if chosen is None:
        rep.add("plugin", "discovery", "error", "no PJRT plugin found on sys.path",
                fix="pip install xla-cpu-pjrt (CPU), or libtpu on a TPU VM, or set "
                    f"{PLUGIN_VAR}=/path/to/plugin.so")
        return None
    ver = f", package {chosen['package']} {chosen['version']}" if chosen.get("package") else ""
    rep.add("plugin", "discovery", "ok", f"{chosen['path']}{ver}; why: {why}",
            path=chosen["path"], alternatives=alternatives)
    for a in alternatives:
        rep.add("plugin", "not taken", "info", f"{a['path']}: {a['why_not']}")
    return chosen


# ---------------------------------------------------------- device probe

_PROBE = r"""
import json, sys, time
out = {}
try:
    import torch, torch_tpu
    from torch_tpu import _C
    t = time.perf_counter(); torch.tpu.init()
    out["init_s"] = time.perf_counter() - t
    out["platform"] = _C._platform_name()
    out["plugin_path"] = _C._plugin_path()
    out["fingerprint"] = _C._plugin_fingerprint()
    n = torch.tpu.device_count()
    out["devices"] = [torch.tpu.get_device_name(i) for i in range(n)]
    a = torch.arange(16, dtype=torch.float32)
    with torch_tpu.eager_mode("strict"):
        t = time.perf_counter()
        r = (a.to("tpu") * 2 + 1).cpu()
        out["smoke_first_s"] = time.perf_counter() - t
        t = time.perf_counter()
        r2 = (a.to("tpu") * 2 + 1).cpu()
        out["smoke_warm_s"] = time.perf_counter() - t
    out["smoke_ok"] = bool(torch.equal(r, a * 2 + 1) and torch.equal(r2, r))
    text = ('module @doctor { func.func public @main(%a: tensor<8xf32>) -> (tensor<8xf32>) {\n'
            '  %b = "stablehlo.multiply"(%a, %a) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>\n'
            '  "func.return"(%b) : (tensor<8xf32>) -> ()\n} }\n')
    t = time.perf_counter()
    out["compile_outputs"] = torch_tpu.debug.compile_stablehlo(text)
    out["compile_s"] = time.perf_counter() - t
    try:
        out["mem_get_info"] = list(torch.tpu.mem_get_info())
    except Exception as e:  # plugin without PJRT_Device_MemoryStats
        out["mem_get_info_error"] = str(e)
except BaseException as e:
    out["error"] = f"{type(e).__name__}: {e}"
print("DOCTOR_PROBE " + json.dumps(out))
"""


def run_probe(timeout=PROBE_TIMEOUT_S):
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        p = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"the device probe did not finish in {timeout} s (plugin hang?)"}
    for line in p.stdout.splitlines():
        if line.startswith("DOCTOR_PROBE "):
            return json.loads(line[len("DOCTOR_PROBE "):])
    tail = (p.stderr or p.stdout).strip().splitlines()[-5:]
    return {"error": f"the device probe died (exit status {p.returncode}): " + " | ".join(tail)}


def _fingerprint_fields(fp):
    fields = {}
    for part in (fp or "").split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            fields[k] = v
    return fields


def check_devices(rep, probe):
    if "error" in probe:
        rep.add("devices", "plugin load and smoke op", "error", probe["error"],
                fix="fix the errors above first; if none, run with TORCH_TPU_EAGER_MODE=debug "
                    "and report the plugin's message")
        return
    f = _fingerprint_fields(probe.get("fingerprint"))
    rep.add("versions", "PJRT API", "info", f"{f.get('pjrt', '?')} (reported by the plugin)")
    rep.add("versions", "XLA", "info", f.get("xla", "unknown"))
    devs = probe.get("devices", [])
    rep.add("devices", "devices", "ok" if devs else "error",
            f"{len(devs)} x {devs[0] if devs else '-'} on platform {probe.get('platform')} "
            f"(plugin load {probe.get('init_s', 0):.2f} s)",
            fix=None if devs else "the plugin reports no devices: check the accelerator "
                                  "(driver, visibility) or TORCH_TPU_NUM_DEVICES",
            devices=devs)
    rep.add("devices", "smoke op", "ok" if probe.get("smoke_ok") else "error",
            f"(arange(16)*2+1) on tpu: first {probe['smoke_first_s'] * 1e3:.1f} ms "
            f"(compile or cache load included), warm {probe['smoke_warm_s'] * 1e3:.2f} ms; "
            + ("matches CPU" if probe.get("smoke_ok") else "WRONG RESULT vs CPU"),
            fix=None if probe.get("smoke_ok") else "the plugin computes wrong results: "
                                                    "report it with this output")
    rep.add("devices", "compile", "ok", f"a StableHLO module compiled in "
            f"{probe['compile_s'] * 1e3:.1f} ms ({probe['compile_outputs']} output)")
    if "mem_get_info" in probe:
        free, total = probe["mem_get_info"]
        rep.add("devices", "device memory", "info", f"{free} of {total} bytes free")
    else:
        rep.add("devices", "device memory", "info", probe.get("mem_get_info_error", "unknown"))


# ---------------------------------------------------------------- cache

def _nearest_existing(path):
    p = os.path.abspath(path)
    while not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return p


def check_cache(rep):
    try:
        enabled = _C._setting("TORCH_TPU_CACHE")
    except ValueError:
        enabled = True  # already reported under environment
    root = _C._disk_cache_default_root()
    if not enabled:
        rep.add("cache", "persistent cache", "info", f"off (TORCH_TPU_CACHE=0); directory {root}")
        return
    # Writable: create the directory as the store would, then a temp file in it.
    problem = None
    try:
        os.makedirs(root, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".doctor-"):
            pass
    except OSError as e:
        problem = f"{type(e).__name__}: {e.strerror or e} ({e.filename or root})"
    if problem:
        blocker = _nearest_existing(root)
        why = ("a file is in the way" if os.path.exists(blocker) and not os.path.isdir(blocker)
               else "no write permission")
        repair = (f"move the file {blocker} away" if why.startswith("a file")
                  else f"make {blocker} writable")
        rep.add("cache", "directory writable", "error",
                f"{root} is not writable: {problem}; {why} at {blocker}",
                fix=f"export TORCH_TPU_CACHE_DIR=<a writable directory>, or {repair}; or "
                    "TORCH_TPU_CACHE=0 to run without the persistent cache (every process "
                    "then compiles afresh)")
        return
    from . import cache as cache_cli
    rows = cache_cli.ls(root)
    total = sum(r["bytes"] for r in rows)
    bad = [r for r in rows if r["status"] != "ok"]
    cap = _C._setting("TORCH_TPU_CACHE_MAX_BYTES")
    rep.add("cache", "directory", "ok",
            f"{root}: writable, {len(rows)} entries, {total / 2**20:.1f} MiB of "
            f"{cap / 2**30:.1f} GiB cap", entries=len(rows), bytes=total)
    if bad:
        rep.add("cache", "corrupt entries", "warning",
                f"{len(bad)} entries fail their check (e.g. {bad[0]['entry']}: {bad[0]['status']}); "
                "the store deletes them on their next read and recompiles",
                fix=f"python -m torch_tpu.cache clear --dir {root}")
    else:
        rep.add("cache", "corrupt entries", "ok", "none")


# ---------------------------------------------------------- distributed

def check_distributed(rep, environ):
    try:
        import torch.distributed as dist
        avail = dist.is_available()
        gloo = avail and dist.is_gloo_available()
    except Exception as e:  # noqa: BLE001
        avail, gloo = False, False
        rep.add("distributed", "torch.distributed", "warning", f"import failed: {e}")
    rep.add("distributed", "gloo", "ok" if gloo else "warning",
            "torch.distributed with the gloo backend is available" if gloo
            else "torch.distributed/gloo is not available in this torch build",
            fix=None if gloo else "install a torch build with distributed support (the PyPI wheels have it)")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        rep.add("distributed", "free port", "ok", f"localhost port {port} could be bound")
    except OSError as e:
        rep.add("distributed", "free port", "warning", f"cannot bind a localhost port: {e}",
                fix="check the loopback interface and firewall")
    mport = environ.get("MASTER_PORT")
    if mport:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", int(mport)))
            rep.add("distributed", "MASTER_PORT", "ok", f"MASTER_PORT={mport} is free here")
        except (OSError, ValueError) as e:
            rep.add("distributed", "MASTER_PORT", "warning", f"MASTER_PORT={mport}: {e}",
                    fix="pick another MASTER_PORT, or stop the process holding it "
                        "(fine if this rank is not rank 0)")


# ---------------------------------------------------------------- main

def diagnose(probe=True, environ=None):
    if environ is None:  # as given, before torch_tpu set bad values aside to import
        import torch_tpu
        environ = torch_tpu._doctor_environ or os.environ
    environ = dict(environ)
    rep = Report()
    import torch
    rep.add("versions", "Python", "info", f"{platform.python_version()} ({sys.executable})")
    rep.add("versions", "torch", "info", torch.__version__)
    check_variables(rep, environ)
    settings_ok = not any(c["status"] == "error" and c["section"] == "environment"
                          and "not a torch_tpu setting" not in c["detail"] for c in rep.checks)
    chosen = check_plugin(rep, environ)
    if chosen is not None and chosen.get("package"):
        rep.add("versions", "plugin package", "info", f"{chosen['package']} {chosen['version']}")
    if probe and chosen is not None and settings_ok:
        check_devices(rep, run_probe())
    elif probe:
        rep.add("devices", "plugin load and smoke op", "error" if chosen is None else "warning",
                "skipped: " + ("no plugin to load" if chosen is None
                               else "a variable's value does not parse (import torch_tpu raises)"),
                fix="apply the fixes above, then run the doctor again")
    check_cache(rep)
    check_distributed(rep, environ)
    return rep


_MARK = {"ok": " ok ", "info": "info", "warning": "WARN", "error": "FAIL"}


def format_report(rep):
    lines, section = [], None
    order = ["versions", "environment", "plugin", "devices", "cache", "distributed"]
    for c in sorted(rep.checks, key=lambda c: order.index(c["section"])):
        if c["section"] != section:
            section = c["section"]
            lines.append(f"{section}:")
        lines.append(f"  [{_MARK[c['status']]}] {c['check']}: {c['detail']}")
        if c["fix"]:
            lines.append(f"         fix: {c['fix']}")
    n_err = sum(c["status"] == "error" for c in rep.checks)
    n_warn = sum(c["status"] == "warning" for c in rep.checks)
    lines.append(f"{'BROKEN' if n_err else 'OK'}: {n_err} errors, {n_warn} warnings")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m torch_tpu doctor",
                                     description="Diagnose a torch_tpu setup.")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--no-probe", action="store_true",
                        help="skip the child process that loads the plugin and runs an op")
    args = parser.parse_args(argv)
    t = time.perf_counter()
    rep = diagnose(probe=not args.no_probe)
    if args.json:
        print(json.dumps({"ok": not rep.broken, "seconds": round(time.perf_counter() - t, 2),
                          "checks": rep.checks}, indent=1))
    else:
        print(format_report(rep))
    return 1 if rep.broken else 0


if __name__ == "__main__":
    sys.exit(main())
