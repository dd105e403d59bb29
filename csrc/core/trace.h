/* The profiler's event log (torch_tpu.profiler): complete events (track,
 * name, start, duration, one detail string) appended by every floor while
 * tracing is on, taken by the Python layer, which writes the Chrome trace.
 * Off (the default) costs one atomic load per instrumented call. */
#ifndef TT_CORE_TRACE_H
#define TT_CORE_TRACE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  char track[24], name[96], detail[160];
  double ts_us, dur_us; /* CLOCK_MONOTONIC, microseconds */
  unsigned long tid;
} tt_trace_event;

bool tt_trace_on(void);
void tt_trace_set(bool on);
double tt_trace_now_us(void);
/* Appends one event [t0_us, now] (dropped, and counted, past 1M events). */
void tt_trace_end(const char *track, const char *name, double t0_us, const char *detail);
/* Moves the log out (caller frees *out); returns the count. */
size_t tt_trace_take(tt_trace_event **out, size_t *dropped);

#endif
