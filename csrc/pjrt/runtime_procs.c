/* PJRT runtime, part 5: clients that span processes (the distributed layer's
 * compiled transport across processes; docs/distributed.md).
 *
 * - The create options of PJRT_Client_Create (tt_runtime_create_options):
 *   cpu_device_count for the CPU plugin; num_nodes, node_id and
 *   visible_devices for a multi-process client of another plugin (the CUDA
 *   plugin's names); none for libtpu, whose processes join through the
 *   environment libtpu reads.
 * - The key-value callbacks of PJRT_Client_Create_Args, C functions over a
 *   tt_kv_store (torch_tpu implements it over the c10d Store).
 * - The client's whole device table, every process's devices with their
 *   global ids (PJRT_Client_Devices), and the mapping of a device
 *   assignment of global ids onto this process's devices.
 *
 * Written against the PJRT C API; run here only with the CPU plugin, which
 * has no multi-process client (it reads cpu_device_count alone): the
 * options, the callbacks (through tt_kv_callbacks_test_*) and the mapping
 * are tested, a multi-process client is not (docs/distributed.md). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/runtime_internal.h"

static tt_error *oom(void) { return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"); }

/* ------------------------------------------------------- create options */

tt_plugin_kind tt_plugin_kind_of(const char *plugin_path) {
  const char *base = plugin_path ? strrchr(plugin_path, '/') : NULL;
  base = base ? base + 1 : plugin_path ? plugin_path : "";
  if (strstr(base, "libtpu")) return TT_PLUGIN_TPU;
  if (strstr(base, "cpu")) return TT_PLUGIN_CPU;
  return TT_PLUGIN_OTHER;
}

static tt_error *add_option(tt_create_option *out, int cap, int *n, const char *name, bool is_list,
                            int64_t value) {
  if (*n >= cap)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_runtime_create_options: room for %d options only",
                        cap);
  out[*n] = (tt_create_option){.name = name, .is_list = is_list, .value = value};
  (*n)++;
  return NULL;
}

tt_error *tt_runtime_create_options(const tt_runtime_options *opts, tt_plugin_kind kind,
                                    tt_create_option *out, int cap, int *n) {
  if (!opts || !n || (cap > 0 && !out) || cap < 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_runtime_create_options: bad arguments");
  *n = 0;
  bool multi = opts->num_nodes > 1;
  if (opts->num_nodes < 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "a client of %d processes (num_nodes must be >= 1)",
                        opts->num_nodes);
  if (multi && (opts->node_id < 0 || opts->node_id >= opts->num_nodes))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "node_id %d is out of range for a client of %d processes", opts->node_id,
                        opts->num_nodes);
  if (multi && (!opts->kv || !opts->kv->get || !opts->kv->put))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "a client of %d processes needs a key-value store (get and put) through "
                        "which the processes find each other",
                        opts->num_nodes);
  switch (kind) {
    case TT_PLUGIN_CPU:
      if (multi)
        return tt_error_new(TT_ERR_NOT_IMPLEMENTED,
                            "the CPU PJRT plugin has no multi-process client (it reads only the "
                            "cpu_device_count option and ignores the key-value callbacks), so a "
                            "client of %d processes cannot be made with it",
                            opts->num_nodes);
      if (opts->num_cpu_devices > 0)
        TT_TRY(add_option(out, cap, n, "cpu_device_count", false, opts->num_cpu_devices));
      return NULL;
    case TT_PLUGIN_TPU:
      /* libtpu: the processes of a slice join through the environment it
       * reads (process bounds, addresses, visible chips), not options */
      return NULL;
    case TT_PLUGIN_OTHER:
      if (!multi) return NULL;
      TT_TRY(add_option(out, cap, n, "num_nodes", false, opts->num_nodes));
      TT_TRY(add_option(out, cap, n, "node_id", false, opts->node_id));
      if (opts->visible_device >= 0)
        TT_TRY(add_option(out, cap, n, "visible_devices", true, opts->visible_device));
      return NULL;
  }
  return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_runtime_create_options: unknown plugin kind %d",
                      (int)kind);
}

/* ------------------------------------------------- key-value callbacks */

static PJRT_Error_Code pjrt_code_of(const tt_error *err) {
  if (strstr(tt_error_message(err), "timed out")) return PJRT_Error_Code_DEADLINE_EXCEEDED;
  switch (tt_error_code_of(err)) {
    case TT_ERR_INVALID_ARGUMENT: return PJRT_Error_Code_INVALID_ARGUMENT;
    case TT_ERR_OUT_OF_MEMORY: return PJRT_Error_Code_RESOURCE_EXHAUSTED;
    case TT_ERR_NOT_IMPLEMENTED: return PJRT_Error_Code_UNIMPLEMENTED;
    default: return PJRT_Error_Code_UNAVAILABLE;
  }
}

static PJRT_Error *callback_failed(PJRT_CallbackError *make, tt_error *err) {
  const char *msg = tt_error_message(err);
  PJRT_Error *e = make && *make ? (*make)(pjrt_code_of(err), msg, strlen(msg)) : NULL;
  tt_error_free(err);
  return e;
}

