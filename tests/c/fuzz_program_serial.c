/* libFuzzer harness over the program deserializer (csrc/graph/program_serial.c):
 * the bytes of a persistent-cache blob, as read from disk, are the input.
 *
 * Property: tt_program_deserialize never crashes, leaks or reads out of
 * bounds (ASan/UBSan), and either fails with an error or returns a program
 * that serializes back to a blob which deserializes again and serializes to
 * the same bytes (the format is canonical after one round).
 *
 * The executable bytes inside a blob go to the PJRT plugin in the real
 * process; here the runtime's four executable functions are stubs (below)
 * that keep the bytes, so the parser, the program's ownership and the pool
 * slot are exercised without loading a plugin into the sanitized binary.
 * Built by `make fuzz-c` with clang -fsanitize=fuzzer,address,undefined. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/program.h"
#include "graph/program_serial.h"
#include "graph/storage.h"

struct tt_executable {
  int refs;
  size_t len;
  unsigned char *bytes;
};

tt_error *tt_executable_deserialize(tt_runtime *rt, const void *bytes, size_t size,
                                    tt_executable **out) {
  (void)rt;
  if (size && ((const unsigned char *)bytes)[0] == 0xEE)  /* the plugin rejecting bytes */
    return tt_error_new(TT_ERR_RUNTIME, "stub plugin: bad executable");
  tt_executable *e = calloc(1, sizeof *e);
  e->bytes = malloc(size ? size : 1);
  memcpy(e->bytes, bytes, size);
  e->len = size;
  e->refs = 1;
  *out = e;
  return NULL;
}

tt_error *tt_executable_serialize(tt_executable *exe, void **bytes, size_t *size) {
  *bytes = malloc(exe->len ? exe->len : 1);
  memcpy(*bytes, exe->bytes, exe->len);
  *size = exe->len;
  return NULL;
}

tt_executable *tt_executable_retain(tt_executable *exe) {
  if (exe) exe->refs++;
  return exe;
}

void tt_executable_release(tt_executable *exe) {
  if (exe && --exe->refs == 0) {
    free(exe->bytes);
    free(exe);
  }
}

void tt_storage_drop(tt_storage *s) {
  (void)s;
  abort(); /* programs never own storages on this path */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tt_runtime *rt = (tt_runtime *)(uintptr_t)1; /* never dereferenced by the stubs */
  tt_program *p = NULL;
  tt_error *err = tt_program_deserialize(rt, data, size, &p);
  if (err) {
    if (p) abort(); /* an error never hands out a program */
    tt_error_free(err);
    return 0;
  }
  void *b1 = NULL, *b2 = NULL;
  size_t n1 = 0, n2 = 0;
  tt_program *q = NULL;
  err = tt_program_serialize(p, p->text != NULL, &b1, &n1);
  if (err) abort();
  err = tt_program_deserialize(rt, b1, n1, &q);
  if (err) {
    fprintf(stderr, "re-reading a serialized program failed: %s\n", tt_error_message(err));
    abort();
  }
  err = tt_program_serialize(q, q->text != NULL, &b2, &n2);
  if (err || n1 != n2 || memcmp(b1, b2, n1) != 0) {
    fprintf(stderr, "serialization is not canonical (%zu vs %zu bytes)\n", n1, n2);
    abort();
  }
  free(b1);
  free(b2);
  tt_program_free(q);
  tt_program_free(p);
  return 0;
}
