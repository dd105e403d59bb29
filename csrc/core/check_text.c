/* Device-side check words and messages (core/check_text.h). */
#include "core/check_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool tt_check_word_decode(const void *bytes, size_t n, tt_check_word *out) {
  *out = (tt_check_word){TT_CHECK_WORD_OK, false, -1, 0};
  if (n == sizeof(int32_t)) {
    int32_t v;
    memcpy(&v, bytes, sizeof v);
    out->check = v;
    return true;
  }
  if (n != TT_CHECK_WORD_BYTES) return false;
  int64_t v[3];
  memcpy(v, bytes, sizeof v);
  *out = (tt_check_word){v[0], true, v[1], v[2]};
  return true;
}

/* Appends the coordinates of flat position pos in the shape spelled
 * "2x5" (spec[0..n)) to buf; false when the spec does not parse. */
static bool coords(char *buf, size_t size, const char *spec, size_t n, int64_t pos) {
  int64_t dims[16];
  int nd = 0;
  const char *p = spec, *end = spec + n;
  while (p < end && nd < 16) {
    char *q;
    long long d = strtoll(p, &q, 10);
    if (q == p || d < 0) return false;
    dims[nd++] = d;
    p = q;
    if (p < end && *p != 'x') return false;
    if (p < end) p++;
  }
  if (p != end || nd == 0) return false;
  if (nd == 1) {
    snprintf(buf, size, "%" PRId64, pos);
    return true;
  }
  int64_t c[16], rest = pos;
  for (int k = nd - 1; k >= 0; k--) {
    c[k] = dims[k] ? rest % dims[k] : 0;
    rest = dims[k] ? rest / dims[k] : 0;
  }
  size_t off = (size_t)snprintf(buf, size, "[");
  for (int k = 0; k < nd && off < size; k++)
    off += (size_t)snprintf(buf + off, size - off, k ? ", %" PRId64 : "%" PRId64, c[k]);
  if (off < size) snprintf(buf + off, size - off, "]");
  return true;
}

char *tt_check_text_fill(const char *tmpl, const tt_check_word *w) {
  if (!tmpl) tmpl = "device-side check failed";
  size_t cap = strlen(tmpl) + 1, n = 0;
  for (const char *p = tmpl; (p = strchr(p, '{')); p++) cap += 160; /* each placeholder's text */
  char *out = malloc(cap);
  if (!out) return NULL;
  for (const char *p = tmpl; *p;) {
    char piece[160] = "";
    size_t skip = 0;
    if (strncmp(p, "{value}", 7) == 0) {
      skip = 7;
      if (w->known) snprintf(piece, sizeof piece, "%" PRId64, w->value);
      else snprintf(piece, sizeof piece, "?");
    } else if (strncmp(p, "{pos", 4) == 0 && (p[4] == '}' || p[4] == '@')) {
      const char *close = strchr(p, '}');
      if (close) {
        skip = (size_t)(close - p) + 1;
        if (!w->known) snprintf(piece, sizeof piece, "?");
        else if (p[4] == '}' || !coords(piece, sizeof piece, p + 5, (size_t)(close - p - 5), w->pos))
          snprintf(piece, sizeof piece, "%" PRId64, w->pos);
      }
    }
    if (!skip) {
      out[n++] = *p++;
      continue;
    }
    size_t len = strlen(piece);
    if (len > 159) len = 159; /* within the room counted for it */
    memcpy(out + n, piece, len);
    n += len;
    p += skip;
  }
  out[n] = '\0';
  return out;
}
