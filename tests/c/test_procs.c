/* Clients that span processes (csrc/pjrt/runtime_procs.c, runtime_spmd.c):
 * the create options per plugin kind and their errors, the key-value
 * callbacks called as a plugin calls them (over an in-memory store), the
 * mapping of a device assignment of global ids onto this process's devices
 * (tables of several processes, made up, and the real client's), and a
 * program compiled from global ids and launched with this process's
 * arguments on the CPU plugin (whose one process addresses every device).
 *
 *   test_procs PLUGIN.so */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/collectives_procs.h"
#include "pjrt/runtime.h"

#include "check.h"

static tt_kv_store mem_store; /* an in-memory store, below */

static bool has(const char *text, const char *needle) { return text && strstr(text, needle); }

/* Expects an error whose message holds needle; frees it. */
static bool fails_with(tt_error *err, const char *needle) {
  bool ok = err && has(tt_error_message(err), needle);
  if (err && !ok) fprintf(stderr, "  unexpected message: %s\n", tt_error_message(err));
  tt_error_free(err);
  return ok;
}

/* ------------------------------------------------------ create options */

static void test_create_options(void) {
  CHECK(tt_plugin_kind_of("/x/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so") == TT_PLUGIN_CPU);
  CHECK(tt_plugin_kind_of("/x/libtpu/libtpu.so") == TT_PLUGIN_TPU);
  CHECK(tt_plugin_kind_of("/x/jax_plugins/xla_cuda12/xla_cuda_plugin.so") == TT_PLUGIN_OTHER);

  tt_kv_store kv = {.get = NULL, .put = NULL};
  tt_create_option o[TT_CREATE_OPTIONS_MAX];
  int n = -1;
  tt_runtime_options single = {.num_cpu_devices = 4, .visible_device = -1};
  CHECK(!tt_runtime_create_options(&single, TT_PLUGIN_CPU, o, TT_CREATE_OPTIONS_MAX, &n));
  CHECK(n == 1 && !strcmp(o[0].name, "cpu_device_count") && o[0].value == 4 && !o[0].is_list);
  CHECK(!tt_runtime_create_options(&single, TT_PLUGIN_OTHER, o, TT_CREATE_OPTIONS_MAX, &n) && n == 0);
  CHECK(!tt_runtime_create_options(&single, TT_PLUGIN_TPU, o, TT_CREATE_OPTIONS_MAX, &n) && n == 0);

  /* a client of 4 processes, this one the third, on its local device 1 */
  tt_runtime_options multi = {.num_nodes = 4, .node_id = 2, .visible_device = 1, .kv = &mem_store};
  CHECK(!tt_runtime_create_options(&multi, TT_PLUGIN_OTHER, o, TT_CREATE_OPTIONS_MAX, &n));
  CHECK(n == 3 && !strcmp(o[0].name, "num_nodes") && o[0].value == 4);
  CHECK(!strcmp(o[1].name, "node_id") && o[1].value == 2);
  CHECK(!strcmp(o[2].name, "visible_devices") && o[2].is_list && o[2].value == 1);
  multi.visible_device = -1;
  CHECK(!tt_runtime_create_options(&multi, TT_PLUGIN_OTHER, o, TT_CREATE_OPTIONS_MAX, &n) && n == 2);
  /* libtpu: no options, the environment joins its processes */
  CHECK(!tt_runtime_create_options(&multi, TT_PLUGIN_TPU, o, TT_CREATE_OPTIONS_MAX, &n) && n == 0);

  /* errors */
  CHECK(fails_with(tt_runtime_create_options(&multi, TT_PLUGIN_CPU, o, TT_CREATE_OPTIONS_MAX, &n),
                   "the CPU PJRT plugin has no multi-process client"));
  tt_runtime_options bad = multi;
  bad.node_id = 4;
  CHECK(fails_with(tt_runtime_create_options(&bad, TT_PLUGIN_OTHER, o, TT_CREATE_OPTIONS_MAX, &n),
                   "node_id 4 is out of range for a client of 4 processes"));
  bad.node_id = -1;
  CHECK(fails_with(tt_runtime_create_options(&bad, TT_PLUGIN_OTHER, o, TT_CREATE_OPTIONS_MAX, &n),
                   "node_id -1 is out of range"));
  bad = multi;
  bad.kv = NULL;
  CHECK(fails_with(tt_runtime_create_options(&bad, TT_PLUGIN_OTHER, o, TT_CREATE_OPTIONS_MAX, &n),
                   "needs a key-value store"));
  bad.kv = &kv; /* no functions */
  CHECK(fails_with(tt_runtime_create_options(&bad, TT_PLUGIN_OTHER, o, TT_CREATE_OPTIONS_MAX, &n),
                   "needs a key-value store"));
  bad = multi;
  bad.num_nodes = -2;
  CHECK(fails_with(tt_runtime_create_options(&bad, TT_PLUGIN_OTHER, o, TT_CREATE_OPTIONS_MAX, &n),
                   "num_nodes must be >= 1"));
  CHECK(fails_with(tt_runtime_create_options(&multi, TT_PLUGIN_OTHER, o, 1, &n), "room for 1 options"));
  CHECK(fails_with(tt_runtime_create_options(NULL, TT_PLUGIN_OTHER, o, 1, &n), "bad arguments"));
}

