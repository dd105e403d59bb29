/* Host malloc settings for plugins whose device memory is host memory. */
#ifndef TT_PJRT_HOST_MALLOC_H
#define TT_PJRT_HOST_MALLOC_H

/* Once per process: raises glibc's mmap and trim thresholds so that the
 * buffers an XLA:CPU program allocates and frees on every launch reuse heap
 * pages. TORCH_TPU_HOST_MALLOC_TUNING=0 leaves malloc as it is; off glibc
 * it does nothing. */
void tt_host_malloc_tune(void);

#endif
