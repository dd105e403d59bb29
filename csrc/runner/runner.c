/* The runner (include/torch_tpu/runner.h): an artifact written by
 * torch_tpu.export, run over the PJRT runtime (pjrt/runtime.h) with no
 * graph layer: signature.json gives each program's parameter plan, which
 * names weights (uploaded once), inputs and host values; results map to
 * outputs; device-side checks append an error word. */
#include "torch_tpu/runner.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check_text.h"
#include "pjrt/runtime.h"
#include "runner/json.h"
#include "runner/tensor_files.h"

#define ARTIFACT_FORMAT "torch_tpu artifact 1"

_Static_assert(TTR_FLOAT64 == (int)TT_F64 && TTR_BOOL == (int)TT_BOOL && TTR_BFLOAT16 == (int)TT_BF16,
               "ttr_dtype follows tt_dtype's first values");

struct ttr_plugin {
  tt_runtime *rt;
};

typedef enum { P_WEIGHT, P_INPUT, P_VALUE } param_kind;

typedef struct {
  param_kind kind;
  int index; /* WEIGHT: into model->weights; INPUT: input index */
  tt_dtype dtype;
  int64_t numel;
  unsigned char value[16];
} param;

typedef struct {
  char *op, *message;
} check;

typedef struct {
  char *file;
  int64_t (*in_dims)[TTR_MAX_DIMS];
  int *in_ndim;
  int64_t (*out_dims)[TTR_MAX_DIMS];
  int *out_ndim;
  param *params;
  int n_params;
  int *results; /* output index per program result */
  int n_results;
  check *checks;
  int n_checks;
  char *exe_file; /* stored for this plugin's fingerprint, or NULL */
  tt_executable *exe;
} program;

typedef struct {
  char *name;
  tt_dtype dtype;
} io;

struct ttr_model {
  ttr_plugin *plugin;
  bool compile_only; /* ignore stored executables */
  char *dir;
  io *inputs, *outputs;
  int n_inputs, n_outputs;
  program *programs;
  int n_programs;
  char **weight_names;
  tt_buffer **weights;
  int n_weights;
};

struct ttr_outputs {
  ttr_tensor *tensors;
  int n;
};

#define ERR(e) ((ttr_error *)(e))
#define E(code, ...) ERR(tt_error_new(code, __VA_ARGS__))

const char *ttr_error_message(const ttr_error *err) {
  return err ? tt_error_message((const tt_error *)err) : "";
}
void ttr_error_free(ttr_error *err) { tt_error_free((tt_error *)err); }

const char *ttr_dtype_name(ttr_dtype dtype) {
  return (int)dtype >= 0 && dtype <= TTR_FLOAT64 ? tt_dtype_name((tt_dtype)dtype) : NULL;
}
size_t ttr_dtype_size(ttr_dtype dtype) {
  return (int)dtype >= 0 && dtype <= TTR_FLOAT64 ? tt_dtype_size((tt_dtype)dtype) : 0;
}

/* ------------------------------------------------------------- plugin */

/* Site-packages directories to search without Python: $PYTHONPATH, then
 * $VIRTUAL_ENV's and ./.venv's lib/python3.X/site-packages. */
static char **search_dirs(void) {
  int cap = 32, n = 0;
  char **dirs = calloc((size_t)cap + 1, sizeof *dirs);
  if (!dirs) return NULL;
  const char *pp = getenv("PYTHONPATH");
  if (pp) {
    char *copy = strdup(pp), *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok && n < cap; tok = strtok_r(NULL, ":", &save))
      dirs[n++] = strdup(tok);
    free(copy);
  }
  const char *venvs[2] = {getenv("VIRTUAL_ENV"), ".venv"};
  for (int v = 0; v < 2; v++) {
    if (!venvs[v]) continue;
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/lib/python3*/site-packages", venvs[v]);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc && n < cap; i++) dirs[n++] = strdup(g.gl_pathv[i]);
    globfree(&g);
  }
  return dirs;
}

