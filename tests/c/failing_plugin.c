/* A PJRT plugin that fails on purpose, for tests/python/test_fault_injection.py.
 *
 * It loads the real plugin named by FAILING_PLUGIN_REAL (the CPU plugin),
 * hands out a copy of its GetPjrtApi table in which
 * PJRT_LoadedExecutable_Execute fails its Nth call (N from
 * FAILING_PLUGIN_FAIL_AT, 1-based; 0 or unset: never) and every later call
 * too when FAILING_PLUGIN_FAIL_COUNT > 1 (that many calls from the Nth).
 * The failure is a PJRT error of our own (code INTERNAL, message
 * "failing_plugin: injected execute failure <k>"), so the error functions
 * are wrapped as well: they answer for our errors and forward the rest.
 * Everything else is the real plugin's. Built by make as
 * build/failing_plugin.so; point TORCH_TPU_PJRT_PLUGIN at it. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_abi.h"

struct PJRT_Error {
  char message[96];
};

static const PJRT_Api *real;
static PJRT_Api table;
static atomic_long calls;
static long fail_at, fail_count;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The errors we handed out and not yet destroyed (real errors are the
 * plugin's own objects: never read them, only compare pointers). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static PJRT_Error *live[256];

static int ours(const PJRT_Error *e, int remove) {
  int found = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < 256 && !found; i++)
    if (live[i] && live[i] == e) {
      found = 1;
      if (remove) live[i] = NULL;
    }
  pthread_mutex_unlock(&lock);
  return found;
}

static PJRT_Error *new_error(long k) {
  PJRT_Error *e = calloc(1, sizeof *e);
  if (!e) abort();
  snprintf(e->message, sizeof e->message, "failing_plugin: injected execute failure %ld", k);
  pthread_mutex_lock(&lock);
  for (int i = 0; i < 256; i++)
    if (!live[i]) {
      live[i] = e;
      break;
    }
  pthread_mutex_unlock(&lock);
  return e;
}

static void error_destroy(PJRT_Error_Destroy_Args *a) {
  if (ours(a->error, 1)) {
    free(a->error);
    return;
  }
  real->PJRT_Error_Destroy(a);
}

static void error_message(PJRT_Error_Message_Args *a) {
  if (ours(a->error, 0)) {
    a->message = a->error->message;
    a->message_size = strlen(a->error->message);
    return;
  }
  real->PJRT_Error_Message(a);
}

static PJRT_Error *error_get_code(PJRT_Error_GetCode_Args *a) {
  if (ours(a->error, 0)) {
    a->code = PJRT_Error_Code_INTERNAL;
    return NULL;
  }
  return real->PJRT_Error_GetCode(a);
}

static PJRT_Error *execute(PJRT_LoadedExecutable_Execute_Args *a) {
  long k = atomic_fetch_add(&calls, 1) + 1;
  if (fail_at > 0 && k >= fail_at && k < fail_at + fail_count) {
    return new_error(k);
  }
  return real->PJRT_LoadedExecutable_Execute(a);
}

static void init(void) {
  const char *path = getenv("FAILING_PLUGIN_REAL");
  const char *at = getenv("FAILING_PLUGIN_FAIL_AT");
  const char *count = getenv("FAILING_PLUGIN_FAIL_COUNT");
  fail_at = at ? atol(at) : 0;
  fail_count = count && atol(count) > 0 ? atol(count) : 1;
  if (!path) {
    fprintf(stderr, "failing_plugin: FAILING_PLUGIN_REAL is not set\n");
    return;
  }
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    fprintf(stderr, "failing_plugin: %s\n", dlerror());
    return;
  }
  PJRT_GetPjrtApi_Fn get;
  *(void **)&get = dlsym(dl, "GetPjrtApi");
  real = get ? get() : NULL;
  if (!real) return;
  size_t n = real->struct_size < sizeof table ? real->struct_size : sizeof table;
  memcpy(&table, real, n);
  table.struct_size = n;
  table.PJRT_Error_Destroy = error_destroy;
  table.PJRT_Error_Message = error_message;
  table.PJRT_Error_GetCode = error_get_code;
  table.PJRT_LoadedExecutable_Execute = execute;
}

const PJRT_Api *GetPjrtApi(void) {
  pthread_once(&once, init);
  return real ? &table : NULL;
}