/* ------------------------------------------- an in-memory key-value store */

#define MEM_KEYS 16
static struct {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  char *keys[MEM_KEYS];
  char *values[MEM_KEYS];
  size_t lens[MEM_KEYS];
  int n;
} mem = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, {0}, {0}, 0};

static tt_error *mem_put(void *ctx, const char *key, size_t key_len, const char *value,
                         size_t value_len) {
  (void)ctx;
  pthread_mutex_lock(&mem.lock);
  tt_error *err = NULL;
  if (mem.n == MEM_KEYS) err = tt_error_new(TT_ERR_RUNTIME, "store full");
  else {
    mem.keys[mem.n] = strndup(key, key_len);
    mem.values[mem.n] = malloc(value_len ? value_len : 1);
    if (value_len) memcpy(mem.values[mem.n], value, value_len);
    mem.lens[mem.n++] = value_len;
    pthread_cond_broadcast(&mem.changed);
  }
  pthread_mutex_unlock(&mem.lock);
  return err;
}

static tt_error *mem_get(void *ctx, const char *key, size_t key_len, int timeout_ms, char **value,
                         size_t *value_len) {
  (void)ctx;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&mem.lock);
  tt_error *err = NULL;
  for (;;) {
    int found = -1;
    for (int i = 0; i < mem.n; i++)
      if (strlen(mem.keys[i]) == key_len && !memcmp(mem.keys[i], key, key_len)) found = i;
    if (found >= 0) {
      *value = malloc(mem.lens[found] ? mem.lens[found] : 1);
      memcpy(*value, mem.values[found], mem.lens[found]);
      *value_len = mem.lens[found];
      break;
    }
    if (pthread_cond_timedwait(&mem.changed, &mem.lock, &until)) {
      err = tt_error_new(TT_ERR_RUNTIME, "key %.*s: timed out after %d ms", (int)key_len, key,
                         timeout_ms);
      break;
    }
  }
  pthread_mutex_unlock(&mem.lock);
  return err;
}

static tt_kv_store mem_store = {.ctx = NULL, .get = mem_get, .put = mem_put};

static void *late_put(void *arg) {
  (void)arg;
  struct timespec d = {0, 50 * 1000000L};
  nanosleep(&d, NULL);
  tt_error_free(tt_kv_callbacks_test_put(&mem_store, "late", "x", 1));
  return NULL;
}

static void test_kv_callbacks(void) {
  CHECK(!tt_kv_callbacks_test_put(&mem_store, "topology/0", "\x01\x00\x02", 3));
  char *v = NULL;
  size_t len = 0;
  CHECK(!tt_kv_callbacks_test_get(&mem_store, "topology/0", 1000, &v, &len));
  CHECK(v && len == 3 && v[0] == 1 && v[1] == 0 && v[2] == 2);
  free(v);
  /* an empty value comes back empty, not NULL */
  CHECK(!tt_kv_callbacks_test_put(&mem_store, "empty", "", 0));
  CHECK(!tt_kv_callbacks_test_get(&mem_store, "empty", 1000, &v, &len) && v && len == 0);
  free(v);
  /* get waits for a key another thread puts later */
  pthread_t t;
  pthread_create(&t, NULL, late_put, NULL);
  CHECK(!tt_kv_callbacks_test_get(&mem_store, "late", 5000, &v, &len) && len == 1 && v[0] == 'x');
  free(v);
  pthread_join(t, NULL);
  /* a key nobody puts: the store's timeout, as PJRT's DEADLINE_EXCEEDED (4) */
  tt_error *err = tt_kv_callbacks_test_get(&mem_store, "never", 50, &v, &len);
  CHECK(err && has(tt_error_message(err), "PJRT code 4") && has(tt_error_message(err), "timed out"));
  CHECK(!v);
  tt_error_free(err);
  tt_kv_store none = {0};
  CHECK(fails_with(tt_kv_callbacks_test_get(&none, "k", 1, &v, &len), "no store"));
  CHECK(fails_with(tt_kv_callbacks_test_put(&none, "k", "v", 1), "no store"));
}

