/* Compiled collectives (csrc/dist/collectives.c) against the real plugin
 * with 2 devices in one client: the emitted StableHLO of each collective,
 * the shape rules, and the rendezvous of two rank threads (results, a
 * shape mismatch, a rank that never arrives); whole programs holding
 * collectives among other ops (tt_coll_run_program). */
#include <pthread.h>
#include <string.h>

#include "core_glue.h"
#include "dist/collectives.h"
#include "shlo/builder.h"

static bool has(const char *text, const char *needle) { return text && strstr(text, needle); }

static void test_emission(void) {
  int64_t dims[2] = {4, 3}, out[2];
  char *text = NULL;
  tt_coll_op op = {.kind = TT_COLL_ALL_REDUCE, .reduce = TT_RED_AVG};
  CHECK(!tt_coll_emit(&op, 2, TT_F32, dims, 2, &text, out));
  CHECK(has(text, "mhlo.num_partitions = 2 : i32"));
  CHECK(has(text, "\"stablehlo.all_reduce\"(%arg0)"));
  CHECK(has(text, "\"stablehlo.add\"(%lhs, %rhs)"));
  CHECK(has(text, "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>"));
  CHECK(has(text, "use_global_device_ids"));
  CHECK(has(text, "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>"));
  CHECK(has(text, "\"stablehlo.divide\"(%0, %1)"));
  CHECK(out[0] == 4 && out[1] == 3);
  free(text);

  op = (tt_coll_op){.kind = TT_COLL_ALL_GATHER};
  CHECK(!tt_coll_emit(&op, 2, TT_BF16, dims, 2, &text, out));
  CHECK(has(text, "all_gather_dim = 0 : i64") && has(text, "-> tensor<8x3xbf16>"));
  CHECK(out[0] == 8);
  free(text);

  op = (tt_coll_op){.kind = TT_COLL_REDUCE_SCATTER, .reduce = TT_RED_MAX};
  CHECK(!tt_coll_emit(&op, 2, TT_I32, dims, 2, &text, out));
  CHECK(has(text, "\"stablehlo.maximum\"") && has(text, "scatter_dimension = 0 : i64"));
  CHECK(out[0] == 2);
  free(text);

  op = (tt_coll_op){.kind = TT_COLL_ALL_TO_ALL};
  CHECK(!tt_coll_emit(&op, 2, TT_I64, dims, 2, &text, out));
  CHECK(has(text, "split_count = 2 : i64") && has(text, "split_dimension = 0 : i64"));
  free(text);

  op = (tt_coll_op){.kind = TT_COLL_PERMUTE, .n_pairs = 2, .pairs = {0, 1, 1, 0}};
  CHECK(!tt_coll_emit(&op, 2, TT_F32, dims, 2, &text, out));
  CHECK(has(text, "source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>"));
  free(text);

  /* the shape rules */
  int64_t odd[1] = {3};
  tt_error *err;
  op = (tt_coll_op){.kind = TT_COLL_REDUCE_SCATTER};
  CHECK((err = tt_coll_emit(&op, 2, TT_F32, odd, 1, &text, out)) != NULL);
  CHECK(err && has(tt_error_message(err), "not divisible by the group size 2"));
  tt_error_free(err);
  op = (tt_coll_op){.kind = TT_COLL_PERMUTE, .n_pairs = 2, .pairs = {0, 1, 1, 1}};
  CHECK((err = tt_coll_emit(&op, 2, TT_F32, dims, 2, &text, out)) != NULL);
  CHECK(err && has(tt_error_message(err), "rank 1 appears twice as a target"));
  tt_error_free(err);
  op = (tt_coll_op){.kind = TT_COLL_ALL_REDUCE, .reduce = TT_RED_AVG};
  CHECK((err = tt_coll_emit(&op, 2, TT_BOOL, dims, 2, &text, out)) != NULL);
  tt_error_free(err);
}

typedef struct {
  tt_coll_group *g;
  int rank;
  tt_coll_op op;
  int64_t n; /* elements */
  float value;
  double timeout;
  float result[8];
  int64_t out_dims[1];
  char message[400];
  bool ok;
} rank_job;

static void *rank_main(void *arg) {
  rank_job *j = arg;
  float host[8];
  for (int i = 0; i < j->n; i++) host[i] = j->value + (float)i;
  tt_buffer *in = NULL, *out = NULL;
  tt_error *err = tt_buffer_from_host(tt_core_runtime(), j->rank, TT_F32, &j->n, 1, host, &in);
  if (!err) err = tt_coll_run(j->g, j->rank, &j->op, in, &j->n, 1, j->timeout, &out, j->out_dims);
  if (!err) err = tt_buffer_to_host(out, j->result, tt_buffer_nbytes(out));
  j->ok = !err;
  snprintf(j->message, sizeof j->message, "%s", err ? tt_error_message(err) : "");
  tt_error_free(err);
  tt_buffer_release(in);
  tt_buffer_release(out);
  return NULL;
}

