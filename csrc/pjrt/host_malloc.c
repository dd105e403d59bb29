/* Why: on the CPU plugin every launch allocates its output buffers, XLA's
 * temporaries and Eigen's GEMM packing blocks with malloc, and frees most of
 * them by the next launch. glibc serves blocks over its mmap threshold
 * (128 KiB at start) with a fresh mmap, whose pages fault in on first touch
 * and go back to the kernel on free; it also trims the heap top once more
 * than twice that threshold is free. glibc raises the threshold by itself
 * only after freeing a block larger than it, so a process's speed depended
 * on which sizes it happened to free first: a Strict eager minGPT training
 * step took 52 ms with 4,000 page faults per step in a process of its own,
 * and 40 ms once a Fused region had freed a large block in the same process.
 * We set both thresholds to where glibc's own adjustment tops out (32 MiB
 * mmap threshold, 64 MiB trim), so every process starts in the fast state. */
#include "pjrt/host_malloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/settings.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#define TT_HOST_MMAP_THRESHOLD (32 << 20) /* glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit */
#define TT_HOST_TRIM_THRESHOLD (64 << 20) /* twice it, as glibc's own adjustment sets it */

static pthread_once_t g_tune_once = PTHREAD_ONCE_INIT;

static void tune(void) {
  if (!tt_setting_bool_or_default(TT_SETTING_HOST_MALLOC_TUNING)) return;
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, TT_HOST_MMAP_THRESHOLD);
  mallopt(M_TRIM_THRESHOLD, TT_HOST_TRIM_THRESHOLD);
#endif
}

void tt_host_malloc_tune(void) { pthread_once(&g_tune_once, tune); }
