/* Little-endian integers in byte buffers: the on-disk formats (the
 * persistent cache's entry header) and their tests read and write them
 * byte by byte, independent of the host's byte order. */
#ifndef TT_CORE_BYTES_LE_H
#define TT_CORE_BYTES_LE_H

#include <stdint.h>

/* Writes the low n bytes of v at p, least significant first. */
static inline void tt_put_le(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Reads n bytes at p, least significant first. */
static inline uint64_t tt_get_le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

#endif
