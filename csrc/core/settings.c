#include "core/settings.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* ------------------------------------------------------------ the table */

static const char *const eager_modes[] = {"strict", "fused", "debug", NULL}; /* tt_exec_mode order */
static const char *const debug_checks[] = {"off", "cpu", NULL};

#define BOOL(def) TT_SETTING_BOOL, def, 0, 1, NULL
#define INT(def, lo, hi) TT_SETTING_INT, def, lo, hi, NULL
#define SIZE(def, lo) TT_SETTING_SIZE, def, lo, INT64_MAX, NULL
#define ENUM(def, values) TT_SETTING_ENUM, def, 0, 0, values
#define PATH(def) TT_SETTING_PATH, def, 0, 0, NULL

static const tt_setting_info table[TT_SETTINGS] = {
    [TT_SETTING_PJRT_PLUGIN] = {"TORCH_TPU_PJRT_PLUGIN", PATH(""), TT_STABLE,
        "path of the PJRT plugin to load (unset: libtpu's, else xla-cpu-pjrt's, found on `sys.path`)"},
    [TT_SETTING_NUM_DEVICES] = {"TORCH_TPU_NUM_DEVICES", INT("1", 1, 64), TT_STABLE,
        "number of devices the CPU plugin makes"},
    [TT_SETTING_CPU_FALLBACK] = {"TORCH_TPU_CPU_FALLBACK", BOOL("1"), TT_STABLE,
        "an op without a lowering runs on CPU (counted, warned once per op); `0`: it raises "
        "`NotImplementedError` instead"},
    [TT_SETTING_EAGER_MODE] = {"TORCH_TPU_EAGER_MODE", ENUM("fused", eager_modes), TT_STABLE,
        "`fused`: ops are recorded and compiled as whole regions, flushed at host reads, CPU "
        "fallbacks, `torch_tpu.sync()` and loop boundaries; `strict`: one cached program per op; "
        "`debug`: every op waits for its result, compiles are logged. Also "
        "`torch_tpu.set_eager_mode()` and the per-thread `torch_tpu.eager_mode()`"},
    [TT_SETTING_LAUNCH_BLOCKING] = {"TORCH_TPU_LAUNCH_BLOCKING", BOOL("0"), TT_DEPRECATED,
        "the reference system's switch for debug mode: `1` is `TORCH_TPU_EAGER_MODE=debug` when "
        "that is unset"},
    [TT_SETTING_DEFER_AND_FUSE] = {"TORCH_TPU_DEFER_AND_FUSE", BOOL("0"), TT_DEPRECATED,
        "the reference system's switch for fused mode: `1` is `TORCH_TPU_EAGER_MODE=fused` when "
        "that and `TORCH_TPU_LAUNCH_BLOCKING` are unset"},
    [TT_SETTING_FUSED_MAX_OPS] = {"TORCH_TPU_FUSED_MAX_OPS", INT("2048", 1, INT32_MAX),
        TT_EXPERIMENTAL,
        "most ops in one fused region (lowered on the CPU plugin for programs needing over 32 MiB "
        "of scratch per run)"},
    [TT_SETTING_HOST_MALLOC_TUNING] = {"TORCH_TPU_HOST_MALLOC_TUNING", BOOL("1"), TT_EXPERIMENTAL,
        "on the CPU plugin, raise glibc's malloc thresholds once per process so that the buffers "
        "every launch allocates reuse heap pages instead of faulting in fresh ones (a Strict "
        "minGPT step ran 52 ms with about 4,000 page faults per step without it, 43 ms with: "
        "medians of three interleaved runs); `0` leaves malloc alone"},
    [TT_SETTING_CACHE] = {"TORCH_TPU_CACHE", BOOL("1"), TT_STABLE,
        "the persistent compilation cache on disk (`0`: off; the in-memory one stays); "
        "`python -m torch_tpu.cache stats`, `ls` or `clear` inspects it"},
    [TT_SETTING_CACHE_DIR] = {"TORCH_TPU_CACHE_DIR", PATH("~/.cache/torch_tpu"), TT_STABLE,
        "persistent compilation cache directory"},
    [TT_SETTING_CACHE_MAX_BYTES] = {"TORCH_TPU_CACHE_MAX_BYTES", SIZE("10G", 1), TT_STABLE,
        "size cap of the persistent cache directory (least recently used entries are evicted)"},
    [TT_SETTING_MAX_LIVE_EXECUTABLES] = {"TORCH_TPU_MAX_LIVE_EXECUTABLES", INT("2048", 1, INT32_MAX),
        TT_STABLE,
        "compiled programs kept loaded at once (each holds about 3 memory mappings on XLA:CPU); "
        "the least recently used beyond it are unloaded and recompiled, or reloaded from the "
        "persistent cache, on next use. Lowered automatically to stay well under "
        "`vm.max_map_count`"},
    [TT_SETTING_EXPLAIN_RECOMPILES] = {"TORCH_TPU_EXPLAIN_RECOMPILES", BOOL("0"), TT_STABLE,
        "every compile with a near cached relative prints what differed (op, argument, "
        "shapes/dtypes) and your source line"},
    [TT_SETTING_LOG_COMPILES] = {"TORCH_TPU_LOG_COMPILES", BOOL("0"), TT_STABLE,
        "log every compile with the op and shapes that caused it (always on in debug mode)"},
    [TT_SETTING_LOG_COMPILE_GRAPHS] = {"TORCH_TPU_LOG_COMPILE_GRAPHS", BOOL("0"), TT_EXPERIMENTAL,
        "`torch.compile(backend=\"tpu\")` prints each graph's report at its first call (as its "
        "`explain` option)"},
    [TT_SETTING_DEBUG_NAN] = {"TORCH_TPU_DEBUG_NAN", BOOL("0"), TT_STABLE,
        "in debug mode, raise at the first op producing NaN/Inf, naming the op and your source "
        "line"},
    [TT_SETTING_DEBUG_CHECK] = {"TORCH_TPU_DEBUG_CHECK", ENUM("off", debug_checks), TT_STABLE,
        "`cpu`: in debug mode, run every op on CPU too and raise at the first divergence"},
    [TT_SETTING_DEVICE_CHECKS] = {"TORCH_TPU_DEVICE_CHECKS", BOOL("1"), TT_STABLE,
        "index-taking ops (indexing, gather/scatter, index_select/embedding, take/put, "
        "index_add/copy/fill, nll_loss/cross_entropy targets) and integer division by zero "
        "compute an error flag inside their own program; it is read at the next host read or "
        "synchronize (in debug mode at the op) and raises the CPU kernel's exception with the "
        "op and your source line. `0`: out-of-range indices are clamped and dropped silently "
        "(a few reductions per program faster; docs/reliability.md)"},
    [TT_SETTING_DUMP_DIR] = {"TORCH_TPU_DUMP_DIR", PATH(""), TT_EXPERIMENTAL,
        "per compile, write the StableHLO module, its compile options and its cache key explained (and torch.compile's FX graphs before and after AOTAutograd) into this directory, indexed in order with the user's source line by `manifest.json` (docs/tools.md)"},
    [TT_SETTING_DEBUG_PROGRAMS] = {"TORCH_TPU_DEBUG_PROGRAMS", BOOL("0"), TT_EXPERIMENTAL,
        "print a program the plugin rejects to stderr"},
    [TT_SETTING_DIST_CHECKS] = {"TORCH_TPU_DIST_CHECKS", INT("1", 0, 2), TT_STABLE,
        "the `tpu` distributed backend's cross-rank check that the ranks call the same "
        "collective (op, reduction, dtype, shape; `all_to_all_single`'s split sizes; a "
        "`send`'s and its `recv`'s dtype and size): a mismatch raises an error naming the op "
        "on every rank instead of gloo's abort or timeout. `1`: once per signature (op, dtypes, "
        "shapes, splits, group) on its first call; `2`: every call (one small message to each "
        "peer per collective); `0`: never (docs/distributed.md)"},
};

