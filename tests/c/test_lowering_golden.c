/* Golden StableHLO for representative lowerings: each case builds one op's
 * program with the core's program builder (no plugin, no PyTorch) and
 * compares its normalized text with tests/c/golden/<case>.mlir, so a change
 * of emitted code shows up in review as a change of a golden file.
 *
 *   make test-c      compares (a mismatch writes build/golden-actual/<case>.mlir)
 *   make goldens     rewrites the golden files (TT_REGEN_GOLDENS=1)
 *
 * The cases cover: broadcasting with type promotion and a runtime Scalar,
 * a unary op on float16 computed in float32, a reduction over dims, matmul,
 * conv2d, max_pool2d, softmax, layer_norm, embedding's gather
 * (index_select), index_put and scatter_add, a read of a strided view at an
 * offset, an in-place write into a view, an out= write, cumsum, topk and
 * sort, and a user's StableHLO kernel (csrc/ops/custom_kernel.c) called
 * through func.call, with its registration and instantiation errors. */
#include <errno.h>
#include <sys/stat.h>

#include "core_glue.h"
#include "ops/custom_kernel.h"

static const char *golden_dir = "tests/c/golden";
static const char *actual_dir = "build/golden-actual";
static bool regen;

/* The text that is compared: trailing blanks dropped, any `loc(...)`
 * location attribute removed (the builder emits none today, but MLIR
 * printers may), one trailing newline. SSA names are the builder's own
 * sequential numbering, deterministic for a given lowering. */
static char *normalize(const char *text) {
  size_t n = strlen(text);
  char *out = malloc(n + 2);
  if (!out) abort();
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (!strncmp(text + i, " loc(", 5)) {
      int depth = 0;
      size_t j = i + 4;
      for (; j < n; j++) {
        if (text[j] == '(') depth++;
        else if (text[j] == ')' && --depth == 0) break;
      }
      i = j;
      continue;
    }
    if (text[i] == '\n')
      while (o > 0 && (out[o - 1] == ' ' || out[o - 1] == '\t')) o--;
    out[o++] = text[i];
  }
  while (o > 0 && (out[o - 1] == '\n' || out[o - 1] == ' ')) o--;
  out[o++] = '\n';
  out[o] = 0;
  return out;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) abort();
  buf[n] = 0;
  fclose(f);
  return buf;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f || fputs(text, f) < 0 || fclose(f)) {
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    exit(2);
  }
}

/* Builds op over args and checks the text against the golden file `name`.
 * `what` describes the case; it heads the golden file as a comment. */
static void golden(const char *name, const char *what, const char *op, tt_arg *args, int nargs,
                   bool returns_written) {
  tt_lower_fn fn = tt_lowering_find(op);
  unsigned char digest[16];
  if (!fn) fn = tt_custom_kernel_find(op, digest);
  if (!fn) {
    fprintf(stderr, "%s: no lowering for %s\n", name, op);
    CHECK(fn != NULL);
    glue_reset();
    return;
  }
  tt_program *p = NULL;
  tt_error *err = tt_program_build(op, fn, args, nargs, returns_written, &p);
  if (err || !p || p->declined || !p->text) {
    fprintf(stderr, "%s: %s did not build: %s\n", name, op,
            err ? tt_error_message(err) : p && p->decline_message ? p->decline_message : "no text");
    CHECK(!"program built");
    tt_error_free(err);
    if (p) tt_program_free(p);
    glue_reset();
    return;
  }
  char *norm = normalize(p->text);
  size_t len = strlen(what) + strlen(op) + strlen(norm) + 16;
  char *text = malloc(len);
  if (!text) abort();
  snprintf(text, len, "// %s: %s\n%s", op, what, norm);
  char path[512];
  snprintf(path, sizeof path, "%s/%s.mlir", golden_dir, name);
  if (regen) {
    write_file(path, text);
    printf("wrote %s\n", path);
  } else {
    char *want = read_file(path);
    bool same = want && !strcmp(want, text);
    if (!same) {
      mkdir("build", 0777);
      mkdir(actual_dir, 0777);
      char apath[512];
      snprintf(apath, sizeof apath, "%s/%s.mlir", actual_dir, name);
      write_file(apath, text);
      fprintf(stderr, "%s: emitted program differs from %s%s\n  diff %s %s\n  (make goldens "
              "accepts the new text)\n", name, path, want ? "" : " (missing)", path, apath);
    }
    CHECK(same);
    free(want);
  }
  free(text);
  free(norm);
  tt_program_free(p);
  glue_reset();
}

