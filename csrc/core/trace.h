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
/* Appends one event with an explicit start, duration and thread id (events
 * recorded off the caller's thread: a program's run on a device, whose tid
 * is the device index). */
void tt_trace_add(const char *track, const char *name, double ts_us, double dur_us,
                  unsigned long tid, const char *detail);
/* Launches traced whose completion has not been recorded yet: counted up at
 * the launch, down by the completion callback; tt_trace_drain waits (up to
 * timeout_s) for the count to reach zero, so a profile's stop sees every
 * device span it launched. Returns the count still outstanding. */
void tt_trace_pending(int delta);
int tt_trace_drain(double timeout_s);
/* Moves the log out (caller frees *out); returns the count. */
size_t tt_trace_take(tt_trace_event **out, size_t *dropped);

#endif
