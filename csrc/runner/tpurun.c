/* tpurun: runs a torch_tpu.export artifact on .npy inputs with no Python
 * and no libtorch, through the runner API (include/torch_tpu/runner.h).
 *
 *   tpurun ARTIFACT IN0.npy IN1.npy ... -o OUTDIR [--plugin PATH] [--iters N] [--compile]
 *
 * Writes OUTDIR/out0.npy, out1.npy, ... (outputs in signature order) and
 * prints the first run's time (which compiles the program, or loads the
 * executable stored for this plugin) and the steady-state median over N
 * more runs (default 10). --compile ignores executables stored in the
 * artifact (compiles the text). Exit status 0, or 1 with the error on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runner/tensor_files.h"
#include "torch_tpu/runner.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int usage(void) {
  fprintf(stderr, "usage: tpurun ARTIFACT IN0.npy IN1.npy ... -o OUTDIR [--plugin PATH] [--iters N] [--compile]\n");
  return 2;
}

static int fail_tt(tt_error *err) {
  fprintf(stderr, "tpurun: %s\n", tt_error_message(err));
  tt_error_free(err);
  return 1;
}

int main(int argc, char **argv) {
  const char *artifact = NULL, *outdir = NULL, *plugin_path = NULL;
  const char **in_paths = calloc((size_t)argc, sizeof *in_paths);
  int n_in = 0, iters = 10, compile_only = 0;
  if (!in_paths) return 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) outdir = argv[++i];
    else if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc) plugin_path = argv[++i];
    else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) iters = atoi(argv[++i]);
    else if (strcmp(argv[i], "--compile") == 0) compile_only = 1;
    else if (argv[i][0] == '-') {
      free(in_paths);
      return usage();
    } else if (!artifact) artifact = argv[i];
    else in_paths[n_in++] = argv[i];
  }
  if (!artifact || !outdir || iters < 0) {
    free(in_paths);
    return usage();
  }
  int rc = 1;
  ttr_plugin *plugin = NULL;
  ttr_model *model = NULL;
  ttr_outputs *outs = NULL;
  ttr_error *err = NULL;
  ttr_array *arrays = calloc((size_t)(n_in ? n_in : 1), sizeof *arrays);
  ttr_tensor *inputs = calloc((size_t)(n_in ? n_in : 1), sizeof *inputs);
  double *times = calloc((size_t)(iters ? iters : 1), sizeof *times);
  if (!arrays || !inputs || !times) goto done;
  for (int i = 0; i < n_in; i++) {
    tt_error *e = ttr_npy_read(in_paths[i], &arrays[i]);
    if (e) {
      rc = fail_tt(e);
      goto done;
    }
    inputs[i].dtype = (ttr_dtype)arrays[i].dtype;
    inputs[i].ndim = arrays[i].ndim;
    memcpy(inputs[i].dims, arrays[i].dims, sizeof inputs[i].dims);
    inputs[i].data = arrays[i].data;
    inputs[i].nbytes = arrays[i].nbytes;
  }
  double t0 = now();
  if ((err = ttr_open(plugin_path, &plugin))) goto done;
  double t1 = now();
  if ((err = ttr_load(plugin, artifact, &model))) goto done;
  ttr_model_compile_only(model, compile_only);
  double t2 = now();
  if ((err = ttr_run(model, inputs, n_in, &outs))) goto done;
  double t3 = now();
  for (int it = 0; it < iters; it++) {
    ttr_outputs *again = NULL;
    double s = now();
    if ((err = ttr_run(model, inputs, n_in, &again))) goto done;
    times[it] = now() - s;
    ttr_outputs_free(again);
  }
  mkdir(outdir, 0777); /* an existing directory is fine; a write error follows otherwise */
  for (int k = 0; k < ttr_outputs_count(outs); k++) {
    const ttr_tensor *t = ttr_outputs_get(outs, k);
    ttr_array a = {NULL, (tt_dtype)t->dtype, t->ndim, {0}, (void *)t->data, t->nbytes};
    memcpy(a.dims, t->dims, sizeof a.dims);
    char path[4096];
    snprintf(path, sizeof path, "%s/out%d.npy", outdir, k);
    tt_error *e = ttr_npy_write(path, &a);
    if (e) {
      rc = fail_tt(e);
      goto done;
    }
  }
  qsort(times, (size_t)iters, sizeof *times, cmp_double);
  printf("plugin: %s (%s)\n", ttr_plugin_path(plugin), ttr_plugin_platform(plugin));
  printf("open plugin: %.1f ms\nload artifact: %.1f ms\n", (t1 - t0) * 1e3, (t2 - t1) * 1e3);
  printf("first run: %.3f ms\n", (t3 - t2) * 1e3);
  if (iters) printf("steady-state median: %.3f ms over %d runs\n", times[iters / 2] * 1e3, iters);
  printf("outputs: %d written to %s\n", ttr_outputs_count(outs), outdir);
  rc = 0;
done:
  if (err) {
    fprintf(stderr, "tpurun: %s\n", ttr_error_message(err));
    ttr_error_free(err);
    rc = 1;
  }
  ttr_outputs_free(outs);
  ttr_model_free(model);
  ttr_close(plugin);
  for (int i = 0; arrays && i < n_in; i++) ttr_array_clear(&arrays[i]);
  free(arrays);
  free(inputs);
  free(times);
  free(in_paths);
  return rc;
}