#undef BOOL
#undef INT
#undef SIZE
#undef ENUM
#undef PATH

const tt_setting_info *tt_setting_info_of(tt_setting id) {
  return (int)id >= 0 && id < TT_SETTINGS ? &table[id] : NULL;
}

const char *tt_setting_type_name(tt_setting_type type) {
  static const char *const names[] = {"bool", "int", "size", "enum", "path"};
  return (int)type >= 0 && type <= TT_SETTING_PATH ? names[type] : "?";
}

const char *tt_setting_stability_name(tt_setting_stability s) {
  static const char *const names[] = {"stable", "experimental", "deprecated"};
  return (int)s >= 0 && s <= TT_DEPRECATED ? names[s] : "?";
}

int tt_setting_find(const char *name) {
  for (int i = 0; name && i < TT_SETTINGS; i++)
    if (table[i].name && strcmp(table[i].name, name) == 0) return i;
  return -1;
}

const char *tt_eager_mode_name(int mode) {
  return mode >= 0 && mode < (int)(sizeof eager_modes / sizeof *eager_modes) ? eager_modes[mode]
                                                                             : NULL;
}

/* ------------------------------------------------------------ parsing */

/* Copies text without surrounding spaces, lower-cased, into out; false when
 * it does not fit (no value of ours is that long). */
