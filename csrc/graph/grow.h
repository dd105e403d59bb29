/* Growing a malloc'd array by doubling: the one idiom the graph layer's
 * append-only tables share. Host OOM aborts (no caller can recover mid-build). */
#ifndef TT_GRAPH_GROW_H
#define TT_GRAPH_GROW_H

#include <stdlib.h>

#define TT_GROW(ptr, n, cap, first_cap)                            \
  do {                                                             \
    if ((n) == (cap)) {                                            \
      int new_cap_ = (cap) ? (cap) * 2 : (first_cap);              \
      void *p_ = realloc((ptr), (size_t)new_cap_ * sizeof *(ptr)); \
      if (!p_) abort();                                            \
      (ptr) = p_;                                                  \
      (cap) = new_cap_;                                            \
    }                                                              \
  } while (0)

#endif
