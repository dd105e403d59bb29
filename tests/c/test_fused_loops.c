/* The Fused loop detector's cut decisions (csrc/graph/region.c).
 *
 * Fused eager cuts the open region before an op (a TT_FLUSH_LOOP flush)
 * when the op starts the region again (its key equals the first op's) or
 * when the ops since its previous occurrence repeat the ops just before
 * them, a repeated suffix of at least two ops. The detector is a static
 * function over the region's recorded key hashes, so these tests drive it
 * the way the core does: every character of a sequence is one op (neg over
 * a fresh f32 tensor whose length is the character's code, so equal
 * characters have equal keys), recorded with tt_op_run in Fused eager on the real plugin,
 * and a cut is seen in the region's flush counters. */
#include "core_glue.h"
#include "graph/region.h"

/* Records seq's ops and writes at cuts[i] '|' where the region was cut
 * before op i (for a loop), '.' where it was not. Returns false on an
 * error. The region is flushed (TT_FLUSH_SYNC) afterwards. */
static bool feed(const char *seq, char *cuts) {
  bool ok = true;
  size_t n = strlen(seq);
  for (size_t i = 0; i < n && ok; i++) {
    uint64_t loops = tt_region_get_stats().flushes[TT_FLUSH_LOOP];
    tt_arg args[] = {A_TENSOR(T(TT_F32, (unsigned char)seq[i]))};
    tt_op_result res;
    tt_error *err = tt_op_run("neg", args, 1, false, 0, &res);
    if (err) {
      fprintf(stderr, "neg: %s\n", tt_error_message(err));
      tt_error_free(err);
      ok = false;
      break;
    }
    tt_op_result_clear(&res);
    glue_reset(); /* the region keeps what it recorded alive */
    cuts[i] = tt_region_get_stats().flushes[TT_FLUSH_LOOP] > loops ? '|' : '.';
  }
  cuts[n] = 0;
  tt_error *err = tt_region_flush(TT_FLUSH_SYNC);
  if (err) {
    fprintf(stderr, "flush: %s\n", tt_error_message(err));
    tt_error_free(err);
    ok = false;
  }
  return ok;
}

/* want marks the cuts: '|' before an op where the region must be cut. */
static void expect(const char *seq, const char *want) {
  char cuts[512];
  bool ok = feed(seq, cuts);
  CHECK(ok);
  if (ok && strcmp(cuts, want)) {
    fprintf(stderr, "ops  %s\nwant %s\ngot  %s\n", seq, want, cuts);
    CHECK(!"loop cuts as expected");
  } else if (ok) {
    CHECK(true);
  }
}

static void test_first_op_repeats(void) {
  /* the region's first op comes again: cut before it (from two ops on) */
  expect("abab", "..|.");
  expect("abcabcabc", "...|..|..");
  expect("abcdefabcdef", "......|.....");
  /* one op is no loop, however often it repeats... */
  expect("aaaa", "..|.");
  /* ...except as the first op of a region of at least two ops */
  expect("abbbb", ".....");
}

static void test_repeated_suffix(void) {
  /* a prologue, then a body of 3 ops: the cut comes once the body has
   * repeated (after it is seen twice), and then every body starts a region */
  expect("xabcabcabcabc", ".......|..|..");
  /* a body of 2 after a prologue of 2 */
  expect("xyababab", "......|.");
  /* a single op repeating after a prologue is not a loop */
  expect("xyaaaaaa", "........");
}

static void test_no_cut_without_repeat(void) {
  expect("abcdefgh", "........");
  /* the suffix differs in one op: no loop */
  expect("xabcabdabe", "..........");
  /* the repeat must be adjacent: ops between two copies break it */
  expect("xabczabc", "........");
}

static void test_long_body(void) {
  /* a body of 40 distinct ops after a prologue of one */
  char seq[128], want[128];
  int n = 0;
  seq[n] = '~';
  want[n++] = '.';
  for (int rep = 0; rep < 3; rep++)
    for (int i = 0; i < 40; i++) {
      seq[n] = (char)('0' + i); /* neg over f32[48..87] */
      want[n++] = rep == 2 && i == 0 ? '|' : '.';
    }
  seq[n] = want[n] = 0;
  expect(seq, want);
}

static void test_capture_turns_detection_off(void) {
  tt_error *err = tt_region_capture_begin();
  CHECK(err == NULL);
  tt_error_free(err);
  expect("abababab", "........");
  err = tt_region_capture_end();
  CHECK(err == NULL);
  tt_error_free(err);
}

int main(int argc, char **argv) {
  if (glue_init_runtime(argc > 1 ? argv[1] : NULL)) return 1;
  tt_set_default_mode(TT_MODE_FUSED);
  test_first_op_repeats();
  test_repeated_suffix();
  test_no_cut_without_repeat();
  test_long_body();
  test_capture_turns_detection_off();
  return glue_report("fused loops");
}