/* ---------------------------------------------- assignments of global ids */

static void test_assignment(void) {
  /* 2 processes x 2 devices; this one owns ids 10, 11 (client devices 0, 1) */
  tt_global_device table[4] = {{10, 0, 0}, {11, 0, 1}, {12, 1, -1}, {13, 1, -1}};
  int part[4], dev[4], n_local = -1;
  int ids[4] = {12, 10, 13, 11};
  CHECK(!tt_spmd_assignment(ids, 4, table, 4, part, dev, &n_local));
  CHECK(n_local == 2 && part[0] == 1 && dev[0] == 0 && part[1] == 3 && dev[1] == 1);
  int sub[2] = {13, 11};
  CHECK(!tt_spmd_assignment(sub, 2, table, 4, part, dev, &n_local));
  CHECK(n_local == 1 && part[0] == 1 && dev[0] == 1);
  /* errors */
  int twice[3] = {10, 12, 10};
  CHECK(fails_with(tt_spmd_assignment(twice, 3, table, 4, part, dev, &n_local),
                   "global device id 10 is listed for partitions 0 and 2"));
  int unknown[2] = {10, 99};
  CHECK(fails_with(tt_spmd_assignment(unknown, 2, table, 4, part, dev, &n_local),
                   "partition 1's global device id 99 is not among the 4 devices this client sees"));
  int others[2] = {12, 13};
  CHECK(fails_with(tt_spmd_assignment(others, 2, table, 4, part, dev, &n_local),
                   "none of the 2 partitions' devices is addressable by this process"));
  CHECK(fails_with(tt_spmd_assignment(ids, 0, table, 4, part, dev, &n_local), "0 partitions"));
}

/* ------------------------------------------------- the real CPU plugin */