static void kv_value_free(char *value) { free(value); }

/* PJRT_KeyValueGetCallback: user_arg is the tt_kv_store. The value is ours
 * (malloc'd, at least one byte so that an empty value is not NULL) until
 * the plugin hands it to value_deleter_callback. */
static PJRT_Error *kv_get_callback(PJRT_KeyValueGetCallback_Args *a) {
  const tt_kv_store *kv = a ? a->user_arg : NULL;
  if (!kv || !kv->get)
    return callback_failed(a ? a->callback_error : NULL,
                           tt_error_new(TT_ERR_INVALID_ARGUMENT, "key-value get: no store"));
  char *value = NULL;
  size_t len = 0;
  tt_error *err = kv->get(kv->ctx, a->key, a->key_size, a->timeout_in_ms, &value, &len);
  if (!err && !value && !(value = malloc(1))) err = oom();
  if (err) {
    free(value);
    return callback_failed(a->callback_error, err);
  }
  a->value = value;
  a->value_size = len;
  a->value_deleter_callback = kv_value_free;
  return NULL;
}

static PJRT_Error *kv_put_callback(PJRT_KeyValuePutCallback_Args *a) {
  const tt_kv_store *kv = a ? a->user_arg : NULL;
  if (!kv || !kv->put)
    return callback_failed(a ? a->callback_error : NULL,
                           tt_error_new(TT_ERR_INVALID_ARGUMENT, "key-value put: no store"));
  tt_error *err = kv->put(kv->ctx, a->key, a->key_size, a->value, a->value_size);
  return err ? callback_failed(a->callback_error, err) : NULL;
}

tt_error *tt_runtime_fill_create_args(const tt_runtime_options *opts, tt_plugin_kind kind,
                                      PJRT_Client_Create_Args *a, PJRT_NamedValue *named,
                                      int64_t *lists) {
  tt_create_option o[TT_CREATE_OPTIONS_MAX];
  int n = 0;
  TT_TRY(tt_runtime_create_options(opts, kind, o, TT_CREATE_OPTIONS_MAX, &n));
  for (int i = 0; i < n; i++) {
    named[i] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_SIZE, .name = o[i].name,
                                 .name_size = strlen(o[i].name), .value_size = 1};
    if (o[i].is_list) {
      lists[i] = o[i].value;
      named[i].type = PJRT_NamedValue_kInt64List;
      named[i].int64_array_value = &lists[i];
    } else {
      named[i].type = PJRT_NamedValue_kInt64;
      named[i].int64_value = o[i].value;
    }
  }
  a->create_options = n ? named : NULL;
  a->num_options = (size_t)n;
  if (opts->num_nodes > 1) {
    a->kv_get_callback = kv_get_callback;
    a->kv_get_user_arg = (void *)opts->kv;
    a->kv_put_callback = kv_put_callback;
    a->kv_put_user_arg = (void *)opts->kv;
  }
  return NULL;
}

/* The options the next open of a non-CPU plugin takes (torch_tpu sets them
 * at init_process_group). */
static pthread_mutex_t g_process_lock = PTHREAD_MUTEX_INITIALIZER;
static tt_runtime_options g_process_options; /* guarded by g_process_lock */
static bool g_process_options_set;           /* guarded by g_process_lock */

void tt_runtime_set_process_options(const tt_runtime_options *opts) {
  pthread_mutex_lock(&g_process_lock);
  g_process_options_set = opts != NULL;
  if (opts) g_process_options = *opts;
  pthread_mutex_unlock(&g_process_lock);
}

bool tt_runtime_get_process_options(tt_runtime_options *out) {
  pthread_mutex_lock(&g_process_lock);
  bool set = g_process_options_set;
  if (set && out) *out = g_process_options;
  pthread_mutex_unlock(&g_process_lock);
  return set;
}

/* The test hook's error callback: its PJRT_Error is a tt_error in disguise
 * (the hook owns both ends, as a plugin owns its own). */
static PJRT_Error *test_callback_error(PJRT_Error_Code code, const char *message, size_t size) {
  tt_error *e = tt_error_new(TT_ERR_RUNTIME, "key-value callback failed (PJRT code %d): %.*s",
                             (int)code, (int)size, message ? message : "");
  return (PJRT_Error *)e;
}

tt_error *tt_kv_callbacks_test_put(const tt_kv_store *kv, const char *key, const char *value,
                                   size_t value_len) {
  if (!kv || !key || (value_len && !value))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_kv_callbacks_test_put: bad arguments");
  PJRT_CallbackError make = test_callback_error;
  PJRT_KeyValuePutCallback_Args a = {.struct_size = PJRT_KeyValuePutCallback_Args_SIZE,
                                     .key = key, .key_size = strlen(key), .value = value,
                                     .value_size = value_len, .callback_error = &make,
                                     .user_arg = (void *)kv};
  return (tt_error *)kv_put_callback(&a);
}

