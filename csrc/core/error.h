/* Errors carried from the C core to its caller.
 *
 * Every fallible function returns a tt_error* : NULL means success, anything
 * else is a heap-allocated error owned by the caller, who frees it with
 * tt_error_free (which accepts NULL). The C++ boundary turns it into a
 * PyTorch exception in exactly one place. */
#ifndef TT_CORE_ERROR_H
#define TT_CORE_ERROR_H

#include <stdarg.h>

typedef enum {
  TT_ERR_INVALID_ARGUMENT = 1, /* user error: bad shapes, bad arguments -> RuntimeError/ValueError */
  TT_ERR_TYPE,                 /* unsupported or mismatched dtype -> TypeError */
  TT_ERR_INDEX,                /* index out of range -> IndexError */
  TT_ERR_NOT_IMPLEMENTED,      /* no lowering for this op/args: caller may fall back to CPU */
  TT_ERR_OUT_OF_MEMORY,        /* device allocation failed */
  TT_ERR_COMPILE,              /* the plugin rejected a program */
  TT_ERR_PLUGIN,               /* plugin missing, unloadable, too old, or returned an error */
  TT_ERR_RUNTIME,              /* anything else at run time */
} tt_error_code;

typedef struct tt_error tt_error;

/* Creates an error with a printf-style message. Never returns NULL (falls back
 * to a static out-of-memory error if allocation fails). */
tt_error *tt_error_new(tt_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
tt_error *tt_error_newv(tt_error_code code, const char *fmt, va_list ap);

/* Prepends context ("while compiling add: ") to err's message; returns err. */
tt_error *tt_error_wrap(tt_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

tt_error_code tt_error_code_of(const tt_error *err);
const char *tt_error_message(const tt_error *err);
const char *tt_error_code_name(tt_error_code code);
void tt_error_free(tt_error *err);

/* Early-return helper: evaluates expr, returns its error if any. */
#define TT_TRY(expr)                  \
  do {                                \
    tt_error *tt_try_err_ = (expr);   \
    if (tt_try_err_) return tt_try_err_; \
  } while (0)

#endif