static bool trimmed_lower(const char *text, char *out, size_t out_size) {
  while (isspace((unsigned char)*text)) text++;
  size_t n = strlen(text);
  while (n && isspace((unsigned char)text[n - 1])) n--;
  if (n >= out_size) return false;
  for (size_t i = 0; i < n; i++) out[i] = (char)tolower((unsigned char)text[i]);
  out[n] = 0;
  return true;
}

static bool parse_bool(const char *t, int64_t *out) {
  static const char *const on[] = {"1", "true", "yes", "on"}, *const off[] = {"0", "false", "no", "off"};
  for (int i = 0; i < 4; i++) {
    if (!strcmp(t, on[i])) return *out = 1, true;
    if (!strcmp(t, off[i])) return *out = 0, true;
  }
  return false;
}

static bool parse_int(const char *t, int64_t *out) {
  if (!*t) return false;
  char *end;
  errno = 0;
  long long v = strtoll(t, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

/* Bytes, or with a K/M/G/T suffix (powers of 1024), optionally followed by
 * "iB" or "B": "10G", "10GiB", "10GB", "512m", "12345", "10B". */
static bool parse_size(const char *t, int64_t *out) {
  uint64_t n = 0;
  int digits = 0;
  for (; *t >= '0' && *t <= '9'; t++, digits++) {
    if (n > UINT64_MAX / 10) return false;
    n = n * 10 + (uint64_t)(*t - '0');
  }
  if (!digits) return false;
  int shift = 0;
  switch (*t) {
    case 'k': shift = 10; t++; break;
    case 'm': shift = 20; t++; break;
    case 'g': shift = 30; t++; break;
    case 't': shift = 40; t++; break;
    default: break;
  }
  if (shift && t[0] == 'i' && t[1] == 'b') t += 2;
  else if (*t == 'b') t++;
  if (*t || n > ((uint64_t)INT64_MAX >> shift)) return false;
  *out = (int64_t)(n << shift);
  return true;
}

static tt_error *bad_value(const tt_setting_info *s, const char *text) {
  switch (s->type) {
    case TT_SETTING_BOOL:
      return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                          "%s='%s': expected a boolean: 1/0, true/false, yes/no or on/off",
                          s->name, text);
    case TT_SETTING_INT:
      return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                          "%s='%s': expected an integer in [%" PRId64 ", %" PRId64 "]", s->name,
                          text, s->min, s->max);
    case TT_SETTING_SIZE:
      return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                          "%s='%s': expected a size of at least %" PRId64
                          " byte(s): a byte count or one with a K/M/G/T suffix (powers of "
                          "1024), such as 10737418240 or 10G",
                          s->name, text, s->min);
    case TT_SETTING_ENUM: {
      char accepted[256] = "";
      for (const char *const *v = s->values; *v; v++)
        snprintf(accepted + strlen(accepted), sizeof accepted - strlen(accepted), "%s%s",
                 v == s->values ? "" : ", ", *v);
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s='%s': expected one of %s", s->name, text,
                          accepted);
    }
    case TT_SETTING_PATH: break;
  }
  return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s='%s': not a valid value", s->name, text);
}

/* Parses a non-path value (NULL or blank: the default). */
static tt_error *parse(const tt_setting_info *s, const char *text, int64_t *out) {
  *out = 0;
  if (s->type == TT_SETTING_PATH) return NULL;
  char t[64] = "";
  if (text && !trimmed_lower(text, t, sizeof t)) return bad_value(s, text); /* too long */
  if (!*t) {
    text = s->default_text;
    if (!trimmed_lower(text, t, sizeof t) || !*t) return NULL; /* no default: 0 */
  }
  bool ok = false;
  switch (s->type) {
    case TT_SETTING_BOOL: ok = parse_bool(t, out); break;
    case TT_SETTING_INT: ok = parse_int(t, out) && *out >= s->min && *out <= s->max; break;
    case TT_SETTING_SIZE: ok = parse_size(t, out) && *out >= s->min && *out <= s->max; break;
    case TT_SETTING_ENUM:
      for (int i = 0; s->values[i] && !ok; i++)
        if (!strcmp(t, s->values[i])) *out = i, ok = true;
      break;
    case TT_SETTING_PATH: ok = true; break;
  }
  if (ok) return NULL;
  *out = 0;
  return bad_value(s, text);
}

