/* The error word of a program with device-side checks (graph/device_checks.h,
 * docs/reliability.md) and the text of a failed check. Shared by the core
 * and the runner (csrc/runner), which reads the word of an exported program.
 *
 * The word is the program's last output, three i64 values: the number of
 * the first failing check (TT_CHECK_WORD_OK: none), the position of its
 * first offending element (the flat index into the checked tensor) and
 * that element's value. Programs built before the values were captured
 * (a persistent cache entry, an exported artifact) return one i32, the
 * check number alone; both forms are read. */
#ifndef TT_CORE_CHECK_TEXT_H
#define TT_CORE_CHECK_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TT_CHECK_WORD_OK INT32_MAX
#define TT_CHECK_WORD_BYTES (3 * sizeof(int64_t))

typedef struct {
  int64_t check;  /* TT_CHECK_WORD_OK when every check passed */
  bool known;     /* the position and value were captured (a 3-value word) */
  int64_t pos, value;
} tt_check_word;

/* Decodes the host copy of a word of n bytes (4: the i32 form, 24: the i64
 * form); false for any other size. */
bool tt_check_word_decode(const void *bytes, size_t n, tt_check_word *out);

/* A failed check's message with its placeholders filled in: "{value}" by the
 * offending value, "{pos}" by its flat position, "{pos@2x5}" by its
 * coordinates in a tensor of shape [2, 5] ("[1, 3]"). Without a captured
 * position and value they read "?". malloc'd; NULL if out of memory. */
char *tt_check_text_fill(const char *tmpl, const tt_check_word *w);

#endif
