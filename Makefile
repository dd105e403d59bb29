# torch_tpu build and entry points. `make demo` and `make test` set up
# everything themselves: the .venv, torch 2.13.0 (CPU wheel), the PJRT CPU
# plugin, the C core and the extension.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEPS_STAMP := $(VENV)/.deps-stamp
BUILD := build

CC := gcc
CXX := g++
CFLAGS := -std=c11 -O2 -g -fPIC -Wall -Wextra -Werror -D_GNU_SOURCE -Icsrc -MMD -MP
CXXFLAGS := -std=c++17 -O2 -g -fPIC -Wall -Wno-unused-parameter -Icsrc -MMD -MP \
            -DTORCH_EXTENSION_NAME=_C -DTORCH_API_INCLUDE_EXTENSION_H

CORE_SRCS := $(sort $(wildcard csrc/core/*.c csrc/pjrt/*.c csrc/shlo/*.c csrc/ops/*.c csrc/dist/*.c \
                                csrc/graph/*.c csrc/cache/*.c))
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/%.o)
CXX_SRCS := $(sort $(wildcard csrc/torch/*.cpp))
CXX_OBJS := $(CXX_SRCS:%.cpp=$(BUILD)/%.o)
CORE_LIB := $(BUILD)/libtt_core.a
EXTENSION := torch_tpu/_C.so
TORCH_FLAGS := $(BUILD)/torch_flags.mk

# check-floors: the C core keeps its floors (docs/architecture.md, Floors).
.PHONY: all build venv test test-c test-python check-floors goldens demo examples bench profiler-screenshot wheel wheel-test bench-xla-reference conformance pytorch-tests docs clean \
        fuzz fuzz-c tsan soak test-reliability

all: build

venv: $(DEPS_STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(DEPS_STAMP): requirements.txt constraints.txt | $(PY)
	$(PY) -m pip install --disable-pip-version-check -q -c constraints.txt torch -r requirements.txt
	$(if $(filter .venv,$(VENV)),$(PY) tools/dev_pth.py)
	touch $@

# Compiler flags for the torch headers/libraries, computed once from the venv.
$(TORCH_FLAGS): $(DEPS_STAMP) tools/torch_flags.py
	@mkdir -p $(BUILD)
	$(PY) tools/torch_flags.py > $@

-include $(TORCH_FLAGS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/csrc/torch/%.o: csrc/torch/%.cpp $(TORCH_FLAGS)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(TORCH_CXXFLAGS) -c $< -o $@

$(CORE_LIB): $(CORE_OBJS)
	ar rcs $@ $^

$(EXTENSION): $(CXX_OBJS) $(CORE_LIB)
	$(CXX) -shared -o $@ $(CXX_OBJS) $(CORE_LIB) $(TORCH_LDFLAGS) -ldl -lpthread

META_STAMP := $(VENV)/.meta-stamp

# torch_tpu's package metadata in the venv (the torch_dynamo_backends entry
# point that makes backend="tpu" discoverable); offline, no build isolation.
$(META_STAMP): pyproject.toml setup.py $(DEPS_STAMP)
	TT_BUILD_EXTENSION=0 $(PY) -m pip install --disable-pip-version-check -q --no-deps \
	  --no-build-isolation --no-index --config-settings editable_mode=compat -e .
	touch $@

build: $(DEPS_STAMP) $(META_STAMP) $(EXTENSION) $(BUILD)/test_core $(BUILD)/test_disk_cache \
       $(BUILD)/tpurun $(BUILD)/runner_example

# The runner (include/torch_tpu/runner.h, docs/export.md): exported
# artifacts run from C over the PJRT runtime; no Python, no libtorch.
# libtt_runner.a holds it with the core and pjrt floors it stands on.
RUNNER_OBJS := $(addprefix $(BUILD)/csrc/runner/,json.o tensor_files.o runner.o)
RUNNER_LIB := $(BUILD)/libtt_runner.a
$(BUILD)/csrc/runner/%.o: CFLAGS += -Iinclude
$(RUNNER_LIB): $(RUNNER_OBJS) $(filter $(BUILD)/csrc/core/% $(BUILD)/csrc/pjrt/%,$(CORE_OBJS))
	ar rcs $@ $^
$(BUILD)/tpurun: $(BUILD)/csrc/runner/tpurun.o $(RUNNER_LIB)
	$(CC) $(CFLAGS) $^ -ldl -lpthread -lm -o $@
$(BUILD)/runner_example: examples/runner_example.c $(RUNNER_LIB)
	$(CC) $(CFLAGS) -Iinclude $^ -ldl -lpthread -lm -o $@
$(BUILD)/test_runner: tests/c/test_runner.c $(RUNNER_LIB)
	$(CC) $(CFLAGS) -Iinclude $^ -ldl -lpthread -lm -o $@

$(BUILD)/test_core: tests/c/test_core.c tests/c/check.h $(CORE_LIB)
	$(CC) $(CFLAGS) $< $(CORE_LIB) -ldl -lpthread -lm -o $@

$(BUILD)/test_disk_cache: tests/c/test_disk_cache.c $(CORE_LIB)
	$(CC) $(CFLAGS) $< $(CORE_LIB) -ldl -lpthread -lm -o $@

# The core's own tests through tests/c/core_glue.h: golden StableHLO of
# representative lowerings, cache-key construction, Fused loop cuts.
CORE_TESTS := $(addprefix $(BUILD)/test_,lowering_golden cache_keys fused_loops collectives procs)
$(CORE_TESTS): $(BUILD)/test_%: tests/c/test_%.c tests/c/core_glue.h tests/c/check.h $(CORE_LIB)
	$(CC) $(CFLAGS) $< $(CORE_LIB) -ldl -lpthread -lm -o $@

# Rewrites tests/c/golden/*.mlir from the lowerings as they are now; review
# the diff: it is the change in emitted code.
goldens: $(BUILD)/test_lowering_golden
	TT_REGEN_GOLDENS=1 $(BUILD)/test_lowering_golden

PLUGIN = $(shell $(PY) -c "import os,xla_plugins; print(os.path.join(list(xla_plugins.__path__)[0],'xla_cpu_pjrt','xla_cpu_pjrt.so'))")

# The runtime, disk cache and golden tests run under valgrind memcheck
# (suppressions cover only frames inside the plugin); without valgrind they
# run plainly. The cache-key and loop tests always run plainly: they keep
# the core's runtime (and its buffer reaper thread) up until exit, which
# memcheck would report as a possible leak.
VALGRIND_MEMCHECK = TT_BENCH_ITERS=3 valgrind --error-exitcode=99 --leak-check=full \
  --show-leak-kinds=definite,indirect,possible \
  --errors-for-leak-kinds=definite,indirect,possible --suppressions=tests/c/valgrind.supp
MEMCHECK = $(if $(shell command -v valgrind),$(VALGRIND_MEMCHECK))

test-c: build $(CORE_TESTS) $(BUILD)/test_runner
	$(BUILD)/test_core $(PLUGIN)
	$(MEMCHECK) $(BUILD)/test_runner $(PLUGIN) tests/c/fixtures/runner_tiny
	$(MEMCHECK) $(BUILD)/test_lowering_golden
	$(BUILD)/test_cache_keys $(PLUGIN)
	$(BUILD)/test_fused_loops $(PLUGIN)
	$(BUILD)/test_collectives $(PLUGIN)
	$(BUILD)/test_procs $(PLUGIN)
	$(MEMCHECK) $(BUILD)/test_disk_cache $(PLUGIN)
	$(MAKE) -f tests/c/Makefile.runtime PLUGIN=$(PLUGIN) \
	  $(if $(shell command -v valgrind),valgrind,run-runtime)

# The suite runs in every eager mode: Fused (the default), then Strict, then
# Debug (a mode-sensitive subset, DEBUG_TESTS below). Files that choose
# their modes themselves (the persistent cache runs child processes per
# mode, torch.compile always captures graphs, and Debug's Python dispatch
# mode makes Dynamo run graphs eagerly) or test
# mode-independent tools or capabilities (the floors checker, the settings
# registry, module conversion, Hugging Face and Diffusers models, autocast,
# the examples' smoke runs, complex numbers and FFTs, which check their
# mode-sensitive views in each mode) run once.
RUN_ONCE := --ignore=tests/python/test_persistent_cache.py --ignore=tests/python/test_disk_cache_cli.py \
            --ignore=tests/python/test_fused.py --ignore=tests/python/test_compile.py \
            --ignore=tests/python/test_floors.py --ignore=tests/python/test_settings.py \
            --ignore=tests/python/test_module_conversion.py --ignore=tests/python/test_hf_models.py \
            --ignore=tests/python/test_generate_compiles.py \
            --ignore=tests/python/test_autocast.py --ignore=tests/python/test_executable_cap.py \
            --ignore=tests/python/test_complex.py --ignore=tests/python/test_complex_more.py \
            --ignore=tests/python/test_hf_models_families.py \
            --ignore=tests/python/test_diffusers.py --ignore=tests/python/test_examples.py \
            --ignore=tests/python/test_pytorch_tests_harness.py --ignore=tests/python/test_doctor.py \
            --ignore=tests/python/test_memory_stats.py --ignore=tests/python/test_dumps.py \
            --ignore=tests/python/test_profiler.py \
            --ignore=tests/python/test_profiler_collectives.py \
            --ignore=tests/python/test_compiled_collectives.py --ignore=tests/python/test_collective_flushes.py \
            --ignore=tests/python/test_custom_kernel.py \
            --ignore=tests/python/test_bench.py \
            --ignore=tests/python/test_pytorch_fixes_ufuncs.py \
            --ignore=tests/python/test_pytorch_fixes_torch.py \
            --ignore=tests/python/test_pytorch_fixes_nn.py \
            --ignore=tests/python/test_distributed.py --ignore=tests/python/test_dist_example.py \
            --ignore=tests/python/test_dist_reshard.py \
            --ignore=tests/python/test_fuzz_short.py --ignore=tests/python/test_fault_injection.py \
            --ignore=tests/python/test_concurrency.py --ignore=tests/python/test_fuzz_regressions.py \
            --ignore=tests/python/test_fuzz_boundary_regressions.py \
            --ignore=tests/python/test_export.py \
            --ignore=tests/python/test_serve_engine.py \
            --ignore=tests/python/test_serve_server.py \
            --ignore=tests/python/test_serve_router.py \
            --ignore=tests/python/test_serve_disagg.py

# Debug is Strict's lowerings and programs plus a wait after every launch and
# a Python dispatch mode, so rerunning every op test in Debug repeats what
# Strict just ran (about 3 minutes of the 30). Debug reruns the files whose
# outcome depends on the mode: errors and device checks raised at the op,
# synchronization, views and offsets written in place, memory accounting,
# the fallback, training and optimizer loops, the cache and the debug tools.
DEBUG_TESTS := $(addprefix tests/python/test_,modes.py debug_tools.py device_checks.py errors.py \
               views.py offsets.py memory.py fallback.py device.py training.py optim.py cache.py)

# Strict and Debug run side by side (two processes, each with its own
# persistent-cache directory from conftest.py): the 30-minute budget.
test-python: build
	PYTHONPATH=$(CURDIR) $(PY) -m pytest -q --durations=20 tests/python
	@mkdir -p $(BUILD); \
	TORCH_TPU_EAGER_MODE=debug PYTHONPATH=$(CURDIR) $(PY) -m pytest -q $(DEBUG_TESTS) \
	  > $(BUILD)/test-debug.log 2>&1 & debug=$$!; \
	echo "Strict eager (Debug eager beside it, its log printed after):"; \
	TORCH_TPU_EAGER_MODE=strict PYTHONPATH=$(CURDIR) $(PY) -m pytest -q $(RUN_ONCE) tests/python; strict=$$?; \
	wait $$debug; dbg=$$?; echo "Debug eager:"; cat $(BUILD)/test-debug.log; \
	test $$strict -eq 0 && test $$dbg -eq 0

check-floors:
	$(PYTHON) tools/check_floors.py

# Builds with two jobs, then runs the suites one after the other.
test:
	$(MAKE) check-floors
	$(MAKE) -j2 build
	$(MAKE) test-c
	$(MAKE) test-python

demo:
	$(MAKE) -j2 build
	PYTHONPATH=$(CURDIR) $(PY) examples/mingpt.py

# The six reference examples at full length (minutes each), on tpu.
# `python examples/<name>.py --device cpu` runs one on CPU to compare;
# their --smoke runs are tests/python/test_examples.py.
EXAMPLES := mingpt llama qwen3 resnet dlrm unet
examples:
	$(MAKE) -j2 build
	@set -e; for e in $(EXAMPLES); do \
	  echo "=== examples/$$e.py"; \
	  HF_HUB_OFFLINE=1 PYTHONPATH=$(CURDIR) $(PY) examples/$$e.py; \
	done

# The TorchTitan-style distributed recipe under torchrun, on 2 and 4 ranks
# (each rank a process with its own tpu:0, host transport): FSDP2 over dp,
# DTensor TP over tp (--sp: with sequence parallelism), activation
# checkpointing; --check compares each run's
# per-step loss with one process on the same model and data.
DIST_RUNS := "2 --dp 2" "2 --tp 2 --compile" "2 --tp 2 --sp" "4 --dp 2 --tp 2" "4 --dp 2 --tp 2 --sp" "4 --dp 4"
DIST_THREAD_RUNS := "--threads 2 --dp 2" "--threads 4 --dp 4 --steps 10"
.PHONY: examples-dist
examples-dist:
	$(MAKE) -j2 build
	@set -e; for run in $(DIST_RUNS); do set -- $$run; n=$$1; shift; \
	  echo "=== torchrun --nproc-per-node $$n examples/train_llama_distributed.py $$* --check"; \
	  OMP_NUM_THREADS=1 PYTHONPATH=$(CURDIR) $(PY) -m torch.distributed.run --nproc-per-node $$n \
	    --standalone examples/train_llama_distributed.py $$* --check; \
	done
	@set -e; for run in $(DIST_THREAD_RUNS); do \
	  echo "=== examples/train_llama_distributed.py $$run --check (ranks as threads, compiled transport)"; \
	  OMP_NUM_THREADS=1 PYTHONPATH=$(CURDIR) $(PY) examples/train_llama_distributed.py $$run --check; \
	done

# torch_tpu.bench on minGPT (Fused, torch.compile, CPU eager): JSON and
# PNG under bench_results/, the chart copied to docs/bench.png (README);
# then the older benchmark scripts; the last, distributed_bench.py, is the
# c10d backend's all_reduce bandwidth per transport and DDP/FSDP2 step time
# at 1, 2 and 4 ranks (bench_results/distributed_bench.json).
bench:
	$(MAKE) -j2 build
	PYTHONPATH=$(CURDIR) $(PY) -m torch_tpu.bench mingpt --variants fused,compile,cpu \
	  --out bench_results --chart docs/bench.png
	PYTHONPATH=$(CURDIR) $(PY) benchmarks/run.py
	PYTHONPATH=$(CURDIR) $(PY) benchmarks/eager_modes.py
	PYTHONPATH=$(CURDIR) $(PY) benchmarks/device_checks_bench.py --rounds 6
	PYTHONPATH=$(CURDIR) $(PY) benchmarks/compile_bench.py
	PYTHONPATH=$(CURDIR) $(PY) benchmarks/hf_decode.py
	PYTHONPATH=$(CURDIR) $(PY) benchmarks/examples_bench.py
	PYTHONPATH=$(CURDIR) $(PY) benchmarks/distributed_bench.py

# The serving engine (torch_tpu.serve) against Hugging Face generate on CPU
# eager: tokens/s at 1 and 8 requests, compiles while measured, prefix hits;
# then the HTTP load test (loopback, bounded) at concurrency 1, 8 and 32;
# then --quantization int8's perplexity change and speed (quant_eval).
.PHONY: serve-bench
serve-bench:
	$(MAKE) -j2 build
	HF_HUB_OFFLINE=1 PYTHONPATH=$(CURDIR) $(PY) -m torch_tpu.serve.bench
	HF_HUB_OFFLINE=1 PYTHONPATH=$(CURDIR) $(PY) -m torch_tpu.serve.loadgen --router
	HF_HUB_OFFLINE=1 PYTHONPATH=$(CURDIR) $(PY) -m torch_tpu.serve.quant_eval

# 1,000 mixed requests (good, streamed, disconnected, malformed) against a
# real server process: every answer as expected, KV blocks back to 0.
.PHONY: serve-soak
serve-soak:
	$(MAKE) -j2 build
	HF_HUB_OFFLINE=1 PYTHONPATH=$(CURDIR) $(PY) tests/reliability/serve_soak.py

# The wheel (setup.py builds the C core and the extension): built with
# `python -m build --wheel` in its own venv, installed into a fresh venv
# with torch 2.13.0 (CPU) and the CPU plugin package, imported and trained
# from outside the checkout (tools/wheel_test.sh; slow: a full build).
wheel:
	tools/wheel_test.sh --build-only

wheel-test:
	tools/wheel_test.sh

# A real minGPT training step's trace (tools/profile_mingpt.py) rendered by
# headless Chromium (apt-get install chromium) from a self-made HTML
# timeline (tools/trace_html.py; ui.perfetto.dev needs the network).
profiler-screenshot:
	PYTHONPATH=$(CURDIR) $(PY) tools/profile_mingpt.py $(BUILD)/mingpt_trace.json
	$(PY) tools/trace_html.py $(BUILD)/mingpt_trace.json $(BUILD)/mingpt_trace.html --zoom train_step \
	  --title "minGPT training step, 3 steps, Fused eager (torch_tpu.profiler)"
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,900 \
	  --screenshot=docs/profiler.png file://$(CURDIR)/$(BUILD)/mingpt_trace.html

# XLA:CPU's own reach on this machine: minGPT's training step in JAX (same
# compiler) beside CPU eager, Inductor and backend="tpu". JAX gets its own
# venv so that it never changes the packages torch_tpu is tested with.
JAX_VENV := .venv-jax
bench-xla-reference:
	$(MAKE) -j2 build
	test -x $(JAX_VENV)/bin/python || $(PYTHON) -m venv $(JAX_VENV)
	$(JAX_VENV)/bin/python -m pip install --disable-pip-version-check -q jax==0.10.2
	PYTHONPATH=$(CURDIR) $(PY) benchmarks/xla_reference.py --jax-python $(JAX_VENV)/bin/python

# The full OpInfo conformance runs, Strict then Fused eager (4 to 5 minutes
# each on 2 cores); write docs/op_coverage.md and docs/op_coverage_fused.md.
# Not part of `make test`, which runs a fast subset.
conformance:
	$(MAKE) -j2 build
	PYTHONPATH=$(CURDIR) $(PY) tools/conformance.py
	PYTHONPATH=$(CURDIR) $(PY) tools/conformance.py --mode fused

# PyTorch's own device-generic test files against tpu (tools/pytorch_tests,
# docs/pytorch-tests.md). PYTORCH_TESTS_DIR names a PyTorch checkout's test/
# folder (without it: how to get one, exit 0); FILES=test_indexing for a subset;
# fails on any difference from tools/pytorch_tests/expectations.txt.
pytorch-tests:
	@if [ -z "$(PYTORCH_TESTS_DIR)" ]; then $(PYTHON) tools/pytorch_tests/run.py; else \
	  $(MAKE) -j2 build && PYTHONPATH=$(CURDIR) $(PY) tools/pytorch_tests/run.py \
	    --tests-dir "$(PYTORCH_TESTS_DIR)" $(if $(FILES),--files "$(FILES)"); fi

# ---- reliability (docs/reliability.md): fuzzing, sanitizers, soak ----
# The fault-injection tests' helpers (tests/python/test_fault_injection.py):
# a PJRT plugin whose Execute fails on its Nth call, an LD_PRELOAD shim
# failing writes under one directory (full or read-only disk).
build: $(BUILD)/failing_plugin.so $(BUILD)/fault_shim.so
$(BUILD)/failing_plugin.so: tests/c/failing_plugin.c csrc/pjrt/pjrt_abi.h
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -shared $< -ldl -lpthread -o $@
$(BUILD)/fault_shim.so: tests/c/fault_shim.c
	@mkdir -p $(BUILD)
	$(CC) $(filter-out -std=c11,$(CFLAGS)) -std=gnu11 -shared $< -ldl -o $@

# fuzz: the differential op-program fuzzer (tools/fuzz/fuzz.py) for FUZZ_TIME
# seconds from FUZZ_SEED; findings go to $(BUILD)/fuzz-findings.jsonl, known
# ones are in tools/fuzz/corpus/. make test runs a fixed 14-program set
# (tests/python/test_fuzz_short.py).
FUZZ_TIME ?= 300
FUZZ_SEED ?= $(shell date +%s)
fuzz: build
	PYTHONPATH=$(CURDIR) $(PY) tools/fuzz/fuzz.py --seed $(FUZZ_SEED) --time $(FUZZ_TIME) \
	  --one-worker --findings $(BUILD)/fuzz-findings.jsonl

# fuzz-c: libFuzzer + ASan + UBSan over the bytes the core reads from disk:
# the persistent-cache reader and the program deserializer, FUZZ_C_TIME
# seconds each, from the seeds in tests/c/fuzz_seeds/ (needs clang and its
# libFuzzer runtime: Debian's clang and libclang-rt-14-dev).
FUZZ_C_TIME ?= 60
FUZZ_BUILD := build-fuzz
FUZZ_CFLAGS := -std=c11 -g -O1 -D_GNU_SOURCE -Icsrc -Wall -Wextra -Werror \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
$(FUZZ_BUILD)/fuzz_disk_cache: tests/c/fuzz_disk_cache.c csrc/cache/disk_cache.c \
    csrc/cache/disk_cache_inspect.c csrc/cache/blake2b.c csrc/core/error.c csrc/core/settings.c
	@mkdir -p $(FUZZ_BUILD)
	clang $(FUZZ_CFLAGS) $^ -lpthread -o $@
$(FUZZ_BUILD)/fuzz_program_serial: tests/c/fuzz_program_serial.c csrc/graph/program_serial.c \
    csrc/graph/program.c csrc/cache/exe_pool.c csrc/core/error.c csrc/core/settings.c csrc/core/dtype.c
	@mkdir -p $(FUZZ_BUILD)
	clang $(FUZZ_CFLAGS) $^ -lpthread -lm -o $@
fuzz-c: $(FUZZ_BUILD)/fuzz_disk_cache $(FUZZ_BUILD)/fuzz_program_serial
	@set -e; for h in disk_cache program_serial; do \
	  mkdir -p $(FUZZ_BUILD)/corpus_$$h; \
	  echo "=== fuzz_$$h, $(FUZZ_C_TIME) s"; \
	  rc=0; $(FUZZ_BUILD)/fuzz_$$h -max_total_time=$(FUZZ_C_TIME) -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/crash_$$h- $(FUZZ_BUILD)/corpus_$$h tests/c/fuzz_seeds/$$h \
	    > $(FUZZ_BUILD)/fuzz_$$h.log 2>&1 || rc=$$?; \
	  grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs|stat::number_of_executed_units|SUMMARY)' $(FUZZ_BUILD)/fuzz_$$h.log || true; \
	  if [ $$rc -ne 0 ]; then tail -60 $(FUZZ_BUILD)/fuzz_$$h.log; exit 1; fi; \
	done

# tsan: the C core and its C tests built with ThreadSanitizer into
# build-tsan/, then run (the plugin itself is not instrumented).
TSAN_BUILD := build-tsan
TSAN_CFLAGS := $(filter-out -O2 -MMD -MP,$(CFLAGS)) -O1 -fsanitize=thread
TSAN_OBJS := $(CORE_SRCS:%.c=$(TSAN_BUILD)/%.o)
TSAN_TESTS := $(addprefix $(TSAN_BUILD)/test_,core disk_cache cache_keys fused_loops)
$(TSAN_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(TSAN_CFLAGS) -c $< -o $@
$(TSAN_BUILD)/libtt_core.a: $(TSAN_OBJS)
	ar rcs $@ $^
$(TSAN_TESTS): $(TSAN_BUILD)/test_%: tests/c/test_%.c $(TSAN_BUILD)/libtt_core.a
	$(CC) $(TSAN_CFLAGS) $< $(TSAN_BUILD)/libtt_core.a -ldl -lpthread -lm -o $@
TSAN_RUN := TSAN_OPTIONS="halt_on_error=0 exitcode=66 suppressions=$(CURDIR)/tests/c/tsan.supp"
$(TSAN_BUILD)/test_runtime: tests/c/test_runtime.c $(TSAN_BUILD)/libtt_core.a
	$(CC) $(TSAN_CFLAGS) $< $(TSAN_BUILD)/libtt_core.a -ldl -lpthread -lm -o $@
$(TSAN_BUILD)/fake_pjrt_plugin.so: tests/c/test_runtime.c
	$(CC) $(TSAN_CFLAGS) -shared -DTT_FAKE_PLUGIN $< -o $@
tsan: $(TSAN_TESTS) $(TSAN_BUILD)/test_runtime $(TSAN_BUILD)/fake_pjrt_plugin.so
	$(TSAN_RUN) TT_BENCH_ITERS=200 $(TSAN_BUILD)/test_runtime $(PLUGIN) $(TSAN_BUILD)/fake_pjrt_plugin.so
	$(TSAN_RUN) $(TSAN_BUILD)/test_core $(PLUGIN)
	$(TSAN_RUN) $(TSAN_BUILD)/test_disk_cache $(PLUGIN)
	$(TSAN_RUN) $(TSAN_BUILD)/test_cache_keys $(PLUGIN)
	$(TSAN_RUN) $(TSAN_BUILD)/test_fused_loops $(PLUGIN)

# test-reliability: the fault-injection and thread tests, fast and slow
# (tests/python/test_fault_injection.py and test_concurrency.py run in
# make test; tests/reliability/ holds the rest: ~6 minutes).
test-reliability: build
	PYTHONPATH=$(CURDIR) $(PY) -m pytest -q tests/python/test_fault_injection.py \
	  tests/python/test_concurrency.py tests/reliability

# soak: minGPT in Fused eager for SOAK_STEPS steps (tools/soak.py): flat
# memory, constant compile count, finite loss; JSON and PNG in $(BUILD).
SOAK_STEPS ?= 10000
soak: build
	PYTHONPATH=$(CURDIR) $(PY) tools/soak.py --steps $(SOAK_STEPS) \
	  --out $(BUILD)/soak.json --png $(BUILD)/soak.png
# ---- end reliability ----

# README.md's environment table, from the settings registry (csrc/core/settings.c).
docs: build
	PYTHONPATH=$(CURDIR) $(PY) tools/gen_env_docs.py

clean:
	rm -rf $(BUILD) $(EXTENSION)

-include $(CORE_OBJS:.o=.d) $(CXX_OBJS:.o=.d) $(RUNNER_OBJS:.o=.d) $(BUILD)/csrc/runner/tpurun.d
