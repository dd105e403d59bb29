/* torch_tpu runner: run an artifact written by torch_tpu.export from C,
 * with no Python and no libtorch, on any PJRT plugin.
 *
 * Lifecycle: ttr_open (a plugin and its client) -> ttr_load (an artifact's
 * programs and weights, uploaded once) -> ttr_run any number of times ->
 * ttr_outputs_free each result -> ttr_model_free -> ttr_close.
 *
 * Errors: every fallible function returns a ttr_error* (NULL on success)
 * that the caller reads with ttr_error_message and frees with
 * ttr_error_free; on error the function's out-parameters are NULL and
 * nothing is leaked. Thread safety: one model may be run from one thread
 * at a time; distinct models of one plugin may run concurrently. Host
 * tensors are dense, row-major, little-endian. Link: build/libtt_runner.a
 * with -ldl -lpthread -lm; include with -Iinclude. */
#ifndef TORCH_TPU_RUNNER_H
#define TORCH_TPU_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TTR_MAX_DIMS 8

typedef struct ttr_error ttr_error;
typedef struct ttr_plugin ttr_plugin;
typedef struct ttr_model ttr_model;
typedef struct ttr_outputs ttr_outputs;

/* Element types; the values are the artifact's dtype names' order. */
typedef enum {
  TTR_BOOL = 0, TTR_UINT8, TTR_INT8, TTR_INT16, TTR_INT32, TTR_INT64,
  TTR_FLOAT16, TTR_BFLOAT16, TTR_FLOAT32, TTR_FLOAT64
} ttr_dtype;

/* A host tensor: data holds nbytes = numel * element size bytes. */
typedef struct {
  ttr_dtype dtype;
  int ndim;
  int64_t dims[TTR_MAX_DIMS];
  const void *data;
  size_t nbytes;
} ttr_tensor;

/* The message of err (never NULL; valid until ttr_error_free). */
const char *ttr_error_message(const ttr_error *err);
/* Frees err. Accepts NULL. */
void ttr_error_free(ttr_error *err);

/* "float32" for TTR_FLOAT32; NULL for a value outside the enum. */
const char *ttr_dtype_name(ttr_dtype dtype);
/* Bytes per element of dtype; 0 for a value outside the enum. */
size_t ttr_dtype_size(ttr_dtype dtype);

/* Opens a PJRT plugin and creates its client. plugin_path: the plugin's
 * .so, or NULL to find it as torch_tpu does: $TORCH_TPU_PJRT_PLUGIN, else
 * libtpu/libtpu.so, else xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so, looked
 * for in each directory of $PYTHONPATH, then $VIRTUAL_ENV's and ./.venv's
 * lib/python3.X/site-packages. Refuses plugins older than PJRT C API 0.57
 * with an error naming both versions. *out is the caller's (ttr_close).
 * Open a plugin once per process (plugins keep process-wide state). */
ttr_error *ttr_open(const char *plugin_path, ttr_plugin **out);
/* Waits for the plugin's pending work and destroys its client. Every model
 * loaded on it must have been freed. Accepts NULL. */
void ttr_close(ttr_plugin *plugin);
/* The loaded plugin file, its platform ("cpu", "tpu", ...) and its
 * fingerprint (what executables in an artifact are keyed by). Valid until
 * ttr_close. */
const char *ttr_plugin_path(const ttr_plugin *plugin);
const char *ttr_plugin_platform(const ttr_plugin *plugin);
const char *ttr_plugin_fingerprint(const ttr_plugin *plugin);

/* Loads the artifact directory `path` (signature.json, program_*.mlir,
 * weights.safetensors, optional executables): checks the format version,
 * that the plugin's StableHLO is at least the version the artifact was
 * exported for ("plugin too old" otherwise), and every weight's dtype and
 * size; uploads the weights to device 0. Programs are compiled (or loaded
 * from an executable stored for this plugin's fingerprint) on their first
 * run; stored executables are keyed by the plugin's fingerprint and, on
 * the CPU plugin, the host's CPU flags. *out is the caller's
 * (ttr_model_free); it keeps `plugin` in use. */
ttr_error *ttr_load(ttr_plugin *plugin, const char *path, ttr_model **out);
/* on != 0: programs not run yet are compiled from their text even where
 * the artifact stores an executable for this plugin and host (a debugging
 * aid: valgrind, for one, reports other CPU features than the host's). */
void ttr_model_compile_only(ttr_model *model, int on);
/* Frees the model and its device buffers. Accepts NULL. */
void ttr_model_free(ttr_model *model);

/* The signature: inputs and outputs in order, their names and dtypes.
 * Names are valid until ttr_model_free; i out of range gives NULL / -1. */
int ttr_num_inputs(const ttr_model *model);
const char *ttr_input_name(const ttr_model *model, int i);
int ttr_input_dtype(const ttr_model *model, int i); /* a ttr_dtype */
int ttr_num_outputs(const ttr_model *model);
const char *ttr_output_name(const ttr_model *model, int k);
int ttr_output_dtype(const ttr_model *model, int k);
/* Programs in the artifact (one per shape bucket); program b's dims of
 * input i into dims (up to TTR_MAX_DIMS), its rank returned (-1 if out of
 * range). */
int ttr_num_programs(const ttr_model *model);
int ttr_program_input_dims(const ttr_model *model, int b, int i, int64_t *dims);

/* Runs the model on n_inputs host tensors in signature order: picks the
 * program whose input shapes equal theirs (an error lists the exported
 * shapes when none does; a dtype other than the signature's is an error),
 * compiles it on its first use, uploads the inputs, executes, and copies
 * the outputs to host memory. A failed device-side check (an index out of
 * range) is an error naming the op. Inputs are only read during the call.
 * *out is the caller's (ttr_outputs_free). */
ttr_error *ttr_run(ttr_model *model, const ttr_tensor *inputs, int n_inputs, ttr_outputs **out);
/* The outputs of one run: count, and output k (NULL when out of range;
 * valid until ttr_outputs_free). */
int ttr_outputs_count(const ttr_outputs *outs);
const ttr_tensor *ttr_outputs_get(const ttr_outputs *outs, int k);
/* Frees a run's outputs. Accepts NULL. */
void ttr_outputs_free(ttr_outputs *outs);

#ifdef __cplusplus
}
#endif

#endif