ttr_error *ttr_open(const char *plugin_path, ttr_plugin **out) {
  *out = NULL;
  char found[4096];
  if (!plugin_path) {
    char **dirs = search_dirs();
    if (!dirs) return E(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    tt_error *err = tt_runtime_find_plugin((const char *const *)dirs, found, sizeof found);
    for (char **d = dirs; *d; d++) free(*d);
    free(dirs);
    if (err) return ERR(err);
    plugin_path = found;
  }
  ttr_plugin *p = calloc(1, sizeof *p);
  if (!p) return E(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  tt_error *err = tt_runtime_open(plugin_path, 1, &p->rt);
  if (err) {
    free(p);
    return ERR(err);
  }
  *out = p;
  return NULL;
}

void ttr_close(ttr_plugin *plugin) {
  if (!plugin) return;
  tt_runtime_close(plugin->rt);
  free(plugin);
}

const char *ttr_plugin_path(const ttr_plugin *p) { return tt_runtime_plugin_path(p->rt); }
const char *ttr_plugin_platform(const ttr_plugin *p) { return tt_runtime_platform_name(p->rt); }
const char *ttr_plugin_fingerprint(const ttr_plugin *p) { return tt_runtime_fingerprint(p->rt); }

/* ------------------------------------------------------------- loading */

static void free_program(program *pr) {
  free(pr->file);
  free(pr->in_dims);
  free(pr->in_ndim);
  free(pr->out_dims);
  free(pr->out_ndim);
  free(pr->params);
  free(pr->results);
  for (int i = 0; i < pr->n_checks; i++) {
    free(pr->checks[i].op);
    free(pr->checks[i].message);
  }
  free(pr->checks);
  free(pr->exe_file);
  tt_executable_release(pr->exe);
}

void ttr_model_free(ttr_model *m) {
  if (!m) return;
  for (int i = 0; i < m->n_inputs; i++) free(m->inputs[i].name);
  for (int i = 0; i < m->n_outputs; i++) free(m->outputs[i].name);
  free(m->inputs);
  free(m->outputs);
  for (int b = 0; b < m->n_programs; b++) free_program(&m->programs[b]);
  free(m->programs);
  for (int w = 0; w < m->n_weights; w++) {
    free(m->weight_names[w]);
    tt_buffer_release(m->weights[w]);
  }
  free(m->weight_names);
  free(m->weights);
  free(m->dir);
  free(m);
}

static tt_error *bad(const ttr_model *m, const char *what) {
  return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s/signature.json: malformed artifact: %s", m->dir, what);
}

static tt_error *read_text(const char *path, char **text, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "cannot open %s: %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (n + 1 < cap) break;
    char *grown = realloc(buf, cap *= 2);
    if (!grown) {
      free(buf);
      buf = NULL;
    }
    buf = grown;
  }
  fclose(f);
  if (!buf) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory reading %s", path);
  buf[n] = 0;
  *text = buf;
  if (len) *len = n;
  return NULL;
}

static tt_error *read_io(ttr_model *m, const ttj_node *list, io **out, int *n, const char *what) {
  if (!list || list->kind != TTJ_ARRAY) return bad(m, what);
  *out = calloc((size_t)(list->n_items ? list->n_items : 1), sizeof **out);
  if (!*out) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  for (int i = 0; i < list->n_items; i++) {
    const char *name = ttj_str(ttj_get(&list->items[i], "name"));
    int dt = ttr_dtype_from_name(ttj_str(ttj_get(&list->items[i], "dtype")));
    if (!name || dt < 0 || dt > (int)TT_F64) return bad(m, what);
    (*out)[i].name = strdup(name);
    (*out)[i].dtype = (tt_dtype)dt;
    (*n)++;
    if (!(*out)[i].name) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  return NULL;
}

static bool read_dims(const ttj_node *shape, int64_t *dims, int *ndim) {
  if (!shape || shape->kind != TTJ_ARRAY || shape->n_items > TTR_MAX_DIMS) return false;
  *ndim = shape->n_items;
  for (int d = 0; d < *ndim; d++)
    if (!ttj_int(&shape->items[d], &dims[d]) || dims[d] < 0) return false;
  return true;
}

static int weight_index(ttr_model *m, const char *name) {
  for (int w = 0; w < m->n_weights; w++)
    if (strcmp(m->weight_names[w], name) == 0) return w;
  return -1;
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static tt_error *read_param(ttr_model *m, const ttj_node *n, param *p, const ttr_safetensors *st) {
  const char *kind = ttj_str(ttj_get(n, "kind"));
  int dt = ttr_dtype_from_name(ttj_str(ttj_get(n, "dtype")));
  int64_t dims[TTR_MAX_DIMS];
  int ndim = 0;
  if (!kind || dt < 0 || !read_dims(ttj_get(n, "shape"), dims, &ndim)) return bad(m, "a program parameter");
  p->dtype = (tt_dtype)dt;
  p->numel = 1;
  for (int d = 0; d < ndim; d++) p->numel *= dims[d];
  if (strcmp(kind, "value") == 0) {
    p->kind = P_VALUE;
    const char *hex = ttj_str(ttj_get(n, "hex"));
    size_t len = hex ? strlen(hex) : 0;
    if (!hex || len != 2 * tt_dtype_size(p->dtype)) return bad(m, "a value parameter's bytes");
    for (size_t i = 0; i < len / 2; i++) {
      int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
      if (hi < 0 || lo < 0) return bad(m, "a value parameter's bytes");
      p->value[i] = (unsigned char)(hi << 4 | lo);
    }
    return NULL;
  }
  if (strcmp(kind, "input") == 0) {
    int64_t i = -1;
    p->kind = P_INPUT;
    if (!ttj_int(ttj_get(n, "index"), &i) || i < 0 || i >= m->n_inputs) return bad(m, "an input parameter");
    p->index = (int)i;
    if (m->inputs[i].dtype != p->dtype) return bad(m, "an input parameter's dtype");
    return NULL;
  }
  const char *name = ttj_str(ttj_get(n, "name"));
  if (strcmp(kind, "weight") != 0 || !name) return bad(m, "a parameter's kind");
  p->kind = P_WEIGHT;
  p->index = weight_index(m, name);
  if (p->index >= 0) return NULL;
  const ttr_array *a = ttr_safetensors_find(st, name);
  if (!a) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: weight '%s' is missing from the weights file", m->dir, name);
  if (a->dtype != p->dtype || a->nbytes != (size_t)p->numel * tt_dtype_size(p->dtype))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: weight '%s' is %s of %zu bytes, the program reads %s x %lld",
                        m->dir, name, tt_dtype_name(a->dtype), a->nbytes, tt_dtype_name(p->dtype),
                        (long long)p->numel);
  char *copy = strdup(name);
  tt_buffer *buf = NULL;
  tt_error *err = copy ? tt_buffer_from_host(m->plugin->rt, 0, p->dtype, &p->numel, 1, a->data, &buf)
                       : tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  if (err) {
    free(copy);
    return err;
  }
  m->weight_names[m->n_weights] = copy;
  m->weights[m->n_weights] = buf;
  p->index = m->n_weights++;
  return NULL;
}

/* What stored executables are keyed by: the plugin's fingerprint, and on
 * the CPU plugin the host's CPU flags (XLA:CPU compiles for the host's
 * instruction set; another machine's executable may not run here), as
 * FNV-1a 64 of /proc/cpuinfo's first "flags" line. torch_tpu/export.py
 * computes the same key. */
static void executable_key(const ttr_plugin *p, char *out, size_t size) {
  const char *fp = tt_runtime_fingerprint(p->rt);
  if (strcmp(tt_runtime_platform_name(p->rt), "cpu") != 0) {
    snprintf(out, size, "%s", fp ? fp : "");
    return;
  }
  uint64_t h = 0xcbf29ce484222325ull;
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[8192];
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5) != 0) continue;
    for (const char *c = line; *c && *c != '\n'; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    break;
  }
  if (f) fclose(f);
  snprintf(out, size, "%s|cpu-flags:%016llx", fp ? fp : "", (unsigned long long)h);
}

