#include "cache/blake2b.h"

#include <string.h>

static const uint64_t IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static const unsigned char SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static uint64_t rotr(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

static uint64_t load_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

#define G(a, b, c, d, x, y)    \
  do {                         \
    v[a] = v[a] + v[b] + (x);  \
    v[d] = rotr(v[d] ^ v[a], 32); \
    v[c] = v[c] + v[d];        \
    v[b] = rotr(v[b] ^ v[c], 24); \
    v[a] = v[a] + v[b] + (y);  \
    v[d] = rotr(v[d] ^ v[a], 16); \
    v[c] = v[c] + v[d];        \
    v[b] = rotr(v[b] ^ v[c], 63); \
  } while (0)

static void compress(tt_blake2b_state *s, const unsigned char *block, int last) {
  uint64_t m[16], v[16];
  for (int i = 0; i < 16; i++) m[i] = load_le64(block + 8 * i);
  for (int i = 0; i < 8; i++) {
    v[i] = s->h[i];
    v[i + 8] = IV[i];
  }
  v[12] ^= s->t[0];
  v[13] ^= s->t[1];
  if (last) v[14] = ~v[14];
  for (int r = 0; r < 12; r++) {
    const unsigned char *sg = SIGMA[r];
    G(0, 4, 8, 12, m[sg[0]], m[sg[1]]);
    G(1, 5, 9, 13, m[sg[2]], m[sg[3]]);
    G(2, 6, 10, 14, m[sg[4]], m[sg[5]]);
    G(3, 7, 11, 15, m[sg[6]], m[sg[7]]);
    G(0, 5, 10, 15, m[sg[8]], m[sg[9]]);
    G(1, 6, 11, 12, m[sg[10]], m[sg[11]]);
    G(2, 7, 8, 13, m[sg[12]], m[sg[13]]);
    G(3, 4, 9, 14, m[sg[14]], m[sg[15]]);
  }
  for (int i = 0; i < 8; i++) s->h[i] ^= v[i] ^ v[i + 8];
}

static void add_count(tt_blake2b_state *s, uint64_t n) {
  s->t[0] += n;
  if (s->t[0] < n) s->t[1]++;
}

void tt_blake2b_init(tt_blake2b_state *s, size_t out_len) {
  if (out_len < 1) out_len = 1;
  if (out_len > 64) out_len = 64;
  memset(s, 0, sizeof *s);
  for (int i = 0; i < 8; i++) s->h[i] = IV[i];
  s->h[0] ^= 0x01010000ULL ^ (uint64_t)out_len; /* depth 1, fanout 1, no key */
  s->out_len = out_len;
}

void tt_blake2b_update(tt_blake2b_state *s, const void *data, size_t len) {
  const unsigned char *p = data;
  while (len > 0) {
    if (s->buf_len == sizeof s->buf) { /* more input follows: not the last block */
      add_count(s, sizeof s->buf);
      compress(s, s->buf, 0);
      s->buf_len = 0;
    }
    size_t take = sizeof s->buf - s->buf_len;
    if (take > len) take = len;
    memcpy(s->buf + s->buf_len, p, take);
    s->buf_len += take;
    p += take;
    len -= take;
  }
}

void tt_blake2b_final(tt_blake2b_state *s, unsigned char *out) {
  add_count(s, s->buf_len);
  memset(s->buf + s->buf_len, 0, sizeof s->buf - s->buf_len);
  compress(s, s->buf, 1);
  for (size_t i = 0; i < s->out_len; i++) out[i] = (unsigned char)(s->h[i / 8] >> (8 * (i % 8)));
}

void tt_blake2b(const void *data, size_t len, unsigned char *out, size_t out_len) {
  tt_blake2b_state s;
  tt_blake2b_init(&s, out_len);
  tt_blake2b_update(&s, data, len);
  tt_blake2b_final(&s, out);
}
