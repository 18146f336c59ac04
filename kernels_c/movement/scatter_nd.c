/* scatter_nd: ScatterND whose indices are data computed in the plan (a decoder's causal mask built
 * from positions over a symbolic past length, symbolic.py). y holds data's copy already (copy2d
 * before it); each updates row goes where its k indices point. Indices are checked first, so a
 * bad one stops the run with NNW_BAD_INDEX and nothing is written. */
#include "internal.h"

#define MAX_K 6

static int esize_ok(int32_t e) { return e == 1 || e == 2 || e == 4 || e == 8; }

int nnw_validate_scatter_nd(const int32_t *v, uint32_t arena_bytes) {
  int32_t esize = v[NNW_SCATTER_ND_ESIZE], rows = v[NNW_SCATTER_ND_ROWS], k = v[NNW_SCATTER_ND_K];
  int32_t inner = v[NNW_SCATTER_ND_INNER];
  if (!esize_ok(esize) || rows < 0 || k < 1 || k > MAX_K || inner < 1) return NNW_BAD_ARGS;
  uint64_t outer = 1;
  for (int j = 0; j < MAX_K; j++) {
    int32_t d = v[NNW_SCATTER_ND_D0 + j];
    if (d < 1 || (j >= k && d != 1)) return NNW_BAD_ARGS;
    outer = nnw_mul(outer, (uint64_t)d);
  }
  uint64_t row = nnw_mul((uint64_t)inner, (uint64_t)esize);
  uint64_t y_bytes = nnw_mul(outer, row), upd_bytes = nnw_mul((uint64_t)rows, row);
  NNW_TRY(nnw_check_tensor(v[NNW_SCATTER_ND_Y], y_bytes, arena_bytes, 0, 0));
  if (!rows) return NNW_OK;
  NNW_TRY(nnw_check_typed(v[NNW_SCATTER_ND_IDX], nnw_mul((uint64_t)rows, (uint64_t)k), NNW_I64, arena_bytes, 0));
  NNW_TRY(nnw_check_tensor(v[NNW_SCATTER_ND_UPD], upd_bytes, arena_bytes, 0, 0));
  NNW_TRY(nnw_check_apart(v[NNW_SCATTER_ND_UPD], upd_bytes, v[NNW_SCATTER_ND_Y], y_bytes, 0));
  return nnw_check_apart(v[NNW_SCATTER_ND_IDX], nnw_mul((uint64_t)rows, (uint64_t)k) * 8, v[NNW_SCATTER_ND_Y],
                         y_bytes, 0);
}

/* the element offset of index row r into y, or -1 when an index is out of range */
static int64_t row_offset(const uint8_t *idx, int32_t r, int32_t k, const int32_t *d, int64_t inner) {
  int64_t at = 0;
  for (int32_t j = 0; j < k; j++) {
    int64_t i;
    memcpy(&i, idx + 8 * ((size_t)r * (size_t)k + (size_t)j), 8);
    if (i < 0) i += d[j];
    if (i < 0 || i >= d[j]) return -1;
    at = at * d[j] + i;
  }
  return at * inner;
}

void nnw_run_scatter_nd(const int32_t *v, uint8_t *arena) {
  int32_t rows = v[NNW_SCATTER_ND_ROWS], k = v[NNW_SCATTER_ND_K], esize = v[NNW_SCATTER_ND_ESIZE];
  int64_t inner = v[NNW_SCATTER_ND_INNER];
  const int32_t *d = v + NNW_SCATTER_ND_D0;
  const uint8_t *idx = arena + v[NNW_SCATTER_ND_IDX], *upd = arena + v[NNW_SCATTER_ND_UPD];
  uint8_t *y = arena + v[NNW_SCATTER_ND_Y];
  for (int32_t r = 0; r < rows; r++) {
    if (row_offset(idx, r, k, d, inner) < 0) {
      nnw_run_fail(NNW_BAD_INDEX);
      return;
    }
  }
  size_t row = (size_t)inner * (size_t)esize;
  for (int32_t r = 0; r < rows; r++)
    memcpy(y + (size_t)row_offset(idx, r, k, d, inner) * (size_t)esize, upd + (size_t)r * row, row);
}