/* ------------------------------------------------------------ cases */

static void case_add_broadcast_promote(void) {
  /* bf16[2,3] + f32[3] * alpha (an int Scalar: a runtime parameter) -> f32[2,3] */
  tt_arg args[] = {A_TENSOR(T(TT_BF16, 2, 3)), A_TENSOR(T(TT_F32, 3)), A_SCALAR_I(2)};
  golden("add_broadcast_promote", "bf16[2,3] + f32[3] * alpha=2 (int Scalar)", "add.Tensor",
         args, NARGS(args), false);
}

static void case_add_wrapped_number(void) {
  /* f16[4] + 2.5 (a wrapped Python number keeps the tensor's dtype) */
  tt_arg args[] = {A_TENSOR(T(TT_F16, 4)), A_TENSOR(glue_cpu_scalar(TT_F64, 2.5, true)),
                   A_SCALAR_I(1)};
  golden("add_wrapped_number", "f16[4] + 2.5 (wrapped number)", "add.Tensor", args, NARGS(args),
         false);
}

static void case_tanh_half(void) {
  tt_arg args[] = {A_TENSOR(T(TT_F16, 4))};
  golden("tanh_f16", "tanh of f16[4], computed in f32", "tanh", args, NARGS(args), false);
}

static void case_sum_dims(void) {
  tt_arg args[] = {A_TENSOR(T(TT_F32, 2, 3, 4)), INTS(0, 2), A_BOOL(false), A_NONE()};
  golden("sum_dims", "f32[2,3,4] over dims [0,2]", "sum.dim_IntList", args, NARGS(args), false);
}

static void case_sum_bf16_keepdim(void) {
  tt_arg args[] = {A_TENSOR(T(TT_BF16, 3, 5)), INTS(-1), A_BOOL(true), A_NONE()};
  golden("sum_bf16_keepdim", "bf16[3,5] over dim -1, keepdim (accumulates in f32)",
         "sum.dim_IntList", args, NARGS(args), false);
}

static void case_mm(void) {
  tt_arg args[] = {A_TENSOR(T(TT_F32, 2, 3)), A_TENSOR(T(TT_F32, 3, 4))};
  golden("mm", "f32[2,3] @ f32[3,4]", "mm", args, NARGS(args), false);
}

static void case_conv2d(void) {
  /* convolution(input, weight, bias, stride, padding, dilation, transposed,
   *             output_padding, groups) */
  tt_arg args[] = {A_TENSOR(T(TT_F32, 1, 2, 5, 5)), A_TENSOR(T(TT_F32, 4, 1, 3, 3)),
                   A_TENSOR(T(TT_F32, 4)), INTS(2, 1), INTS(1, 1), INTS(1, 1), A_BOOL(false),
                   INTS(0, 0), A_INT(2)};
  golden("conv2d", "f32[1,2,5,5] * f32[4,1,3,3] + bias, stride (2,1), padding 1, groups 2",
         "convolution", args, NARGS(args), false);
}

static void case_max_pool2d(void) {
  /* max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode) */
  tt_arg args[] = {A_TENSOR(T(TT_F32, 1, 1, 5, 5)), INTS(2, 2), INTS(2, 2), INTS(0, 0),
                   INTS(1, 1), A_BOOL(true)};
  golden("max_pool2d", "f32[1,1,5,5], kernel 2, stride 2, ceil_mode, with indices",
         "max_pool2d_with_indices", args, NARGS(args), false);
}

static void case_softmax(void) {
  tt_arg args[] = {A_TENSOR(T(TT_F32, 2, 5)), A_INT(1), A_BOOL(false)};
  golden("softmax", "f32[2,5] over dim 1", "_softmax", args, NARGS(args), false);
}

static void case_layer_norm(void) {
  /* native_layer_norm(input, normalized_shape, weight, bias, eps) */
  tt_arg args[] = {A_TENSOR(T(TT_F32, 2, 4)), INTS(4), A_TENSOR(T(TT_F32, 4)),
                   A_TENSOR(T(TT_F32, 4)), A_DOUBLE(1e-5)};
  golden("layer_norm", "f32[2,4] over the last dim, affine, eps 1e-5", "native_layer_norm", args,
         NARGS(args), false);
}