static tt_error *read_program(ttr_model *m, const ttj_node *n, program *pr, const ttr_safetensors *st,
                              int max_weights) {
  const char *file = ttj_str(ttj_get(n, "file"));
  const ttj_node *ins = ttj_get(n, "inputs"), *outs = ttj_get(n, "outputs"),
                 *params = ttj_get(n, "params"), *results = ttj_get(n, "results"),
                 *checks = ttj_get(n, "checks"), *exes = ttj_get(n, "executables");
  if (!file || strchr(file, '/') || !ins || ins->kind != TTJ_ARRAY || ins->n_items != m->n_inputs || !outs ||
      outs->kind != TTJ_ARRAY || outs->n_items != m->n_outputs || !params || params->kind != TTJ_ARRAY ||
      !results || results->kind != TTJ_ARRAY || (checks && checks->kind != TTJ_ARRAY))
    return bad(m, "a program entry");
  size_t ni = (size_t)(m->n_inputs ? m->n_inputs : 1), no = (size_t)(m->n_outputs ? m->n_outputs : 1);
  pr->file = strdup(file);
  pr->in_dims = calloc(ni, sizeof *pr->in_dims);
  pr->in_ndim = calloc(ni, sizeof *pr->in_ndim);
  pr->out_dims = calloc(no, sizeof *pr->out_dims);
  pr->out_ndim = calloc(no, sizeof *pr->out_ndim);
  pr->params = calloc((size_t)(params->n_items ? params->n_items : 1), sizeof *pr->params);
  pr->results = calloc((size_t)(results->n_items ? results->n_items : 1), sizeof *pr->results);
  int nc = checks ? checks->n_items : 0;
  pr->checks = calloc((size_t)(nc ? nc : 1), sizeof *pr->checks);
  if (!pr->file || !pr->in_dims || !pr->in_ndim || !pr->out_dims || !pr->out_ndim || !pr->params ||
      !pr->results || !pr->checks)
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  for (int i = 0; i < m->n_inputs; i++)
    if (!read_dims(&ins->items[i], pr->in_dims[i], &pr->in_ndim[i])) return bad(m, "a program's input shape");
  for (int k = 0; k < m->n_outputs; k++)
    if (!read_dims(&outs->items[k], pr->out_dims[k], &pr->out_ndim[k])) return bad(m, "a program's output shape");
  for (int p = 0; p < params->n_items; p++) {
    if (m->n_weights >= max_weights && ttj_get(&params->items[p], "name")) return bad(m, "too many weights");
    TT_TRY(read_param(m, &params->items[p], &pr->params[p], st));
    pr->n_params++;
  }
  for (int o = 0; o < results->n_items; o++) {
    int64_t k = -1;
    if (!ttj_int(&results->items[o], &k) || k < 0 || k >= m->n_outputs) return bad(m, "a program result");
    pr->results[o] = (int)k;
    pr->n_results++;
  }
  for (int i = 0; i < nc; i++) {
    const char *op = ttj_str(ttj_get(&checks->items[i], "op")),
               *msg = ttj_str(ttj_get(&checks->items[i], "message"));
    pr->checks[i].op = strdup(op ? op : "?");
    pr->checks[i].message = strdup(msg ? msg : "a device-side check failed");
    pr->n_checks++;
    if (!pr->checks[i].op || !pr->checks[i].message) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  char fp[1024];
  executable_key(m->plugin, fp, sizeof fp);
  for (int e = 0; exes && e < exes->n_items; e++) {
    const char *efp = ttj_str(ttj_get(&exes->items[e], "fingerprint")),
               *efile = ttj_str(ttj_get(&exes->items[e], "file"));
    if (efp && efile && strcmp(efp, fp) == 0 && !strchr(efile, '/')) {
      pr->exe_file = strdup(efile);
      break;
    }
  }
  return NULL;
}

/* Compares dotted versions: <0, 0, >0. */
static int version_cmp(const char *a, const char *b) {
  while (*a || *b) {
    long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);
    if (x != y) return x < y ? -1 : 1;
    if (*a == '.') a++;
    if (*b == '.') b++;
    if ((*a && (*a < '0' || *a > '9')) || (*b && (*b < '0' || *b > '9'))) break;
  }
  return 0;
}

