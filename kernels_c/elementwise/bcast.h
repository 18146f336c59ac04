/* Broadcasting over up to 6 dims for the ops whose arguments end in `rank d0..d5` followed by n
 * groups of six element strides (0 where broadcast): binary, binary_int, compare, where, q8_add. The output is
 * contiguous, d0 outermost. Validators get each operand's element extent; runners walk rows of
 * the innermost merged dim (neighbouring dims merge wherever every operand stays linear across
 * them, so a same-shape op is one row). */
#ifndef NNW_BCAST_H
#define NNW_BCAST_H
#include <stddef.h>

#include "internal.h"

#define NNW_BCAST_MAX_RANK 6
#define NNW_BCAST_MAX_OPERANDS 3

/* v points at the rank argument. Sets *count (output elements) and extent[k] (elements operand
 * k spans: last index + 1); NNW_BAD_ARGS for a bad rank, dim or stride. */
static inline int nnw_bcast_extents(const int32_t *v, int n, uint64_t *count, uint64_t *extent) {
  int32_t rank = v[0];
  if (rank < 0 || rank > NNW_BCAST_MAX_RANK) return NNW_BAD_ARGS;
  *count = 1;
  for (int k = 0; k < n; k++) extent[k] = 1;
  for (int i = 0; i < rank; i++) {
    int32_t d = v[1 + i];
    if (d <= 0) return NNW_BAD_ARGS;
    *count = nnw_mul(*count, (uint64_t)d);
    for (int k = 0; k < n; k++) {
      int32_t s = v[1 + NNW_BCAST_MAX_RANK * (k + 1) + i];
      if (s < 0) return NNW_BAD_ARGS;
      extent[k] = nnw_add(extent[k], nnw_mul((uint64_t)d - 1, (uint64_t)s));
    }
  }
  return NNW_OK;
}

struct nnw_bcast {
  int r, n;                                        /* merged dims, operands */
  int32_t d[NNW_BCAST_MAX_RANK], idx[NNW_BCAST_MAX_RANK];  /* innermost first */
  ptrdiff_t s[NNW_BCAST_MAX_OPERANDS][NNW_BCAST_MAX_RANK];
  size_t rows;                                     /* rows of d[0] elements */
};

static inline void nnw_bcast_init(struct nnw_bcast *b, const int32_t *v, int n) {
  int32_t rank = v[0];
  b->r = 0;
  b->n = n;
  for (int i = rank - 1; i >= 0; i--) {
    int32_t d = v[1 + i];
    if (d == 1) continue;
    int merge = b->r > 0;
    for (int k = 0; k < n && merge; k++)
      merge = v[1 + NNW_BCAST_MAX_RANK * (k + 1) + i] == b->s[k][b->r - 1] * b->d[b->r - 1];
    if (merge) {
      b->d[b->r - 1] *= d;
      continue;
    }
    b->d[b->r] = d;
    for (int k = 0; k < n; k++) b->s[k][b->r] = v[1 + NNW_BCAST_MAX_RANK * (k + 1) + i];
    b->r++;
  }
  if (b->r == 0) {
    b->d[0] = 1;
    for (int k = 0; k < n; k++) b->s[k][0] = 0;
    b->r = 1;
  }
  b->rows = 1;
  for (int i = 0; i < b->r; i++) {
    b->idx[i] = 0;
    if (i > 0) b->rows *= (size_t)b->d[i];
  }
}

/* the element offsets of each operand at the current row, then steps to the next row */
static inline void nnw_bcast_row(struct nnw_bcast *b, ptrdiff_t *off) {
  for (int k = 0; k < b->n; k++) {
    off[k] = 0;
    for (int i = 1; i < b->r; i++) off[k] += b->idx[i] * b->s[k][i];
  }
  for (int i = 1; i < b->r && ++b->idx[i] == b->d[i]; i++) b->idx[i] = 0;
}

#endif