tt_error *tt_setting_parse(tt_setting id, const char *text, int64_t *out) {
  const tt_setting_info *s = tt_setting_info_of(id);
  if (!s || !out) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_setting_parse: bad argument");
  return parse(s, text, out);
}

/* ------------------------------------------------------------ reading */

typedef struct {
  bool read;     /* the environment was consulted */
  bool set;      /* non-empty there */
  bool warned;   /* the _or_default readers said the value was bad */
  int64_t value; /* parsed (not for paths) */
  char *text;    /* path: the value as set (NULL when unset) */
  tt_error *err; /* why the value does not parse */
} slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot slots[TT_SETTINGS]; /* guarded by lock */

static slot *read_locked(tt_setting id) {
  slot *sl = &slots[id];
  if (sl->read) return sl;
  const tt_setting_info *s = &table[id];
  const char *env = getenv(s->name);
  sl->set = env && env[strspn(env, " \t\n\r\f\v")] != 0; /* blank is unset */
  if (s->type == TT_SETTING_PATH) {
    if (sl->set && !(sl->text = strdup(env)))
      sl->err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory reading %s", s->name);
  } else {
    sl->err = parse(s, sl->set ? env : NULL, &sl->value);
  }
  sl->read = true;
  return sl;
}

static tt_error *copy_error(const tt_error *err) {
  return err ? tt_error_new(tt_error_code_of(err), "%s", tt_error_message(err)) : NULL;
}

static tt_error *wrong_type(const tt_setting_info *s, const char *want) {
  return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s is a %s setting, not %s",
                      s ? s->name : "(no such setting)", s ? tt_setting_type_name(s->type) : "?",
                      want);
}

static tt_error *read_number(tt_setting id, bool want_bool, int64_t *out) {
  const tt_setting_info *s = tt_setting_info_of(id);
  if (!s || s->type == TT_SETTING_PATH || want_bool != (s->type == TT_SETTING_BOOL))
    return wrong_type(s, want_bool ? "bool" : "int, size or enum");
  pthread_mutex_lock(&lock);
  slot *sl = read_locked(id);
  tt_error *err = copy_error(sl->err);
  *out = sl->value;
  pthread_mutex_unlock(&lock);
  return err;
}

tt_error *tt_setting_bool(tt_setting id, bool *out) {
  int64_t v = 0;
  tt_error *err = read_number(id, true, &v);
  *out = v != 0;
  return err;
}

tt_error *tt_setting_int(tt_setting id, int64_t *out) { return read_number(id, false, out); }

/* "~" or "~/..." with $HOME; anything else as it is. */
static tt_error *expand(const tt_setting_info *s, const char *path, char *out, size_t out_size) {
  const char *home = "", *rest = path;
  if (path[0] == '~' && (path[1] == '/' || path[1] == 0)) {
    home = getenv("HOME");
    if (!home || !*home)
      return tt_error_new(TT_ERR_RUNTIME, "%s: %s needs HOME, which is not set", s->name, path);
    rest = path + 1;
  }
  int n = snprintf(out, out_size, "%s%s", home, rest);
  if (n < 0 || (size_t)n >= out_size)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: path too long (%d bytes)", s->name, n);
  return NULL;
}

tt_error *tt_setting_path(tt_setting id, char *out, size_t out_size) {
  const tt_setting_info *s = tt_setting_info_of(id);
  if (!s || s->type != TT_SETTING_PATH) return wrong_type(s, "path");
  if (!out || !out_size) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_setting_path: no output");
  out[0] = 0;
  pthread_mutex_lock(&lock);
  slot *sl = read_locked(id);
  tt_error *err = copy_error(sl->err);
  if (!err) err = expand(s, sl->text ? sl->text : s->default_text, out, out_size);
  pthread_mutex_unlock(&lock);
  if (err) out[0] = 0;
  return err;
}

/* Says once per setting that its value is bad and the default applies. */
static void warn_once(tt_setting id, tt_error *err) {
  pthread_mutex_lock(&lock);
  bool first = !slots[id].warned;
  slots[id].warned = true;
  pthread_mutex_unlock(&lock);
  if (first)
    fprintf(stderr, "torch_tpu: %s; using the default (%s)\n", tt_error_message(err),
            table[id].default_text[0] ? table[id].default_text : "unset");
  tt_error_free(err);
}

