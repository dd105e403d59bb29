/* Standalone test of the PJRT runtime layer (csrc/pjrt), no PyTorch.
 *
 *   test_runtime [PLUGIN.so [FAKE.so]]
 *
 * PLUGIN.so comes from argv[1], else $TORCH_TPU_PJRT_PLUGIN. FAKE.so is this
 * same file built with -DTT_FAKE_PLUGIN -shared -fPIC: a stand-in plugin that
 * reports whatever API version $TT_FAKE_PJRT_VERSION says, used to test the
 * version checks (skipped when not given).
 *
 * Environment: TT_BENCH_ITERS (default 10000) sets the timing loop length;
 * use a small value under valgrind. Prints "runtime: N passed, M failed" last
 * and exits non-zero on any failure. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX declarations under -std=c11 */
#endif
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/settings.h"
#include "pjrt/runtime.h"
#include "pjrt/runtime_internal.h"

#ifdef TT_FAKE_PLUGIN
/* ------------------------------------------------ the stand-in plugin */
const PJRT_Api *GetPjrtApi(void);
const PJRT_Api *GetPjrtApi(void) {
  static PJRT_Api api;
  int major = 0, minor = 50;
  const char *v = getenv("TT_FAKE_PJRT_VERSION");
  if (v) sscanf(v, "%d.%d", &major, &minor);
  memset(&api, 0, sizeof api);
  /* A table that ends right after PJRT_Error_GetCode: old enough to lack
   * everything else, which is what the slot check must notice. */
  api.struct_size = offsetof(PJRT_Api, PJRT_Plugin_Initialize);
  api.pjrt_api_version.struct_size = PJRT_Api_Version_SIZE;
  api.pjrt_api_version.major_version = major;
  api.pjrt_api_version.minor_version = minor;
  return &api;
}
#else

static int g_passed, g_failed;

#define CHECK(cond, ...)                                       \
  do {                                                         \
    if (cond) {                                                \
      g_passed++;                                              \
    } else {                                                   \
      g_failed++;                                              \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);     \
      fprintf(stderr, __VA_ARGS__);                            \
      fputc('\n', stderr);                                     \
    }                                                          \
  } while (0)

/* Evaluates a tt_error* expression; a failure counts and prints the message. */
#define CHECK_OK(expr)                                                              \
  do {                                                                              \
    tt_error *e_ = (expr);                                                          \
    CHECK(e_ == NULL, "%s -> %s: %s", #expr, tt_error_code_name(tt_error_code_of(e_)), \
          tt_error_message(e_));                                                    \
    tt_error_free(e_);                                                              \
  } while (0)

