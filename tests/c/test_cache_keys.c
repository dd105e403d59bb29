/* Compile-cache keys: what must change an op's key and what must not.
 *
 * The key is built inside execute.c (a static function), so these tests
 * observe it through the in-memory cache's counters: each op runs through
 * tt_op_run in Strict eager on the real plugin, and a case checks whether
 * the second run was a cache hit (same key) or a miss (new key).
 *
 * Must change the key: dtype, shape, strides, storage offset 0 against a
 * nonzero one (a nonzero offset is a runtime value), storage size,
 * static arguments (int lists, bools), Scalar kinds (int vs float), the
 * optimization level, aliasing between arguments, a Scalar value that the
 * program depends on (arange's bounds).
 * Must not: nonzero offsets of views inside their storage, Scalar values
 * passed as runtime parameters (alpha), the values of wrapped Python
 * numbers, which storage a same-shaped tensor lives in.
 *
 * Also the pool of live executables (cache/exe_pool.h) that the cached
 * programs' executables live in: its LRU order, cap and counts. */
#include "core_glue.h"
#include "cache/compile_cache.h"
#include "cache/exe_pool.h"

/* Runs op and returns 'H' when the cache had its key, 'M' when it did not
 * (the program was built), 'E' on an error. */
static char run(const char *op, tt_arg *args, int nargs, bool returns_written) {
  tt_cache_stats before = tt_cache_get_stats();
  tt_op_result res;
  tt_error *err = tt_op_run(op, args, nargs, returns_written, 0, &res);
  if (err) {
    fprintf(stderr, "%s: %s\n", op, tt_error_message(err));
    tt_error_free(err);
    return 'E';
  }
  tt_op_result_clear(&res);
  tt_cache_stats after = tt_cache_get_stats();
  return after.misses > before.misses ? 'M' : after.hits > before.hits ? 'H' : '?';
}

#define ADD(x, y, alpha) ((tt_arg[]){A_TENSOR(x), A_TENSOR(y), alpha})
#define RUN_ADD(x, y, alpha) run("add.Tensor", ADD(x, y, alpha), 3, false)

static void test_same_shapes_other_storages_hit(void) {
  CHECK(RUN_ADD(T(TT_F32, 2, 3), T(TT_F32, 2, 3), A_SCALAR_I(1)) == 'M');
  CHECK(RUN_ADD(T(TT_F32, 2, 3), T(TT_F32, 2, 3), A_SCALAR_I(1)) == 'H');
  glue_reset();
}

static void test_scalar_values_are_parameters(void) {
  CHECK(RUN_ADD(T(TT_F32, 5), T(TT_F32, 5), A_SCALAR_I(2)) == 'M');
  CHECK(RUN_ADD(T(TT_F32, 5), T(TT_F32, 5), A_SCALAR_I(3)) == 'H');
  CHECK(RUN_ADD(T(TT_F32, 5), T(TT_F32, 5), A_SCALAR_I(-7)) == 'H');
  /* the kind of a Scalar is static: int vs float is another program */
  CHECK(RUN_ADD(T(TT_F32, 5), T(TT_F32, 5), A_SCALAR_F(2.0)) == 'M');
  CHECK(RUN_ADD(T(TT_F32, 5), T(TT_F32, 5), A_SCALAR_F(0.25)) == 'H');
  glue_reset();
}

static void test_wrapped_number_values_are_parameters(void) {
  CHECK(RUN_ADD(T(TT_F32, 6), glue_cpu_scalar(TT_F64, 2.5, true), A_SCALAR_I(1)) == 'M');
  CHECK(RUN_ADD(T(TT_F32, 6), glue_cpu_scalar(TT_F64, -1.0, true), A_SCALAR_I(1)) == 'H');
  /* a 0-dim CPU tensor that is not a wrapped number promotes differently */
  CHECK(RUN_ADD(T(TT_F32, 6), glue_cpu_scalar(TT_F64, 2.5, false), A_SCALAR_I(1)) == 'M');
  glue_reset();
}

static void test_dtype_and_shape_change_key(void) {
  CHECK(RUN_ADD(T(TT_F32, 4, 2), T(TT_F32, 4, 2), A_SCALAR_I(1)) == 'M');
  CHECK(RUN_ADD(T(TT_BF16, 4, 2), T(TT_F32, 4, 2), A_SCALAR_I(1)) == 'M');
  CHECK(RUN_ADD(T(TT_F32, 4, 2), T(TT_I64, 4, 2), A_SCALAR_I(1)) == 'M');
  CHECK(RUN_ADD(T(TT_F32, 2, 4), T(TT_F32, 2, 4), A_SCALAR_I(1)) == 'M');
  CHECK(RUN_ADD(T(TT_F32, 8), T(TT_F32, 8), A_SCALAR_I(1)) == 'M');
  CHECK(RUN_ADD(T(TT_F32, 4, 2), T(TT_F32, 2), A_SCALAR_I(1)) == 'M');
  CHECK(RUN_ADD(T(TT_F32, 4, 2), T(TT_F32, 4, 2), A_SCALAR_I(1)) == 'H');
  glue_reset();
}

