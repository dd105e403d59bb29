/* A growable byte string for cache keys: inline storage for the common
 * short key, heap beyond it. */
#ifndef TT_GRAPH_KEY_BUF_H
#define TT_GRAPH_KEY_BUF_H

#include <stdlib.h>
#include <string.h>

typedef struct {
  unsigned char *data;
  size_t len, cap;
  unsigned char inline_buf[2048];
} tt_key_buf;

static inline void tt_key_init(tt_key_buf *k) {
  k->data = k->inline_buf;
  k->len = 0;
  k->cap = sizeof k->inline_buf;
}

static inline void tt_key_free(tt_key_buf *k) {
  if (k->data != k->inline_buf) free(k->data);
  tt_key_init(k);
}

static inline void tt_key_put(tt_key_buf *k, const void *p, size_t n) {
  if (k->len + n > k->cap) {
    size_t cap = k->cap * 2;
    while (cap < k->len + n) cap *= 2;
    unsigned char *d = k->data == k->inline_buf ? malloc(cap) : realloc(k->data, cap);
    if (!d) abort(); /* host OOM building a key: nothing sensible to recover */
    if (k->data == k->inline_buf) memcpy(d, k->inline_buf, k->len);
    k->data = d;
    k->cap = cap;
  }
  memcpy(k->data + k->len, p, n);
  k->len += n;
}

#define TT_KEY_VAL(k, v)              \
  do {                                \
    __typeof__(v) kv_ = (v);          \
    tt_key_put((k), &kv_, sizeof kv_); \
  } while (0)

#endif
