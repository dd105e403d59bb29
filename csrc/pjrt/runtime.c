/* PJRT runtime, part 1: plugin discovery and loading, the client, plugin
 * attributes, fingerprint, error/event plumbing, synchronize.
 * Buffers, compile and execute live in runtime_buffers.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX declarations under -std=c11 */
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/settings.h"
#include "pjrt/host_malloc.h"
#include "pjrt/runtime_internal.h"

#define TT_PLUGIN_ENV "TORCH_TPU_PJRT_PLUGIN"

/* ------------------------------------------------------- errors and events */

static const char *pjrt_code_name(PJRT_Error_Code c) {
  static const char *const names[] = {
      "OK",          "CANCELLED",         "UNKNOWN",        "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED", "NOT_FOUND",   "ALREADY_EXISTS", "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
      "UNIMPLEMENTED", "INTERNAL",        "UNAVAILABLE",    "DATA_LOSS",
      "UNAUTHENTICATED"};
  return (unsigned)c < sizeof names / sizeof names[0] ? names[c] : "?";
}

static void pjrt_error_destroy(const PJRT_Api *api, PJRT_Error *err) {
  if (!err) return;
  PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_SIZE, .error = err};
  api->PJRT_Error_Destroy(&d);
}

tt_error *tt_pjrt_error(const PJRT_Api *api, PJRT_Error *err, tt_error_code code,
                        const char *what) {
  if (!err) return NULL;
  PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_SIZE, .error = err};
  api->PJRT_Error_Message(&m);
  PJRT_Error_GetCode_Args g = {.struct_size = PJRT_Error_GetCode_Args_SIZE, .error = err};
  PJRT_Error *gerr = api->PJRT_Error_GetCode(&g);
  PJRT_Error_Code pc = gerr ? PJRT_Error_Code_UNKNOWN : g.code;
  pjrt_error_destroy(api, gerr);
  if (pc == PJRT_Error_Code_RESOURCE_EXHAUSTED && code != TT_ERR_COMPILE)
    code = TT_ERR_OUT_OF_MEMORY;
  int len = m.message && m.message_size < (size_t)1 << 30 ? (int)m.message_size : 0;
  tt_error *out = tt_error_new(code, "%s: %.*s [PJRT %s]", what, len, m.message ? m.message : "",
                               pjrt_code_name(pc));
  pjrt_error_destroy(api, err);
  return out;
}

void tt_pjrt_event_destroy(const PJRT_Api *api, PJRT_Event *ev) {
  if (!ev) return;
  PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_SIZE, .event = ev};
  pjrt_error_destroy(api, api->PJRT_Event_Destroy(&d));
}

tt_error *tt_pjrt_await(const PJRT_Api *api, PJRT_Event *ev, tt_error_code code,
                        const char *what) {
  if (!ev) return NULL;
  PJRT_Event_Await_Args a = {.struct_size = PJRT_Event_Await_Args_SIZE, .event = ev};
  tt_error *err = tt_pjrt_error(api, api->PJRT_Event_Await(&a), code, what);
  tt_pjrt_event_destroy(api, ev);
  return err;
}

/* Records the first asynchronous failure; frees later ones. Caller holds lock. */
static void note_async_error_locked(tt_runtime *rt, tt_error *err) {
  if (!err) return;
  if (!rt->async_err)
    rt->async_err = err;
  else
    tt_error_free(err);
}

/* Destroys every finished event on the pending list, keeping its error. */
static void reap_locked(tt_runtime *rt) {
  const PJRT_Api *api = rt->api;
  size_t keep = 0;
  for (size_t i = 0; i < rt->num_pending; i++) {
    PJRT_Event *ev = rt->pending[i];
    PJRT_Event_IsReady_Args r = {.struct_size = PJRT_Event_IsReady_Args_SIZE, .event = ev};
    PJRT_Error *e = api->PJRT_Event_IsReady(&r);
    if (e) { /* cannot tell: leave it for synchronize to await */
      pjrt_error_destroy(api, e);
      rt->pending[keep++] = ev;
      continue;
    }
    if (!r.is_ready) {
      rt->pending[keep++] = ev;
      continue;
    }
    PJRT_Event_Error_Args x = {.struct_size = PJRT_Event_Error_Args_SIZE, .event = ev};
    note_async_error_locked(
        rt, tt_pjrt_error(api, api->PJRT_Event_Error(&x), TT_ERR_RUNTIME, "asynchronous execution failed"));
    tt_pjrt_event_destroy(api, ev);
  }
  rt->num_pending = keep;
  /* Amortize: next scan after another 64 launches, however many are in flight. */
  rt->next_reap = keep + 64;
}

