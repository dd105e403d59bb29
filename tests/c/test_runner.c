/* The runner's C API (include/torch_tpu/runner.h) on a tiny exported
 * artifact (tests/c/fixtures/runner_tiny, written by
 * make_runner_fixture.py): outputs against PyTorch's CPU eager ones, a
 * failing device-side check, wrong inputs, missing and malformed artifacts,
 * the JSON reader and the .npy writer. Run under valgrind by `make test-c`.
 *
 *   build/test_runner PLUGIN.so tests/c/fixtures/runner_tiny */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/json.h"
#include "runner/tensor_files.h"
#include "torch_tpu/runner.h"

static int failures;
#define CHECK(cond, ...)                                \
  do {                                                  \
    if (!(cond)) {                                      \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                     \
      fprintf(stderr, "\n");                            \
      failures++;                                       \
    }                                                   \
  } while (0)

/* err's message contains want (and err is freed); false when err is NULL. */
static bool error_says(ttr_error *err, const char *want) {
  bool ok = err && strstr(ttr_error_message(err), want);
  if (err && !ok) fprintf(stderr, "  message was: %s\n", ttr_error_message(err));
  ttr_error_free(err);
  return ok;
}

static ttr_tensor tensor_of(const ttr_array *a) {
  ttr_tensor t = {(ttr_dtype)a->dtype, a->ndim, {0}, a->data, a->nbytes};
  memcpy(t.dims, a->dims, sizeof t.dims);
  return t;
}

static void test_json(void) {
  const char *bad[] = {"", "{", "{\"a\": }", "[1, 2", "{\"a\" 1}", "\"\\x\"", "[1] 2", "tru", "{\"a\": \"\x01\"}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ttj_node *n = NULL;
    tt_error *err = ttj_parse(bad[i], strlen(bad[i]), "test", &n);
    CHECK(err && !n && strstr(tt_error_message(err), "malformed JSON"), "'%s' parsed", bad[i]);
    tt_error_free(err);
  }
  const char *good = "{\"a\": [1, -2, 3.5, true, null], \"b\": \"x\\u00e9\\n\", \"c\": {}}";
  ttj_node *n = NULL;
  tt_error *err = ttj_parse(good, strlen(good), "test", &n);
  CHECK(!err, "good JSON: %s", err ? tt_error_message(err) : "");
  int64_t v = 0;
  CHECK(n && ttj_int(ttj_at(ttj_get(n, "a"), 1), &v) && v == -2, "integer member");
  CHECK(n && !ttj_int(ttj_at(ttj_get(n, "a"), 2), &v) && ttj_at(ttj_get(n, "a"), 2)->number == 3.5, "fraction");
  CHECK(n && strcmp(ttj_str(ttj_get(n, "b")), "x\xc3\xa9\n") == 0, "string escapes");
  CHECK(n && ttj_get(n, "missing") == NULL && ttj_at(ttj_get(n, "a"), 9) == NULL, "absent members");
  tt_error_free(err);
  ttj_free(n);
}