/* Expects a specific error code; returns nothing, frees the error. */
#define CHECK_ERR(expr, code)                                                           \
  do {                                                                                  \
    tt_error *e_ = (expr);                                                              \
    CHECK(e_ && tt_error_code_of(e_) == (code) && tt_error_message(e_)[0],              \
          "%s: expected %s, got %s (%s)", #expr, tt_error_code_name(code),              \
          e_ ? tt_error_code_name(tt_error_code_of(e_)) : "success", tt_error_message(e_)); \
    tt_error_free(e_);                                                                  \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char ADD_F32[] =
    "module @add_f32 {\n"
    "  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.add %a, %b : tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static const char MULTI_I64[] =
    "module @multi {\n"
    "  func.func public @main(%a: tensor<3xi64>, %b: tensor<3xi64>)"
    " -> (tensor<3xi64>, tensor<3xi1>) {\n"
    "    %0 = stablehlo.multiply %a, %b : tensor<3xi64>\n"
    "    %1 = stablehlo.compare GT, %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>\n"
    "    return %0, %1 : tensor<3xi64>, tensor<3xi1>\n"
    "  }\n"
    "}\n";

static const char SCALAR_BF16[] =
    "module @scalar {\n"
    "  func.func public @main(%a: tensor<bf16>) -> tensor<bf16> {\n"
    "    %0 = stablehlo.multiply %a, %a : tensor<bf16>\n"
    "    return %0 : tensor<bf16>\n"
    "  }\n"
    "}\n";

static const char TRANSPOSE[] =
    "module @tr {\n"
    "  func.func public @main(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
    "    %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
    "    return %0 : tensor<3x2xf32>\n"
    "  }\n"
    "}\n";

static const char BAD_MODULE[] =
    "module @bad {\n"
    "  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.frobnicate %a : tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n";

/* ------------------------------------------------------------ round trips */

static void roundtrip(tt_runtime *rt, int device, tt_dtype dt, const int64_t *dims, int ndim,
                      const void *data, const char *what) {
  tt_buffer *b = NULL;
  tt_error *err = tt_buffer_from_host(rt, device, dt, dims, ndim, data, &b);
  CHECK(err == NULL, "upload %s: %s", what, tt_error_message(err));
  tt_error_free(err);
  if (!b) return;
  CHECK(tt_buffer_dtype(b) == dt && tt_buffer_ndim(b) == ndim && tt_buffer_device(b) == device,
        "metadata of %s", what);
  size_t n = tt_buffer_nbytes(b);
  size_t expect = tt_dtype_size(dt);
  for (int i = 0; i < ndim; i++) expect *= (size_t)dims[i];
  CHECK(n == expect, "nbytes of %s: %zu vs %zu", what, n, expect);
  unsigned char *back = malloc(n ? n : 1);
  memset(back, 0xa5, n ? n : 1);
  CHECK_OK(tt_buffer_to_host(b, back, n));
  CHECK(n == 0 || memcmp(back, data, n) == 0, "round trip of %s differs", what);
  if (n) CHECK_ERR(tt_buffer_to_host(b, back, n - 1), TT_ERR_INVALID_ARGUMENT);
  free(back);
  tt_buffer_release(b);
}

static void test_roundtrips(tt_runtime *rt) {
  const float f32[6] = {1.5f, -2.25f, 3.0f, 0.0f, -0.0f, 1e30f};
  const int64_t d23[2] = {2, 3};
  roundtrip(rt, 0, TT_F32, d23, 2, f32, "f32[2,3]");
  const uint16_t bf16[5] = {0x3f80, 0xc000, 0x7f80, 0x0001, 0x4049}; /* 1, -2, inf, tiny, 3.14 */
  const int64_t d5[1] = {5};
  roundtrip(rt, 1, TT_BF16, d5, 1, bf16, "bf16[5]");
  const int64_t i64[4] = {1, -1, INT64_MAX, INT64_MIN};
  const int64_t d4[1] = {4};
  roundtrip(rt, 0, TT_I64, d4, 1, i64, "i64[4]");
  const unsigned char bools[6] = {1, 0, 0, 1, 1, 0};
  const int64_t d32[2] = {3, 2};
  roundtrip(rt, 0, TT_BOOL, d32, 2, bools, "bool[3,2]");
  const float scalar = 42.5f;
  roundtrip(rt, 1, TT_F32, NULL, 0, &scalar, "f32 scalar");
  const uint8_t u8[3] = {0, 128, 255};
  const int64_t d3[1] = {3};
  roundtrip(rt, 0, TT_U8, d3, 1, u8, "u8[3]");
  const double f64[2] = {3.141592653589793, -1e-300};
  const int64_t d2[1] = {2};
  roundtrip(rt, 0, TT_F64, d2, 1, f64, "f64[2]");
  const int64_t d0[2] = {0, 7};
  roundtrip(rt, 0, TT_F32, d0, 2, NULL, "f32[0,7]");
  /* 4-d, to exercise the row-major host layout */
  float big[2 * 3 * 4 * 5];
  for (int i = 0; i < 120; i++) big[i] = (float)i * 0.5f;
  const int64_t d2345[4] = {2, 3, 4, 5};
  roundtrip(rt, 1, TT_F32, d2345, 4, big, "f32[2,3,4,5]");

  tt_buffer *b = NULL;
  const int64_t neg[1] = {-1};
  CHECK_ERR(tt_buffer_from_host(rt, 0, TT_F32, neg, 1, f32, &b), TT_ERR_INVALID_ARGUMENT);
  CHECK_ERR(tt_buffer_from_host(rt, 5, TT_F32, d4, 1, f32, &b), TT_ERR_INDEX);
  CHECK_ERR(tt_buffer_from_host(rt, 0, TT_DTYPE_COUNT, d4, 1, f32, &b), TT_ERR_TYPE);
}

static void test_copy(tt_runtime *rt) {
  const float v[4] = {1, 2, 3, 4};
  const int64_t d4[1] = {4};
  tt_buffer *a = NULL, *c = NULL;
  CHECK_OK(tt_buffer_from_host(rt, 0, TT_F32, d4, 1, v, &a));
  if (!a) return;
  CHECK_OK(tt_buffer_copy_to_device(a, 1, &c));
  if (c) {
    float back[4] = {0};
    CHECK(tt_buffer_device(c) == 1, "copy landed on device %d", tt_buffer_device(c));
    CHECK_OK(tt_buffer_await(c));
    CHECK_OK(tt_buffer_to_host(c, back, sizeof back));
    CHECK(memcmp(back, v, sizeof v) == 0, "device copy differs");
  }
  tt_buffer *same = NULL;
  CHECK_ERR(tt_buffer_copy_to_device(a, 0, &same), TT_ERR_INVALID_ARGUMENT);
  CHECK(tt_buffer_retain(a) == a, "retain returns its argument");
  tt_buffer_release(a); /* retained ref */
  tt_buffer_release(a);
  tt_buffer_release(c);
  tt_buffer_release(NULL);
}

/* ------------------------------------------------------------ executables */

static void run_add(tt_executable *exe, tt_runtime *rt, int device, const char *what) {
  const float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40.5f};
  const int64_t d4[1] = {4};
  tt_buffer *a = NULL, *b = NULL, *out = NULL;
  CHECK_OK(tt_buffer_from_host(rt, device, TT_F32, d4, 1, x, &a));
  CHECK_OK(tt_buffer_from_host(rt, device, TT_F32, d4, 1, y, &b));
  tt_buffer *args[2] = {a, b};
  tt_error *err = tt_execute(exe, device, args, 2, &out, 1);
  CHECK(err == NULL, "execute %s on device %d: %s", what, device, tt_error_message(err));
  tt_error_free(err);
  tt_buffer_release(a); /* the launch keeps what it needs alive */
  tt_buffer_release(b);
  if (!out) return;
  CHECK(tt_buffer_device(out) == device && tt_buffer_dtype(out) == TT_F32 &&
            tt_buffer_ndim(out) == 1 && tt_buffer_dims(out)[0] == 4,
        "output metadata (%s)", what);
  float r[4] = {0};
  CHECK_OK(tt_buffer_to_host(out, r, sizeof r));
  for (int i = 0; i < 4; i++) CHECK(r[i] == x[i] + y[i], "%s[%d] = %g", what, i, (double)r[i]);
  tt_buffer_release(out);
}

