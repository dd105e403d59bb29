/* The runner's file formats: .npy arrays (read and write, format 1.0 to
 * 3.0, little-endian, C order) and safetensors files (read). Both are a
 * short header (a Python-literal dict for .npy, JSON for safetensors)
 * before raw little-endian bytes. */
#ifndef TT_RUNNER_TENSOR_FILES_H
#define TT_RUNNER_TENSOR_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"

#define TTR_MAX_DIMS 8

typedef struct {
  char *name;
  tt_dtype dtype;
  int ndim;
  int64_t dims[TTR_MAX_DIMS];
  void *data; /* nbytes; owned by the array (npy) or points into the file (safetensors) */
  size_t nbytes;
} ttr_array;

/* Reads a .npy file: its dtype must be one the runner knows (bool, int8-64,
 * uint8, float16/32/64), C order, little-endian. *out's data is malloc'd
 * (free with ttr_array_clear). */
tt_error *ttr_npy_read(const char *path, ttr_array *out);
/* Writes arr as a .npy file (format 1.0). bfloat16 has no .npy type. */
tt_error *ttr_npy_write(const char *path, const ttr_array *arr);
void ttr_array_clear(ttr_array *arr); /* frees name and data */

/* A safetensors file read whole: its tensors' data point into `bytes`. */
typedef struct {
  void *bytes;
  size_t size;
  ttr_array *tensors; /* names owned; data borrowed from bytes */
  int n_tensors;
} ttr_safetensors;

tt_error *ttr_safetensors_read(const char *path, ttr_safetensors *out);
void ttr_safetensors_clear(ttr_safetensors *st);
const ttr_array *ttr_safetensors_find(const ttr_safetensors *st, const char *name);

/* The dtype named as tt_dtype_name writes it ("float32"), or -1. */
int ttr_dtype_from_name(const char *name);

#endif
