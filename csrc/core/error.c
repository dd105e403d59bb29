#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tt_error {
  tt_error_code code;
  int is_static;
  char *message;
};

/* Returned when we cannot even allocate an error; never freed. */
static tt_error out_of_memory_error = {TT_ERR_OUT_OF_MEMORY, 1,
                                       "out of host memory while reporting an error"};

tt_error *tt_error_newv(tt_error_code code, const char *fmt, va_list ap) {
  tt_error *err = malloc(sizeof *err);
  if (!err) return &out_of_memory_error;
  va_list copy;
  va_copy(copy, ap);
  int len = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  err->message = malloc(len > 0 ? (size_t)len + 1 : 1);
  if (!err->message) {
    free(err);
    return &out_of_memory_error;
  }
  vsnprintf(err->message, (size_t)len + 1, fmt, ap);
  err->code = code;
  err->is_static = 0;
  return err;
}

tt_error *tt_error_new(tt_error_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tt_error *err = tt_error_newv(code, fmt, ap);
  va_end(ap);
  return err;
}

tt_error *tt_error_wrap(tt_error *err, const char *fmt, ...) {
  if (!err || err->is_static) return err;
  char prefix[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  size_t len = strlen(prefix) + strlen(err->message) + 1;
  char *joined = malloc(len);
  if (!joined) return err;
  snprintf(joined, len, "%s%s", prefix, err->message);
  free(err->message);
  err->message = joined;
  return err;
}

tt_error_code tt_error_code_of(const tt_error *err) { return err ? err->code : 0; }

const char *tt_error_message(const tt_error *err) { return err ? err->message : ""; }

const char *tt_error_code_name(tt_error_code code) {
  switch (code) {
    case TT_ERR_INVALID_ARGUMENT: return "invalid argument";
    case TT_ERR_TYPE: return "type error";
    case TT_ERR_INDEX: return "index error";
    case TT_ERR_NOT_IMPLEMENTED: return "not implemented";
    case TT_ERR_OUT_OF_MEMORY: return "out of memory";
    case TT_ERR_COMPILE: return "compile error";
    case TT_ERR_PLUGIN: return "plugin error";
    case TT_ERR_RUNTIME: return "runtime error";
  }
  return "unknown error";
}

void tt_error_free(tt_error *err) {
  if (!err || err->is_static) return;
  free(err->message);
  free(err);
}
