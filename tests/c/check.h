/* The C tests' counter: CHECK(cond) counts a passed condition, or reports a
 * failed one with its file and line and counts it. */
#ifndef TT_TESTS_CHECK_H
#define TT_TESTS_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) passed++;                                                        \
    else {                                                                     \
      failed++;                                                                \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#endif