void tt_runtime_track_event(tt_runtime *rt, PJRT_Event *ev) {
  if (!ev) return;
  pthread_mutex_lock(&rt->lock);
  if (rt->num_pending >= rt->next_reap) reap_locked(rt);
  if (rt->num_pending == rt->cap_pending) {
    size_t cap = rt->cap_pending ? rt->cap_pending * 2 : 128;
    PJRT_Event **p = realloc(rt->pending, cap * sizeof *p);
    if (!p) { /* no memory to remember it: wait for it now instead */
      pthread_mutex_unlock(&rt->lock);
      tt_error *err = tt_pjrt_await(rt->api, ev, TT_ERR_RUNTIME, "asynchronous execution failed");
      pthread_mutex_lock(&rt->lock);
      note_async_error_locked(rt, err);
      pthread_mutex_unlock(&rt->lock);
      return;
    }
    rt->pending = p;
    rt->cap_pending = cap;
  }
  rt->pending[rt->num_pending++] = ev;
  pthread_mutex_unlock(&rt->lock);
}

tt_error *tt_runtime_synchronize(tt_runtime *rt) {
  if (!rt) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_runtime_synchronize: NULL runtime");
  pthread_mutex_lock(&rt->lock);
  PJRT_Event **list = rt->pending;
  size_t n = rt->num_pending;
  rt->pending = NULL;
  rt->num_pending = rt->cap_pending = 0;
  rt->next_reap = 64;
  pthread_mutex_unlock(&rt->lock);

  tt_error *first = NULL;
  for (size_t i = 0; i < n; i++) {
    tt_error *err = tt_pjrt_await(rt->api, list[i], TT_ERR_RUNTIME, "asynchronous execution failed");
    if (err && !first)
      first = err;
    else
      tt_error_free(err);
  }
  free(list);

  pthread_mutex_lock(&rt->lock);
  tt_error *async = rt->async_err;
  rt->async_err = NULL;
  pthread_mutex_unlock(&rt->lock);
  if (async) { /* it happened earlier than anything we just awaited */
    tt_error_free(first);
    return async;
  }
  return first;
}

/* ------------------------------------------------------------------ dtypes */

PJRT_Buffer_Type tt_pjrt_type_of(tt_dtype dt) {
  switch (dt) {
    case TT_BOOL: return PJRT_Buffer_Type_PRED;
    case TT_U8: return PJRT_Buffer_Type_U8;
    case TT_I8: return PJRT_Buffer_Type_S8;
    case TT_I16: return PJRT_Buffer_Type_S16;
    case TT_I32: return PJRT_Buffer_Type_S32;
    case TT_I64: return PJRT_Buffer_Type_S64;
    case TT_F16: return PJRT_Buffer_Type_F16;
    case TT_BF16: return PJRT_Buffer_Type_BF16;
    case TT_F32: return PJRT_Buffer_Type_F32;
    case TT_F64: return PJRT_Buffer_Type_F64;
    case TT_U32: return PJRT_Buffer_Type_U32;
    case TT_U64: return PJRT_Buffer_Type_U64;
    case TT_C64: return PJRT_Buffer_Type_C64;
    case TT_C128: return PJRT_Buffer_Type_C128;
    case TT_DTYPE_COUNT: break;
  }
  return PJRT_Buffer_Type_INVALID;
}

bool tt_dtype_of_pjrt(PJRT_Buffer_Type t, tt_dtype *out) {
  for (int d = 0; d < TT_DTYPE_COUNT; d++) {
    if (tt_pjrt_type_of((tt_dtype)d) == t) {
      *out = (tt_dtype)d;
      return true;
    }
  }
  return false;
}

/* ---------------------------------------------------------- plugin search */