/* The last reference to an executable dropped right after launching it
 * (the pool of live executables unloads programs that way): the launches
 * still complete with the right values, and the executable is destroyed
 * afterwards (by the reaper thread when launches were still running). */
static void test_release_while_launched(tt_runtime *rt) {
  tt_compile_options portable = {.optimization_level = 2, .portable = true};
  long exes_before = 0;
  tt_runtime_debug_counts(rt, NULL, &exes_before, NULL);
  for (int round = 0; round < 20; round++) {
    tt_executable *exe = NULL;
    CHECK_OK(tt_compile(rt, ADD_F32, strlen(ADD_F32), &portable, &exe));
    if (!exe) return;
    const float x[4] = {1, 2, 3, 4};
    const int64_t d4[1] = {4};
    tt_buffer *acc = NULL;
    CHECK_OK(tt_buffer_from_host(rt, 0, TT_F32, d4, 1, x, &acc));
    for (int i = 0; acc && i < 32; i++) { /* acc doubles on each launch */
      tt_buffer *args[2] = {acc, acc}, *out = NULL;
      CHECK_OK(tt_execute(exe, 0, args, 2, &out, 1));
      tt_buffer_release(acc);
      acc = out;
    }
    tt_executable_release(exe); /* launches may still be running */
    float r[4] = {0};
    if (acc) CHECK_OK(tt_buffer_to_host(acc, r, sizeof r));
    for (int i = 0; i < 4; i++)
      CHECK(r[i] == x[i] * 4294967296.0f, "released-while-launched[%d] = %g", i, (double)r[i]);
    tt_buffer_release(acc);
  }
  /* slow launches (512x512 products): surely still running at the release */
  static const char MATMUL[] =
      "module @mm {\n"
      "  func.func public @main(%a: tensor<512x512xf32>) -> tensor<512x512xf32> {\n"
      "    %0 = stablehlo.dot_general %a, %a, contracting_dims = [1] x [0] : "
      "(tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>\n"
      "    return %0 : tensor<512x512xf32>\n"
      "  }\n"
      "}\n";
  tt_executable *mm = NULL;
  CHECK_OK(tt_compile(rt, MATMUL, strlen(MATMUL), &portable, &mm));
  float *ones = malloc(512 * 512 * sizeof *ones);
  const int64_t d2[2] = {512, 512};
  tt_buffer *acc = NULL;
  for (int i = 0; ones && i < 512 * 512; i++) ones[i] = 1.0f / 512;
  if (mm && ones) CHECK_OK(tt_buffer_from_host(rt, 0, TT_F32, d2, 2, ones, &acc));
  for (int i = 0; mm && acc && i < 16; i++) { /* (J/512)^2 = J/512: stays the same */
    tt_buffer *args[1] = {acc}, *out = NULL;
    CHECK_OK(tt_execute(mm, 0, args, 1, &out, 1));
    tt_buffer_release(acc);
    acc = out;
  }
  tt_executable_release(mm);
  if (acc && ones) {
    CHECK_OK(tt_buffer_to_host(acc, ones, 512 * 512 * sizeof *ones));
    CHECK(ones[0] == 1.0f / 512 && ones[512 * 512 - 1] == 1.0f / 512, "chained products %g",
          (double)ones[0]);
  }
  tt_buffer_release(acc);
  free(ones);
  CHECK_OK(tt_runtime_synchronize(rt));
  long exes = -1;
  for (int wait = 0; wait < 200; wait++) { /* the reaper destroys the last ones */
    tt_runtime_debug_counts(rt, NULL, &exes, NULL);
    if (exes == exes_before) break;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  CHECK(exes == exes_before, "executables left: %ld (before: %ld)", exes, exes_before);
}

static void test_compile_execute(tt_runtime *rt, double *compile_s) {
  tt_compile_options portable = {.optimization_level = 2, .portable = true};
  tt_compile_options fixed = {.optimization_level = 2, .portable = false};
  tt_executable *exe = NULL;
  double t0 = now_s();
  CHECK_OK(tt_compile(rt, ADD_F32, strlen(ADD_F32), &portable, &exe));
  *compile_s = now_s() - t0;
  if (!exe) return;
  CHECK(tt_executable_num_outputs(exe) == 1, "num_outputs %d", tt_executable_num_outputs(exe));
  run_add(exe, rt, 0, "portable add");
  run_add(exe, rt, 1, "portable add");
  CHECK_OK(tt_runtime_synchronize(rt));

  /* argument on the wrong device, wrong output count */
  const float x[4] = {0};
  const int64_t d4[1] = {4};
  tt_buffer *a = NULL, *out[2] = {NULL, NULL};
  CHECK_OK(tt_buffer_from_host(rt, 1, TT_F32, d4, 1, x, &a));
  tt_buffer *args[2] = {a, a};
  CHECK_ERR(tt_execute(exe, 0, args, 2, out, 1), TT_ERR_INVALID_ARGUMENT);
  CHECK_ERR(tt_execute(exe, 1, args, 2, out, 2), TT_ERR_INVALID_ARGUMENT);
  CHECK_ERR(tt_execute(exe, 7, args, 2, out, 1), TT_ERR_INDEX);
  tt_buffer_release(a);

  /* serialize / deserialize, run the copy on the other device */
  void *bytes = NULL;
  size_t size = 0;
  CHECK_OK(tt_executable_serialize(exe, &bytes, &size));
  CHECK(bytes && size > 0, "serialized %zu bytes", size);
  if (bytes) {
    tt_executable *back = NULL;
    t0 = now_s();
    CHECK_OK(tt_executable_deserialize(rt, bytes, size, &back));
    printf("  deserialize: %.2f ms (%zu bytes)\n", (now_s() - t0) * 1e3, size);
    if (back) {
      CHECK(tt_executable_num_outputs(back) == 1, "deserialized num_outputs");
      run_add(back, rt, 1, "deserialized add");
      run_add(back, rt, 0, "deserialized add");
      tt_executable_release(back);
    }
    free(bytes);
  }
  CHECK(tt_executable_retain(exe) == exe, "retain");
  tt_executable_release(exe);
  tt_executable_release(exe);
  tt_executable_release(NULL);

  /* a non-portable executable is bound to device 0 */
  tt_executable *bound = NULL;
  CHECK_OK(tt_compile(rt, ADD_F32, strlen(ADD_F32), &fixed, &bound));
  if (bound) {
    run_add(bound, rt, 0, "bound add");
    tt_buffer *b1 = NULL, *o = NULL;
    CHECK_OK(tt_buffer_from_host(rt, 1, TT_F32, d4, 1, x, &b1));
    tt_buffer *args1[2] = {b1, b1};
    CHECK_ERR(tt_execute(bound, 1, args1, 2, &o, 1), TT_ERR_INVALID_ARGUMENT);
    tt_buffer_release(b1);
    tt_executable_release(bound);
  }

  /* two outputs, i64 in, i64 + bool out */
  tt_executable *multi = NULL;
  CHECK_OK(tt_compile(rt, MULTI_I64, strlen(MULTI_I64), &portable, &multi));
  if (multi) {
    CHECK(tt_executable_num_outputs(multi) == 2, "multi num_outputs %d",
          tt_executable_num_outputs(multi));
    const int64_t p[3] = {3, -4, 5}, q[3] = {2, 7, 5};
    const int64_t d3[1] = {3};
    tt_buffer *bp = NULL, *bq = NULL, *o2[2] = {NULL, NULL};
    CHECK_OK(tt_buffer_from_host(rt, 1, TT_I64, d3, 1, p, &bp));
    CHECK_OK(tt_buffer_from_host(rt, 1, TT_I64, d3, 1, q, &bq));
    tt_buffer *args2[2] = {bp, bq};
    CHECK_OK(tt_execute(multi, 1, args2, 2, o2, 2));
    if (o2[0] && o2[1]) {
      int64_t prod[3];
      unsigned char gt[3];
      CHECK(tt_buffer_dtype(o2[0]) == TT_I64 && tt_buffer_dtype(o2[1]) == TT_BOOL,
            "multi output dtypes %d %d", tt_buffer_dtype(o2[0]), tt_buffer_dtype(o2[1]));
      CHECK_OK(tt_buffer_to_host(o2[0], prod, sizeof prod));
      CHECK_OK(tt_buffer_to_host(o2[1], gt, sizeof gt));
      CHECK(prod[0] == 6 && prod[1] == -28 && prod[2] == 25, "multi products");
      CHECK(gt[0] == 1 && gt[1] == 0 && gt[2] == 0, "multi compare");
    }
    tt_buffer_release(bp);
    tt_buffer_release(bq);
    tt_buffer_release(o2[0]);
    tt_buffer_release(o2[1]);
    tt_executable_release(multi);
  }

  /* 0-d bf16 program */
  tt_executable *sc = NULL;
  CHECK_OK(tt_compile(rt, SCALAR_BF16, strlen(SCALAR_BF16), &portable, &sc));
  if (sc) {
    const uint16_t three = 0x4040; /* 3.0 */
    tt_buffer *s = NULL, *o = NULL;
    CHECK_OK(tt_buffer_from_host(rt, 0, TT_BF16, NULL, 0, &three, &s));
    CHECK_OK(tt_execute(sc, 0, &s, 1, &o, 1));
    if (o) {
      uint16_t r = 0;
      CHECK(tt_buffer_ndim(o) == 0 && tt_buffer_numel(o) == 1, "scalar output shape");
      CHECK_OK(tt_buffer_to_host(o, &r, sizeof r));
      CHECK(r == 0x4110, "bf16 3*3 = 0x%04x", r); /* 9.0 */
    }
    tt_buffer_release(s);
    tt_buffer_release(o);
    tt_executable_release(sc);
  }

  /* transposed output: read it back through both download paths */
  tt_executable *tr = NULL;
  CHECK_OK(tt_compile(rt, TRANSPOSE, strlen(TRANSPOSE), &portable, &tr));
  if (tr) {
    const float m[6] = {1, 2, 3, 4, 5, 6};
    const int64_t d23[2] = {2, 3};
    tt_buffer *in = NULL, *o = NULL;
    CHECK_OK(tt_buffer_from_host(rt, 1, TT_F32, d23, 2, m, &in));
    CHECK_OK(tt_execute(tr, 1, &in, 1, &o, 1));
    if (o) {
      CHECK(tt_buffer_ndim(o) == 2 && tt_buffer_dims(o)[0] == 3 && tt_buffer_dims(o)[1] == 2,
            "transpose output shape");
      for (int path = 0; path < 2; path++) {
        bool was = tt_runtime_set_cpu_direct_read(rt, path == 0);
        float r[6] = {0};
        CHECK_OK(tt_buffer_to_host(o, r, sizeof r));
        const float want[6] = {1, 4, 2, 5, 3, 6};
        CHECK(memcmp(r, want, sizeof r) == 0, "transpose (read path %d): %g %g %g %g %g %g", path,
              (double)r[0], (double)r[1], (double)r[2], (double)r[3], (double)r[4], (double)r[5]);
        tt_runtime_set_cpu_direct_read(rt, was);
      }
    }
    tt_buffer_release(in);
    tt_buffer_release(o);
    tt_executable_release(tr);
  }

  /* a broken module is a compile error, and the process survives it */
  tt_executable *bad = NULL;
  tt_error *err = tt_compile(rt, BAD_MODULE, strlen(BAD_MODULE), &portable, &bad);
  CHECK(err && tt_error_code_of(err) == TT_ERR_COMPILE && strlen(tt_error_message(err)) > 10,
        "bad module: %s", tt_error_message(err));
  if (err) {
    const char *m = tt_error_message(err);
    printf("  bad-module diagnostic (first 160 chars): %.160s\n", m);
  }
  CHECK(bad == NULL, "no executable for a bad module");
  tt_error_free(err);
}

/* ---------------------------------------------------------- concurrency */

typedef struct {
  tt_runtime *rt;
  tt_executable *exe;
  int device, iters, errors;
} worker_arg;

static void *worker(void *p) {
  worker_arg *w = p;
  const float x[4] = {1, 1, 1, 1};
  const int64_t d4[1] = {4};
  tt_buffer *a = NULL;
  tt_error *err = tt_buffer_from_host(w->rt, w->device, TT_F32, d4, 1, x, &a);
  if (err) {
    tt_error_free(err);
    w->errors++;
    return NULL;
  }
  tt_buffer *args[2] = {a, a};
  for (int i = 0; i < w->iters; i++) {
    tt_buffer *o = NULL;
    err = tt_execute(w->exe, w->device, args, 2, &o, 1);
    if (err) {
      w->errors++;
      tt_error_free(err);
    }
    tt_buffer *keep = o ? tt_buffer_retain(o) : NULL; /* refcount churn across threads */
    tt_buffer_release(o);
    tt_buffer_release(keep);
  }
  tt_buffer_release(a);
  return NULL;
}

static void test_threads(tt_runtime *rt, int iters) {
  tt_compile_options portable = {.portable = true};
  tt_executable *exe = NULL;
  CHECK_OK(tt_compile(rt, ADD_F32, strlen(ADD_F32), &portable, &exe));
  if (!exe) return;
  pthread_t th[4];
  worker_arg w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker_arg){rt, exe, i % 2, iters, 0};
    pthread_create(&th[i], NULL, worker, &w[i]);
  }
  int errors = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    errors += w[i].errors;
  }
  CHECK(errors == 0, "%d errors in threaded launches", errors);
  CHECK_OK(tt_runtime_synchronize(rt));
  tt_executable_release(exe);
}

