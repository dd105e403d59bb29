#!/usr/bin/env bash
# One prepared check of torch_tpu on a machine with an NVIDIA GPU, through
# XLA's CUDA PJRT plugin (the pip package jax-cuda13-pjrt):
#   0. environment: GPU, gcc, python, torch (CUDA build or not), the plugin
#   1. build the C core and the C test binaries with gcc straight from csrc/
#   2. run the C tests (test_core, test_runtime + its stand-in plugin,
#      test_disk_cache) against the plugin
#   3. build torch_tpu/_C.so against the python3 there (its torch)
#   4. minGPT training steps (tools/device/gpu_train_step.py): CPU reference,
#      tpu Fused, tpu Strict, torch "cuda" eager where torch has CUDA; then a
#      larger minGPT if time is left; parity against CPU, step times, compiles
#   5. summary
# Every stage is guarded (a failure is logged and the next stage runs where it
# can) and the whole run keeps to GPU_CHECK_BUDGET_S seconds (default 420).
#
#   bash tools/device/gpu_check.sh
# Environment: GPU_CHECK_PLUGIN (plugin .so; default: the CUDA plugin found in
# python3's site-packages), GPU_CHECK_PYTHON (default python3), OUT (where
# report.txt, summary.txt and results.json go; default /tmp/gpu_check_out),
# GPU_CHECK_BUDGET_S, GPU_CHECK_JOBS (parallel compiles, default nproc),
# GPU_CHECK_STEPS (timed steps, default 20), GPU_CHECK_NO_XLA_FLAGS=1 (leave
# XLA_FLAGS alone), GPU_CHECK_MEDIUM=0 (skip the larger model),
# GPU_CHECK_STAGE_SCALE (multiplies each stage's time limit, for slow hosts),
# GPU_CHECK_REUSE_EXT=1 (keep an existing torch_tpu/_C.so: dry runs).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-/tmp/gpu_check_out}
mkdir -p "$OUT"
REPORT=$OUT/report.txt
SUMMARY=$OUT/summary.txt
: >"$REPORT"
: >"$SUMMARY"
PY=${GPU_CHECK_PYTHON:-python3}
BUDGET=${GPU_CHECK_BUDGET_S:-420}
JOBS=${GPU_CHECK_JOBS:-$(nproc 2>/dev/null || echo 4)}
STEPS=${GPU_CHECK_STEPS:-20}
START=$(date +%s)
WORK=$(mktemp -d /tmp/gpu_check.XXXXXX)
B=$ROOT/build/gpucheck
mkdir -p "$B"
export PY B WORK JOBS

elapsed() { echo $(($(date +%s) - START)); }
remaining() { echo $((BUDGET - $(elapsed))); }
log() { echo "$*" | tee -a "$REPORT"; }
summ() { echo "$*" >>"$SUMMARY"; log "SUMMARY: $*"; }

# run_stage NAME MAX_SECONDS CMD...: runs CMD with a timeout (the smaller of
# MAX_SECONDS and what is left of the budget less a reserve), output into the
# report; prints the tail on failure. Returns CMD's status (124: timed out).
RESERVE=15
run_stage() {
  local name=$1 max=$2
  shift 2
  local left=$(($(remaining) - RESERVE))
  local t=$((max * ${GPU_CHECK_STAGE_SCALE:-1}))
  ((left < t)) && t=$left
  if ((t < 5)); then
    log "--- [$name] SKIPPED: out of time budget ($(elapsed) s used of $BUDGET)"
    return 125
  fi
  log "--- [$name] (timeout ${t}s, at $(elapsed)s)"
  local t0=$(date +%s)
  local f=$WORK/$name.out
  : >"$f"
  # through bash so that exported shell functions run as well as programs
  timeout -k 5 "$t" bash -c '"$@"' _ "$@" >"$f" 2>&1
  local rc=$?
  cat "$f" >>"$REPORT"
  if ((rc != 0)); then
    log "--- [$name] FAILED rc=$rc after $(($(date +%s) - t0))s; last lines:"
    tail -n 25 "$f" | sed 's/^/    /'
  else
    log "--- [$name] ok in $(($(date +%s) - t0))s"
  fi
  return $rc
}

log "gpu_check: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), root $ROOT, budget ${BUDGET}s, jobs $JOBS"
log "git: $(git -C "$ROOT" log --oneline -1 2>/dev/null || echo '(no git)') $(git -C "$ROOT" status --short 2>/dev/null | wc -l) changed files"

