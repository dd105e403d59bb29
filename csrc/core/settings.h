/* The TORCH_TPU_* environment variables, declared once.
 *
 * Every variable torch_tpu reads is a row of settings.c's table: its name,
 * type, default, stability and a one-line description. C, the C++
 * boundary and Python (through torch_tpu._C) read them only here, so there
 * is one parser and one default for each:
 *
 *   bool    1/0, true/false, yes/no, on/off (any case)
 *   int     a decimal integer within the row's [min, max]
 *   size    bytes, or with a K/M/G/T suffix in powers of 1024 (10G, 10GiB
 *           and 10GB are the same), within [min, max]
 *   enum    one of the row's values (any case)
 *   path    any text; a leading ~ is the home directory
 *
 * Surrounding spaces are ignored, and an empty value is the same as an
 * unset one: the default. A value that does not parse is an error naming
 * the variable, its value and what is accepted (torch_tpu raises it as a
 * ValueError at import).
 *
 * Each variable is read from the environment and parsed once, on first use,
 * under a lock; later changes to the environment are not seen until
 * tt_settings_reset (for tests). Runtime overrides (torch_tpu.set_eager_mode,
 * tt_set_log_compiles, ...) live with the state they change, which takes
 * its initial value from here. */
#ifndef TT_CORE_SETTINGS_H
#define TT_CORE_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* One per variable, in the table's order (the README's order). */
typedef enum {
  TT_SETTING_PJRT_PLUGIN,
  TT_SETTING_NUM_DEVICES,
  TT_SETTING_CPU_FALLBACK,
  TT_SETTING_EAGER_MODE,
  TT_SETTING_LAUNCH_BLOCKING,
  TT_SETTING_DEFER_AND_FUSE,
  TT_SETTING_FUSED_MAX_OPS,
  TT_SETTING_HOST_MALLOC_TUNING,
  TT_SETTING_CACHE,
  TT_SETTING_CACHE_DIR,
  TT_SETTING_CACHE_MAX_BYTES,
  TT_SETTING_MAX_LIVE_EXECUTABLES,
  TT_SETTING_EXPLAIN_RECOMPILES,
  TT_SETTING_LOG_COMPILES,
  TT_SETTING_LOG_COMPILE_GRAPHS,
  TT_SETTING_DEBUG_NAN,
  TT_SETTING_DEBUG_CHECK,
  TT_SETTING_DEVICE_CHECKS,
  TT_SETTING_DUMP_DIR,
  TT_SETTING_DEBUG_PROGRAMS,
  TT_SETTING_DIST_CHECKS,
  TT_SETTINGS /* count */
} tt_setting;

typedef enum { TT_SETTING_BOOL, TT_SETTING_INT, TT_SETTING_SIZE, TT_SETTING_ENUM, TT_SETTING_PATH } tt_setting_type;
typedef enum { TT_STABLE, TT_EXPERIMENTAL, TT_DEPRECATED } tt_setting_stability;

typedef struct {
  const char *name;           /* "TORCH_TPU_CACHE_MAX_BYTES" */
  tt_setting_type type;
  const char *default_text;   /* as it would be written ("10G", "1", "fused"); "" for none */
  int64_t min, max;           /* int and size */
  const char *const *values;  /* enum: NULL-terminated */
  tt_setting_stability stability;
  const char *description;    /* one line, Markdown */
} tt_setting_info;

/* The table row of id (NULL when out of range), and the names of types
 * and stabilities ("bool", "stable", ...). */
const tt_setting_info *tt_setting_info_of(tt_setting id);
const char *tt_setting_type_name(tt_setting_type type);
const char *tt_setting_stability_name(tt_setting_stability s);
/* The id of a variable name, or -1 when it is not one of ours. */
int tt_setting_find(const char *name);

/* Typed reads: the parsed value, or the default when unset or empty. An
 * error (TT_ERR_INVALID_ARGUMENT) when the value does not parse or id's
 * type is another. tt_setting_int also reads sizes and enums (the value's
 * index); tt_setting_path copies the path into out, "~" expanded (an error
 * when it does not fit, or HOME is needed and unset). */
tt_error *tt_setting_bool(tt_setting id, bool *out);
tt_error *tt_setting_int(tt_setting id, int64_t *out);
tt_error *tt_setting_path(tt_setting id, char *out, size_t out_size);

/* For callers without an error path: the value, or the default when the
 * value does not parse (said once on stderr). torch_tpu checks every value
 * at import, so from Python these never see a malformed one. */
bool tt_setting_bool_or_default(tt_setting id);
int64_t tt_setting_int_or_default(tt_setting id);
/* false (out "") when the path is empty or cannot be read. */
bool tt_setting_path_or_default(tt_setting id, char *out, size_t out_size);

/* Parses text as id's value without touching the environment or the cache
 * (an empty text gives the default). *out: bool 0/1, int, bytes, or the
 * enum value's index; paths are not parsed (always *out 0). */
tt_error *tt_setting_parse(tt_setting id, const char *text, int64_t *out);

/* True when the variable is set to a non-empty value. */
bool tt_setting_is_set(tt_setting id);

/* Checks every variable: NULL when all parse, else one error listing each
 * bad one on its own line. */
tt_error *tt_settings_check(void);

/* Forgets what was read: the next read goes to the environment again.
 * For tests that change the environment. */
void tt_settings_reset(void);

/* The eager mode the environment asks for, as an index into
 * TORCH_TPU_EAGER_MODE's values (tt_eager_mode_name): the variable if set,
 * else "debug" when the deprecated TORCH_TPU_LAUNCH_BLOCKING is on, else
 * "fused" when TORCH_TPU_DEFER_AND_FUSE is, else the default. */
tt_error *tt_settings_eager_mode(int *mode);
int tt_settings_eager_mode_or_default(void);
/* The mode names in the order of tt_exec_mode (graph/execute.h); NULL past
 * the last. */
const char *tt_eager_mode_name(int mode);

/* Typo guard: calls fn once per TORCH_TPU_* variable in the environment
 * that is not ours, with the known name nearest to it (edit distance). */
void tt_settings_unknown(void (*fn)(const char *name, const char *nearest, void *ctx), void *ctx);

#endif