/* Sets errno (0 for "exists but is not a regular file") when it says no. */
static bool is_readable_file(const char *path) {
  struct stat st;
  errno = 0;
  if (stat(path, &st) != 0) return false;
  if (!S_ISREG(st.st_mode)) {
    errno = 0;
    return false;
  }
  return access(path, R_OK) == 0;
}

static tt_error *copy_out(const char *path, char *out, size_t out_size) {
  size_t len = strlen(path);
  if (!out || len + 1 > out_size)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "plugin path %s does not fit the %zu-byte output buffer", path, out_size);
  memcpy(out, path, len + 1);
  return NULL;
}

/* libtpu anywhere on the path beats the CPU plugin anywhere on the path. */
static const char *const plugin_rel_paths[] = {"libtpu/libtpu.so",
                                               "xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"};

int tt_runtime_plugin_candidates(const char *const *search_dirs,
                                 void (*fn)(void *ctx, const char *rel, const char *path),
                                 void *ctx) {
  char path[4096];
  int n_found = 0;
  for (size_t r = 0; r < sizeof plugin_rel_paths / sizeof plugin_rel_paths[0]; r++) {
    for (const char *const *d = search_dirs; d && *d; d++) {
      if (!**d) continue;
      int n = snprintf(path, sizeof path, "%s/%s", *d, plugin_rel_paths[r]);
      if (n > 0 && (size_t)n < sizeof path && is_readable_file(path)) {
        if (fn) fn(ctx, plugin_rel_paths[r], path);
        n_found++;
      }
    }
  }
  return n_found;
}

typedef struct {
  char *out;
  size_t out_size;
  tt_error *err;
  bool found;
} first_candidate;

static void take_first(void *ctx, const char *rel, const char *path) {
  (void)rel;
  first_candidate *f = ctx;
  if (f->found) return;
  f->found = true;
  f->err = copy_out(path, f->out, f->out_size);
}

tt_error *tt_runtime_find_plugin(const char *const *search_dirs, char *out, size_t out_size) {
  char env[4096];
  TT_TRY(tt_setting_path(TT_SETTING_PJRT_PLUGIN, env, sizeof env));
  if (*env) {
    if (!is_readable_file(env))
      return tt_error_new(TT_ERR_PLUGIN, "%s=%s: no readable plugin file there (%s)",
                          TT_PLUGIN_ENV, env, errno ? strerror(errno) : "not a regular file");
    return copy_out(env, out, out_size);
  }
  first_candidate f = {out, out_size, NULL, false};
  tt_runtime_plugin_candidates(search_dirs, take_first, &f);
  if (f.found) return f.err;
  return tt_error_new(TT_ERR_PLUGIN,
                      "no PJRT plugin found: set %s to a plugin .so, or install libtpu "
                      "(libtpu/libtpu.so) or xla-cpu-pjrt "
                      "(xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so) into a searched site-packages",
                      TT_PLUGIN_ENV);
}

/* ----------------------------------------------------------- plugin load */

/* Plugins are initialized once per process and never unloaded (XLA plugins
 * start threads and register static state; dlclose is not safe for them). */
static pthread_mutex_t g_plugins_lock = PTHREAD_MUTEX_INITIALIZER;
static const PJRT_Api *g_initialized[16];
static int g_num_initialized;

static tt_error *initialize_once(const PJRT_Api *api, const char *path) {
  tt_error *err = NULL;
  pthread_mutex_lock(&g_plugins_lock);
  for (int i = 0; i < g_num_initialized; i++)
    if (g_initialized[i] == api) goto done;
  PJRT_Plugin_Initialize_Args a = {.struct_size = PJRT_Plugin_Initialize_Args_SIZE};
  err = tt_pjrt_error(api, api->PJRT_Plugin_Initialize(&a), TT_ERR_PLUGIN,
                      "PJRT_Plugin_Initialize failed");
  if (err) {
    err = tt_error_wrap(err, "%s: ", path);
    goto done;
  }
  if (g_num_initialized < (int)(sizeof g_initialized / sizeof g_initialized[0]))
    g_initialized[g_num_initialized++] = api;
done:
  pthread_mutex_unlock(&g_plugins_lock);
  return err;
}

static char *dup_n(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = 0;
  return p;
}