/* Views of a 4x4 storage, all of sizes [2,2]. */
static tt_tensor_ref *view(int64_t s0, int64_t s1, int64_t offset, int64_t storage_numel) {
  return glue_view(glue_storage(storage_numel, TT_F32), TT_F32, 2, (int64_t[]){2, 2},
                   (int64_t[]){s0, s1}, offset);
}

static void test_layout_changes_key(void) {
  tt_arg neg[1];
  neg[0] = A_TENSOR(view(4, 1, 0, 16));
  CHECK(run("neg", neg, 1, false) == 'M');
  neg[0] = A_TENSOR(view(4, 1, 0, 16)); /* another storage, same layout */
  CHECK(run("neg", neg, 1, false) == 'H');
  neg[0] = A_TENSOR(view(1, 4, 0, 16)); /* strides: the transpose */
  CHECK(run("neg", neg, 1, false) == 'M');
  neg[0] = A_TENSOR(view(4, 1, 5, 16)); /* a nonzero offset: read at run time */
  CHECK(run("neg", neg, 1, false) == 'M');
  neg[0] = A_TENSOR(view(4, 1, 6, 16)); /* so another one reuses the program */
  CHECK(run("neg", neg, 1, false) == 'H');
  neg[0] = A_TENSOR(view(4, 1, 10, 16));
  CHECK(run("neg", neg, 1, false) == 'H');
  neg[0] = A_TENSOR(view(4, 1, 7, 16)); /* a column block that wraps its row: baked in */
  CHECK(run("neg", neg, 1, false) == 'M');
  neg[0] = A_TENSOR(view(4, 1, 0, 20)); /* the storage's size (its flat buffer) */
  CHECK(run("neg", neg, 1, false) == 'M');
  glue_reset();
}

static void test_static_args_change_key(void) {
  tt_arg a[] = {A_TENSOR(T(TT_F32, 3, 4)), INTS(0), A_BOOL(false), A_NONE()};
  CHECK(run("sum.dim_IntList", a, 4, false) == 'M');
  CHECK(run("sum.dim_IntList", a, 4, false) == 'H');
  tt_arg b[] = {A_TENSOR(T(TT_F32, 3, 4)), INTS(1), A_BOOL(false), A_NONE()};
  CHECK(run("sum.dim_IntList", b, 4, false) == 'M');
  tt_arg c[] = {A_TENSOR(T(TT_F32, 3, 4)), INTS(1), A_BOOL(true), A_NONE()};
  CHECK(run("sum.dim_IntList", c, 4, false) == 'M');
  tt_arg d[] = {A_TENSOR(T(TT_F32, 3, 4)), INTS(0, 1), A_BOOL(true), A_NONE()};
  CHECK(run("sum.dim_IntList", d, 4, false) == 'M');
  tt_arg e[] = {A_TENSOR(T(TT_F32, 3, 4)), A_INT(1), A_BOOL(false)};
  CHECK(run("_softmax", e, 3, false) == 'M');
  tt_arg f[] = {A_TENSOR(T(TT_F32, 3, 4)), A_INT(0), A_BOOL(false)};
  CHECK(run("_softmax", f, 3, false) == 'M');
  glue_reset();
}

static void test_opt_level_changes_key(void) {
  CHECK(RUN_ADD(T(TT_F32, 7), T(TT_F32, 7), A_SCALAR_I(1)) == 'M');
  tt_set_optimization_level(0);
  CHECK(RUN_ADD(T(TT_F32, 7), T(TT_F32, 7), A_SCALAR_I(1)) == 'M');
  CHECK(RUN_ADD(T(TT_F32, 7), T(TT_F32, 7), A_SCALAR_I(1)) == 'H');
  tt_set_optimization_level(1); /* the default */
  CHECK(RUN_ADD(T(TT_F32, 7), T(TT_F32, 7), A_SCALAR_I(1)) == 'H');
  glue_reset();
}

static void test_aliasing_changes_key(void) {
  tt_tensor_ref *x = T(TT_F32, 9), *y = T(TT_F32, 9), *z = T(TT_F32, 9);
  CHECK(RUN_ADD(x, y, A_SCALAR_I(1)) == 'M');
  CHECK(RUN_ADD(x, x, A_SCALAR_I(1)) == 'M'); /* one storage read twice */
  CHECK(RUN_ADD(z, z, A_SCALAR_I(1)) == 'H'); /* aliasing, not identity */
  CHECK(RUN_ADD(y, z, A_SCALAR_I(1)) == 'H');
  /* in-place: self written, other aliasing self or not */
  tt_arg inplace[] = {A_WRITTEN(x), A_TENSOR(y), A_SCALAR_I(1)};
  CHECK(run("add_.Tensor", inplace, 3, true) == 'M');
  inplace[1] = A_TENSOR(x);
  CHECK(run("add_.Tensor", inplace, 3, true) == 'M');
  inplace[0] = A_WRITTEN(z);
  inplace[1] = A_TENSOR(z);
  CHECK(run("add_.Tensor", inplace, 3, true) == 'H');
  glue_reset();
}