static void run_ranks(rank_job *jobs, int n) {
  pthread_t t[2];
  for (int r = 0; r < n; r++) pthread_create(&t[r], NULL, rank_main, &jobs[r]);
  for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
}

static void test_rendezvous(void) {
  int devices[2] = {0, 1};
  tt_coll_group *g = NULL;
  tt_error *err = tt_coll_group_new(tt_core_runtime(), devices, 2, &g);
  CHECK(!err);
  if (err) {
    fprintf(stderr, "%s\n", tt_error_message(err));
    tt_error_free(err);
    return;
  }
  /* all_reduce sum: (1, 2, 3, 4) + (10, 11, 12, 13) on both ranks */
  rank_job jobs[2] = {
      {.g = g, .rank = 0, .op = {.kind = TT_COLL_ALL_REDUCE}, .n = 4, .value = 1, .timeout = 30},
      {.g = g, .rank = 1, .op = {.kind = TT_COLL_ALL_REDUCE}, .n = 4, .value = 10, .timeout = 30}};
  run_ranks(jobs, 2);
  for (int r = 0; r < 2; r++) {
    CHECK(jobs[r].ok);
    for (int i = 0; i < 4; i++) CHECK(jobs[r].result[i] == 11.0f + 2.0f * (float)i);
  }
  /* reduce_scatter max: rank r keeps elements 2r, 2r+1 */
  for (int r = 0; r < 2; r++) jobs[r].op = (tt_coll_op){.kind = TT_COLL_REDUCE_SCATTER, .reduce = TT_RED_MAX};
  run_ranks(jobs, 2);
  for (int r = 0; r < 2; r++) {
    CHECK(jobs[r].ok && jobs[r].out_dims[0] == 2);
    CHECK(jobs[r].result[0] == 10.0f + 2.0f * (float)r && jobs[r].result[1] == 11.0f + 2.0f * (float)r);
  }
  /* shapes that differ: both ranks get the same error */
  for (int r = 0; r < 2; r++) jobs[r].op = (tt_coll_op){.kind = TT_COLL_ALL_REDUCE};
  jobs[1].n = 5;
  run_ranks(jobs, 2);
  for (int r = 0; r < 2; r++) {
    CHECK(!jobs[r].ok && has(jobs[r].message, "rank 0 has all_reduce Float[4] sum; rank 1 has "
                                              "all_reduce Float[5] sum"));
  }
  /* rank 1 never arrives: rank 0 raises after its timeout */
  jobs[0].timeout = 0.2;
  run_ranks(jobs, 1);
  CHECK(!jobs[0].ok && has(jobs[0].message, "timed out after 0.2 s waiting for rank(s) 1"));
  /* and the group still works */
  jobs[0].timeout = jobs[1].timeout = 30;
  jobs[1].n = 4;
  run_ranks(jobs, 2);
  CHECK(jobs[0].ok && jobs[1].ok && jobs[1].result[3] == 17.0f);
  tt_coll_stats s = tt_coll_get_stats();
  CHECK(s.launches == 3 && s.errors == 2 && s.compiles == 2);
  tt_coll_group_free(g);
}


/* A program of compute, collectives and compute on one rank's f32[4]:
 * y = x * scale; s = all_reduce_sum(y); g = all_gather(s) (f32[8]);
 * outputs (s + 1, g). Text malloc'd. */
static char *region_like_program(double scale) {
  tt_builder *b = tt_builder_new();
  int64_t four = 4, eight = 8;
  tt_shape s4 = tt_shape_make(TT_F32, 1, &four), s8 = tt_shape_make(TT_F32, 1, &eight);
  tt_val x = tt_b_param(b, s4);
  tt_val y = tt_b_binary(b, "multiply", x, tt_b_full(b, s4, scale));
  char *f1 = NULL, *f2 = NULL, *text = NULL;
  int64_t od[1];
  tt_coll_op ar = {.kind = TT_COLL_ALL_REDUCE, .reduce = TT_RED_SUM};
  tt_coll_op ag = {.kind = TT_COLL_ALL_GATHER};
  tt_error *err = tt_coll_emit_function(&ar, 2, TT_F32, &four, 1, 1, "coll_ar", &f1, od);
  if (!err) err = tt_coll_emit_function(&ag, 2, TT_F32, &four, 1, 2, "coll_ag", &f2, od);
  tt_val s = TT_INVALID, g = TT_INVALID;
  if (!err) {
    tt_b_add_function(b, "coll_ar", f1);
    tt_b_add_function(b, "coll_ag", f2);
    tt_b_call(b, "coll_ar", &y, 1, &s4, 1, &s);
    tt_b_call(b, "coll_ag", &s, 1, &s8, 1, &g);
    tt_val outs[2] = {tt_b_binary(b, "add", s, tt_b_full(b, s4, 1.0)), g};
    err = tt_b_finish(b, outs, 2, &text);
  }
  if (err) {
    fprintf(stderr, "%s\n", tt_error_message(err));
    tt_error_free(err);
  }
  free(f1);
  free(f2);
  tt_builder_free(b);
  return text;
}