/* ------------------------------------------------------------- benchmarks */

static void bench(tt_runtime *rt, int iters) {
  tt_compile_options portable = {.portable = true};
  tt_executable *exe = NULL;
  CHECK_OK(tt_compile(rt, ADD_F32, strlen(ADD_F32), &portable, &exe));
  if (!exe) return;
  const float x[4] = {1, 2, 3, 4};
  const int64_t d4[1] = {4};
  tt_buffer *a = NULL;
  CHECK_OK(tt_buffer_from_host(rt, 0, TT_F32, d4, 1, x, &a));
  if (!a) {
    tt_executable_release(exe);
    return;
  }
  tt_buffer *args[2] = {a, a};

  for (int mode = 0; mode < 2; mode++) {
    tt_runtime_set_track_completion(rt, mode == 0);
    for (int i = 0; i < 100; i++) { /* warm up */
      tt_buffer *o = NULL;
      tt_error_free(tt_execute(exe, 0, args, 2, &o, 1));
      tt_buffer_release(o);
    }
    CHECK_OK(tt_runtime_synchronize(rt));
    double t0 = now_s();
    tt_buffer *last = NULL;
    for (int i = 0; i < iters; i++) {
      tt_buffer *o = NULL;
      tt_error *err = tt_execute(exe, 0, args, 2, &o, 1);
      if (err) {
        CHECK(0, "bench execute: %s", tt_error_message(err));
        tt_error_free(err);
        break;
      }
      tt_buffer_release(last);
      last = o;
    }
    double t_launch = now_s() - t0;
    size_t in_list = 0;
    tt_runtime_debug_counts(rt, NULL, NULL, &in_list);
    /* finished events are reaped as launches go, so the list stays short */
    CHECK(mode == 1 ? in_list == 0 : in_list < 1000, "pending list grew to %zu", in_list);
    CHECK_OK(tt_runtime_synchronize(rt));
    double t_all = now_s() - t0;
    float r[4];
    if (last) CHECK_OK(tt_buffer_to_host(last, r, sizeof r));
    tt_buffer_release(last);
    size_t pending = 0;
    tt_runtime_debug_counts(rt, NULL, NULL, &pending);
    CHECK(pending == 0, "pending events after synchronize: %zu", pending);
    printf("  tt_execute 4-elem add, %s: %.2f us/call launch, %.2f us/call incl. sync (%d calls)\n",
           mode == 0 ? "with completion events" : "no completion events",
           t_launch / iters * 1e6, t_all / iters * 1e6, iters);
  }
  tt_runtime_set_track_completion(rt, true);

  /* chained launches: each output feeds the next launch */
  {
    tt_buffer *cur = tt_buffer_retain(a);
    double t0 = now_s();
    for (int i = 0; i < iters; i++) {
      tt_buffer *o = NULL, *cargs[2] = {cur, a};
      tt_error *err = tt_execute(exe, 0, cargs, 2, &o, 1);
      tt_buffer_release(cur);
      cur = o;
      if (err) {
        CHECK(0, "chained execute: %s", tt_error_message(err));
        tt_error_free(err);
        break;
      }
    }
    CHECK_OK(tt_runtime_synchronize(rt));
    double t = now_s() - t0;
    float r[4] = {0};
    if (cur) CHECK_OK(tt_buffer_to_host(cur, r, sizeof r));
    CHECK(cur && r[0] == 1.0f + (float)iters * 1.0f, "chained result %g", (double)r[0]);
    tt_buffer_release(cur);
    printf("  tt_execute chained (dependent) 4-elem add: %.2f us/call (%d calls)\n",
           t / iters * 1e6, iters);
  }

  /* scalar upload / download */
  const float s = 3.0f;
  double t0 = now_s();
  for (int i = 0; i < iters; i++) {
    tt_buffer *b = NULL;
    tt_error *err = tt_buffer_from_host(rt, 0, TT_F32, NULL, 0, &s, &b);
    if (err) {
      CHECK(0, "bench upload: %s", tt_error_message(err));
      tt_error_free(err);
      break;
    }
    tt_buffer_release(b);
  }
  double t_up = now_s() - t0;
  tt_buffer *b = NULL;
  CHECK_OK(tt_buffer_from_host(rt, 0, TT_F32, NULL, 0, &s, &b));
  float back = 0;
  t0 = now_s();
  for (int i = 0; i < iters && b; i++) tt_error_free(tt_buffer_to_host(b, &back, sizeof back));
  double t_down = now_s() - t0;
  CHECK(back == s, "scalar download");
  bool direct = tt_runtime_set_cpu_direct_read(rt, false);
  back = 0;
  t0 = now_s();
  for (int i = 0; i < iters && b; i++) tt_error_free(tt_buffer_to_host(b, &back, sizeof back));
  double t_down_slow = now_s() - t0;
  CHECK(back == s, "scalar download (ToHostBuffer)");
  tt_runtime_set_cpu_direct_read(rt, direct);
  tt_buffer_release(b);
  printf("  tt_buffer_from_host 0-d f32 (+release): %.2f us/call\n", t_up / iters * 1e6);
  printf("  tt_buffer_to_host 0-d f32: %.2f us/call (%s); via PJRT_Buffer_ToHostBuffer: %.2f us/call\n",
         t_down / iters * 1e6, direct ? "CPU direct read" : "ToHostBuffer", t_down_slow / iters * 1e6);

  tt_buffer_release(a);
  tt_executable_release(exe);
}