bool tt_setting_bool_or_default(tt_setting id) {
  bool v = false;
  tt_error *err = tt_setting_bool(id, &v);
  if (!err) return v;
  warn_once(id, err);
  int64_t d = 0;
  tt_error_free(tt_setting_parse(id, NULL, &d));
  return d != 0;
}

int64_t tt_setting_int_or_default(tt_setting id) {
  int64_t v = 0;
  tt_error *err = tt_setting_int(id, &v);
  if (!err) return v;
  warn_once(id, err);
  tt_error_free(tt_setting_parse(id, NULL, &v));
  return v;
}

bool tt_setting_path_or_default(tt_setting id, char *out, size_t out_size) {
  tt_error *err = tt_setting_path(id, out, out_size);
  if (err) {
    warn_once(id, err);
    if (out && out_size) out[0] = 0;
    return false;
  }
  return out[0] != 0;
}

bool tt_setting_is_set(tt_setting id) {
  if (!tt_setting_info_of(id)) return false;
  pthread_mutex_lock(&lock);
  bool set = read_locked(id)->set;
  pthread_mutex_unlock(&lock);
  return set;
}

tt_error *tt_settings_check(void) {
  char message[4096] = "";
  size_t used = 0;
  int bad = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < TT_SETTINGS; i++) {
    slot *sl = read_locked((tt_setting)i);
    if (!sl->err) continue;
    int n = snprintf(message + used, sizeof message - used, "%s%s", bad ? "\n" : "",
                     tt_error_message(sl->err));
    if (n > 0) used = used + (size_t)n < sizeof message ? used + (size_t)n : sizeof message - 1;
    bad++;
  }
  pthread_mutex_unlock(&lock);
  return bad ? tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s", message) : NULL;
}

void tt_settings_reset(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < TT_SETTINGS; i++) {
    free(slots[i].text);
    tt_error_free(slots[i].err);
    memset(&slots[i], 0, sizeof slots[i]);
  }
  pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------ eager mode */

tt_error *tt_settings_eager_mode(int *mode) {
  int64_t v = 0;
  bool on = false;
  TT_TRY(tt_setting_int(TT_SETTING_EAGER_MODE, &v));
  *mode = (int)v;
  if (tt_setting_is_set(TT_SETTING_EAGER_MODE)) return NULL;
  TT_TRY(tt_setting_bool(TT_SETTING_LAUNCH_BLOCKING, &on));
  if (on) {
    *mode = 2; /* debug */
    return NULL;
  }
  TT_TRY(tt_setting_bool(TT_SETTING_DEFER_AND_FUSE, &on));
  if (on) *mode = 1; /* fused */
  return NULL;
}

int tt_settings_eager_mode_or_default(void) {
  int mode = 0;
  tt_error *err = tt_settings_eager_mode(&mode);
  if (!err) return mode;
  int64_t d = 0;
  tt_error_free(tt_setting_parse(TT_SETTING_EAGER_MODE, NULL, &d));
  fprintf(stderr, "torch_tpu: %s; using the default eager mode (%s)\n", tt_error_message(err),
          eager_modes[d]);
  tt_error_free(err);
  return (int)d;
}

/* ------------------------------------------------------------ typo guard */

#define TT_MAX_NAME 128

static int edit_distance(const char *a, const char *b) {
  size_t la = strnlen(a, TT_MAX_NAME), lb = strnlen(b, TT_MAX_NAME);
  int row[TT_MAX_NAME + 1];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diagonal = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int above = row[j];
      int best = diagonal + (a[i - 1] != b[j - 1]);
      if (above + 1 < best) best = above + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diagonal = above;
    }
  }
  return row[lb];
}

void tt_settings_unknown(void (*fn)(const char *name, const char *nearest, void *ctx), void *ctx) {
  static const char prefix[] = "TORCH_TPU_";
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, prefix, sizeof prefix - 1) != 0) continue;
    char name[TT_MAX_NAME + 1];
    size_t n = strcspn(*e, "=");
    if (n > TT_MAX_NAME) n = TT_MAX_NAME;
    memcpy(name, *e, n);
    name[n] = 0;
    if (tt_setting_find(name) >= 0) continue;
    int best = -1, best_distance = 0;
    for (int i = 0; i < TT_SETTINGS; i++) {
      int d = edit_distance(name, table[i].name);
      if (best < 0 || d < best_distance) best = i, best_distance = d;
    }
    fn(name, table[best].name, ctx);
  }
}