typedef struct {
  tt_coll_group *g;
  int rank;
  const char *what;
  char *text;
  float value;
  double timeout;
  float out0[4], out1[8];
  char message[600];
  bool ok;
} program_job;

static void *program_main(void *arg) {
  program_job *j = arg;
  float host[4];
  for (int i = 0; i < 4; i++) host[i] = j->value + (float)i;
  int64_t four = 4;
  tt_buffer *in = NULL, *outs[2] = {NULL, NULL};
  tt_error *err = tt_buffer_from_host(tt_core_runtime(), j->rank, TT_F32, &four, 1, host, &in);
  if (!err) err = tt_coll_run_program(j->g, j->rank, j->what, j->text, &in, 1, outs, 2, j->timeout);
  if (!err) err = tt_buffer_to_host(outs[0], j->out0, sizeof j->out0);
  if (!err) err = tt_buffer_to_host(outs[1], j->out1, sizeof j->out1);
  j->ok = !err;
  snprintf(j->message, sizeof j->message, "%s", err ? tt_error_message(err) : "");
  tt_error_free(err);
  tt_buffer_release(in);
  tt_buffer_release(outs[0]);
  tt_buffer_release(outs[1]);
  return NULL;
}

static void run_programs(program_job *jobs, int n) {
  pthread_t t[2];
  for (int r = 0; r < n; r++) pthread_create(&t[r], NULL, program_main, &jobs[r]);
  for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
}

static void test_programs(void) {
  int devices[2] = {0, 1};
  tt_coll_group *g = NULL;
  tt_error *err = tt_coll_group_new(tt_core_runtime(), devices, 2, &g);
  CHECK(!err);
  if (err) {
    tt_error_free(err);
    return;
  }
  char *p2 = region_like_program(2.0), *p3 = region_like_program(3.0);
  CHECK(p2 && p3);
  CHECK(has(p2, "func.func private @coll_ar") && has(p2, "handle = 2, type = 1"));
  tt_coll_stats before = tt_coll_get_stats();
  program_job jobs[2] = {
      {.g = g, .rank = 0, .what = "fused region of 5 ops", .text = p2, .value = 1, .timeout = 60},
      {.g = g, .rank = 1, .what = "fused region of 5 ops", .text = p2, .value = 10, .timeout = 60}};
  /* (1..4) * 2 + (10..13) * 2 = 22 + 4i on both ranks; + 1; gathered twice */
  run_programs(jobs, 2);
  for (int r = 0; r < 2; r++) {
    CHECK(jobs[r].ok);
    if (!jobs[r].ok) fprintf(stderr, "rank %d: %s\n", r, jobs[r].message);
    for (int i = 0; i < 4; i++) CHECK(jobs[r].out0[i] == 23.0f + 4.0f * (float)i);
    for (int i = 0; i < 8; i++) CHECK(jobs[r].out1[i] == 22.0f + 4.0f * (float)(i % 4));
  }
  tt_coll_stats after = tt_coll_get_stats();
  CHECK(after.programs - before.programs == 1 && after.launches - before.launches == 1);
  /* again: the cached program, no compile */
  run_programs(jobs, 2);
  tt_coll_stats again = tt_coll_get_stats();
  CHECK(jobs[0].ok && jobs[1].ok && again.compiles == after.compiles && again.programs == after.programs + 1);
  /* the ranks' programs differ: every rank gets the error, nothing runs */
  jobs[1].text = p3;
  run_programs(jobs, 2);
  for (int r = 0; r < 2; r++)
    CHECK(!jobs[r].ok && has(jobs[r].message, "fused region of 5 ops: the ranks' programs differ, "
                                              "so no rank ran it") &&
          has(jobs[r].message, "the same ops, but a different program"));
  jobs[1].text = p2;
  jobs[0].timeout = 0.3;
  run_programs(jobs, 1); /* rank 1 never comes: rank 0 times out */
  CHECK(!jobs[0].ok && has(jobs[0].message, "fused region of 5 ops: timed out after 0.3 s waiting "
                                            "for rank(s) 1"));
  jobs[0].timeout = 60;
  run_programs(jobs, 2); /* and the group still works */
  CHECK(jobs[0].ok && jobs[1].ok && jobs[1].out0[3] == 35.0f);
  free(p2);
  free(p3);
  tt_coll_group_free(g);
}

int main(int argc, char **argv) {
  setenv("TORCH_TPU_NUM_DEVICES", "2", 1);
  if (glue_init_runtime(argc > 1 ? argv[1] : NULL)) return 1;
  test_emission();
  if (tt_runtime_device_count(tt_core_runtime()) < 2) {
    fprintf(stderr, "the client has fewer than 2 devices\n");
    return 1;
  }
  test_rendezvous();
  test_programs();
  return glue_report("compiled collectives");
}
