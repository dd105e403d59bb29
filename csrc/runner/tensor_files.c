/* .npy and safetensors files (see tensor_files.h). */
#include "runner/tensor_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/json.h"

int ttr_dtype_from_name(const char *name) {
  for (int d = 0; d < TT_DTYPE_COUNT; d++)
    if (name && strcmp(name, tt_dtype_name((tt_dtype)d)) == 0) return d;
  return -1;
}

void ttr_array_clear(ttr_array *arr) {
  if (!arr) return;
  free(arr->name);
  free(arr->data);
  memset(arr, 0, sizeof *arr);
}

static tt_error *read_file(const char *path, void **bytes, size_t *size) {
  *bytes = NULL;
  *size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "cannot open %s: %s", path, strerror(errno));
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "cannot read %s: %s", path, strerror(errno));
  }
  void *buf = malloc(n ? (size_t)n : 1);
  if (!buf) {
    fclose(f);
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory reading %s (%ld bytes)", path, n);
  }
  size_t got = fread(buf, 1, (size_t)n, f);
  fclose(f);
  if (got != (size_t)n) {
    free(buf);
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "cannot read %s: short read", path);
  }
  *bytes = buf;
  *size = (size_t)n;
  return NULL;
}

/* ------------------------------------------------------------------ npy */

static const struct {
  const char *descr;
  tt_dtype dtype;
} npy_types[] = {
    {"|b1", TT_BOOL}, {"|u1", TT_U8},  {"|i1", TT_I8},  {"<i2", TT_I16}, {"<i4", TT_I32},
    {"<i8", TT_I64},  {"<f2", TT_F16}, {"<f4", TT_F32}, {"<f8", TT_F64}, {"<u1", TT_U8},
    {"<i1", TT_I8},   {"<b1", TT_BOOL},
};

/* The value after 'key': in a .npy header dict, or NULL. */
static const char *npy_field(const char *header, const char *key) {
  char quoted[32];
  snprintf(quoted, sizeof quoted, "'%s'", key);
  const char *p = strstr(header, quoted);
  if (!p) return NULL;
  p += strlen(quoted);
  while (*p == ' ' || *p == ':') p++;
  return p;
}

tt_error *ttr_npy_read(const char *path, ttr_array *out) {
  memset(out, 0, sizeof *out);
  void *bytes = NULL;
  size_t size = 0;
  TT_TRY(read_file(path, &bytes, &size));
  const unsigned char *b = bytes;
  tt_error *err = NULL;
  char *header = NULL;
  size_t hlen = 0, start = 0;
  if (size < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
    err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: not a .npy file (no \\x93NUMPY magic)", path);
    goto done;
  }
  if (b[6] == 1) {
    hlen = (size_t)b[8] | (size_t)b[9] << 8;
    start = 10;
  } else if ((b[6] == 2 || b[6] == 3) && size >= 12) {
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    start = 12;
  } else {
    err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: .npy format version %d is not supported", path, b[6]);
    goto done;
  }
  if (start + hlen > size) {
    err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: truncated .npy header", path);
    goto done;
  }
  header = malloc(hlen + 1);
  if (!header) {
    err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    goto done;
  }
  memcpy(header, b + start, hlen);
  header[hlen] = 0;
  const char *descr = npy_field(header, "descr"), *fortran = npy_field(header, "fortran_order"),
             *shape = npy_field(header, "shape");
  if (!descr || !fortran || !shape || *descr != '\'' || *shape != '(') {
    err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: malformed .npy header: %s", path, header);
    goto done;
  }
  int dtype = -1;
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if (strncmp(descr + 1, npy_types[i].descr, 3) == 0 && descr[4] == '\'') dtype = (int)npy_types[i].dtype;
  if (dtype < 0) {
    err = tt_error_new(TT_ERR_TYPE, "%s: .npy dtype %.8s is not supported (little-endian bool, "
                       "integers and float16/32/64 are)", path, descr);
    goto done;
  }
  if (strncmp(fortran, "False", 5) != 0) {
    err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: Fortran-order .npy arrays are not supported", path);
    goto done;
  }
  out->dtype = (tt_dtype)dtype;
  const char *p = shape + 1;
  int64_t numel = 1;
  for (;;) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ')') break;
    char *end = NULL;
    long long d = strtoll(p, &end, 10);
    if (end == p || d < 0 || out->ndim == TTR_MAX_DIMS) {
      err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: malformed .npy shape", path);
      goto done;
    }
    out->dims[out->ndim++] = d;
    numel *= d;
    p = end;
    while (*p == 'L') p++;
  }
  out->nbytes = (size_t)numel * tt_dtype_size(out->dtype);
  if (size - start - hlen != out->nbytes) {
    err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: holds %zu data bytes, its shape needs %zu", path,
                       size - start - hlen, out->nbytes);
    goto done;
  }
  out->data = malloc(out->nbytes ? out->nbytes : 1);
  if (!out->data) {
    err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    goto done;
  }
  memcpy(out->data, b + start + hlen, out->nbytes);
done:
  free(header);
  free(bytes);
  if (err) ttr_array_clear(out);
  return err;
}

