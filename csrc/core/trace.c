#include "core/trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TT_TRACE_MAX_EVENTS (1u << 20)

static _Atomic bool on;
static atomic_int pending; /* traced launches not completed yet */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tt_trace_event *events; /* guarded by lock */
static size_t n_events, cap_events, n_dropped;

bool tt_trace_on(void) { return atomic_load_explicit(&on, memory_order_relaxed); }
void tt_trace_set(bool value) { atomic_store(&on, value); }

double tt_trace_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void copy(char *dst, size_t size, const char *src) {
  size_t n = src ? strlen(src) : 0;
  if (n >= size) n = size - 1;
  if (n) memcpy(dst, src, n);
  dst[n] = 0;
}

void tt_trace_end(const char *track, const char *name, double t0_us, const char *detail) {
  double t1 = tt_trace_now_us();
  tt_trace_add(track, name, t0_us, t1 - t0_us, (unsigned long)syscall(SYS_gettid), detail);
}

void tt_trace_add(const char *track, const char *name, double ts_us, double dur_us,
                  unsigned long tid, const char *detail) {
  pthread_mutex_lock(&lock);
  if (n_events == cap_events) {
    size_t cap = cap_events ? 2 * cap_events : 4096;
    tt_trace_event *grown = cap <= TT_TRACE_MAX_EVENTS ? realloc(events, cap * sizeof *grown) : NULL;
    if (!grown) {
      n_dropped++;
      pthread_mutex_unlock(&lock);
      return;
    }
    events = grown;
    cap_events = cap;
  }
  tt_trace_event *e = &events[n_events++];
  copy(e->track, sizeof e->track, track);
  copy(e->name, sizeof e->name, name);
  copy(e->detail, sizeof e->detail, detail);
  e->ts_us = ts_us;
  e->dur_us = dur_us;
  e->tid = tid;
  pthread_mutex_unlock(&lock);
}

size_t tt_trace_take(tt_trace_event **out, size_t *dropped) {
  pthread_mutex_lock(&lock);
  *out = events;
  size_t n = n_events;
  if (dropped) *dropped = n_dropped;
  events = NULL;
  n_events = cap_events = n_dropped = 0;
  pthread_mutex_unlock(&lock);
  return n;
}

void tt_trace_pending(int delta) { atomic_fetch_add(&pending, delta); }

int tt_trace_drain(double timeout_s) {
  double until = tt_trace_now_us() + timeout_s * 1e6;
  int n;
  while ((n = atomic_load(&pending)) > 0 && tt_trace_now_us() < until) {
    struct timespec ts = {0, 200 * 1000}; /* 0.2 ms */
    nanosleep(&ts, NULL);
  }
  return n;
}