static void test_value_dependent_scalars_key_by_value(void) {
  /* arange's length depends on its bounds: the program is keyed by them */
  tt_arg a[] = {A_SCALAR_I(0), A_SCALAR_I(4), A_SCALAR_I(1), A_OUT(T(TT_I64, 4))};
  CHECK(run("arange.start_out", a, 4, true) == 'M');
  a[3] = A_OUT(T(TT_I64, 4));
  CHECK(run("arange.start_out", a, 4, true) == 'H');
  tt_arg b[] = {A_SCALAR_I(1), A_SCALAR_I(5), A_SCALAR_I(1), A_OUT(T(TT_I64, 4))};
  CHECK(run("arange.start_out", b, 4, true) == 'M');
  b[3] = A_OUT(T(TT_I64, 4));
  CHECK(run("arange.start_out", b, 4, true) == 'H');
  glue_reset();
}

/* The pool of live executables (cache/exe_pool.h): a cap of 3 over 8
 * entries (all holding references to one compiled program) keeps the 3
 * most recently used, unloads the rest, and counts it all. */
static void test_exe_pool(void) {
  tt_runtime *rt = tt_core_runtime();
  tt_executable *exe = NULL;
  tt_compile_options opts = {.optimization_level = 0, .portable = true};
  static const char ADD[] =
      "module @add {\n"
      "  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
      "    %0 = stablehlo.add %a, %a : tensor<4xf32>\n"
      "    return %0 : tensor<4xf32>\n"
      "  }\n"
      "}\n";
  tt_error *err = tt_compile(rt, ADD, strlen(ADD), &opts, &exe);
  CHECK(err == NULL);
  tt_error_free(err);
  if (!exe) return;
  tt_pool_set_cap(3);
  tt_pool_reset_peak();
  tt_pool_stats s0 = tt_pool_get_stats();
  CHECK(s0.cap == 3 && s0.live == 0);
  tt_pool_entry *e[8];
  for (int i = 0; i < 8; i++) {
    e[i] = tt_pool_entry_new();
    CHECK(e[i] && tt_pool_acquire(e[i]) == NULL);
  }
  for (int i = 0; i < 8; i++) {
    tt_executable *got = tt_pool_install(e[i], tt_executable_retain(exe));
    CHECK(got == exe);
    tt_executable_release(got);
    if (i == 3) tt_executable_release(tt_pool_acquire(e[2])); /* 2 is recent again */
  }
  tt_pool_stats s = tt_pool_get_stats();
  CHECK(s.live == 3 && s.peak <= 3 && s.evictions - s0.evictions == 5 &&
            s.installs - s0.installs == 8);
  /* resident: the last three installed (5, 6, 7); 2 was touched before 4..7 */
  for (int i = 0; i < 8; i++) {
    tt_executable *got = tt_pool_acquire(e[i]);
    CHECK((got != NULL) == (i >= 5));
    tt_executable_release(got);
  }
  /* a racing install keeps the first executable */
  tt_executable *again = tt_pool_install(e[7], tt_executable_retain(exe));
  CHECK(again == exe && tt_pool_get_stats().live == 3);
  tt_executable_release(again);
  /* a shared entry outlives one owner */
  tt_pool_entry_retain(e[6]);
  tt_pool_entry_release(e[6]);
  tt_executable *held = tt_pool_acquire(e[6]);
  CHECK(held == exe);
  tt_executable_release(held);
  CHECK(tt_pool_evict(1) == 2 && tt_pool_get_stats().live == 1);
  for (int i = 0; i < 8; i++) tt_pool_entry_release(e[i]);
  CHECK(tt_pool_get_stats().live == 0);
  CHECK(tt_pool_count_maps() > 10);
  err = tt_pool_before_compile();
  CHECK(err == NULL);
  tt_error_free(err);
  tt_pool_set_cap(0);
  CHECK(tt_pool_cap() >= 1);
  tt_executable_release(exe);
}

int main(int argc, char **argv) {
  if (glue_init_runtime(argc > 1 ? argv[1] : NULL)) return 1;
  tt_set_default_mode(TT_MODE_STRICT);
  tt_cache_clear();
  test_same_shapes_other_storages_hit();
  test_scalar_values_are_parameters();
  test_wrapped_number_values_are_parameters();
  test_dtype_and_shape_change_key();
  test_layout_changes_key();
  test_static_args_change_key();
  test_opt_level_changes_key();
  test_aliasing_changes_key();
  test_value_dependent_scalars_key_by_value();
  tt_cache_clear();
  test_exe_pool();
  return glue_report("cache keys");
}