static void case_embedding(void) {
  /* F.embedding's forward on tpu: index_select(weight, 0, indices) */
  tt_arg args[] = {A_TENSOR(T(TT_F32, 5, 3)), A_INT(0), A_TENSOR(T(TT_I64, 4))};
  golden("embedding_index_select", "rows i64[4] of f32[5,3] (embedding's gather)",
         "index_select", args, NARGS(args), false);
}

static void case_index_put(void) {
  /* index_put(self, indices, values, accumulate) */
  tt_arg args[] = {A_TENSOR(T(TT_F32, 5, 3)), A_LIST(1, T(TT_I64, 2), NULL),
                   A_TENSOR(T(TT_F32, 2, 3)), A_BOOL(true)};
  golden("index_put_accumulate", "f32[5,3][i64[2]] += f32[2,3]", "index_put", args, NARGS(args),
         false);
}

static void case_scatter_add(void) {
  tt_arg args[] = {A_TENSOR(T(TT_F32, 3, 4)), A_INT(1), A_TENSOR(T(TT_I64, 3, 2)),
                   A_TENSOR(T(TT_F32, 3, 2))};
  golden("scatter_add", "f32[3,4].scatter_add(1, i64[3,2], f32[3,2])", "scatter_add", args,
         NARGS(args), false);
}

static void case_view_read(void) {
  /* x = base[1:3, 1:3] of a 4x4 storage: sizes [2,2], strides [4,1], offset 5 */
  tt_storage *s = glue_storage(16, TT_F32);
  tt_arg args[] = {A_TENSOR(glue_view(s, TT_F32, 2, (int64_t[]){2, 2}, (int64_t[]){4, 1}, 5))};
  golden("view_read_offset", "neg of a [2,2] view (strides [4,1]) at offset 5 of a 16-element "
         "storage", "neg", args, NARGS(args), false);
}

static void case_inplace_view(void) {
  /* base[:, 1].mul_(other): a written view, scattered back into its storage */
  tt_storage *s = glue_storage(12, TT_F32);
  tt_arg args[] = {A_WRITTEN(glue_view(s, TT_F32, 1, (int64_t[]){3}, (int64_t[]){4}, 1)),
                   A_TENSOR(T(TT_F32, 3))};
  golden("inplace_mul_view", "mul_ into a [3] column view (stride 4, offset 1) of a 12-element "
         "storage", "mul_.Tensor", args, NARGS(args), true);
}

static void case_out_write(void) {
  /* add.out(self, other, alpha, out) with a float64 out: the result is cast */
  tt_arg args[] = {A_TENSOR(T(TT_F32, 2, 3)), A_TENSOR(T(TT_F32, 2, 3)), A_SCALAR_F(0.5),
                   A_OUT(T(TT_F64, 2, 3))};
  golden("add_out", "add.out into an f64[2,3] out= of f32 inputs, alpha=0.5", "add.out", args,
         NARGS(args), true);
}

static void case_cumsum(void) {
  tt_arg args[] = {A_TENSOR(T(TT_I32, 3, 4)), A_INT(1), A_NONE()};
  golden("cumsum", "i32[3,4] along dim 1 (int64 result)", "cumsum", args, NARGS(args), false);
}

static void case_topk(void) {
  /* topk(self, k, dim, largest, sorted) */
  tt_arg args[] = {A_TENSOR(T(TT_F32, 2, 6)), A_INT(3), A_INT(-1), A_BOOL(true), A_BOOL(true)};
  golden("topk", "3 largest of f32[2,6] along the last dim", "topk", args, NARGS(args), false);
}

static void case_sort(void) {
  /* sort.stable(self, *, stable, dim, descending) */
  tt_arg args[] = {A_TENSOR(T(TT_F32, 4, 3)), A_BOOL(true), A_INT(0), A_BOOL(true)};
  golden("sort_stable", "f32[4,3] along dim 0, stable, descending", "sort.stable", args,
         NARGS(args), false);
}

/* A kernel in a module wrapper, with a helper function and ${N}/${D}
 * symbols: y = x * w per row. */