static void test_npy_round_trip(void) {
  char path[] = "/tmp/tt_runner_npy_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  if (fd < 0) return;
  close(fd);
  int32_t data[6] = {1, -2, 3, -4, 5, -6};
  ttr_array a = {NULL, TT_I32, 2, {2, 3}, data, sizeof data}, b;
  tt_error *err = ttr_npy_write(path, &a);
  if (!err) err = ttr_npy_read(path, &b);
  CHECK(!err, "npy round trip: %s", err ? tt_error_message(err) : "");
  if (!err) {
    CHECK(b.dtype == TT_I32 && b.ndim == 2 && b.dims[0] == 2 && b.dims[1] == 3 &&
              memcmp(b.data, data, sizeof data) == 0, "npy contents");
    ttr_array_clear(&b);
  }
  tt_error_free(err);
  FILE *f = fopen(path, "wb");
  if (f) {
    fputs("not numpy", f);
    fclose(f);
  }
  err = ttr_npy_read(path, &b);
  CHECK(err && strstr(tt_error_message(err), "not a .npy file"), "garbage read as .npy");
  tt_error_free(err);
  unlink(path);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PLUGIN.so FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  const char *fixture = argv[2];
  test_json();
  test_npy_round_trip();

  ttr_plugin *plugin = NULL;
  ttr_model *model = NULL;
  ttr_outputs *outs = NULL;
  ttr_error *err = ttr_open(argv[1], &plugin);
  CHECK(!err, "open: %s", ttr_error_message(err));
  if (err) {
    ttr_error_free(err);
    return 1;
  }
  CHECK(error_says(ttr_load(plugin, "/nonexistent/artifact", &model), "signature.json") && !model,
        "missing artifact");

  err = ttr_load(plugin, fixture, &model);
  CHECK(!err, "load: %s", ttr_error_message(err));
  ttr_error_free(err);
  if (!model) {
    ttr_close(plugin);
    return 1;
  }
  CHECK(ttr_num_inputs(model) == 2 && strcmp(ttr_input_name(model, 0), "ids") == 0 &&
            ttr_input_dtype(model, 0) == TTR_INT64 && ttr_input_dtype(model, 1) == TTR_FLOAT32,
        "signature inputs");
  CHECK(ttr_num_outputs(model) == 1 && ttr_output_dtype(model, 0) == TTR_FLOAT32 && ttr_input_name(model, 5) == NULL,
        "signature outputs");

  char path[4096];
  ttr_array in[2] = {{0}}, want = {0};
  tt_error *e = NULL;
  for (int i = 0; i < 2 && !e; i++) {
    snprintf(path, sizeof path, "%s/in%d.npy", fixture, i);
    e = ttr_npy_read(path, &in[i]);
  }
  snprintf(path, sizeof path, "%s/expected0.npy", fixture);
  if (!e) e = ttr_npy_read(path, &want);
  CHECK(!e, "fixture inputs: %s", e ? tt_error_message(e) : "");
  tt_error_free(e);
  ttr_tensor t[2] = {tensor_of(&in[0]), tensor_of(&in[1])};

  for (int rep = 0; rep < 2; rep++) { /* the second run reuses the compiled program */
    err = ttr_run(model, t, 2, &outs);
    CHECK(!err, "run: %s", ttr_error_message(err));
    ttr_error_free(err);
    const ttr_tensor *o = outs ? ttr_outputs_get(outs, 0) : NULL;
    CHECK(o && o->dtype == TTR_FLOAT32 && o->ndim == 2 && o->dims[0] == 2 && o->dims[1] == 3 &&
              o->nbytes == want.nbytes, "output shape");
    for (size_t k = 0; o && o->nbytes == want.nbytes && k < want.nbytes / 4; k++) {
      float g = ((const float *)o->data)[k], w = ((const float *)want.data)[k];
      CHECK(fabsf(g - w) <= 1e-5f + 1e-5f * fabsf(w), "output %zu: %g, PyTorch %g", k, (double)g, (double)w);
    }
    CHECK(ttr_outputs_get(outs, 1) == NULL, "output index out of range");
    ttr_outputs_free(outs);
    outs = NULL;
  }

  /* wrong inputs */
  CHECK(error_says(ttr_run(model, t, 1, &outs), "takes 2 inputs, got 1") && !outs, "input count");
  ttr_tensor swapped[2] = {t[1], t[0]};
  CHECK(error_says(ttr_run(model, swapped, 2, &outs), "dtype float32, the model takes int64"), "input dtype");
  ttr_tensor narrow[2] = {t[0], t[1]};
  narrow[1].dims[1] = 2;
  narrow[1].nbytes = 16;
  CHECK(error_says(ttr_run(model, narrow, 2, &outs), "match no exported program"), "input shape");
  narrow[1] = t[1];
  narrow[1].nbytes = 4;
  CHECK(error_says(ttr_run(model, narrow, 2, &outs), "bytes for its shape"), "input size");
  /* an index out of range fails the program's device-side check */
  int64_t ids[6] = {1, 2, 3, 4, 5, 10};
  ttr_tensor oob[2] = {t[0], t[1]};
  oob[0].data = ids;
  CHECK(error_says(ttr_run(model, oob, 2, &outs), "index out of range"), "device-side check");

  for (int i = 0; i < 2; i++) ttr_array_clear(&in[i]);
  ttr_array_clear(&want);
  ttr_model_free(model);
  ttr_close(plugin);
  if (failures) {
    fprintf(stderr, "test_runner: %d failures\n", failures);
    return 1;
  }
  printf("test_runner: all checks passed\n");
  return 0;
}