static tt_error *load(ttr_model *m, const char *path) {
  char file[4096];
  char *text = NULL;
  size_t len = 0;
  snprintf(file, sizeof file, "%s/signature.json", path);
  TT_TRY(read_text(file, &text, &len));
  ttj_node *sig = NULL;
  ttr_safetensors st = {0};
  tt_error *err = ttj_parse(text, len, file, &sig);
  free(text);
  if (err) return err;
  const char *format = ttj_str(ttj_get(sig, "format"));
  const ttj_node *programs = ttj_get(sig, "programs");
  const char *want = ttj_str(ttj_get(ttj_get(sig, "stablehlo"), "version"));
  const char *have = tt_runtime_attribute(m->plugin->rt, "stablehlo_current_version");
  const char *weights = ttj_str(ttj_get(sig, "weights"));
  if (!format || strcmp(format, ARTIFACT_FORMAT) != 0) {
    err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: format '%s' is not '%s' (this runner's)", file,
                       format ? format : "(missing)", ARTIFACT_FORMAT);
  } else if (want && *want && have && *have && version_cmp(have, want) < 0) {
    err = tt_error_new(TT_ERR_PLUGIN,
                       "plugin too old: %s supports StableHLO %s; the artifact %s was exported for "
                       "StableHLO %s. Use a newer plugin, or export with this one",
                       tt_runtime_plugin_path(m->plugin->rt), have, path, want);
  } else if (!programs || programs->kind != TTJ_ARRAY || programs->n_items == 0 || !weights ||
             strchr(weights, '/')) {
    err = bad(m, "no programs or no weights file");
  }
  if (!err) err = read_io(m, ttj_get(sig, "inputs"), &m->inputs, &m->n_inputs, "inputs");
  if (!err) err = read_io(m, ttj_get(sig, "outputs"), &m->outputs, &m->n_outputs, "outputs");
  if (!err) {
    snprintf(file, sizeof file, "%s/%s", path, weights);
    err = ttr_safetensors_read(file, &st);
  }
  if (!err) {
    int max = 0;
    for (int b = 0; b < programs->n_items; b++) {
      const ttj_node *ps = ttj_get(&programs->items[b], "params");
      max += ps ? ps->n_items : 0;
    }
    m->weight_names = calloc((size_t)(max ? max : 1), sizeof *m->weight_names);
    m->weights = calloc((size_t)(max ? max : 1), sizeof *m->weights);
    m->programs = calloc((size_t)programs->n_items, sizeof *m->programs);
    if (!m->weight_names || !m->weights || !m->programs) err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int b = 0; !err && b < programs->n_items; b++) {
      m->n_programs++;
      err = read_program(m, &programs->items[b], &m->programs[b], &st, max);
    }
  }
  ttr_safetensors_clear(&st);
  ttj_free(sig);
  return err;
}