tt_error *ttr_npy_write(const char *path, const ttr_array *arr) {
  const char *descr = NULL;
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0] && !descr; i++)
    if (npy_types[i].dtype == arr->dtype) descr = npy_types[i].descr;
  if (!descr)
    return tt_error_new(TT_ERR_TYPE, "%s: dtype %s has no .npy type", path, tt_dtype_name(arr->dtype));
  char header[512];
  int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int d = 0; d < arr->ndim; d++)
    n += snprintf(header + n, sizeof header - (size_t)n, "%lld%s", (long long)arr->dims[d],
                  arr->ndim == 1 ? "," : d + 1 < arr->ndim ? ", " : "");
  n += snprintf(header + n, sizeof header - (size_t)n, "), }");
  size_t total = 10 + (size_t)n + 1; /* magic, version, length, dict, newline */
  size_t pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  if (!f) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "cannot write %s: %s", path, strerror(errno));
  unsigned hl = (unsigned)((size_t)n + pad + 1);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xFF),
                           (unsigned char)(hl >> 8)};
  bool ok = fwrite(pre, 1, sizeof pre, f) == sizeof pre && fwrite(header, 1, (size_t)n, f) == (size_t)n;
  for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
  ok = ok && fputc('\n', f) != EOF;
  ok = ok && fwrite(arr->data, 1, arr->nbytes, f) == arr->nbytes;
  ok = fclose(f) == 0 && ok;
  return ok ? NULL : tt_error_new(TT_ERR_RUNTIME, "cannot write %s: %s", path, strerror(errno));
}

/* ----------------------------------------------------------- safetensors */

static const struct {
  const char *name;
  tt_dtype dtype;
} st_types[] = {
    {"BOOL", TT_BOOL}, {"U8", TT_U8},   {"I8", TT_I8},     {"I16", TT_I16}, {"I32", TT_I32},
    {"I64", TT_I64},   {"F16", TT_F16}, {"BF16", TT_BF16}, {"F32", TT_F32}, {"F64", TT_F64},
};

void ttr_safetensors_clear(ttr_safetensors *st) {
  if (!st) return;
  for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
  free(st->tensors);
  free(st->bytes);
  memset(st, 0, sizeof *st);
}

static tt_error *st_tensor(const char *path, const ttj_node *m, size_t data_size, const unsigned char *data,
                           ttr_array *t) {
  const char *dt = ttj_str(ttj_get(m, "dtype"));
  const ttj_node *shape = ttj_get(m, "shape"), *offs = ttj_get(m, "data_offsets");
  int dtype = -1;
  for (size_t i = 0; dt && i < sizeof st_types / sizeof st_types[0]; i++)
    if (strcmp(dt, st_types[i].name) == 0) dtype = (int)st_types[i].dtype;
  int64_t begin = -1, end = -1;
  if (dtype < 0 || !shape || shape->kind != TTJ_ARRAY || shape->n_items > TTR_MAX_DIMS ||
      !ttj_int(ttj_at(offs, 0), &begin) || !ttj_int(ttj_at(offs, 1), &end) || begin < 0 ||
      end < begin || (size_t)end > data_size)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: tensor '%s': malformed entry (dtype %s)", path,
                        m->key, dt ? dt : "missing");
  t->dtype = (tt_dtype)dtype;
  t->ndim = shape->n_items;
  int64_t numel = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (!ttj_int(&shape->items[d], &t->dims[d]) || t->dims[d] < 0)
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: tensor '%s': malformed shape", path, m->key);
    numel *= t->dims[d];
  }
  t->nbytes = (size_t)(end - begin);
  if (t->nbytes != (size_t)numel * tt_dtype_size(t->dtype))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: tensor '%s': %zu bytes for %lld elements of %s",
                        path, m->key, t->nbytes, (long long)numel, dt);
  t->data = (void *)(data + begin);
  t->name = strdup(m->key);
  return t->name ? NULL : tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
}

tt_error *ttr_safetensors_read(const char *path, ttr_safetensors *out) {
  memset(out, 0, sizeof *out);
  TT_TRY(read_file(path, &out->bytes, &out->size));
  const unsigned char *b = out->bytes;
  uint64_t hlen = 0;
  tt_error *err = NULL;
  ttj_node *root = NULL;
  if (out->size >= 8)
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | b[i];
  if (out->size < 8 || hlen > out->size - 8) {
    err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: not a safetensors file (header length %llu, "
                       "file %zu bytes)", path, (unsigned long long)hlen, out->size);
    goto done;
  }
  err = ttj_parse((const char *)b + 8, (size_t)hlen, path, &root);
  if (err) goto done;
  if (root->kind != TTJ_OBJECT) {
    err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: the safetensors header is not an object", path);
    goto done;
  }
  out->tensors = calloc((size_t)(root->n_items ? root->n_items : 1), sizeof *out->tensors);
  if (!out->tensors) {
    err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    goto done;
  }
  for (int i = 0; i < root->n_items && !err; i++) {
    const ttj_node *m = &root->items[i];
    if (strcmp(m->key, "__metadata__") == 0) continue;
    err = st_tensor(path, m, out->size - 8 - (size_t)hlen, b + 8 + hlen, &out->tensors[out->n_tensors]);
    if (!err) out->n_tensors++;
  }
done:
  ttj_free(root);
  if (err) ttr_safetensors_clear(out);
  return err;
}

const ttr_array *ttr_safetensors_find(const ttr_safetensors *st, const char *name) {
  for (int i = 0; i < st->n_tensors; i++)
    if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
  return NULL;
}
