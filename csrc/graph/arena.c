#include "graph/arena.h"

#include <stdlib.h>
#include <string.h>

struct tt_arena_chunk {
  tt_arena_chunk *prev;
  size_t used, size;
  _Alignas(16) unsigned char data[];
};

static size_t round_up(size_t n) { return (n + 15) & ~(size_t)15; }

void *tt_arena_alloc(tt_arena *a, size_t n) {
  n = round_up(n ? n : 1);
  tt_arena_chunk *c = a->head;
  if (!c || c->used + n > c->size) {
    size_t size = 64 * 1024;
    while (size < n) size *= 2;
    tt_arena_chunk *fresh = malloc(sizeof *fresh + size);
    if (!fresh) abort();
    fresh->prev = c;
    fresh->used = 0;
    fresh->size = size;
    a->head = c = fresh;
  }
  void *p = c->data + c->used;
  c->used += n;
  return p;
}

void *tt_arena_copy(tt_arena *a, const void *src, size_t n) {
  void *p = tt_arena_alloc(a, n);
  if (n) memcpy(p, src, n);
  return p;
}

void tt_arena_reset(tt_arena *a) {
  tt_arena_chunk *c = a->head;
  if (!c) return;
  for (tt_arena_chunk *old = c->prev; old;) {
    tt_arena_chunk *prev = old->prev;
    free(old);
    old = prev;
  }
  c->prev = NULL;
  c->used = 0;
}