ttr_error *ttr_load(ttr_plugin *plugin, const char *path, ttr_model **out) {
  *out = NULL;
  ttr_model *m = calloc(1, sizeof *m);
  if (!m || !(m->dir = strdup(path))) {
    free(m);
    return E(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  m->plugin = plugin;
  tt_error *err = load(m, path);
  if (err) {
    ttr_model_free(m);
    return ERR(err);
  }
  *out = m;
  return NULL;
}

int ttr_num_inputs(const ttr_model *m) { return m->n_inputs; }
int ttr_num_outputs(const ttr_model *m) { return m->n_outputs; }
const char *ttr_input_name(const ttr_model *m, int i) { return i >= 0 && i < m->n_inputs ? m->inputs[i].name : NULL; }
int ttr_input_dtype(const ttr_model *m, int i) { return i >= 0 && i < m->n_inputs ? (int)m->inputs[i].dtype : -1; }
const char *ttr_output_name(const ttr_model *m, int k) { return k >= 0 && k < m->n_outputs ? m->outputs[k].name : NULL; }
int ttr_output_dtype(const ttr_model *m, int k) { return k >= 0 && k < m->n_outputs ? (int)m->outputs[k].dtype : -1; }
int ttr_num_programs(const ttr_model *m) { return m->n_programs; }
void ttr_model_compile_only(ttr_model *m, int on) { m->compile_only = on != 0; }

int ttr_program_input_dims(const ttr_model *m, int b, int i, int64_t *dims) {
  if (b < 0 || b >= m->n_programs || i < 0 || i >= m->n_inputs) return -1;
  memcpy(dims, m->programs[b].in_dims[i], sizeof(int64_t) * (size_t)m->programs[b].in_ndim[i]);
  return m->programs[b].in_ndim[i];
}

/* ------------------------------------------------------------- running */

static tt_error *ensure_executable(ttr_model *m, program *pr) {
  if (pr->exe) return NULL;
  char file[4096];
  if (pr->exe_file && !m->compile_only) { /* compiled at export for this plugin: load it, else compile */
    snprintf(file, sizeof file, "%s/%s", m->dir, pr->exe_file);
    char *bytes = NULL;
    size_t len = 0;
    tt_error *err = read_text(file, &bytes, &len);
    if (!err) err = tt_executable_deserialize(m->plugin->rt, bytes, len, &pr->exe);
    free(bytes);
    if (!err) return NULL;
    tt_error_free(err);
    pr->exe = NULL;
  }
  snprintf(file, sizeof file, "%s/%s", m->dir, pr->file);
  char *text = NULL;
  size_t len = 0;
  TT_TRY(read_text(file, &text, &len));
  tt_compile_options opts = {2, true};
  tt_error *err = tt_compile(m->plugin->rt, text, len, &opts, &pr->exe);
  free(text);
  if (err) return tt_error_wrap(err, "compiling %s: ", file);
  int want = pr->n_results + (pr->n_checks > 0), have = tt_executable_num_outputs(pr->exe);
  if (have != want) {
    tt_executable_release(pr->exe);
    pr->exe = NULL;
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: the program has %d outputs, the signature %d", file,
                        have, want);
  }
  return NULL;
}

static void describe_shape(char *out, size_t size, const int64_t *dims, int ndim) {
  size_t n = (size_t)snprintf(out, size, "[");
  for (int d = 0; d < ndim && n < size; d++) n += (size_t)snprintf(out + n, size - n, d ? ", %lld" : "%lld", (long long)dims[d]);
  if (n < size) snprintf(out + n, size - n, "]");
}

static tt_error *pick_program(ttr_model *m, const ttr_tensor *in, int n_in, program **out) {
  if (n_in != m->n_inputs)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "the model takes %d inputs, got %d", m->n_inputs, n_in);
  for (int i = 0; i < n_in; i++) {
    if ((int)in[i].dtype != (int)m->inputs[i].dtype)
      return tt_error_new(TT_ERR_TYPE, "input %d (%s): dtype %s, the model takes %s", i, m->inputs[i].name,
                          ttr_dtype_name(in[i].dtype) ? ttr_dtype_name(in[i].dtype) : "unknown",
                          tt_dtype_name(m->inputs[i].dtype));
    if (in[i].ndim < 0 || in[i].ndim > TTR_MAX_DIMS)
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "input %d (%s): rank %d", i, m->inputs[i].name, in[i].ndim);
    int64_t numel = 1;
    for (int d = 0; d < in[i].ndim; d++) numel *= in[i].dims[d];
    if (in[i].nbytes != (size_t)numel * tt_dtype_size(m->inputs[i].dtype))
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "input %d (%s): %zu bytes for its shape's %lld elements",
                          i, m->inputs[i].name, in[i].nbytes, (long long)numel);
  }
  for (int b = 0; b < m->n_programs; b++) {
    program *pr = &m->programs[b];
    bool same = true;
    for (int i = 0; same && i < n_in; i++)
      same = in[i].ndim == pr->in_ndim[i] &&
             memcmp(in[i].dims, pr->in_dims[i], sizeof(int64_t) * (size_t)in[i].ndim) == 0;
    if (same) {
      *out = pr;
      return NULL;
    }
  }
  char got[256], shapes[1024];
  size_t n = 0;
  for (int i = 0; i < n_in && n < sizeof got; i++) {
    describe_shape(got + n, sizeof got - n, in[i].dims, in[i].ndim);
    n = strlen(got);
  }
  n = 0;
  for (int b = 0; b < m->n_programs && n < sizeof shapes - 2; b++) {
    if (b) n += (size_t)snprintf(shapes + n, sizeof shapes - n, " or ");
    for (int i = 0; i < n_in && n < sizeof shapes; i++) {
      describe_shape(shapes + n, sizeof shapes - n, m->programs[b].in_dims[i], m->programs[b].in_ndim[i]);
      n = strlen(shapes);
    }
  }
  return tt_error_new(TT_ERR_INVALID_ARGUMENT, "input shapes %s match no exported program (exported: %s)", got,
                      shapes);
}