# ------------------------------------------------------------ 0. environment
env_info() {
  echo "uname: $(uname -srm)"
  echo "nproc: $(nproc)"
  command -v nvidia-smi >/dev/null && nvidia-smi -L && nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv || echo "nvidia-smi: none"
  gcc --version | head -1
  g++ --version | head -1
  echo "python: $(command -v "$PY") $("$PY" -V 2>&1)"
  "$PY" - <<'EOF'
import torch
print("torch", torch.__version__, "cuda build:", torch.version.cuda, "cuda available:",
      torch.cuda.is_available(), "cxx11 abi:", torch._C._GLIBCXX_USE_CXX11_ABI)
if torch.cuda.is_available():
    print("torch sees:", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
for name in ("jax", "jaxlib", "jax-cuda13-pjrt", "jax-cuda13-plugin"):
    try:
        from importlib.metadata import version
        print(name, version(name))
    except Exception as e:
        print(name, "-", type(e).__name__)
EOF
}
export -f env_info
run_stage env 60 env_info

find_plugin() {
  "$PY" - <<'EOF'
import glob, importlib.util, os, site, sys
try:
    spec = importlib.util.find_spec("jax_plugins.xla_cuda13")
    for d in (spec.submodule_search_locations or []) if spec else []:
        p = os.path.join(d, "xla_cuda_plugin.so")
        if os.path.isfile(p):
            print(p); sys.exit(0)
except Exception as e:
    print("find_spec failed:", e, file=sys.stderr)
dirs = list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path
for d in dirs:
    for p in glob.glob(os.path.join(d, "jax_plugins", "xla_cuda*", "xla_cuda_plugin.so")):
        print(p); sys.exit(0)
sys.exit(1)
EOF
}
PLUGIN=${GPU_CHECK_PLUGIN:-}
if [[ -z $PLUGIN ]]; then
  PLUGIN=$(find_plugin 2>>"$REPORT" | tail -1)
fi
if [[ -z $PLUGIN || ! -f $PLUGIN ]]; then
  log "plugin: NOT FOUND (set GPU_CHECK_PLUGIN)"
  summ "plugin: not found"
  PLUGIN=""
else
  log "plugin: $PLUGIN ($(du -h "$PLUGIN" | cut -f1))"
  summ "plugin: $PLUGIN"
fi

# The NVIDIA libraries of the pip packages (nvidia/cu13/lib, nvidia/cudnn/lib,
# ...): JAX preloads them before it loads the plugin; here the loader finds
# them through LD_LIBRARY_PATH. And XLA's libdevice / ptxas (CUDA data dir).
SITE_DIRS=$("$PY" -c 'import site,sys; print("\n".join(dict.fromkeys(site.getsitepackages()+[p for p in sys.path if p.endswith("-packages")])))' 2>/dev/null)
NV_LIBS=""
for d in $SITE_DIRS; do
  for l in "$d"/nvidia/*/lib; do
    [[ -d $l ]] && NV_LIBS="$NV_LIBS:$l"
  done
done
if [[ -n $NV_LIBS && $PLUGIN != *cpu* ]]; then
  export LD_LIBRARY_PATH="${NV_LIBS#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
fi
if [[ -n $PLUGIN && $PLUGIN != *cpu* && ${GPU_CHECK_NO_XLA_FLAGS:-0} != 1 ]]; then
  CUDA_DATA=""
  CANDS="$(for d in $SITE_DIRS; do echo "$d"/nvidia/cu13 "$d"/nvidia/cuda_nvcc; done) /usr/local/cuda $(ls -d /usr/local/cuda-1* 2>/dev/null)"
  for cand in $CANDS; do # libdevice and ptxas together first, else libdevice alone
    if [[ -f $cand/nvvm/libdevice/libdevice.10.bc && -x $cand/bin/ptxas ]]; then CUDA_DATA=$cand; break; fi
  done
  if [[ -z $CUDA_DATA ]]; then
    for cand in $CANDS; do
      if [[ -f $cand/nvvm/libdevice/libdevice.10.bc ]]; then CUDA_DATA=$cand; break; fi
    done
  fi
  if [[ -n $CUDA_DATA && ${XLA_FLAGS:-} != *xla_gpu_cuda_data_dir* ]]; then
    export XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_gpu_cuda_data_dir=$CUDA_DATA"
  fi
  [[ -d /usr/local/cuda/bin ]] && export PATH="$PATH:/usr/local/cuda/bin"
  log "CUDA data dir: ${CUDA_DATA:-(no libdevice found; XLA searches itself)}; ptxas: $(command -v ptxas || echo none); XLA_FLAGS=${XLA_FLAGS:-}"
  if command -v ldd >/dev/null; then
    missing=$(ldd "$PLUGIN" 2>&1 | grep 'not found' | tr -s ' \t' ' ')
    log "ldd plugin: ${missing:-all libraries found}"
  fi
fi

# ------------------------------------------------------------ 1. C build
CFLAGS="-std=c11 -O2 -g -fPIC -Wall -Wextra -D_GNU_SOURCE -Icsrc"
CORE_SRCS=$(ls csrc/core/*.c csrc/pjrt/*.c csrc/shlo/*.c csrc/ops/*.c csrc/graph/*.c csrc/cache/*.c 2>/dev/null | sort)
build_core() {
  set -e
  mkdir -p "$B/obj"
  echo "$CORE_SRCS" | xargs -P "$JOBS" -I{} sh -c 'o="$1/obj/$(echo "$2" | tr / _).o"; gcc '"$CFLAGS"' -c "$2" -o "$o"' _ "$B" {}
  rm -f "$B/libtt_core.a"
  ar rcs "$B/libtt_core.a" "$B"/obj/*.o
  gcc $CFLAGS tests/c/test_core.c "$B/libtt_core.a" -ldl -lpthread -lm -o "$B/test_core"
  gcc $CFLAGS tests/c/test_disk_cache.c "$B/libtt_core.a" -ldl -lpthread -lm -o "$B/test_disk_cache"
  # as tests/c/Makefile.runtime builds them
  gcc $CFLAGS $(ls csrc/core/*.c csrc/pjrt/*.c | sort) tests/c/test_runtime.c -ldl -lpthread -lm -o "$B/test_runtime"
  gcc $CFLAGS -shared -DTT_FAKE_PLUGIN tests/c/test_runtime.c -o "$B/fake_pjrt_plugin.so"
  echo "compiler warnings: $(grep -c 'warning:' "$WORK/c-build.out" 2>/dev/null)"
}
export CFLAGS CORE_SRCS
export -f build_core
if run_stage c-build 180 build_core; then C_BUILD=ok; else C_BUILD=failed; fi
summ "C build (core, test_core, test_disk_cache, test_runtime): $C_BUILD"

# ------------------------------------------------------------ 2. C tests
c_test() { # NAME MAX CMD...: runs one test binary, records its "N passed, M failed" line
  local name=$1 max=$2
  shift 2
  run_stage "$name" "$max" "$@"
  local rc=$?
  local counts
  counts=$(grep -E '^[a-z_]+: [0-9]+ passed, [0-9]+ failed' "$WORK/$name.out" | tail -1)
  summ "C test $name: rc=$rc ${counts:-(no count line)}"
  grep -E '^FAIL' "$WORK/$name.out" | head -20 | sed 's/^/    /' | tee -a "$SUMMARY"
  grep -E '^  (plugin|platform|xla_version|fingerprint)' "$WORK/$name.out" | head -5 >>"$SUMMARY"
}
# ------------------------------------------------------------ 3. extension
build_extension() {
  set -e
  "$PY" tools/torch_flags.py >"$B/torch_flags.mk"
  cat "$B/torch_flags.mk"
  local cxxflags ldflags
  cxxflags=$(sed -n 's/^TORCH_CXXFLAGS := //p' "$B/torch_flags.mk")
  ldflags=$(sed -n 's/^TORCH_LDFLAGS := //p' "$B/torch_flags.mk")
  mkdir -p "$B/cxx"
  ls csrc/torch/*.cpp | xargs -P "$JOBS" -I{} sh -c 'g++ -std=c++17 -O2 -g -fPIC -Wall -Wno-unused-parameter -Icsrc -DTORCH_EXTENSION_NAME=_C -DTORCH_API_INCLUDE_EXTENSION_H '"$cxxflags"' -c "$2" -o "$1/cxx/$(basename "$2" .cpp).o"' _ "$B" {}
  g++ -shared -o torch_tpu/_C.so "$B"/cxx/*.o "$B/libtt_core.a" $ldflags -ldl -lpthread
  ls -la torch_tpu/_C.so
  "$PY" -c 'import torch, torch_tpu; print("import torch_tpu ok; torch", torch.__version__)'
}
export -f build_extension
EXT=failed
if [[ $C_BUILD == ok ]]; then
  if [[ ${GPU_CHECK_REUSE_EXT:-0} == 1 && -f torch_tpu/_C.so ]]; then
    log "--- [extension-build] reusing torch_tpu/_C.so (GPU_CHECK_REUSE_EXT=1)"
    echo 0 >"$WORK/ext.rc"
  else
    # in the background: the C tests below need the GPU, this the CPUs
    rm -f torch_tpu/_C.so
    (run_stage extension-build 240 build_extension; echo $? >"$WORK/ext.rc") &
    EXT_PID=$!
  fi
  c_test test_core 30 "$B/test_core"
  if [[ -n $PLUGIN ]]; then
    c_test test_runtime 120 env TT_BENCH_ITERS=2000 "$B/test_runtime" "$PLUGIN" "$B/fake_pjrt_plugin.so"
    c_test test_disk_cache 90 env TT_BENCH_ITERS=50 "$B/test_disk_cache" "$PLUGIN"
  fi
  [[ -n ${EXT_PID:-} ]] && wait "$EXT_PID"
  [[ $(cat "$WORK/ext.rc" 2>/dev/null) == 0 ]] && EXT=ok
fi
summ "extension build against $("$PY" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null): $EXT"

# ------------------------------------------------------------ 4. training
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
export TORCH_TPU_DEBUG_PROGRAMS=1 # print a program the plugin rejects
RESULTS=()
train() { # NAME MAX ARGS...: one training run in its own process
  local name=$1 max=$2
  shift 2
  local j=$WORK/$name.json
  local pre=()
  [[ $name == tpu-* ]] && pre=(env TORCH_TPU_PJRT_PLUGIN="$PLUGIN" TORCH_TPU_CACHE_DIR="$WORK/cache-$name")
  rm -f "$j"
  run_stage "train-$name" "$max" "${pre[@]}" "$PY" tools/device/gpu_train_step.py run --json "$j" \
    --params "$WORK/$name.pt" --steps "$STEPS" "$@"
  local rc=$?
  grep -E '^\[' "$WORK/train-$name.out" | tail -2 >>"$SUMMARY"
  if [[ -f $j ]]; then RESULTS+=("$j"); else summ "train-$name: no result (rc=$rc)"; fi
  return $rc
}
HAS_CUDA=$("$PY" -c 'import torch; print(int(torch.cuda.is_available()))' 2>/dev/null || echo 0)
if [[ $EXT == ok && -n $PLUGIN ]]; then
  train cpu-small 90 --device cpu --size small
  train tpu-fused-small 150 --device tpu --mode fused --size small
  train tpu-strict-small 150 --device tpu --mode strict --size small
  [[ $HAS_CUDA == 1 ]] && train cuda-small 60 --device cuda --size small
  # a larger model, if the budget allows (compiles again: needs ~2 min)
  if [[ ${GPU_CHECK_MEDIUM:-1} == 1 ]] && (($(remaining) > 150)); then
    train cpu-medium 60 --device cpu --size medium --steps 10
    train tpu-fused-medium 120 --device tpu --mode fused --size medium --steps 10
    [[ $HAS_CUDA == 1 ]] && train cuda-medium 45 --device cuda --size medium --steps 10
  else
    log "--- medium model skipped (GPU_CHECK_MEDIUM=${GPU_CHECK_MEDIUM:-1}, $(remaining) s of the budget left)"
  fi
else
  summ "training skipped (extension: $EXT, plugin: ${PLUGIN:-none})"
fi

# ------------------------------------------------------------ 5. summary
if ((${#RESULTS[@]} > 0)); then
  "$PY" tools/device/gpu_train_step.py summarize "${RESULTS[@]}" --out "$OUT/results.json" \
    >"$WORK/summary.out" 2>&1
  cat "$WORK/summary.out" >>"$SUMMARY"
fi
summ "total $(elapsed) s of the ${BUDGET} s budget"
{
  echo
  echo "================================ SUMMARY"
  cat "$SUMMARY"
} >>"$REPORT"
echo
echo "================================ SUMMARY"
cat "$SUMMARY"
rm -rf "$WORK"
exit 0