tt_error *tt_kv_callbacks_test_get(const tt_kv_store *kv, const char *key, int timeout_ms,
                                   char **value, size_t *value_len) {
  if (!kv || !key || !value || !value_len)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_kv_callbacks_test_get: bad arguments");
  *value = NULL;
  *value_len = 0;
  PJRT_CallbackError make = test_callback_error;
  PJRT_KeyValueGetCallback_Args a = {.struct_size = PJRT_KeyValueGetCallback_Args_SIZE,
                                     .key = key, .key_size = strlen(key),
                                     .timeout_in_ms = timeout_ms, .callback_error = &make,
                                     .user_arg = (void *)kv};
  tt_error *err = (tt_error *)kv_get_callback(&a);
  if (err) return err;
  if (!a.value || !a.value_deleter_callback)
    return tt_error_new(TT_ERR_RUNTIME, "key-value get returned no value or no deleter");
  /* as a plugin does: copy the value, then hand it to the deleter */
  char *copy = malloc(a.value_size + 1);
  if (copy) {
    memcpy(copy, a.value, a.value_size);
    copy[a.value_size] = 0;
  }
  a.value_deleter_callback(a.value);
  if (!copy) return oom();
  *value = copy;
  *value_len = a.value_size;
  return NULL;
}

/* ----------------------------------------------------- global devices */

tt_error *tt_runtime_global_devices(tt_runtime *rt, tt_global_device *out, int cap, int *n) {
  if (!rt || !n || (cap > 0 && !out))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_runtime_global_devices: bad arguments");
  const PJRT_Api *api = rt->api;
  *n = 0;
  PJRT_Device *const *devs = rt->devices;
  size_t count = (size_t)rt->num_devices;
  if (TT_PJRT_HAS(api, PJRT_Client_Devices)) {
    PJRT_Client_Devices_Args d = {.struct_size = PJRT_Client_Devices_Args_SIZE, .client = rt->client};
    TT_TRY(tt_pjrt_error(api, api->PJRT_Client_Devices(&d), TT_ERR_PLUGIN,
                         "PJRT_Client_Devices failed"));
    devs = d.devices;
    count = d.num_devices;
  }
  if (!TT_PJRT_HAS(api, PJRT_DeviceDescription_Id))
    return tt_error_new(TT_ERR_NOT_IMPLEMENTED, "the PJRT plugin has no PJRT_DeviceDescription_Id");
  for (size_t i = 0; i < count; i++) {
    PJRT_Device_GetDescription_Args g = {.struct_size = PJRT_Device_GetDescription_Args_SIZE,
                                         .device = devs[i]};
    TT_TRY(tt_pjrt_error(api, api->PJRT_Device_GetDescription(&g), TT_ERR_PLUGIN,
                         "PJRT_Device_GetDescription failed"));
    PJRT_DeviceDescription_Id_Args ia = {.struct_size = PJRT_DeviceDescription_Id_Args_SIZE,
                                         .device_description = g.device_description};
    TT_TRY(tt_pjrt_error(api, api->PJRT_DeviceDescription_Id(&ia), TT_ERR_PLUGIN,
                         "PJRT_DeviceDescription_Id failed"));
    tt_global_device gd = {.id = ia.id, .process_index = -1, .local = -1};
    if (TT_PJRT_HAS(api, PJRT_DeviceDescription_ProcessIndex)) {
      PJRT_DeviceDescription_ProcessIndex_Args pa = {
          .struct_size = PJRT_DeviceDescription_ProcessIndex_Args_SIZE,
          .device_description = g.device_description};
      TT_TRY(tt_pjrt_error(api, api->PJRT_DeviceDescription_ProcessIndex(&pa), TT_ERR_PLUGIN,
                           "PJRT_DeviceDescription_ProcessIndex failed"));
      gd.process_index = pa.process_index;
    }
    for (int k = 0; k < rt->num_devices; k++)
      if (rt->devices[k] == devs[i]) gd.local = k;
    if ((int)i < cap) out[i] = gd;
  }
  *n = (int)count;
  return NULL;
}

tt_error *tt_spmd_assignment(const int *ids, int n, const tt_global_device *table, int table_n,
                             int *local_partition, int *local_device, int *n_local) {
  if (!ids || n < 1 || !table || table_n < 0 || !local_partition || !local_device || !n_local)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "device assignment: %d partitions (need at least one) or a NULL argument", n);
  *n_local = 0;
  for (int r = 0; r < n; r++) {
    for (int q = 0; q < r; q++)
      if (ids[q] == ids[r])
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "device assignment: global device id %d is listed for partitions %d "
                            "and %d",
                            ids[r], q, r);
    int found = -1;
    for (int i = 0; i < table_n && found < 0; i++)
      if (table[i].id == ids[r]) found = i;
    if (found < 0)
      return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                          "device assignment: partition %d's global device id %d is not among "
                          "the %d devices this client sees (a process whose devices the client "
                          "does not see cannot take part)",
                          r, ids[r], table_n);
    if (table[found].local >= 0) {
      local_partition[*n_local] = r;
      local_device[*n_local] = table[found].local;
      (*n_local)++;
    }
  }
  if (*n_local == 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "device assignment: none of the %d partitions' devices is addressable by "
                        "this process",
                        n);
  return NULL;
}