/* ------------------------------------------------------------------ main */

static void test_find_plugin(const char *plugin) {
  char *saved = getenv("TORCH_TPU_PJRT_PLUGIN") ? strdup(getenv("TORCH_TPU_PJRT_PLUGIN")) : NULL;
  char out[4096];
  setenv("TORCH_TPU_PJRT_PLUGIN", "/nonexistent/libfoo.so", 1);
  tt_settings_reset(); /* settings are read once */
  tt_error *err = tt_runtime_find_plugin(NULL, out, sizeof out);
  CHECK(err && tt_error_code_of(err) == TT_ERR_PLUGIN &&
            strstr(tt_error_message(err), "/nonexistent/libfoo.so"),
        "find with bad env: %s", tt_error_message(err));
  tt_error_free(err);

  setenv("TORCH_TPU_PJRT_PLUGIN", plugin, 1);
  tt_settings_reset();
  CHECK_OK(tt_runtime_find_plugin(NULL, out, sizeof out));
  CHECK(strcmp(out, plugin) == 0, "env var wins: %s", out);
  CHECK_ERR(tt_runtime_find_plugin(NULL, out, 3), TT_ERR_INVALID_ARGUMENT);

  unsetenv("TORCH_TPU_PJRT_PLUGIN");
  tt_settings_reset();
  /* plugin = <site>/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so ? */
  const char *suffix = "/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so";
  size_t pl = strlen(plugin), sl = strlen(suffix);
  if (pl > sl && strcmp(plugin + pl - sl, suffix) == 0) {
    char site[4096];
    snprintf(site, sizeof site, "%.*s", (int)(pl - sl), plugin);
    const char *dirs[] = {"/nonexistent", site, NULL};
    CHECK_OK(tt_runtime_find_plugin(dirs, out, sizeof out));
    CHECK(strcmp(out, plugin) == 0, "found %s", out);
  }
  const char *none[] = {"/nonexistent", NULL};
  CHECK_ERR(tt_runtime_find_plugin(none, out, sizeof out), TT_ERR_PLUGIN);
  if (saved) {
    setenv("TORCH_TPU_PJRT_PLUGIN", saved, 1);
    free(saved);
  }
  tt_settings_reset();
}

