/* The layout arithmetic of views (nothing is emitted here): element
 * counts, spans, grids and offset classes, shared by the cache key, the
 * signatures of explanations and the view reads and writes (view.c). */
#include "graph/view_layout.h"

int64_t tt_view_numel(const tt_tensor_ref *ref) {
  int64_t n = 1;
  for (int i = 0; i < ref->ndim; i++) n *= ref->sizes[i];
  return n;
}

bool tt_view_is_contiguous(const tt_tensor_ref *ref) {
  int64_t expected = 1;
  for (int i = ref->ndim - 1; i >= 0; i--) {
    if (ref->sizes[i] == 1) continue;
    if (ref->strides[i] != expected) return false;
    expected *= ref->sizes[i];
  }
  return true;
}

bool tt_view_covers(const tt_tensor_ref *ref, int64_t storage_numel) {
  return ref->offset == 0 && tt_view_numel(ref) == storage_numel && tt_view_is_contiguous(ref);
}

int64_t tt_view_span(const tt_tensor_ref *ref) {
  int64_t span = 1;
  for (int i = 0; i < ref->ndim; i++) {
    if (ref->sizes[i] == 0) return 0;
    span += (ref->sizes[i] - 1) * ref->strides[i];
  }
  return span;
}

bool tt_view_grid_make(const tt_tensor_ref *ref, tt_view_grid *g) {
  int *kept = g->kept, nk = 0;
  for (int i = 0; i < ref->ndim; i++) {
    if (ref->sizes[i] == 1 || ref->strides[i] == 0) continue;
    if (ref->strides[i] < 0) return false;
    kept[nk++] = i;
  }
  g->nk = nk;
  /* sort kept dims by stride, descending (insertion sort; ndim <= 8) */
  for (int i = 1; i < nk; i++)
    for (int j = i; j > 0 && ref->strides[kept[j]] > ref->strides[kept[j - 1]]; j--) {
      int t = kept[j];
      kept[j] = kept[j - 1];
      kept[j - 1] = t;
    }
  /* need[i]: elements of grid dim i the view touches */
  for (int i = 0; i < nk; i++) {
    int64_t s = ref->strides[kept[i]];
    g->base[i] = (i == nk - 1) ? 1 : s;
    g->step[i] = (i == nk - 1) ? s : 1;
    g->need[i] = (ref->sizes[kept[i]] - 1) * g->step[i] + 1;
  }
  for (int i = 0; i < nk; i++) {
    if (i == 0) {
      g->extent[i] = ref->sizes[kept[i]] * g->step[i];
      if (g->extent[i] < g->need[i]) g->extent[i] = g->need[i];
    } else {
      if (g->base[i - 1] % g->base[i] != 0) return false;
      g->extent[i] = g->base[i - 1] / g->base[i];
      if (g->extent[i] < g->need[i]) return false; /* overlapping windows */
    }
  }
  return true;
}

/* The grid starts of a view at `offset` of a storage of storage_numel
 * elements laid out as rows of base[0]; false if the view leaves its grid. */
static bool grid_starts_fit(const tt_view_grid *g, int64_t offset, int64_t storage_numel) {
  if (g->nk == 0) return true;
  int64_t rows = (storage_numel + g->base[0] - 1) / g->base[0];
  if (offset / g->base[0] + g->need[0] > rows) return false;
  int64_t rest = offset % g->base[0];
  for (int i = 1; i < g->nk; i++) {
    if (rest / g->base[i] + g->need[i] > g->extent[i]) return false;
    rest %= g->base[i];
  }
  return true;
}

int64_t tt_view_offset_class(const tt_tensor_ref *ref, int64_t storage_numel) {
  if (ref->offset == 0) return 0;
  for (int i = 0; i < ref->ndim; i++)
    if (ref->strides[i] < 0) return ref->offset;
  if (tt_view_numel(ref) == 0) return TT_VIEW_OFFSET_DYNAMIC; /* nothing is read or written */
  if (ref->offset < 0 || ref->offset > storage_numel - tt_view_span(ref)) return ref->offset;
  if (tt_view_is_contiguous(ref)) return TT_VIEW_OFFSET_DYNAMIC;
  tt_view_grid g;
  if (!tt_view_grid_make(ref, &g)) return TT_VIEW_OFFSET_DYNAMIC; /* a gather */
  return grid_starts_fit(&g, ref->offset, storage_numel) ? TT_VIEW_OFFSET_DYNAMIC : ref->offset;
}