static char *named_value_string(const PJRT_NamedValue *v) {
  char buf[512];
  switch (v->type) {
    case PJRT_NamedValue_kString:
      return dup_n(v->string_value ? v->string_value : "", v->string_value ? v->value_size : 0);
    case PJRT_NamedValue_kInt64:
      snprintf(buf, sizeof buf, "%" PRId64, v->int64_value);
      break;
    case PJRT_NamedValue_kInt64List: { /* versions: "1.9.3" */
      size_t off = 0;
      buf[0] = 0;
      for (size_t i = 0; i < v->value_size && off < sizeof buf - 24; i++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%" PRId64, i ? "." : "",
                                v->int64_array_value[i]);
      break;
    }
    case PJRT_NamedValue_kFloat:
      snprintf(buf, sizeof buf, "%g", (double)v->float_value);
      break;
    case PJRT_NamedValue_kBool:
      snprintf(buf, sizeof buf, "%s", v->bool_value ? "true" : "false");
      break;
    default:
      snprintf(buf, sizeof buf, "?");
  }
  return dup_n(buf, strlen(buf));
}

static tt_error *read_attributes(tt_runtime *rt) {
  const PJRT_Api *api = rt->api;
  if (!TT_PJRT_HAS(api, PJRT_Plugin_Attributes)) return NULL;
  PJRT_Plugin_Attributes_Args a = {.struct_size = PJRT_Plugin_Attributes_Args_SIZE};
  TT_TRY(tt_pjrt_error(api, api->PJRT_Plugin_Attributes(&a), TT_ERR_PLUGIN,
                       "PJRT_Plugin_Attributes failed"));
  if (!a.num_attributes) return NULL;
  rt->attrs = calloc(a.num_attributes, sizeof *rt->attrs);
  if (!rt->attrs) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  for (size_t i = 0; i < a.num_attributes; i++) {
    const PJRT_NamedValue *v = &a.attributes[i];
    tt_attr *t = &rt->attrs[rt->num_attrs++];
    t->name = dup_n(v->name ? v->name : "", v->name ? v->name_size : 0);
    t->value = named_value_string(v);
    if (!t->name || !t->value) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  return NULL;
}

/* Slots the runtime cannot work without. Checked once at open so the hot
 * paths can call them directly. */
#define REQUIRED_SLOTS(X)                                                                  \
  X(PJRT_Error_Destroy) X(PJRT_Error_Message) X(PJRT_Error_GetCode)                        \
  X(PJRT_Plugin_Initialize) X(PJRT_Event_Destroy) X(PJRT_Event_IsReady) X(PJRT_Event_Error) \
  X(PJRT_Event_Await) X(PJRT_Client_Create) X(PJRT_Client_Destroy)                         \
  X(PJRT_Client_PlatformName) X(PJRT_Client_AddressableDevices) X(PJRT_Client_Compile)     \
  X(PJRT_Client_BufferFromHostBuffer) X(PJRT_Device_GetDescription)                        \
  X(PJRT_DeviceDescription_Kind) X(PJRT_Executable_Destroy) X(PJRT_Executable_NumOutputs)  \
  X(PJRT_LoadedExecutable_Destroy) X(PJRT_LoadedExecutable_GetExecutable)                  \
  X(PJRT_LoadedExecutable_AddressableDevices) X(PJRT_LoadedExecutable_Execute)             \
  X(PJRT_Buffer_Destroy) X(PJRT_Buffer_ElementType) X(PJRT_Buffer_Dimensions)              \
  X(PJRT_Buffer_ToHostBuffer) X(PJRT_Buffer_ReadyEvent)

static tt_error *check_slots(const PJRT_Api *api, const char *path) {
#define CHECK_SLOT(name)                                                                    \
  if (!TT_PJRT_HAS(api, name))                                                              \
    return tt_error_new(TT_ERR_PLUGIN, "PJRT plugin %s lacks %s (API %d.%d)", path, #name, \
                        api->pjrt_api_version.major_version,                                \
                        api->pjrt_api_version.minor_version);
  REQUIRED_SLOTS(CHECK_SLOT)
#undef CHECK_SLOT
  return NULL;
}

static const char *path_basename(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static tt_error *create_client(tt_runtime *rt, const tt_runtime_options *opts) {
  const PJRT_Api *api = rt->api;
  tt_plugin_kind kind = tt_plugin_kind_of(rt->path);
  tt_runtime_options o = *opts;
  /* Other plugins (GPU) reject option names they do not know, so the CPU
   * option is only sent to plugins that look like CPU plugins
   * (tt_runtime_create_options), and a rejection of it falls back to no
   * options. */
  for (;;) {
    PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_SIZE};
    PJRT_NamedValue named[TT_CREATE_OPTIONS_MAX];
    int64_t lists[TT_CREATE_OPTIONS_MAX];
    TT_TRY(tt_runtime_fill_create_args(&o, kind, &a, named, lists));
    PJRT_Error *perr = api->PJRT_Client_Create(&a);
    if (!perr) {
      rt->client = a.client;
      return NULL;
    }
    tt_error *err = tt_pjrt_error(api, perr, TT_ERR_PLUGIN, "PJRT_Client_Create failed");
    if (o.num_cpu_devices > 0 && kind == TT_PLUGIN_CPU &&
        strstr(tt_error_message(err), "cpu_device_count")) {
      tt_error_free(err);
      o.num_cpu_devices = 0;
      continue;
    }
    if (o.num_nodes > 1)
      err = tt_error_wrap(err, "a client of %d processes (this one %d): ", o.num_nodes, o.node_id);
    return tt_error_wrap(err, "%s: ", rt->path);
  }
}

static tt_error *read_devices(tt_runtime *rt) {
  const PJRT_Api *api = rt->api;
  PJRT_Client_PlatformName_Args p = {.struct_size = PJRT_Client_PlatformName_Args_SIZE,
                                     .client = rt->client};
  TT_TRY(tt_pjrt_error(api, api->PJRT_Client_PlatformName(&p), TT_ERR_PLUGIN,
                       "PJRT_Client_PlatformName failed"));
  rt->platform = dup_n(p.platform_name ? p.platform_name : "", p.platform_name ? p.platform_name_size : 0);
  if (!rt->platform) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");

  PJRT_Client_AddressableDevices_Args d = {
      .struct_size = PJRT_Client_AddressableDevices_Args_SIZE, .client = rt->client};
  TT_TRY(tt_pjrt_error(api, api->PJRT_Client_AddressableDevices(&d), TT_ERR_PLUGIN,
                       "PJRT_Client_AddressableDevices failed"));
  if (d.num_addressable_devices == 0)
    return tt_error_new(TT_ERR_PLUGIN, "PJRT plugin %s: the client has no addressable devices",
                        rt->path);
  int n = (int)d.num_addressable_devices;
  rt->devices = calloc((size_t)n, sizeof *rt->devices);
  rt->device_kinds = calloc((size_t)n, sizeof *rt->device_kinds);
  if (!rt->devices || !rt->device_kinds) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  rt->num_devices = n;
  for (int i = 0; i < n; i++) {
    rt->devices[i] = d.addressable_devices[i];
    PJRT_Device_GetDescription_Args g = {.struct_size = PJRT_Device_GetDescription_Args_SIZE,
                                         .device = rt->devices[i]};
    TT_TRY(tt_pjrt_error(api, api->PJRT_Device_GetDescription(&g), TT_ERR_PLUGIN,
                         "PJRT_Device_GetDescription failed"));
    PJRT_DeviceDescription_String_Args k = {
        .struct_size = PJRT_DeviceDescription_String_Args_SIZE,
        .device_description = g.device_description};
    TT_TRY(tt_pjrt_error(api, api->PJRT_DeviceDescription_Kind(&k), TT_ERR_PLUGIN,
                         "PJRT_DeviceDescription_Kind failed"));
    rt->device_kinds[i] = dup_n(k.str ? k.str : "", k.str ? k.str_size : 0);
    if (!rt->device_kinds[i]) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  return NULL;
}

static void runtime_free(tt_runtime *rt) {
  if (!rt) return;
  tt_reaper_shutdown(rt); /* destroys the buffers still queued */
  if (rt->client) {
    /* Nothing can still reference the client: drain what is left. */
    tt_error_free(tt_runtime_synchronize(rt));
    PJRT_Client_Destroy_Args d = {.struct_size = PJRT_Client_Destroy_Args_SIZE,
                                  .client = rt->client};
    pjrt_error_destroy(rt->api, rt->api->PJRT_Client_Destroy(&d));
  }
  tt_error_free(rt->async_err);
  free(rt->pending);
  for (int i = 0; i < rt->num_attrs; i++) {
    free(rt->attrs[i].name);
    free(rt->attrs[i].value);
  }
  free(rt->attrs);
  if (rt->device_kinds)
    for (int i = 0; i < rt->num_devices; i++) free(rt->device_kinds[i]);
  free(rt->device_kinds);
  free(rt->devices);
  free(rt->platform);
  free(rt->fingerprint);
  free(rt->path);
  pthread_mutex_destroy(&rt->lock);
  free(rt);
}

void tt_runtime_retain_internal(tt_runtime *rt) { atomic_fetch_add(&rt->refs, 1); }

void tt_runtime_release_internal(tt_runtime *rt) {
  if (atomic_fetch_sub(&rt->refs, 1) == 1) runtime_free(rt);
}

tt_error *tt_runtime_open(const char *plugin_path, int num_cpu_devices, tt_runtime **out) {
  tt_runtime_options o = {0};
  /* torch.distributed's options for a multi-process client, if set, apply
   * to plugins that are not the CPU one (which has no such client) */
  if (!tt_runtime_get_process_options(&o) || tt_plugin_kind_of(plugin_path) == TT_PLUGIN_CPU)
    o = (tt_runtime_options){.visible_device = -1};
  o.num_cpu_devices = num_cpu_devices;
  return tt_runtime_open_with(plugin_path, &o, out);
}

tt_error *tt_runtime_open_with(const char *plugin_path, const tt_runtime_options *opts,
                               tt_runtime **out) {
  if (!out) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_runtime_open: out is NULL");
  *out = NULL;
  if (!opts) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_runtime_open: no options");
  if (!plugin_path || !*plugin_path)
    return tt_error_new(TT_ERR_PLUGIN, "no PJRT plugin path given");
  if (access(plugin_path, R_OK) != 0)
    return tt_error_new(TT_ERR_PLUGIN, "cannot load PJRT plugin %s: %s", plugin_path,
                        strerror(errno));

  dlerror();
  void *dl = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *msg = dlerror();
    return tt_error_new(TT_ERR_PLUGIN, "cannot load PJRT plugin %s: %s", plugin_path,
                        msg ? msg : "dlopen failed");
  }
  /* From here on the library stays loaded (see initialize_once). */
  PJRT_GetPjrtApi_Fn get_api;
  *(void **)&get_api = dlsym(dl, "GetPjrtApi");
  if (!get_api)
    return tt_error_new(TT_ERR_PLUGIN, "%s is not a PJRT plugin: it does not export GetPjrtApi",
                        plugin_path);
  const PJRT_Api *api = get_api();
  if (!api || api->struct_size < offsetof(PJRT_Api, PJRT_Error_Destroy))
    return tt_error_new(TT_ERR_PLUGIN, "%s: GetPjrtApi returned no usable API table", plugin_path);
  int major = api->pjrt_api_version.major_version;
  int minor = api->pjrt_api_version.minor_version;
  if (major != TT_PJRT_ABI_MAJOR || minor < TT_PJRT_MIN_MINOR)
    return tt_error_new(TT_ERR_PLUGIN,
                        "PJRT plugin %s implements PJRT C API %d.%d; torch_tpu needs API "
                        "%d.%d or newer within major version %d (it is built against %d.%d)",
                        plugin_path, major, minor, TT_PJRT_ABI_MAJOR, TT_PJRT_MIN_MINOR,
                        TT_PJRT_ABI_MAJOR, TT_PJRT_ABI_MAJOR, TT_PJRT_ABI_MINOR);
  TT_TRY(check_slots(api, plugin_path));
  TT_TRY(initialize_once(api, plugin_path));

  tt_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  atomic_init(&rt->refs, 1);
  atomic_init(&rt->live_buffers, 0);
  atomic_init(&rt->buffer_bytes, 0);
  atomic_init(&rt->peak_buffer_bytes, 0);
  atomic_init(&rt->live_executables, 0);
  pthread_mutex_init(&rt->lock, NULL);
  tt_reaper_init(&rt->reaper);
  rt->api = api;
  rt->api_major = major;
  rt->api_minor = minor;
  atomic_init(&rt->host_layout_ok, true);
  atomic_init(&rt->cpu_direct, false);
  atomic_init(&rt->track_completion, true);
  rt->next_reap = 64;
  rt->path = dup_n(plugin_path, strlen(plugin_path));
  tt_error *err = rt->path ? NULL : tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  if (!err) err = read_attributes(rt);
  if (!err) err = create_client(rt, opts);
  if (!err) err = read_devices(rt);
  if (!err && strcmp(rt->platform, "cpu") == 0) {
    atomic_store(&rt->host_layout_ok, false); /* CPU buffers are row-major already */
    tt_host_malloc_tune(); /* host memory is device memory here */
    atomic_store(&rt->cpu_direct, TT_PJRT_HAS(api, PJRT_Buffer_OnDeviceSizeInBytes) &&
                     TT_PJRT_HAS(api, PJRT_Buffer_IncreaseExternalReferenceCount) &&
                     TT_PJRT_HAS(api, PJRT_Buffer_DecreaseExternalReferenceCount) &&
                     TT_PJRT_HAS(api, PJRT_Buffer_OpaqueDeviceMemoryDataPointer));
  }
  if (err) {
    runtime_free(rt);
    return err;
  }
  *out = rt;
  return NULL;
}

void tt_runtime_close(tt_runtime *rt) {
  if (!rt) return;
  tt_error_free(tt_runtime_synchronize(rt));
  tt_runtime_release_internal(rt);
}

/* ---------------------------------------------------------------- queries */

int tt_runtime_device_count(const tt_runtime *rt) { return rt ? rt->num_devices : 0; }

const char *tt_runtime_platform_name(const tt_runtime *rt) { return rt ? rt->platform : NULL; }
const char *tt_runtime_plugin_path(const tt_runtime *rt) { return rt ? rt->path : NULL; }

const char *tt_runtime_device_kind(const tt_runtime *rt, int device) {
  if (!rt || device < 0 || device >= rt->num_devices) return NULL;
  return rt->device_kinds[device];
}

void tt_runtime_api_version(const tt_runtime *rt, int *major, int *minor) {
  if (major) *major = rt ? rt->api_major : 0;
  if (minor) *minor = rt ? rt->api_minor : 0;
}

const char *tt_runtime_attribute(const tt_runtime *rt, const char *name) {
  if (!rt || !name) return NULL;
  for (int i = 0; i < rt->num_attrs; i++)
    if (strcmp(rt->attrs[i].name, name) == 0) return rt->attrs[i].value;
  return NULL;
}

/* ------------------------------------------------------------ fingerprint */

/* Four interleaved FNV-1a 64 lanes over 8-byte words, folded at the end. Not
 * byte-wise FNV-1a, but the same mixing, and 4 independent multiply chains:
 * the 260 MB CPU plugin hashes in ~15 ms once in the page cache (~40 ms
 * including the reads), against ~250 ms for byte-wise FNV-1a. */
typedef struct {
  uint64_t lane[4];
} fnv4;

static void fnv4_init(fnv4 *h) {
  for (unsigned i = 0; i < 4; i++) h->lane[i] = UINT64_C(0xcbf29ce484222325) ^ i;
}

/* n must be a multiple of 32 except on the last call. */
static void fnv4_update(fnv4 *h, const unsigned char *p, size_t n) {
  const uint64_t prime = 0x100000001b3ULL;
  uint64_t a = h->lane[0], b = h->lane[1], c = h->lane[2], d = h->lane[3];
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    memcpy(w, p + i, sizeof w);
    a = (a ^ w[0]) * prime;
    b = (b ^ w[1]) * prime;
    c = (c ^ w[2]) * prime;
    d = (d ^ w[3]) * prime;
  }
  for (; i < n; i++) a = (a ^ p[i]) * prime;
  h->lane[0] = a, h->lane[1] = b, h->lane[2] = c, h->lane[3] = d;
}