static void test_cpu_plugin(const char *plugin) {
  /* a multi-process client on the CPU plugin is refused with the reason */
  tt_runtime *rt = NULL;
  tt_runtime_options multi = {.num_cpu_devices = 1, .num_nodes = 2, .node_id = 0,
                              .visible_device = -1, .kv = &mem_store};
  CHECK(fails_with(tt_runtime_open_with(plugin, &multi, &rt), "no multi-process client"));
  CHECK(rt == NULL);
  /* process options do not apply to the CPU plugin */
  tt_runtime_set_process_options(&multi);
  tt_runtime_options got;
  CHECK(tt_runtime_get_process_options(&got) && got.num_nodes == 2 && got.kv == &mem_store);
  tt_error *err = tt_runtime_open(plugin, 2, &rt);
  CHECK(!err);
  tt_error_free(err);
  tt_runtime_set_process_options(NULL);
  CHECK(!tt_runtime_get_process_options(&got));
  if (!rt) return;

  /* the device table: this process's 2 devices, both addressable */
  tt_global_device table[8];
  int n = 0;
  CHECK(!tt_runtime_global_devices(rt, table, 8, &n));
  CHECK(n == 2 && table[0].local == 0 && table[1].local == 1 && table[0].id != table[1].id);

  /* all_reduce compiled from global ids, partition 0 on client device 1 */
  tt_coll_op op = {.kind = TT_COLL_ALL_REDUCE, .reduce = TT_RED_SUM};
  int64_t dims[1] = {4}, out_dims[1];
  char *text = NULL;
  CHECK(!tt_coll_emit(&op, 2, TT_F32, dims, 1, &text, out_dims));
  int ids[2] = {table[1].id, table[0].id};
  tt_executable *exe = NULL;
  CHECK(!(err = tt_compile_spmd_global(rt, text, strlen(text), ids, 2, &exe)));
  tt_error_free(err);
  if (exe) {
    CHECK(tt_executable_num_devices(exe) == 2);
    float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, r0[4], r1[4];
    tt_buffer *args[2] = {NULL, NULL}, *outs[2] = {NULL, NULL};
    int devices[2] = {1, 0}; /* partition r's client device */
    CHECK(!tt_buffer_from_host(rt, 1, TT_F32, dims, 1, a, &args[0]));
    CHECK(!tt_buffer_from_host(rt, 0, TT_F32, dims, 1, b, &args[1]));
    CHECK(!(err = tt_execute_spmd(exe, devices, args, 1, outs, 1)));
    tt_error_free(err);
    CHECK(outs[0] && !tt_buffer_to_host(outs[0], r0, sizeof r0));
    CHECK(outs[1] && !tt_buffer_to_host(outs[1], r1, sizeof r1));
    CHECK(r0[0] == 11 && r0[3] == 44 && r1[0] == 11 && r1[3] == 44);
    for (int i = 0; i < 2; i++) {
      tt_buffer_release(args[i]);
      tt_buffer_release(outs[i]);
    }
    tt_executable_release(exe);
  }
  /* an id the client does not see, an id twice */
  int unknown[2] = {table[0].id, 1000};
  CHECK(fails_with(tt_compile_spmd_global(rt, text, strlen(text), unknown, 2, &exe),
                   "global device id 1000 is not among the 2 devices this client sees"));
  int twice[2] = {table[0].id, table[0].id};
  CHECK(fails_with(tt_compile_spmd_global(rt, text, strlen(text), twice, 2, &exe), "listed for partitions"));
  free(text);

  /* the group over global ids (collectives_procs.c): both ranks are this
   * process's here; rank 0 on client device 1 */
  tt_coll_procs *g = NULL;
  CHECK(!(err = tt_coll_procs_new(rt, ids, 2, &g)));
  tt_error_free(err);
  if (g) {
    CHECK(tt_coll_procs_size(g) == 2 && tt_coll_procs_local_count(g) == 2);
    CHECK(tt_coll_procs_local_rank(g, 0) == 0 && tt_coll_procs_local_device(g, 0) == 1);
    CHECK(tt_coll_procs_local_rank(g, 1) == 1 && tt_coll_procs_local_device(g, 1) == 0);
    int64_t d2[2] = {2, 2}, od[2];
    float x0[4] = {1, 2, 3, 4}, x1[4] = {5, 6, 7, 8}, r[8];
    tt_buffer *in[2] = {NULL, NULL}, *o[2] = {NULL, NULL};
    int64_t flat[1] = {4};
    CHECK(!tt_buffer_from_host(rt, 1, TT_F32, flat, 1, x0, &in[0]));
    CHECK(!tt_buffer_from_host(rt, 0, TT_F32, flat, 1, x1, &in[1]));
    tt_coll_op gather = {.kind = TT_COLL_ALL_GATHER};
    for (int round = 0; round < 2; round++) { /* the second reuses the program */
      CHECK(!(err = tt_coll_procs_run(g, &gather, in, TT_F32, d2, 2, o, od)));
      tt_error_free(err);
      CHECK(od[0] == 4 && od[1] == 2);
      CHECK(o[1] && !tt_buffer_to_host(o[1], r, sizeof r));
      CHECK(r[0] == 1 && r[3] == 4 && r[4] == 5 && r[7] == 8);
      for (int i = 0; i < 2; i++) tt_buffer_release(o[i]), o[i] = NULL;
    }
    tt_coll_op rs = {.kind = TT_COLL_REDUCE_SCATTER, .reduce = TT_RED_SUM};
    int64_t odd[2] = {1, 4};
    CHECK(fails_with(tt_coll_procs_run(g, &rs, in, TT_F32, odd, 2, o, od),
                     "reduce_scatter: dimension 0 (1) is not divisible by the group size 2"));
    for (int i = 0; i < 2; i++) tt_buffer_release(in[i]);
    tt_coll_procs_free(g);
  }
  int none_here[1] = {1000};
  CHECK(fails_with(tt_coll_procs_new(rt, none_here, 1, &g), "not among the 2 devices"));
  tt_runtime_close(rt);
}

int main(int argc, char **argv) {
  const char *plugin = argc > 1 ? argv[1] : getenv("TORCH_TPU_PJRT_PLUGIN");
  test_create_options();
  test_kv_callbacks();
  test_assignment();
  if (plugin) test_cpu_plugin(plugin);
  else fprintf(stderr, "test_procs: no plugin given, the CPU plugin part not run\n");
  for (int i = 0; i < mem.n; i++) {
    free(mem.keys[i]);
    free(mem.values[i]);
  }
  printf("procs: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