static void test_fake_plugin(const char *fake) {
  struct {
    const char *version, *needle;
  } cases[] = {
      {"0.50", "0.50"},  /* too old */
      {"1.3", "1.3"},    /* another major version */
      {"0.81", "lacks"}, /* new enough, but its table is missing slots */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setenv("TT_FAKE_PJRT_VERSION", cases[i].version, 1);
    tt_runtime *rt = NULL;
    tt_error *err = tt_runtime_open(fake, 1, &rt);
    CHECK(err && tt_error_code_of(err) == TT_ERR_PLUGIN && rt == NULL &&
              strstr(tt_error_message(err), cases[i].needle) &&
              (i == 2 || strstr(tt_error_message(err), "0.57")),
          "fake plugin %s: %s", cases[i].version, tt_error_message(err));
    if (err) printf("  fake plugin %s: %s\n", cases[i].version, tt_error_message(err));
    tt_error_free(err);
    tt_runtime_close(rt);
  }
  unsetenv("TT_FAKE_PJRT_VERSION");
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *plugin = argc > 1 ? argv[1] : getenv("TORCH_TPU_PJRT_PLUGIN");
  if (!plugin || !*plugin) {
    fprintf(stderr, "usage: %s PLUGIN.so (or set TORCH_TPU_PJRT_PLUGIN)\n", argv[0]);
    return 2;
  }
  int iters = getenv("TT_BENCH_ITERS") ? atoi(getenv("TT_BENCH_ITERS")) : 10000;
  if (iters < 1) iters = 1;

  /* a missing plugin and a file that is not a plugin */
  tt_runtime *rt = NULL;
  tt_error *err = tt_runtime_open("/nonexistent/dir/plugin.so", 2, &rt);
  CHECK(err && tt_error_code_of(err) == TT_ERR_PLUGIN &&
            strstr(tt_error_message(err), "/nonexistent/dir/plugin.so") && rt == NULL,
        "missing plugin: %s", tt_error_message(err));
  tt_error_free(err);
  err = tt_runtime_open("/etc/hostname", 2, &rt);
  CHECK(err && tt_error_code_of(err) == TT_ERR_PLUGIN, "non-plugin file: %s", tt_error_message(err));
  if (err) printf("  non-plugin file: %s\n", tt_error_message(err));
  tt_error_free(err);

  test_find_plugin(plugin);
  const char *fake = argc > 2 ? argv[2] : getenv("TT_FAKE_PJRT_PLUGIN");
  if (fake && *fake)
    test_fake_plugin(fake);
  else
    printf("  (no fake plugin given: version-check tests skipped)\n");

  double t0 = now_s();
  err = tt_runtime_open(plugin, 2, &rt);
  double t_open = now_s() - t0;
  CHECK(err == NULL, "open %s: %s", plugin, tt_error_message(err));
  tt_error_free(err);
  if (!rt) goto done;

  int major = -1, minor = -1;
  tt_runtime_api_version(rt, &major, &minor);
  printf("  plugin: %s\n  platform %s, %d devices, kind '%s', PJRT API %d.%d\n", plugin,
         tt_runtime_platform_name(rt), tt_runtime_device_count(rt), tt_runtime_device_kind(rt, 0),
         major, minor);
  printf("  xla_version=%s stablehlo_current_version=%s stablehlo_minimum_version=%s\n",
         tt_runtime_attribute(rt, "xla_version") ? tt_runtime_attribute(rt, "xla_version") : "-",
         tt_runtime_attribute(rt, "stablehlo_current_version")
             ? tt_runtime_attribute(rt, "stablehlo_current_version") : "-",
         tt_runtime_attribute(rt, "stablehlo_minimum_version")
             ? tt_runtime_attribute(rt, "stablehlo_minimum_version") : "-");
  CHECK(tt_runtime_device_count(rt) == 2, "device count %d", tt_runtime_device_count(rt));
  CHECK(major == 0 && minor >= 57, "api version %d.%d", major, minor);
  CHECK(tt_runtime_platform_name(rt) && strcmp(tt_runtime_platform_name(rt), "cpu") == 0,
        "platform %s", tt_runtime_platform_name(rt));
  CHECK(tt_runtime_device_kind(rt, 1) != NULL && tt_runtime_device_kind(rt, 2) == NULL,
        "device kinds");
  CHECK(tt_runtime_attribute(rt, "no_such_attribute") == NULL, "missing attribute is NULL");
  t0 = now_s();
  const char *fp = tt_runtime_fingerprint(rt);
  double t_fp = now_s() - t0;
  CHECK(fp && strlen(fp) > 20 && tt_runtime_fingerprint(rt) == fp, "fingerprint %s", fp ? fp : "(null)");
  printf("  fingerprint: %s (%.1f ms)\n", fp ? fp : "-", t_fp * 1e3);

  /* a second runtime on the same plugin (plugin initialized once) */
  tt_runtime *rt2 = NULL;
  CHECK_OK(tt_runtime_open(plugin, 1, &rt2));
  CHECK(rt2 && tt_runtime_device_count(rt2) == 1, "second runtime with 1 device");
  if (rt2 && fp) CHECK(strcmp(tt_runtime_fingerprint(rt2), fp) == 0, "fingerprint stable");
  tt_runtime_close(rt2);

  test_roundtrips(rt);
  bool direct = tt_runtime_set_cpu_direct_read(rt, false); /* again via ToHostBuffer */
  test_roundtrips(rt);
  tt_runtime_set_cpu_direct_read(rt, direct);
  test_copy(rt);
  double t_compile = 0;
  test_compile_execute(rt, &t_compile);
  test_release_while_launched(rt);
  test_threads(rt, iters / 10 > 0 ? iters / 10 : 1);
  CHECK_OK(tt_runtime_synchronize(rt));

  printf("timings:\n  tt_runtime_open (dlopen + init + client): %.1f ms\n", t_open * 1e3);
  printf("  tt_compile small add (portable): %.1f ms\n", t_compile * 1e3);
  bench(rt, iters);

  long nbuf = -1, nexe = -1;
  size_t npend = 1;
  CHECK_OK(tt_runtime_synchronize(rt));
  tt_runtime_debug_counts(rt, &nbuf, &nexe, &npend);
  CHECK(nbuf == 0 && nexe == 0 && npend == 0, "leaked objects: %ld buffers, %ld executables, %zu events",
        nbuf, nexe, npend);

  /* a buffer may outlive tt_runtime_close; the client goes when it does */
  tt_buffer *late = NULL;
  const float one = 1.0f;
  CHECK_OK(tt_buffer_from_host(rt, 0, TT_F32, NULL, 0, &one, &late));
  tt_runtime_close(rt);
  if (late) {
    float v = 0;
    CHECK_OK(tt_buffer_to_host(late, &v, sizeof v));
    CHECK(v == 1.0f, "buffer after close");
  }
  tt_buffer_release(late); /* destroys the client */

done:
  printf("runtime: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
#endif /* TT_FAKE_PLUGIN */
