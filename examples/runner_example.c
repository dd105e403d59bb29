/* Embedding an exported model in a C program with the runner API
 * (include/torch_tpu/runner.h; built by `make` as build/runner_example).
 *
 *   build/runner_example ARTIFACT
 *
 * Opens the plugin found as torch_tpu finds it, loads the artifact, prints
 * its signature, runs it once on inputs of the first program's shapes
 * filled with ones (token ids of 1 for integer inputs), and prints the
 * first values of each output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torch_tpu/runner.h"

static void fill_ones(ttr_tensor *t, void *data) {
  size_t n = t->nbytes / ttr_dtype_size(t->dtype);
  for (size_t i = 0; i < n; i++) {
    switch (t->dtype) {
      case TTR_FLOAT32: ((float *)data)[i] = 1.0f; break;
      case TTR_FLOAT64: ((double *)data)[i] = 1.0; break;
      case TTR_INT64: ((int64_t *)data)[i] = 1; break;
      case TTR_INT32: ((int32_t *)data)[i] = 1; break;
      default: memset((char *)data + i * ttr_dtype_size(t->dtype), 0, ttr_dtype_size(t->dtype)); break;
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s ARTIFACT\n", argv[0]);
    return 2;
  }
  ttr_plugin *plugin = NULL;
  ttr_model *model = NULL;
  ttr_outputs *outs = NULL;
  ttr_tensor *inputs = NULL;
  int rc = 1;
  ttr_error *err = ttr_open(NULL, &plugin);
  if (!err) err = ttr_load(plugin, argv[1], &model);
  if (err) goto done;
  int n = ttr_num_inputs(model);
  inputs = calloc((size_t)(n ? n : 1), sizeof *inputs);
  if (!inputs) goto done;
  for (int i = 0; i < n; i++) {
    ttr_tensor *t = &inputs[i];
    t->dtype = (ttr_dtype)ttr_input_dtype(model, i);
    t->ndim = ttr_program_input_dims(model, 0, i, t->dims);
    size_t numel = 1;
    for (int d = 0; d < t->ndim; d++) numel *= (size_t)t->dims[d];
    t->nbytes = numel * ttr_dtype_size(t->dtype);
    void *data = malloc(t->nbytes ? t->nbytes : 1);
    if (!data) goto done;
    fill_ones(t, data);
    t->data = data;
    printf("input %d: %s %s, rank %d\n", i, ttr_input_name(model, i), ttr_dtype_name(t->dtype), t->ndim);
  }
  if ((err = ttr_run(model, inputs, n, &outs))) goto done;
  for (int k = 0; k < ttr_outputs_count(outs); k++) {
    const ttr_tensor *t = ttr_outputs_get(outs, k);
    printf("output %d: %s %s [", k, ttr_output_name(model, k), ttr_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim; d++) printf(d ? ", %lld" : "%lld", (long long)t->dims[d]);
    printf("]");
    if (t->dtype == TTR_FLOAT32)
      for (size_t i = 0; i < 3 && i < t->nbytes / 4; i++) printf(" %g", (double)((const float *)t->data)[i]);
    printf("\n");
  }
  rc = 0;
done:
  if (err) {
    fprintf(stderr, "runner_example: %s\n", ttr_error_message(err));
    ttr_error_free(err);
  }
  for (int i = 0; inputs && model && i < ttr_num_inputs(model); i++) free((void *)inputs[i].data);
  free(inputs);
  ttr_outputs_free(outs);
  ttr_model_free(model);
  ttr_close(plugin);
  return rc;
}
