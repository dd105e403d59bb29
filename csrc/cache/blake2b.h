/* BLAKE2b (RFC 7693), unkeyed, any digest length 1..64. The persistent cache
 * names entries by a 128-bit BLAKE2b of the key and checksums them with a
 * 64-bit one; Python's hashlib.blake2b(data, digest_size=N) gives the same
 * bytes, so torch_tpu/cache.py can verify entries without the C core. */
#ifndef TT_CACHE_BLAKE2B_H
#define TT_CACHE_BLAKE2B_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t h[8];
  uint64_t t[2];           /* bytes hashed so far */
  unsigned char buf[128];  /* pending input; compressed once more arrives */
  size_t buf_len;
  size_t out_len;
} tt_blake2b_state;

void tt_blake2b_init(tt_blake2b_state *s, size_t out_len); /* out_len 1..64 */
void tt_blake2b_update(tt_blake2b_state *s, const void *data, size_t len);
void tt_blake2b_final(tt_blake2b_state *s, unsigned char *out); /* out_len bytes */

/* One-shot helper. */
void tt_blake2b(const void *data, size_t len, unsigned char *out, size_t out_len);

#endif