static uint64_t fnv4_final(const fnv4 *h) {
  const uint64_t prime = 0x100000001b3ULL;
  uint64_t x = 0xcbf29ce484222325ULL;
  for (int i = 0; i < 4; i++) x = (x ^ h->lane[i]) * prime;
  return x;
}

static tt_error *hash_file(const char *path, uint64_t *hash, uint64_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tt_error_new(TT_ERR_PLUGIN, "cannot read %s: %s", path, strerror(errno));
  enum { CHUNK = 1 << 20 }; /* multiple of 32 */
  unsigned char *buf = malloc(CHUNK);
  if (!buf) {
    close(fd);
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  fnv4 h;
  fnv4_init(&h);
  uint64_t total = 0;
  tt_error *err = NULL;
  for (;;) {
    size_t got = 0; /* fill the whole chunk so only the last one is partial */
    while (got < CHUNK) {
      ssize_t r = read(fd, buf + got, CHUNK - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        err = tt_error_new(TT_ERR_PLUGIN, "cannot read %s: %s", path, strerror(errno));
        break;
      }
      if (r == 0) break;
      got += (size_t)r;
    }
    if (err) break;
    fnv4_update(&h, buf, got);
    total += got;
    if (got < CHUNK) break;
  }
  free(buf);
  close(fd);
  if (err) return err;
  *hash = fnv4_final(&h);
  *size = total;
  return NULL;
}

const char *tt_runtime_fingerprint(const tt_runtime *crt) {
  if (!crt) return NULL;
  tt_runtime *rt = (tt_runtime *)crt; /* lazily filled cache; guarded by lock */
  pthread_mutex_lock(&rt->lock);
  const char *fp = rt->fingerprint;
  pthread_mutex_unlock(&rt->lock);
  if (fp) return fp;

  /* Hash without holding the lock (tens of ms); first writer wins. */
  uint64_t h = 0, size = 0;
  tt_error *err = hash_file(rt->path, &h, &size);
  const char *xla = tt_runtime_attribute(rt, "xla_version");
  char buf[512];
  if (err) { /* unreadable now: a key that can never match a good one */
    snprintf(buf, sizeof buf, "%s;unhashed;pjrt=%d.%d;xla=%s", path_basename(rt->path),
             rt->api_major, rt->api_minor, xla ? xla : "unknown");
    tt_error_free(err);
  } else {
    snprintf(buf, sizeof buf, "%s;size=%" PRIu64 ";fnv1a64x4=%016" PRIx64 ";pjrt=%d.%d;xla=%s",
             path_basename(rt->path), size, h, rt->api_major, rt->api_minor,
             xla ? xla : "unknown");
  }
  char *mine = dup_n(buf, strlen(buf));
  pthread_mutex_lock(&rt->lock);
  if (!rt->fingerprint)
    rt->fingerprint = mine;
  else
    free(mine);
  fp = rt->fingerprint;
  pthread_mutex_unlock(&rt->lock);
  return fp;
}

void tt_runtime_buffer_bytes(tt_runtime *rt, int64_t *live, int64_t *peak) {
  if (live) *live = atomic_load(&rt->buffer_bytes);
  if (peak) *peak = atomic_load(&rt->peak_buffer_bytes);
}

void tt_runtime_reset_peak_buffer_bytes(tt_runtime *rt) {
  atomic_store(&rt->peak_buffer_bytes, atomic_load(&rt->buffer_bytes));
}

/* ------------------------------------------------------------ test hooks */

void tt_runtime_debug_counts(tt_runtime *rt, long *buffers, long *executables,
                             size_t *pending_events) {
  if (buffers) *buffers = atomic_load(&rt->live_buffers);
  if (executables) *executables = atomic_load(&rt->live_executables);
  if (pending_events) {
    pthread_mutex_lock(&rt->lock);
    *pending_events = rt->num_pending;
    pthread_mutex_unlock(&rt->lock);
  }
}

void tt_runtime_set_track_completion(tt_runtime *rt, bool on) {
  atomic_store(&rt->track_completion, on);
}

bool tt_runtime_set_cpu_direct_read(tt_runtime *rt, bool on) {
  bool was = atomic_load(&rt->cpu_direct);
  if (!on)
    atomic_store(&rt->cpu_direct, false);
  else if (strcmp(rt->platform, "cpu") == 0 &&
           TT_PJRT_HAS(rt->api, PJRT_Buffer_OpaqueDeviceMemoryDataPointer))
    atomic_store(&rt->cpu_direct, true);
  return was;
}