void ttr_outputs_free(ttr_outputs *o) {
  if (!o) return;
  for (int k = 0; k < o->n; k++) free((void *)o->tensors[k].data);
  free(o->tensors);
  free(o);
}

int ttr_outputs_count(const ttr_outputs *o) { return o->n; }
const ttr_tensor *ttr_outputs_get(const ttr_outputs *o, int k) { return k >= 0 && k < o->n ? &o->tensors[k] : NULL; }

static tt_error *run(ttr_model *m, const ttr_tensor *in, int n_in, ttr_outputs *res) {
  program *pr = NULL;
  TT_TRY(pick_program(m, in, n_in, &pr));
  TT_TRY(ensure_executable(m, pr));
  int n_outs = pr->n_results + (pr->n_checks > 0);
  tt_buffer **args = calloc((size_t)(pr->n_params ? pr->n_params : 1), sizeof *args);
  bool *owned = calloc((size_t)(pr->n_params ? pr->n_params : 1), sizeof *owned);
  tt_buffer **outs = calloc((size_t)n_outs + 1, sizeof *outs);
  res->tensors = calloc((size_t)(m->n_outputs ? m->n_outputs : 1), sizeof *res->tensors);
  tt_error *err = NULL;
  if (!args || !owned || !outs || !res->tensors) err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  for (int p = 0; !err && p < pr->n_params; p++) {
    const param *pa = &pr->params[p];
    if (pa->kind == P_WEIGHT) {
      args[p] = m->weights[pa->index];
      continue;
    }
    owned[p] = true;
    if (pa->kind == P_VALUE)
      err = tt_buffer_from_host(m->plugin->rt, 0, pa->dtype, NULL, 0, pa->value, &args[p]);
    else
      err = tt_buffer_from_host(m->plugin->rt, 0, pa->dtype, &pa->numel, 1, in[pa->index].data, &args[p]);
  }
  if (!err) err = tt_execute(pr->exe, 0, args, pr->n_params, outs, n_outs);
  if (!err && pr->n_checks) {
    int64_t raw[3] = {TT_CHECK_WORD_OK, -1, 0}; /* core/check_text.h: i64[3], or i32 when older */
    size_t nbytes = tt_buffer_nbytes(outs[pr->n_results]);
    tt_check_word w;
    if (nbytes > sizeof raw) err = tt_error_new(TT_ERR_RUNTIME, "a device-check word of %zu bytes", nbytes);
    if (!err) err = tt_buffer_to_host(outs[pr->n_results], raw, nbytes);
    if (!err && !tt_check_word_decode(raw, nbytes, &w))
      err = tt_error_new(TT_ERR_RUNTIME, "a device-check word of %zu bytes", nbytes);
    if (!err && w.check != TT_CHECK_WORD_OK) {
      int c = w.check >= 0 && w.check < pr->n_checks ? (int)w.check : 0;
      char *text = tt_check_text_fill(pr->checks[c].message, &w);
      err = tt_error_new(TT_ERR_INDEX, "%s: %s (a device-side check of the exported program)", pr->checks[c].op,
                         text ? text : pr->checks[c].message);
      free(text);
    }
  }
  if (!err) res->n = m->n_outputs;
  for (int o = 0; !err && o < pr->n_results; o++) {
    int k = pr->results[o];
    ttr_tensor *t = &res->tensors[k];
    t->dtype = (ttr_dtype)m->outputs[k].dtype;
    t->ndim = pr->out_ndim[k];
    memcpy(t->dims, pr->out_dims[k], sizeof t->dims);
    int64_t numel = 1;
    for (int d = 0; d < t->ndim; d++) numel *= t->dims[d];
    t->nbytes = (size_t)numel * tt_dtype_size(m->outputs[k].dtype);
    if (tt_buffer_nbytes(outs[o]) != t->nbytes) {
      err = tt_error_new(TT_ERR_RUNTIME, "output %d (%s): the program wrote %zu bytes, its shape needs %zu", k,
                         m->outputs[k].name, tt_buffer_nbytes(outs[o]), t->nbytes);
      break;
    }
    void *data = malloc(t->nbytes ? t->nbytes : 1);
    if (!data) err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    else err = tt_buffer_to_host(outs[o], data, t->nbytes);
    t->data = data;
  }
  for (int o = 0; outs && o < n_outs; o++) tt_buffer_release(outs[o]);
  for (int p = 0; args && owned && p < pr->n_params; p++)
    if (owned[p]) tt_buffer_release(args[p]);
  free(args);
  free(owned);
  free(outs);
  return err;
}

ttr_error *ttr_run(ttr_model *m, const ttr_tensor *inputs, int n_inputs, ttr_outputs **out) {
  *out = NULL;
  ttr_outputs *res = calloc(1, sizeof *res);
  if (!res) return E(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  tt_error *err = run(m, inputs, n_inputs, res);
  if (err) {
    res->n = res->tensors ? m->n_outputs : 0; /* outputs copied before the error are freed */
    ttr_outputs_free(res);
    return ERR(err);
  }
  *out = res;
  return NULL;
}