static const char *scale_rows_text =
    "module @user attributes {foo.bar = \"{x}\"} {\n"
    "  func.func public @main(%x: tensor<${N}x${D}xf32>, %w: tensor<${D}xf32>) -> tensor<${N}x${D}xf32> {\n"
    "    %wb = func.call @spread(%w) : (tensor<${D}xf32>) -> tensor<${N}x${D}xf32>\n"
    "    %y = stablehlo.multiply %x, %wb : tensor<${N}x${D}xf32> // a comment's @main stays as written\n"
    "    return %y : tensor<${N}x${D}xf32>\n"
    "  }\n"
    "  func.func @spread(%w: tensor<${D}xf32>) -> tensor<${N}x${D}xf32> {\n"
    "    %b = stablehlo.broadcast_in_dim %w, dims = [1] : (tensor<${D}xf32>) -> tensor<${N}x${D}xf32>\n"
    "    return %b : tensor<${N}x${D}xf32>\n"
    "  }\n"
    "}\n";

static bool error_says(tt_error *err, const char *text) {
  bool ok = err && strstr(tt_error_message(err), text);
  if (!ok) fprintf(stderr, "expected an error saying \"%s\", got: %s\n", text,
                   err ? tt_error_message(err) : "no error");
  tt_error_free(err);
  return ok;
}

static void case_custom_kernel(void) {
  CHECK(tt_custom_kernel_register("golden::scale_rows", scale_rows_text) == NULL);
  CHECK(tt_custom_kernel_register("golden::scale_rows", scale_rows_text) == NULL); /* idempotent */
  tt_arg args[] = {A_TENSOR(T(TT_F32, 2, 3)), A_TENSOR(T(TT_F32, 3))};
  golden("custom_kernel", "golden::scale_rows(f32[2,3], f32[3]): ${N}=2, ${D}=3", "golden::scale_rows",
         args, NARGS(args), false);
  CHECK(error_says(tt_custom_kernel_register("golden::scale_rows", "func.func @main() -> tensor<f32>"),
                   "already registered"));
  CHECK(error_says(tt_custom_kernel_register("golden::none", "%y = stablehlo.constant"),
                   "defines no function"));
  CHECK(error_says(tt_custom_kernel_register("golden::dyn", "func.func @main(%x: tensor<?xf32>) -> tensor<?xf32>"),
                   "dynamic dimensions"));
  tt_shape ins[2] = {tt_shape_make(TT_F32, 2, (int64_t[]){2, 3}), tt_shape_make(TT_F32, 1, (int64_t[]){4})};
  tt_shape outs[TT_CK_MAX_RESULTS];
  char *module = NULL;
  int line = 0, n_outs = 0;
  CHECK(error_says(tt_custom_kernel_module("golden::k", scale_rows_text, ins, 2, &module, &line,
                                           outs, &n_outs), "argument 1 is tensor<4xf32>"));
  CHECK(module == NULL);
  ins[1].dims[0] = 3;
  CHECK(tt_custom_kernel_module("golden::k", scale_rows_text, ins, 2, &module, &line, outs,
                                &n_outs) == NULL);
  CHECK(module && n_outs == 1 && tt_shape_equal(&outs[0], &ins[0]) && line > 1);
  CHECK(module && strstr(module, "func.call") && !strstr(module, "${"));
  free(module);
  CHECK(error_says(tt_custom_kernel_module("golden::k", scale_rows_text, ins, 1, &module, &line,
                                           outs, &n_outs), "takes 2 tensors, got 1"));
  /* only the functions the text defines are renamed: a custom_call's target stays */
  const char *call_text =
      "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %y = stablehlo.custom_call @main_helper(%x) : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  return %y : tensor<2xf32>\n}\n";
  ins[0] = tt_shape_make(TT_F32, 1, (int64_t[]){2});
  CHECK(tt_custom_kernel_module("golden::cc", call_text, ins, 1, &module, &line, outs, &n_outs) == NULL);
  CHECK(module && strstr(module, "custom_call @main_helper(") && strstr(module, "_main(%x"));
  free(module);
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  const char *env = getenv("TT_REGEN_GOLDENS");
  regen = env && *env && strcmp(env, "0");
  if (regen) mkdir(golden_dir, 0777);
  case_add_broadcast_promote();
  case_add_wrapped_number();
  case_tanh_half();
  case_sum_dims();
  case_sum_bf16_keepdim();
  case_mm();
  case_conv2d();
  case_max_pool2d();
  case_softmax();
  case_layer_norm();
  case_embedding();
  case_index_put();
  case_scatter_add();
  case_view_read();
  case_inplace_view();
  case_out_write();
  case_cumsum();
  case_topk();
  case_sort();
  case_custom_kernel();
  return glue_report(regen ? "goldens (regenerated)" : "goldens");
}
